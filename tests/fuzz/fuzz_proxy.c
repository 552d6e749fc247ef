/* fuzz_proxy.c - libFuzzer target for the PROXY protocol parser
 * (src/proto/proxy.c): any bytes, whole or cut at any length, must give
 * NS_OK / NS_EAGAIN / NS_EINVAL without reading past the input, and an
 * accepted header must lie within it with NUL-terminated addresses. Also
 * runs the trusted-peer list parser on the same bytes as text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy, so that a read past `size` is an ASan error */
    uint8_t *p = malloc(size ? size : 1);
    if (p == NULL)
        return 0;
    memcpy(p, data, size);
    ns_proxy_hdr_t h;
    const char *why = NULL;
    int rc = ns_proxy_parse(p, size, &h, &why);
    if (rc == NS_OK) {
        if (h.header_len > size || (h.version != 1 && h.version != 2))
            abort();
        if (h.has_addr &&
            (memchr(h.src, 0, sizeof h.src) == NULL || memchr(h.dst, 0, sizeof h.dst) == NULL))
            abort();
        /* a header is decided by its own bytes: more input never changes it */
        ns_proxy_hdr_t again;
        if (ns_proxy_parse(p, h.header_len, &again, &why) != NS_OK ||
            again.header_len != h.header_len)
            abort();
    } else if (rc != NS_EAGAIN && rc != NS_EINVAL) {
        abort();
    } else if (rc == NS_EINVAL && why == NULL) {
        abort();
    }
    (void)ns_proxy_detect(p, size);
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = 0;
        ns_proxy_acl_t acl;
        char err[128];
        (void)ns_proxy_acl_parse(text, &acl, err, sizeof err);
        free(text);
    }
    free(p);
    return 0;
}
