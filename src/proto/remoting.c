/* remoting.c - RocketMQ remoting frames (include/ns/remoting.h, docs/protocol.md
 * §1.2-§1.5): finding a frame in a stream, the decode entry point that picks
 * a header decoder, the decoded message and its copies, extFields lookups.
 * The decoders and the encoder live beside it (see remoting_int.h).
 *
 * Decoding writes every string (remark, ext keys and values) into the
 * ns_cmd_msg_t arena, NUL-terminated. The arena and the ext array are reused
 * across decodes: a msg that decodes many frames stops allocating once it
 * has seen the largest header.
 */
#include "ns/remoting.h"

#include <stdlib.h>
#include <string.h>

#include "ns/codes.h"
#include "remoting_int.h"

/* ---- msg ---------------------------------------------------------------- */

void ns_cmd_msg_init(ns_cmd_msg_t *m)
{
    memset(&m->cmd, 0, sizeof m->cmd);
    ns_buf_init(&m->arena);
    m->ext_storage = NULL;
    m->ext_cap = 0;
    m->ext_index = NULL;
    m->ext_index_cap = 0;
}

void ns_cmd_msg_free(ns_cmd_msg_t *m)
{
    ns_buf_free(&m->arena);
    free(m->ext_storage);
    free(m->ext_index);
    ns_cmd_msg_init(m);
}

/* Copies n bytes and a NUL to *cursor; returns where they went. */
static const char *put_str(char **cursor, const char *p, size_t n)
{
    char *at = *cursor;
    if (n)
        memcpy(at, p, n);
    at[n] = 0;
    *cursor += n + 1;
    return at;
}

ns_cmd_t *ns_cmd_dup(const ns_cmd_t *src)
{
    size_t size = sizeof *src + src->n_ext * sizeof(ns_ext_field_t) + src->body_len +
                  (src->remark ? src->remark_len + 1 : 0);
    for (size_t i = 0; i < src->n_ext; i++)
        size += src->ext[i].key_len + 1 + src->ext[i].val_len + 1;
    ns_cmd_t *c = malloc(size);
    if (c == NULL)
        return NULL;
    *c = *src;
    ns_ext_field_t *ext = (ns_ext_field_t *)(c + 1);
    char *cursor = (char *)(ext + src->n_ext);
    for (size_t i = 0; i < src->n_ext; i++) {
        ext[i] = src->ext[i];
        ext[i].key = put_str(&cursor, src->ext[i].key, src->ext[i].key_len);
        ext[i].val = put_str(&cursor, src->ext[i].val, src->ext[i].val_len);
    }
    c->ext = src->n_ext ? ext : NULL;
    if (src->remark)
        c->remark = put_str(&cursor, src->remark, src->remark_len);
    if (src->body_len) {
        memcpy(cursor, src->body, src->body_len);
        c->body = (const uint8_t *)cursor;
    } else {
        c->body = NULL;
    }
    return c;
}

/* ---- framing ------------------------------------------------------------ */

int ns_frame_peek(const uint8_t *p, size_t n, size_t max_frame_bytes, size_t *frame_len)
{
    if (n < 4)
        return NS_EAGAIN;
    int32_t flen = (int32_t)ns_be32_read(p);
    if (flen < 4)
        return NS_EINVAL;
    size_t total = (size_t)flen + 4;
    if (total > max_frame_bytes)
        return NS_ETOOBIG;
    if (n < total)
        return NS_EAGAIN;
    *frame_len = total;
    return NS_OK;
}

/* ---- decode ------------------------------------------------------------- */

enum { DECODE_BOTH, DECODE_FAST, DECODE_GENERAL };

/* Back to the state a decode starts from (serialize_type kept). */
static void clear(ns_cmd_msg_t *m)
{
    uint8_t type = m->cmd.serialize_type;
    memset(&m->cmd, 0, sizeof m->cmd);
    m->cmd.serialize_type = type;
    ns_buf_reset(&m->arena);
    ns_hdr_index_drop(m);
}

/* The header in the mode asked: the fast path, then (unless DECODE_FAST)
 * the general decoder from a clean state. */
static int decode_header(const uint8_t *hdr, size_t n, ns_cmd_msg_t *m, int mode)
{
    bool json = m->cmd.serialize_type == NS_SERIALIZE_JSON;
    if (mode != DECODE_GENERAL) {
        int rc = json ? ns_hdr_json_fast(hdr, n, m) : ns_hdr_bin_fast(hdr, n, m);
        if (rc != NS_EFALLBACK || mode == DECODE_FAST)
            return rc;
        clear(m);
    }
    return json ? ns_hdr_json_decode(hdr, n, m) : ns_hdr_bin_decode(hdr, n, m);
}

