/* fuzz_header_json.c - the input is the header of one frame whose header type
 * is JSON; a decoded header is encoded again, in both types (fuzz_header.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_header_one(data, size, NS_SERIALIZE_JSON, NS_SERIALIZE_ROCKETMQ);
}
