/* fuzz_regbody.c - a REGISTER_BROKER body as it arrives (JSON, or the zlib
 * form when it starts like one), decoded at request versions before and
 * after the mapping section (413), with the default inflate cap; what
 * decodes is filtered for names and encoded again in both forms. */
#include <stddef.h>
#include <stdint.h>

#include "ns/body.h"
#include "ns/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int versions[] = {0, 453};
    for (int i = 0; i < 2; i++) {
        ns_regbody_t b = {0};
        ns_buf_t out = NS_BUF_INIT;
        char first[128];
        if (ns_regbody_decode(data, size, versions[i], 64u << 20, &b) == 0) {
            ns_regbody_drop_bad_names(&b, first, sizeof first);
            ns_regbody_encode_json(&out, &b);
            ns_buf_reset(&out);
            ns_regbody_encode_compressed(&out, &b, true);
        }
        ns_buf_free(&out);
        ns_regbody_free(&b);
    }
    return 0;
}
