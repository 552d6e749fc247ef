/* remoting_int.h - what the files of the remoting codec share (src/proto
 * only; the public API is include/ns/remoting.h).
 *
 *   remoting.c       frames, the decode entry point, ns_cmd_msg_t, lookups
 *   remoting_ext.c   the decoded extFields list and its hash index
 *   remoting_json.c  the general JSON header decoder (cJSON)
 *   remoting_bin.c   the general ROCKETMQ binary header decoder
 *   remoting_fast.c  the fast paths for the header shapes real clients send
 *   remoting_enc.c   the encoder
 *
 * While a general decoder runs, ext_storage[i].key/.val and the remark hold
 * arena offsets (stored in the pointer fields) instead of pointers: the
 * arena may move while the header is decoded. ns_hdr_fix_pointers turns them
 * into pointers once, at the end.
 */
#ifndef NS_REMOTING_INT_H
#define NS_REMOTING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/remoting.h"

#define NS_HDR_LEN_MAX 0xFFFFFFu /* 24-bit headerLength */
#define NS_HDR_BIN_FIXED 17      /* code..remarkLength of a binary header */
/* Below this many entries a duplicate ext key is looked for by a plain
 * walk; above it, through the hash index. */
#define NS_HDR_EXT_INDEX_MIN 16

/* The whitespace fastjson's lexer skips between tokens: JSON's four (space,
 * tab, LF, CR) and also form feed and backspace, which strict JSON rejects.
 * The fast paths skip these between tokens; the general decoder allows only
 * these after the header's object (inside it, cJSON does the skipping). */
static inline bool ns_hdr_is_fastjson_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\b';
}

static inline const char *ns_hdr_off_ptr(size_t off)
{
    return (const char *)(uintptr_t)off;
}

static inline size_t ns_hdr_ptr_off(const char *p)
{
    return (size_t)(uintptr_t)p;
}

/* Copies [s, s+n) plus a NUL into the arena; *off = where it starts. */
static inline int ns_hdr_arena_put(ns_buf_t *a, const void *s, size_t n, size_t *off)
{
    *off = a->len;
    if (ns_buf_append(a, s, n) != NS_OK)
        return NS_ENOMEM;
    return ns_buf_append_u8(a, 0);
}

/* Room for n entries in m->ext_storage. NS_OK or NS_ENOMEM. */
int ns_hdr_ext_grow(ns_cmd_msg_t *m, size_t n);
static inline int ns_hdr_ext_reserve(ns_cmd_msg_t *m, size_t n)
{
    return n <= m->ext_cap ? NS_OK : ns_hdr_ext_grow(m, n);
}
/* Adds key/value (already in the arena, at offsets) to the ext list. A key
 * that is already present gets the new value (Java decodes into a HashMap:
 * the last occurrence wins) but keeps its first position. O(1) amortised
 * per entry. NS_OK or NS_ENOMEM. */
int ns_hdr_ext_add(ns_cmd_msg_t *m, size_t koff, size_t klen, size_t voff, size_t vlen);
/* Frees the hash index (a msg that decodes small headers keeps no large
 * table around). Inline: every decode calls it, nearly always with none. */
void ns_hdr_index_free(ns_cmd_msg_t *m);
static inline void ns_hdr_index_drop(ns_cmd_msg_t *m)
{
    if (m->ext_index != NULL)
        ns_hdr_index_free(m);
}
/* Turns the offsets left by a general decoder into pointers into the arena. */
void ns_hdr_fix_pointers(ns_cmd_msg_t *m, bool has_remark, size_t remark_off);

/* The general decoders: any header the wire format allows, into m (whose
 * cmd is zeroed but for serialize_type, arena empty). NS_OK, NS_EINVAL,
 * NS_ENOMEM; on error m holds partial results the caller clears. */
int ns_hdr_json_decode(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m);
int ns_hdr_bin_decode(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m);

/* The fast paths, same contract, plus NS_EFALLBACK: not a shape they know (m then holds partial
 * results; the caller clears it and runs the general decoder). Whatever they accept they decode
 * exactly as the general decoder would; the arena must have room for n + 64 bytes. */
int ns_hdr_json_fast(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m);
int ns_hdr_bin_fast(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m);

#endif
