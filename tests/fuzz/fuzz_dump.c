/* fuzz_dump.c - the dump document `namesrvctl restore` validates before it
 * writes anything (tools/namesrvctl/doc.c), and a kvConfig.json. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/namesrvctl/doc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    ctl_doc_t d;
    memset(&d, 0, sizeof d);
    (void)ctl_doc_load(&d, text, size);
    ctl_doc_free(&d);
    memset(&d, 0, sizeof d);
    const cJSON *table = NULL;
    size_t n_ns = 0, n_keys = 0, n_null = 0;
    (void)ctl_kvconfig_load(&d, text, size, &table, &n_ns, &n_keys, &n_null);
    ctl_doc_free(&d);
    free(text);
    return 0;
}
