/* fuzz_header_json.c - the input is the header of one frame whose header
 * type is JSON; the fast path and the general decoder must agree on it
 * (fuzz_header.h). */
#include "tests/fuzz/fuzz_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_header_one(NS_SERIALIZE_JSON, data, size);
}
