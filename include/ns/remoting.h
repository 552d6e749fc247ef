/* remoting.h - RocketMQ remoting frame codec (docs/protocol.md §1).
 *
 * Pure functions over buffers. A frame on the wire:
 *   [frameLength:4][headerWord:4 = type<<24 | headerLength][header][body]
 * where frameLength counts everything after itself.
 */
#ifndef NS_REMOTING_H
#define NS_REMOTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

#define NS_SERIALIZE_JSON 0
#define NS_SERIALIZE_ROCKETMQ 1

#define NS_FLAG_RESPONSE 0x1
#define NS_FLAG_ONEWAY 0x2

/* Java's limit: frameLength + 4 <= 16 MiB. */
#define NS_DEFAULT_MAX_FRAME_BYTES (16u * 1024u * 1024u)

/* One extFields entry. Both strings are NUL-terminated; the lengths exclude
 * the NUL (values may contain embedded NULs only in binary headers). */
typedef struct {
    const char *key;
    size_t key_len;
    const char *val;
    size_t val_len;
} ns_ext_field_t;

/* A remoting command, request or response.
 * For encoding, every pointer is borrowed from the caller for the duration of
 * the call. For decoding, see ns_cmd_msg_t for lifetimes. */
typedef struct {
    int32_t code;
    int32_t language; /* language byte (codes.h NS_LANG_*) */
    int32_t version;
    int32_t opaque;
    int32_t flag;
    uint8_t serialize_type; /* NS_SERIALIZE_JSON or NS_SERIALIZE_ROCKETMQ */
    /* Set by a decoder that saw every ext value to be a valid name (1 to
     * NS_NAME_MAX_BYTES bytes, no control byte): ns_names_check_header
     * would pass. false = not known. */
    bool ext_names_ok;
    const char *remark; /* NULL = no remark (omitted on encode) */
    size_t remark_len;
    bool has_ext; /* encode: emit extFields (possibly {}) */
    const ns_ext_field_t *ext;
    size_t n_ext;
    const uint8_t *body; /* NULL/0 = no body */
    size_t body_len;
} ns_cmd_t;

/* A decoded command together with the storage its strings live in.
 * Initialise with ns_cmd_msg_init(); free with ns_cmd_msg_free(). The strings
 * (remark, ext keys/values) live in the msg's arena; body points into the
 * frame that was decoded. Both stay valid until the msg is freed or reused for
 * another decode, and body only while the frame buffer itself is alive. */
typedef struct {
    ns_cmd_t cmd;
    ns_buf_t arena;
    ns_ext_field_t *ext_storage;
    size_t ext_cap;
    /* Hash index over the ext keys of the header being decoded (slot = entry
     * index + 1, 0 = empty), built only once a header has more than a few
     * entries and freed when the decode ends: finding a duplicate key costs
     * O(1), so a header with n entries decodes in O(n). */
    uint32_t *ext_index;
    size_t ext_index_cap; /* power of two or 0 */
} ns_cmd_msg_t;

void ns_cmd_msg_init(ns_cmd_msg_t *m);
void ns_cmd_msg_free(ns_cmd_msg_t *m);
/* A copy of src in one heap block (strings, extFields and body included),
 * for a decoded command that outlives its frame; the caller frees it with
 * free(). NULL when out of memory. */
ns_cmd_t *ns_cmd_dup(const ns_cmd_t *src);

/* Looks at the first n bytes of a stream. Returns
 *   NS_OK       a whole frame is present; *frame_len = 4 + frameLength
 *   NS_EAGAIN   need more bytes (fewer than 4, or frame incomplete)
 *   NS_ETOOBIG  frameLength + 4 > max_frame_bytes
 *   NS_EINVAL   frameLength < 4 (cannot hold the header word) or negative */
int ns_frame_peek(const uint8_t *p, size_t n, size_t max_frame_bytes, size_t *frame_len);

/* Decodes one whole frame (length prefix included, exactly frame_len bytes).
 * Returns NS_OK, NS_EINVAL for anything malformed (header length beyond the
 * frame, unknown serialize type, invalid JSON, truncated binary header, bad
 * string lengths), NS_ENOMEM. Never reads outside [frame, frame+frame_len).
 * JSON header: unknown keys ignored, missing keys default to 0/absent,
 * extFields values that are numbers/booleans are converted to text, null
 * values skipped, language names mapped to bytes (unknown -> OTHER), duplicate
 * keys: the last value wins (at the first key's position); a \u0000 escape
 * in a key or value decodes as U+0001 and a lone surrogate escape as its
 * UTF-8 bytes, which the name checks refuse (ns_json_fix_escapes, body.h).
 * Binary header: zero-length remark = no remark; ext entries with a
 * zero-length key or value are dropped (Java reads them as null); negative
 * lengths are NS_EINVAL; bytes after the ext block are ignored. */
int ns_remoting_decode(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out);

/* ns_remoting_decode in its two halves, for the tests and fuzzers that check
 * they agree. _fast runs only the fast paths (the header shapes real clients
 * send, src/proto/remoting_fast.c) and returns NS_EFALLBACK, out cleared,
 * for any other header; _general runs only the general decoders. Otherwise
 * as ns_remoting_decode, which is the fast path, then the general one. */
int ns_remoting_decode_fast(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out);
int ns_remoting_decode_general(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out);
/* Whether a and b carry the same command: every field, the remark and each
 * ext key and value byte for byte (and NUL-terminated), in order, the body's
 * bytes. */
bool ns_cmd_same(const ns_cmd_t *a, const ns_cmd_t *b);

/* Appends one whole frame (length prefix included) for cmd, in
 * cmd->serialize_type. JSON headers are compact with keys in the order
 * code, extFields, flag, language, opaque, remark, serializeTypeCurrentRPC,
 * version; ext values are always JSON strings, in the order given; ext
 * entries with a NULL key or value are skipped (JSON and binary). The string
 * lengths in cmd (remark_len, key_len, val_len) are authoritative.
 * Returns NS_OK, NS_ENOMEM, NS_EINVAL (unknown serialize type), NS_ETOOBIG
 * (header over 16 MiB - 1, binary key over 32767 bytes, frame over 2 GiB).
 * On error out keeps its previous contents. */
int ns_remoting_encode(ns_buf_t *out, const ns_cmd_t *cmd);

/* Same, but appends only the length prefix (which counts cmd->body_len),
 * header word and header; the caller sends cmd->body right after it (writev),
 * so a large body is never copied. */
int ns_remoting_encode_header(ns_buf_t *out, const ns_cmd_t *cmd);

/* Fills cmd as a request the way RocketMQ 5.3.3 Java clients send one: all
 * fields zero except code, language JAVA, version 5.3.3, a JSON header and
 * the n_ext extFields (borrowed; has_ext is ext != NULL, so NULL sends no
 * extFields at all). Callers then set opaque, flag and body as they need. */
void ns_cmd_request_init(ns_cmd_t *cmd, int32_t code, const ns_ext_field_t *ext, size_t n_ext);
/* An extFields entry over two NUL-terminated strings (borrowed). */
ns_ext_field_t ns_ext_field(const char *key, const char *val);

/* Value of an extFields key (NUL-terminated, borrowed from cmd), or NULL.
 * The keys of cmd must be NUL-terminated at key_len (as ns_ext_field_t
 * says; decoded ones are). */
const char *ns_cmd_ext_get(const ns_cmd_t *cmd, const char *key);

#endif