static int decode(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out, int mode)
{
    int rc = NS_EINVAL;
    ns_cmd_t *c = &out->cmd;

    memset(c, 0, sizeof *c);
    ns_buf_reset(&out->arena);
    ns_hdr_index_drop(out);
    if (frame_len < 8 || (size_t)ns_be32_read(frame) != frame_len - 4)
        goto cleanup;
    uint32_t word = ns_be32_read(frame + 4);
    uint8_t type = (uint8_t)(word >> 24);
    size_t hdr_len = word & NS_HDR_LEN_MAX;
    if (hdr_len > frame_len - 8 || (type != NS_SERIALIZE_JSON && type != NS_SERIALIZE_ROCKETMQ))
        goto cleanup;
    /* Decoded strings never need much more room than the header itself. */
    if (out->arena.cap < hdr_len + 65 && ns_buf_reserve(&out->arena, hdr_len + 64) != NS_OK) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    c->serialize_type = type;
    rc = decode_header(frame + 8, hdr_len, out, mode);
    if (rc != NS_OK)
        goto cleanup;
    c->body_len = frame_len - 8 - hdr_len;
    c->body = c->body_len ? frame + 8 + hdr_len : NULL;

cleanup:
    ns_hdr_index_drop(out);
    if (rc != NS_OK) {
        memset(c, 0, sizeof *c);
        ns_buf_reset(&out->arena);
    }
    return rc;
}

int ns_remoting_decode(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out)
{
    return decode(frame, frame_len, out, DECODE_BOTH);
}

int ns_remoting_decode_fast(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out)
{
    return decode(frame, frame_len, out, DECODE_FAST);
}

int ns_remoting_decode_general(const uint8_t *frame, size_t frame_len, ns_cmd_msg_t *out)
{
    return decode(frame, frame_len, out, DECODE_GENERAL);
}

static bool same_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

bool ns_cmd_same(const ns_cmd_t *a, const ns_cmd_t *b)
{
    if (a->code != b->code || a->language != b->language || a->version != b->version ||
        a->opaque != b->opaque || a->flag != b->flag || a->serialize_type != b->serialize_type ||
        (a->remark == NULL) != (b->remark == NULL) || a->has_ext != b->has_ext ||
        a->n_ext != b->n_ext || (a->ext == NULL) != (b->ext == NULL) ||
        (a->body == NULL) != (b->body == NULL))
        return false;
    if (a->remark && !same_bytes(a->remark, a->remark_len, b->remark, b->remark_len))
        return false;
    for (size_t i = 0; i < a->n_ext; i++) {
        const ns_ext_field_t *x = &a->ext[i], *y = &b->ext[i];
        if (!same_bytes(x->key, x->key_len, y->key, y->key_len) ||
            !same_bytes(x->val, x->val_len, y->val, y->val_len) || x->key[x->key_len] != 0 ||
            y->key[y->key_len] != 0 || x->val[x->val_len] != 0 || y->val[y->val_len] != 0)
            return false;
    }
    return same_bytes(a->body, a->body_len, b->body, b->body_len);
}

/* ---- lookup ------------------------------------------------------------- */

void ns_cmd_request_init(ns_cmd_t *cmd, int32_t code, const ns_ext_field_t *ext, size_t n_ext)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->code = code;
    cmd->language = NS_LANG_JAVA;
    cmd->version = NS_VERSION_V5_3_3;
    cmd->serialize_type = NS_SERIALIZE_JSON;
    cmd->has_ext = ext != NULL;
    cmd->ext = ext;
    cmd->n_ext = n_ext;
}

ns_ext_field_t ns_ext_field(const char *key, const char *val)
{
    return (ns_ext_field_t){key, strlen(key), val, strlen(val)};
}

/* Keys are NUL-terminated: compared byte by byte up to key's NUL (no strlen
 * per call: handlers ask for a few keys on every request). */
const char *ns_cmd_ext_get(const ns_cmd_t *cmd, const char *key)
{
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const ns_ext_field_t *e = &cmd->ext[i];
        if (e->key == NULL)
            continue;
        size_t j = 0;
        while (key[j] != 0 && e->key[j] == key[j])
            j++;
        if (key[j] == 0 && j == e->key_len)
            return e->val;
    }
    return NULL;
}
