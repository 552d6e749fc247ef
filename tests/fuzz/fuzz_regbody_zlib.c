/* fuzz_regbody_zlib.c - the inflated content of a compressed REGISTER_BROKER
 * body (the field stream of docs/protocol.md §5.2): the input is deflated first,
 * so the fuzzer works on the stream itself rather than on zlib's framing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <zlib.h>

#include "ns/body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uLongf n = compressBound((uLong)size);
    uint8_t *z = malloc(n);
    if (z == NULL || compress2(z, &n, data, (uLong)size, 1) != Z_OK) {
        free(z);
        return 0;
    }
    static const int versions[] = {0, 453};
    for (int i = 0; i < 2; i++) {
        ns_regbody_t b = {0};
        if (ns_regbody_decode(z, n, versions[i], 64u << 20, &b) == 0)
            ns_regbody_drop_bad_names(&b, NULL, 0);
        ns_regbody_free(&b);
    }
    free(z);
    return 0;
}
