/* fuzz_json_read.c - the tolerant JSON readers the body decoders use
 * (src/proto/json_read.h): parse, then coerce every member of the top
 * object (and of its first nested object) to each type. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/proto/json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void coerce_all(const cJSON *o, int depth)
{
    for (const cJSON *it = o ? o->child : NULL; it; it = it->next) {
        int64_t i64 = 0;
        int32_t i32 = 0;
        bool b = false;
        char *s = NULL;
        (void)ns_jr_absent(it);
        (void)ns_jr_i64(it, &i64);
        (void)ns_jr_i32(it, &i32);
        (void)ns_jr_bool(it, &b);
        if (ns_jr_str(it, &s) == 0)
            free(s);
        if (it->string)
            (void)ns_jr_get(o, it->string);
        if (depth < 2 && (cJSON_IsObject(it) || cJSON_IsArray(it)))
            coerce_all(it, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = NULL;
    (void)ns_jr_blank(data, size);
    if (ns_jr_parse(data, size, &root) == 0)
        coerce_all(root, 0);
    cJSON_Delete(root);
    return 0;
}
