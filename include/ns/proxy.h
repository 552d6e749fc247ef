/* proxy.h - the HAProxy PROXY protocol, versions 1 (text) and 2 (binary):
 * a pure parser (no I/O, no allocation) and the list of peers allowed to
 * send a preamble. Used by the daemon's connection seam (src/daemon/net/wire.c)
 * and by the fuzzer (tests/fuzz/fuzz_proxy.c).
 *
 * Detection follows Netty's HAProxyMessageDecoder.detectProtocol, which the
 * Java NameServer 5.x runs on the first bytes of every connection: the
 * 12-byte v2 signature means v2, a leading "PROXY" means v1, anything else
 * is no preamble. Netty always waits for 12 bytes; we answer "no preamble"
 * as soon as the bytes so far match neither signature (the same answer,
 * earlier: a short first frame is not held back). */
#ifndef NS_PROXY_H
#define NS_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NS_PROXY_DETECT_BYTES 12
#define NS_PROXY_V1_MAX 107 /* the spec's longest v1 line, CRLF included */

typedef enum {
    NS_PROXY_NEED_MORE = 0, /* fewer than NS_PROXY_DETECT_BYTES, all a signature's prefix */
    NS_PROXY_NONE,          /* not a PROXY preamble */
    NS_PROXY_V1,
    NS_PROXY_V2,
} ns_proxy_kind_t;

/* A parsed header. `has_addr` is false for v1 UNKNOWN, v2 LOCAL and v2
 * families other than INET/INET6 (UNIX, UNSPEC): the connection then keeps
 * its real peer address, as the PROXY spec asks. */
typedef struct {
    int version; /* 1 or 2 */
    bool has_addr;
    int family;            /* AF_INET or AF_INET6 when has_addr */
    char src[46], dst[46]; /* numeric addresses, NUL-terminated */
    uint16_t src_port, dst_port;
    size_t header_len; /* bytes the header takes at the start of the input */
} ns_proxy_hdr_t;

/* Classifies the first bytes of a connection (see above). */
ns_proxy_kind_t ns_proxy_detect(const uint8_t *p, size_t n);

/* Parses the header at the start of [p, p+n). NS_OK: *hdr is filled;
 * NS_EAGAIN: the header is not complete yet; NS_EINVAL: malformed, *why
 * (static text) says how. Input shorter than the detection bytes or not a
 * preamble at all is NS_EAGAIN / NS_EINVAL respectively. */
int ns_proxy_parse(const uint8_t *p, size_t n, ns_proxy_hdr_t *hdr, const char **why);

/* Peers allowed to send a preamble (proxyProtocolTrustedAddresses): a
 * comma-separated list of IPv4/IPv6 addresses and CIDR blocks, or "*" for
 * any peer. Empty = nobody. Fixed size, owns no memory. */
#define NS_PROXY_ACL_MAX 32
typedef struct {
    bool any;
    size_t n;
    struct {
        int family; /* AF_INET or AF_INET6 */
        uint8_t addr[16];
        int prefix; /* bits */
    } e[NS_PROXY_ACL_MAX];
} ns_proxy_acl_t;

/* Parses text into acl (NULL or "" = nobody). NS_EINVAL with the bad entry
 * named in err (may be NULL); NS_ETOOBIG above NS_PROXY_ACL_MAX entries. */
int ns_proxy_acl_parse(const char *text, ns_proxy_acl_t *acl, char *err, size_t errlen);
/* True when the socket peer sa may send a preamble. IPv4-mapped IPv6
 * peers are matched as IPv4. */
bool ns_proxy_acl_allows(const ns_proxy_acl_t *acl, const struct sockaddr *sa);

#endif
