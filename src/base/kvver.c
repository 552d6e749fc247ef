/* kvver.c - KV entry versions and their order (kvver.h). */
#include "ns/kvver.h"

#include <string.h>

uint64_t ns_kvver_next(uint64_t last, int64_t wall_ms)
{
    uint64_t wall = wall_ms > 0 ? (uint64_t)wall_ms << NS_KVVER_LOGICAL_BITS : 0;
    return wall > last ? wall : last + 1;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

int ns_kvver_cmp(const ns_kvver_t *av, const void *ap, size_t an, const ns_kvver_t *bv,
                 const void *bp, size_t bn)
{
    int c = cmp_u64(av->hlc, bv->hlc);
    c = c ? c : cmp_u64(av->server, bv->server);
    c = c ? c : (int)av->deleted - (int)bv->deleted;
    if (c || av->deleted)
        return c;
    size_t n = an < bn ? an : bn;
    c = n ? memcmp(ap, bp, n) : 0;
    c = (c > 0) - (c < 0);
    return c ? c : (an > bn) - (an < bn);
}

bool ns_kvver_too_new(uint64_t hlc, int64_t now_ms, int64_t skew_ms)
{
    return ns_kvver_wall_ms(hlc) > now_ms + skew_ms;
}

void ns_kvver_format(const ns_kvver_t *v, char out[34])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hx[(v->hlc >> (60 - 4 * i)) & 15];
        out[17 + i] = hx[(v->server >> (60 - 4 * i)) & 15];
    }
    out[16] = '.';
    out[33] = 0;
}

static bool hex64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

bool ns_kvver_parse(const char *s, ns_kvver_t *v)
{
    if (s == NULL || strlen(s) != 33 || s[16] != '.')
        return false;
    return hex64(s, &v->hlc) && hex64(s + 17, &v->server);
}
