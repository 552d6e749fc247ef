/* remoting_enc.c - the remoting frame encoder (include/ns/remoting.h,
 * docs/protocol.md §1.2-§1.5).
 *
 * Appends to a caller-owned ns_buf_t; on any error the buffer is rolled
 * back to its previous length. JSON headers are compact, keys in Java's
 * order; binary headers as Java's RocketMQSerializable writes them.
 */
#include <string.h>

#include "ns/codes.h"
#include "remoting_int.h"

#define PUT_LIT(b, s) ns_buf_append((b), (s), sizeof(s) - 1)

/* A JSON string literal, escaped as fastjson does (buf.c owns the rules and
 * copies a string with nothing to escape, nearly every header value, in one
 * go). */
static int put_json_str(ns_buf_t *b, const char *s, size_t n)
{
    return ns_buf_append_json_str(b, s, n, false);
}

static int encode_json(ns_buf_t *b, const ns_cmd_t *c)
{
    size_t est = 112 + c->remark_len;
    for (size_t i = 0; i < c->n_ext; i++)
        est += c->ext[i].key_len + c->ext[i].val_len + 6;
    const char *lang = ns_language_name(c->language);
    if (ns_buf_reserve(b, est) != NS_OK)
        return NS_ENOMEM;

    if (PUT_LIT(b, "{\"code\":") || ns_buf_append_i64_dec(b, c->code))
        return NS_ENOMEM;
    if (c->has_ext) {
        bool first = true;
        if (PUT_LIT(b, ",\"extFields\":{"))
            return NS_ENOMEM;
        for (size_t i = 0; i < c->n_ext; i++) {
            const ns_ext_field_t *e = &c->ext[i];
            if (e->key == NULL || e->val == NULL)
                continue;
            if ((!first && PUT_LIT(b, ",")) || put_json_str(b, e->key, e->key_len) ||
                PUT_LIT(b, ":") || put_json_str(b, e->val, e->val_len))
                return NS_ENOMEM;
            first = false;
        }
        if (PUT_LIT(b, "}"))
            return NS_ENOMEM;
    }
    if (PUT_LIT(b, ",\"flag\":") || ns_buf_append_i64_dec(b, c->flag) ||
        PUT_LIT(b, ",\"language\":\"") || ns_buf_append_str(b, lang ? lang : "OTHER") ||
        PUT_LIT(b, "\",\"opaque\":") || ns_buf_append_i64_dec(b, c->opaque))
        return NS_ENOMEM;
    if (c->remark != NULL &&
        (PUT_LIT(b, ",\"remark\":") || put_json_str(b, c->remark, c->remark_len)))
        return NS_ENOMEM;
    if (PUT_LIT(b, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") ||
        ns_buf_append_i64_dec(b, c->version) || PUT_LIT(b, "}"))
        return NS_ENOMEM;
    return NS_OK;
}

static int encode_binary(ns_buf_t *b, const ns_cmd_t *c)
{
    size_t rlen = c->remark != NULL ? c->remark_len : 0;
    size_t elen = 0;
    if (rlen > INT32_MAX)
        return NS_ETOOBIG;
    if (c->has_ext) {
        for (size_t i = 0; i < c->n_ext; i++) {
            const ns_ext_field_t *e = &c->ext[i];
            if (e->key == NULL || e->val == NULL)
                continue;
            if (e->key_len > INT16_MAX || e->val_len > INT32_MAX)
                return NS_ETOOBIG;
            elen += 6 + e->key_len + e->val_len;
            if (elen > NS_HDR_LEN_MAX)
                return NS_ETOOBIG;
        }
    }
    if (ns_buf_reserve(b, NS_HDR_BIN_FIXED + 4 + rlen + elen) != NS_OK)
        return NS_ENOMEM;
    if (ns_buf_append_be16(b, (uint16_t)c->code) || ns_buf_append_u8(b, (uint8_t)c->language) ||
        ns_buf_append_be16(b, (uint16_t)c->version) || ns_buf_append_be32(b, (uint32_t)c->opaque) ||
        ns_buf_append_be32(b, (uint32_t)c->flag) || ns_buf_append_be32(b, (uint32_t)rlen) ||
        ns_buf_append(b, c->remark, rlen) || ns_buf_append_be32(b, (uint32_t)elen))
        return NS_ENOMEM;
    for (size_t i = 0; elen && i < c->n_ext; i++) {
        const ns_ext_field_t *e = &c->ext[i];
        if (e->key == NULL || e->val == NULL)
            continue;
        if (ns_buf_append_be16(b, (uint16_t)e->key_len) || ns_buf_append(b, e->key, e->key_len) ||
            ns_buf_append_be32(b, (uint32_t)e->val_len) || ns_buf_append(b, e->val, e->val_len))
            return NS_ENOMEM;
    }
    return NS_OK;
}

/* Appends the length prefix, header word and header; the prefix counts
 * body_len. On error out is restored to its previous length. */
static int encode_head(ns_buf_t *out, const ns_cmd_t *c)
{
    int rc = NS_OK;
    size_t start = out->len;
    uint8_t zero[8] = {0};

    if (c->serialize_type != NS_SERIALIZE_JSON && c->serialize_type != NS_SERIALIZE_ROCKETMQ) {
        rc = NS_EINVAL;
        goto cleanup;
    }
    if (ns_buf_append(out, zero, sizeof zero) != NS_OK) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    rc = c->serialize_type == NS_SERIALIZE_JSON ? encode_json(out, c) : encode_binary(out, c);
    if (rc != NS_OK)
        goto cleanup;
    size_t hdr_len = out->len - start - 8;
    size_t body_len = c->body != NULL ? c->body_len : 0;
    if (hdr_len > NS_HDR_LEN_MAX || body_len > (size_t)INT32_MAX - 4 - hdr_len) {
        rc = NS_ETOOBIG;
        goto cleanup;
    }
    ns_be32_write(out->data + start, (uint32_t)(4 + hdr_len + body_len));
    ns_be32_write(out->data + start + 4, (uint32_t)c->serialize_type << 24 | (uint32_t)hdr_len);

cleanup:
    if (rc != NS_OK) {
        out->len = start;
        if (out->data != NULL)
            out->data[start] = 0;
    }
    return rc;
}

int ns_remoting_encode_header(ns_buf_t *out, const ns_cmd_t *cmd)
{
    return encode_head(out, cmd);
}

int ns_remoting_encode(ns_buf_t *out, const ns_cmd_t *cmd)
{
    size_t start = out->len;
    int rc = encode_head(out, cmd);
    if (rc != NS_OK || cmd->body == NULL || cmd->body_len == 0)
        return rc;
    if (ns_buf_append(out, cmd->body, cmd->body_len) != NS_OK) {
        out->len = start;
        out->data[start] = 0;
        return NS_ENOMEM;
    }
    return NS_OK;
}
