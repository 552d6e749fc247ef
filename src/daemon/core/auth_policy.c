/* auth_policy.c - the pure half of authentication and authorization
 * (auth.h): modes, roles, source allowlists, broker grants, penalties. No
 * libuv, no store: tested directly (tests/unit/test_auth.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "core/auth.h"
#include "ns/err.h"

static const char *const mode_names[] = {"off", "writes", "all"};

int ns_auth_mode_parse(const char *s, ns_auth_mode_t *out)
{
    for (int m = NS_AUTH_OFF; m <= NS_AUTH_ALL; m++)
        if (s && strcmp(s, mode_names[m]) == 0) {
            *out = (ns_auth_mode_t)m;
            return NS_OK;
        }
    return NS_EINVAL;
}

const char *ns_auth_mode_name(ns_auth_mode_t m)
{
    return m >= NS_AUTH_OFF && m <= NS_AUTH_ALL ? mode_names[m] : "?";
}

ns_role_t ns_auth_required_role(ns_auth_mode_t mode, ns_auth_need_t need)
{
    if (need == NS_NEED_USERS)
        return NS_ROLE_ADMIN;
    if (mode == NS_AUTH_OFF)
        return (ns_role_t)0;
    switch (need) {
    case NS_NEED_READ:
        return mode == NS_AUTH_ALL ? NS_ROLE_CLIENT : (ns_role_t)0;
    case NS_NEED_BROKER:
    case NS_NEED_BROKER_NAMED:
    case NS_NEED_BROKER_TOPIC:
        return NS_ROLE_BROKER;
    default:
        return NS_ROLE_ADMIN;
    }
}

bool ns_auth_role_allows(ns_role_t r, ns_auth_need_t need)
{
    switch (r) {
    case NS_ROLE_ADMIN:
        return true;
    case NS_ROLE_BROKER:
        return need == NS_NEED_READ || need == NS_NEED_BROKER || need == NS_NEED_BROKER_NAMED ||
               need == NS_NEED_BROKER_TOPIC;
    case NS_ROLE_CLIENT:
        return need == NS_NEED_READ;
    default:
        return false;
    }
}

/* Parses an address into 16 bytes (IPv4 as IPv4-mapped IPv6). */
static bool parse_ip(const char *s, size_t n, uint8_t out[16])
{
    char tmp[64];
    if (n == 0 || n >= sizeof tmp)
        return false;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    struct in_addr a4;
    if (inet_pton(AF_INET, tmp, &a4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a4, 4);
        return true;
    }
    return inet_pton(AF_INET6, tmp, out) == 1;
}

static bool is_v4(const uint8_t a[16])
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, prefix, 12) == 0;
}

/* One allowlist entry (n bytes at e) against the parsed peer. */
static bool entry_matches(const char *e, size_t n, const uint8_t peer[16])
{
    while (n && (*e == ' ' || *e == '\t')) {
        e++;
        n--;
    }
    while (n && (e[n - 1] == ' ' || e[n - 1] == '\t'))
        n--;
    if (n == 1 && *e == '*')
        return true;
    const char *slash = memchr(e, '/', n);
    uint8_t net[16];
    if (!parse_ip(e, slash ? (size_t)(slash - e) : n, net))
        return false;
    long bits = 128;
    if (slash) {
        char *end = NULL;
        char num[8] = {0};
        size_t bl = n - (size_t)(slash - e) - 1;
        if (bl == 0 || bl >= sizeof num)
            return false;
        memcpy(num, slash + 1, bl);
        bits = strtol(num, &end, 10);
        if (*end != 0 || bits < 0 || bits > (is_v4(net) ? 32 : 128))
            return false;
        if (is_v4(net))
            bits += 96;
    }
    if (is_v4(net) != is_v4(peer))
        return false;
    for (long i = 0; i < bits; i++) {
        uint8_t m = (uint8_t)(0x80 >> (i % 8));
        if ((net[i / 8] & m) != (peer[i / 8] & m))
            return false;
    }
    return true;
}

bool ns_auth_addr_allowed(const char *allow, const char *ip)
{
    if (allow == NULL || *allow == 0)
        return true;
    uint8_t peer[16];
    if (!parse_ip(ip, strlen(ip), peer))
        return false;
    for (const char *p = allow;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (entry_matches(p, n, peer))
            return true;
        if (end == NULL)
            return false;
        p = end + 1;
    }
}

static bool span_is(const char *p, size_t n, const char *s)
{
    return strlen(s) == n && memcmp(p, s, n) == 0;
}

bool ns_auth_broker_granted(const char *grants, const char *cluster, const char *name)
{
    if (grants == NULL || name == NULL || *name == 0)
        return false;
    for (const char *p = grants; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && *p == ' ') {
            p++;
            n--;
        }
        while (n && p[n - 1] == ' ')
            n--;
        const char *slash = memchr(p, '/', n);
        if (slash == NULL) {
            if (span_is(p, n, "*") || span_is(p, n, name))
                return true;
        } else {
            size_t cl = (size_t)(slash - p), bl = n - cl - 1;
            bool c_ok = cluster == NULL || span_is(p, cl, "*") || span_is(p, cl, cluster);
            bool b_ok = span_is(slash + 1, bl, "*") || span_is(slash + 1, bl, name);
            if (c_ok && b_ok)
                return true;
        }
        if (end == NULL)
            break;
        p = end + 1;
    }
    return false;
}

void ns_auth_peer_ip(const char *peer, char *out, size_t outlen)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, peer, n);
    out[n] = 0;
}

bool ns_auth_is_loopback(const char *ip)
{
    uint8_t a[16];
    static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (!parse_ip(ip, strlen(ip), a))
        return false;
    return (is_v4(a) && a[12] == 127) || memcmp(a, v6lo, 16) == 0;
}

bool ns_auth_same_host(const char *ip, const char *addr)
{
    uint8_t a[16], b[16];
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (ip == NULL || colon == NULL || !parse_ip(ip, strlen(ip), a))
        return false;
    const char *h = addr;
    size_t n = (size_t)(colon - addr);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') { /* "[v6]:port" */
        h++;
        n -= 2;
    }
    return parse_ip(h, n, b) && memcmp(a, b, 16) == 0;
}

uint64_t ns_auth_penalty_ms(uint32_t failures, uint64_t max_ms)
{
    /* Three free tries (a mistyped secret), then 100 ms doubling to max. */
    if (failures <= 3)
        return 0;
    uint32_t k = failures - 4;
    uint64_t d = k >= 20 ? UINT64_MAX : (uint64_t)100 << k;
    return d > max_ms ? max_ms : d;
}
