/* proxy.c - PROXY protocol v1/v2 parser and trusted-peer list (include/ns/proxy.h).
 *
 * v1: "PROXY " proto " " src " " dst " " sport " " dport "\r\n", at most 107
 *     bytes; proto TCP4 | TCP6 | UNKNOWN (UNKNOWN: the rest of the line is
 *     ignored and the real peer is kept). Addresses must parse as numeric
 *     addresses of the named family; ports are 1-5 digits <= 65535.
 * v2: 12-byte signature, version/command byte (version 2; LOCAL or PROXY),
 *     family/transport byte, 16-bit length, then the address block and TLVs.
 *     INET and INET6 carry an address; UNSPEC, UNIX and the LOCAL command
 *     keep the real peer. TLVs after an address are checked to be well
 *     framed and skipped.
 * Nothing here allocates; every index is checked against n before use. */
#include "ns/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"

static const uint8_t v2_sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                   0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

ns_proxy_kind_t ns_proxy_detect(const uint8_t *p, size_t n)
{
    if (n < NS_PROXY_DETECT_BYTES) { /* undecided only while a signature may still follow */
        bool v2 = memcmp(p, v2_sig, n) == 0;
        bool v1 = memcmp(p, "PROXY", n < 5 ? n : 5) == 0;
        return v1 || v2 ? NS_PROXY_NEED_MORE : NS_PROXY_NONE;
    }
    if (memcmp(p, v2_sig, sizeof v2_sig) == 0)
        return NS_PROXY_V2;
    if (memcmp(p, "PROXY", 5) == 0)
        return NS_PROXY_V1;
    return NS_PROXY_NONE;
}

/* ---- v1 ---- */

/* Splits line (NUL-terminated, no CRLF) at single spaces into at most max
 * tokens; returns the count, or -1 on an empty token (two spaces). */
static int split_tokens(char *line, char **tok, int max)
{
    int n = 0;
    char *s = line;
    for (;;) {
        char *sp = strchr(s, ' ');
        if (sp)
            *sp = 0;
        if (*s == 0 || n == max)
            return -1;
        tok[n++] = s;
        if (sp == NULL)
            return n;
        s = sp + 1;
    }
}

static bool parse_port(const char *s, uint16_t *out)
{
    size_t len = strlen(s);
    if (len == 0 || len > 5)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

static bool copy_addr(int family, const char *text, char *out)
{
    uint8_t bin[16];
    if (strlen(text) >= 46 || inet_pton(family, text, bin) != 1)
        return false;
    return inet_ntop(family, bin, out, 46) != NULL; /* canonical form */
}

static int parse_v1(const uint8_t *p, size_t n, ns_proxy_hdr_t *hdr, const char **why)
{
    char line[NS_PROXY_V1_MAX + 1];
    size_t lim = n < NS_PROXY_V1_MAX ? n : NS_PROXY_V1_MAX;
    size_t end = 0;
    if (memcmp(p, "PROXY ", 6) != 0) {
        *why = "PROXY v1: no space after PROXY";
        return NS_EINVAL;
    }
    for (end = 6; end < lim; end++) {
        if (p[end] == '\r')
            break;
        if (p[end] < 0x20 || p[end] > 0x7E) {
            *why = "PROXY v1: control or non-ASCII byte in the header";
            return NS_EINVAL;
        }
    }
    if (end + 1 >= lim) { /* no CR, or CR as the last byte we have */
        if (n < NS_PROXY_V1_MAX && end + 1 >= n)
            return NS_EAGAIN;
        *why = "PROXY v1: no CRLF within 107 bytes";
        return NS_EINVAL;
    }
    if (p[end + 1] != '\n') {
        *why = "PROXY v1: CR not followed by LF";
        return NS_EINVAL;
    }
    memcpy(line, p + 6, end - 6);
    line[end - 6] = 0;
    hdr->version = 1;
    hdr->header_len = end + 2;
    if (strncmp(line, "UNKNOWN", 7) == 0 && (line[7] == 0 || line[7] == ' ')) {
        hdr->has_addr = false;
        return NS_OK;
    }
    char *tok[5];
    int nt = split_tokens(line, tok, 5);
    if (nt != 5) {
        *why = "PROXY v1: expected protocol, two addresses and two ports";
        return NS_EINVAL;
    }
    int family = strcmp(tok[0], "TCP4") == 0   ? AF_INET
                 : strcmp(tok[0], "TCP6") == 0 ? AF_INET6
                                               : -1;
    if (family < 0) {
        *why = "PROXY v1: protocol is not TCP4, TCP6 or UNKNOWN";
        return NS_EINVAL;
    }
    if (!copy_addr(family, tok[1], hdr->src) || !copy_addr(family, tok[2], hdr->dst)) {
        *why = "PROXY v1: address does not match the protocol";
        return NS_EINVAL;
    }
    if (!parse_port(tok[3], &hdr->src_port) || !parse_port(tok[4], &hdr->dst_port)) {
        *why = "PROXY v1: bad port";
        return NS_EINVAL;
    }
    hdr->family = family;
    hdr->has_addr = true;
    return NS_OK;
}

/* ---- v2 ---- */

static bool tlvs_framed(const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        if (n - off < 3)
            return false;
        size_t len = ns_be16_read(p + off + 1);
        if (n - off - 3 < len)
            return false;
        off += 3 + len;
    }
    return true;
}

