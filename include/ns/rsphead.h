/* rsphead.h - response headers encoded once per shape and patched.
 *
 * Nearly every reply a NameServer sends has the same header but for its
 * opaque: no remark, no extFields, language JAVA, one version, one code. A
 * ns_rsp_heads_t remembers the encoded header of a few such shapes (code,
 * flag, language, version, serialisation) with the place of the opaque in
 * it; a reply of a known shape is then the template with the opaque's digits
 * (JSON) or bytes (binary) and the frame's length patched in, byte for byte
 * what ns_remoting_encode writes. Any other reply (a remark, extFields) is
 * encoded in full. One cache per thread (a loop's): no locking. */
#ifndef NS_RSPHEAD_H
#define NS_RSPHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/remoting.h"

#define NS_RSP_HEAD_SLOTS 4
#define NS_RSP_NOTPL_SLOTS 2
/* Template bytes: frame prefix + header. The longest template-able header
 * today (every number at its widest, language NODE_JS) is 134 bytes, so no
 * real shape reaches it; test_rsphead.c defines it smaller before including
 * rsphead.c to reach the "no template" path (the test hook). */
#ifndef NS_RSP_HEAD_MAX
#define NS_RSP_HEAD_MAX 160
#endif

/* What makes two replies' headers the same but for the opaque. */
typedef struct {
    bool used;
    uint8_t serialize_type;
    int32_t code, flag, language, version;
} ns_rsp_shape_t;

typedef struct {
    ns_rsp_shape_t shape;
    uint16_t len;    /* template bytes, the 8-byte frame prefix included */
    uint16_t opq_at; /* JSON: offset of the opaque's one digit '0'; binary: of its 4 bytes */
    uint8_t bytes[NS_RSP_HEAD_MAX];
} ns_rsp_head_t;

/* Zero it to start. A shape whose header cannot be a template (longer than
 * NS_RSP_HEAD_MAX, or no one place for the opaque) is remembered in notpl,
 * so that its replies are encoded once, in full, and never evict a slot. */
typedef struct {
    ns_rsp_head_t slot[NS_RSP_HEAD_SLOTS];
    ns_rsp_shape_t notpl[NS_RSP_NOTPL_SLOTS];
    unsigned next;       /* the slot a new shape replaces (round robin) */
    unsigned notpl_next; /* the same for notpl */
} ns_rsp_heads_t;

/* Appends the length prefix (counting c->body_len), header word and header
 * of c to out, as ns_remoting_encode_header does, from a template when c's
 * shape has one (building it the first time). Same returns; on error out
 * keeps its previous contents. */
int ns_rsp_heads_encode(ns_rsp_heads_t *h, ns_buf_t *out, const ns_cmd_t *c);

#endif
