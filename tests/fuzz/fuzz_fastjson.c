/* fuzz_fastjson.c - fastjson text rewritten into strict JSON
 * (ns_fastjson_normalize, with its \u0000 rewrite) and the body decoders
 * that read such text: DataVersion, queue datas. */
#include <stddef.h>
#include <stdint.h>

#include "ns/body.h"
#include "ns/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ns_buf_t out = NS_BUF_INIT;
    (void)ns_fastjson_normalize(data, size, &out);
    ns_buf_free(&out);
    ns_dataversion_t dv;
    (void)ns_json_dataversion_decode(data, size, &dv);
    ns_queue_data_t *q = NULL;
    size_t n = 0;
    if (ns_json_queue_datas_decode(data, size, &q, &n) == 0)
        ns_queue_datas_free(q, n);
    return 0;
}