static int parse_v2(const uint8_t *p, size_t n, ns_proxy_hdr_t *hdr, const char **why)
{
    if (n < 16)
        return NS_EAGAIN;
    int ver = p[12] >> 4, cmd = p[12] & 0x0F, fam = p[13] >> 4, proto = p[13] & 0x0F;
    size_t len = ns_be16_read(p + 14);
    if (ver != 2) {
        *why = "PROXY v2: version is not 2";
        return NS_EINVAL;
    }
    if (cmd > 1) {
        *why = "PROXY v2: command is neither LOCAL nor PROXY";
        return NS_EINVAL;
    }
    if (fam > 3 || proto > 2) {
        *why = "PROXY v2: unknown address family or transport";
        return NS_EINVAL;
    }
    static const size_t need[4] = {0, 12, 36, 216};
    if (len < need[fam]) {
        *why = "PROXY v2: address block shorter than its family needs";
        return NS_EINVAL;
    }
    if (n - 16 < len)
        return NS_EAGAIN;
    /* UNSPEC and LOCAL: the block is skipped whole, as the spec asks */
    if (cmd == 1 && fam != 0 && !tlvs_framed(p + 16 + need[fam], len - need[fam])) {
        *why = "PROXY v2: malformed TLV";
        return NS_EINVAL;
    }
    hdr->version = 2;
    hdr->header_len = 16 + len;
    hdr->has_addr = cmd == 1 && (fam == 1 || fam == 2);
    if (!hdr->has_addr)
        return NS_OK;
    const uint8_t *a = p + 16;
    size_t alen = fam == 1 ? 4 : 16;
    hdr->family = fam == 1 ? AF_INET : AF_INET6;
    inet_ntop(hdr->family, a, hdr->src, sizeof hdr->src);
    inet_ntop(hdr->family, a + alen, hdr->dst, sizeof hdr->dst);
    hdr->src_port = ns_be16_read(a + 2 * alen);
    hdr->dst_port = ns_be16_read(a + 2 * alen + 2);
    return NS_OK;
}

int ns_proxy_parse(const uint8_t *p, size_t n, ns_proxy_hdr_t *hdr, const char **why)
{
    static const char *unused;
    if (why == NULL)
        why = &unused;
    memset(hdr, 0, sizeof *hdr);
    switch (ns_proxy_detect(p, n)) {
    case NS_PROXY_NEED_MORE:
        return NS_EAGAIN;
    case NS_PROXY_V1:
        return parse_v1(p, n, hdr, why);
    case NS_PROXY_V2:
        return parse_v2(p, n, hdr, why);
    default:
        *why = "not a PROXY protocol header";
        return NS_EINVAL;
    }
}

/* ---- trusted peers ---- */

static int acl_add(ns_proxy_acl_t *acl, const char *item, char *err, size_t errlen)
{
    char host[64];
    const char *slash = strchr(item, '/');
    size_t hlen = slash ? (size_t)(slash - item) : strlen(item);
    if (hlen == 0 || hlen >= sizeof host)
        goto bad;
    memcpy(host, item, hlen);
    host[hlen] = 0;
    if (acl->n == NS_PROXY_ACL_MAX) {
        if (err)
            snprintf(err, errlen, "more than %d entries", NS_PROXY_ACL_MAX);
        return NS_ETOOBIG;
    }
    typeof(acl->e[0]) *e = &acl->e[acl->n];
    e->family = strchr(host, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(e->family, host, e->addr) != 1)
        goto bad;
    int maxbits = e->family == AF_INET ? 32 : 128;
    e->prefix = maxbits;
    if (slash) {
        int64_t bits = -1;
        if (ns_parse_i64(slash + 1, strlen(slash + 1), &bits) != NS_OK || slash[1] == '+' ||
            slash[1] == '-' || bits < 0 || bits > maxbits)
            goto bad;
        e->prefix = (int)bits;
    }
    acl->n++;
    return NS_OK;
bad:
    if (err)
        snprintf(err, errlen, "'%s' is not an IP address or CIDR block", item);
    return NS_EINVAL;
}

int ns_proxy_acl_parse(const char *text, ns_proxy_acl_t *acl, char *err, size_t errlen)
{
    memset(acl, 0, sizeof *acl);
    const char *s = text ? text : "";
    while (*s) {
        char item[80];
        while (*s == ' ' || *s == ',')
            s++;
        size_t len = strcspn(s, ", ");
        if (len == 0)
            break;
        if (len >= sizeof item) {
            if (err)
                snprintf(err, errlen, "entry '%.20s...' is too long", s);
            return NS_EINVAL;
        }
        memcpy(item, s, len);
        item[len] = 0;
        s += len;
        if (strcmp(item, "*") == 0) {
            acl->any = true;
            continue;
        }
        int rc = acl_add(acl, item, err, errlen);
        if (rc != NS_OK)
            return rc;
    }
    return NS_OK;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

bool ns_proxy_acl_allows(const ns_proxy_acl_t *acl, const struct sockaddr *sa)
{
    uint8_t addr[16];
    int family;
    if (acl->any)
        return true;
    if (sa->sa_family == AF_INET) {
        family = AF_INET;
        memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            family = AF_INET;
            memcpy(addr, a6->s6_addr + 12, 4);
        } else {
            family = AF_INET6;
            memcpy(addr, a6->s6_addr, 16);
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < acl->n; i++)
        if (acl->e[i].family == family && prefix_match(acl->e[i].addr, addr, acl->e[i].prefix))
            return true;
    return false;
}
