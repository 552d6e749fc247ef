/* fuzz_properties.c - java.util.Properties text (UPDATE_NAMESRV_CONFIG
 * bodies, the settings file): parsed, every pair tried as a setting and as a
 * change while running, the result dumped. */
#include <stddef.h>
#include <stdint.h>

#include "ns/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int pair_cb(const char *key, const char *value, void *ctx)
{
    char err[256];
    ns_config_set(ctx, key, value, err, sizeof err);
    (void)ns_config_check_runtime(key, value, err, sizeof err);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ns_config_t c;
    if (ns_config_init(&c) != 0)
        return 0;
    (void)ns_properties_parse((const char *)data, size, pair_cb, &c);
    ns_buf_t out = NS_BUF_INIT;
    ns_config_dump(&c, &out);
    ns_buf_free(&out);
    ns_config_free(&c);
    return 0;
}
