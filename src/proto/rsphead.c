/* rsphead.c - response headers from templates (include/ns/rsphead.h). */
#include "ns/rsphead.h"

#include <string.h>

#include "ns/err.h"

/* Binary header: code:2 language:1 version:2, then the opaque. */
#define BIN_OPAQUE_AT (8 + 5)

static bool same_shape(const ns_rsp_shape_t *s, const ns_cmd_t *c)
{
    return s->used && s->code == c->code && s->flag == c->flag && s->language == c->language &&
           s->version == c->version && s->serialize_type == c->serialize_type;
}

static ns_rsp_shape_t shape_of(const ns_cmd_t *c)
{
    ns_rsp_shape_t s = {true, c->serialize_type, c->code, c->flag, c->language, c->version};
    return s;
}

/* Encodes c's shape with opaque 0 and 1 into t; the first byte where they
 * differ is the opaque. t is written only when it fits: *fits is false when
 * the shape cannot have a template; errors are the encoder's. */
static int build(ns_rsp_head_t *t, const ns_cmd_t *c, bool *fits)
{
    ns_cmd_t s = *c;
    ns_buf_t a = NS_BUF_INIT, b = NS_BUF_INIT;
    int rc;
    *fits = false;
    s.body = NULL;
    s.body_len = 0;
    s.opaque = 0;
    rc = ns_remoting_encode_header(&a, &s);
    s.opaque = 1;
    rc = rc ? rc : ns_remoting_encode_header(&b, &s);
    if (rc != NS_OK || a.len != b.len || a.len > NS_RSP_HEAD_MAX)
        goto cleanup;
    size_t at = 8;
    while (at < a.len && a.data[at] == b.data[at])
        at++;
    if (c->serialize_type == NS_SERIALIZE_ROCKETMQ)
        at = BIN_OPAQUE_AT;
    else if (at >= a.len || a.data[at] != '0')
        goto cleanup;
    memcpy(t->bytes, a.data, a.len);
    t->len = (uint16_t)a.len;
    t->opq_at = (uint16_t)at;
    t->shape = shape_of(c);
    *fits = true;
cleanup:
    ns_buf_free(&a);
    ns_buf_free(&b);
    return rc;
}

/* The template of c's shape, built when new; NULL when it has none (then
 * the shape is marked, unless the encoder failed: it reports that). */
static const ns_rsp_head_t *find(ns_rsp_heads_t *h, const ns_cmd_t *c)
{
    for (unsigned i = 0; i < NS_RSP_HEAD_SLOTS; i++)
        if (same_shape(&h->slot[i].shape, c))
            return &h->slot[i];
    for (unsigned i = 0; i < NS_RSP_NOTPL_SLOTS; i++)
        if (same_shape(&h->notpl[i], c))
            return NULL;
    ns_rsp_head_t *t = &h->slot[h->next];
    bool fits = false;
    if (build(t, c, &fits) != NS_OK)
        return NULL;
    if (!fits) {
        h->notpl[h->notpl_next] = shape_of(c);
        h->notpl_next = (h->notpl_next + 1) % NS_RSP_NOTPL_SLOTS;
        return NULL;
    }
    h->next = (h->next + 1) % NS_RSP_HEAD_SLOTS;
    return t;
}

int ns_rsp_heads_encode(ns_rsp_heads_t *h, ns_buf_t *out, const ns_cmd_t *c)
{
    const ns_rsp_head_t *t = NULL;
    if (c->remark == NULL && !c->has_ext)
        t = find(h, c);
    if (t == NULL)
        return ns_remoting_encode_header(out, c);
    size_t body_len = c->body != NULL ? c->body_len : 0;
    bool json = t->shape.serialize_type == NS_SERIALIZE_JSON;
    /* JSON: the digits replace the template's one '0'; binary: 4 bytes, 4 */
    bool neg = c->opaque < 0;
    uint32_t mag = neg ? 0u - (uint32_t)c->opaque : (uint32_t)c->opaque;
    size_t nd = json ? neg + ns_dec_len_u32(mag) : 4, skip = json ? 1 : 4;
    size_t hdr_len = t->len - 8 - skip + nd;
    if (body_len > (size_t)INT32_MAX - 4 - hdr_len)
        return NS_ETOOBIG;
    if (out->cap - out->len <= hdr_len + 8 && ns_buf_reserve(out, hdr_len + 8) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = out->data + out->len;
    memcpy(p, t->bytes, t->opq_at);
    ns_be32_write(p, (uint32_t)(4 + hdr_len + body_len));
    ns_be32_write(p + 4, (uint32_t)t->shape.serialize_type << 24 | (uint32_t)hdr_len);
    if (!json)
        ns_be32_write(p + t->opq_at, (uint32_t)c->opaque);
    else {
        ns_dec_put_u32(p + t->opq_at + nd, mag);
        if (neg)
            p[t->opq_at] = '-';
    }
    memcpy(p + t->opq_at + nd, t->bytes + t->opq_at + skip, t->len - t->opq_at - skip);
    out->len += hdr_len + 8;
    out->data[out->len] = 0;
    return NS_OK;
}
