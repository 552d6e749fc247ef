/* rsphead.c - response headers from templates (include/ns/rsphead.h). */
#include "ns/rsphead.h"

#include <string.h>

#include "ns/err.h"

/* Binary header: code:2 language:1 version:2, then the opaque. */
#define BIN_OPAQUE_AT (8 + 5)

static bool same_shape(const ns_rsp_head_t *t, const ns_cmd_t *c)
{
    return t->used && t->code == c->code && t->flag == c->flag && t->language == c->language &&
           t->version == c->version && t->serialize_type == c->serialize_type;
}

/* Encodes c's shape with opaque 0 and 1 into t; the first byte where they
 * differ is the opaque. NS_EINVAL when the shape does not fit a template. */
static int build(ns_rsp_head_t *t, const ns_cmd_t *c)
{
    ns_cmd_t s = *c;
    ns_buf_t a = NS_BUF_INIT, b = NS_BUF_INIT;
    int rc;
    s.body = NULL;
    s.body_len = 0;
    s.opaque = 0;
    rc = ns_remoting_encode_header(&a, &s);
    s.opaque = 1;
    rc = rc ? rc : ns_remoting_encode_header(&b, &s);
    if (rc != NS_OK)
        goto cleanup;
    if (a.len != b.len || a.len > NS_RSP_HEAD_MAX) {
        rc = NS_EINVAL;
        goto cleanup;
    }
    size_t at = 8;
    while (at < a.len && a.data[at] == b.data[at])
        at++;
    if (c->serialize_type == NS_SERIALIZE_ROCKETMQ)
        at = BIN_OPAQUE_AT;
    else if (at >= a.len || a.data[at] != '0') {
        rc = NS_EINVAL;
        goto cleanup;
    }
    memcpy(t->bytes, a.data, a.len);
    t->len = (uint16_t)a.len;
    t->opq_at = (uint16_t)at;
    t->code = c->code;
    t->flag = c->flag;
    t->language = c->language;
    t->version = c->version;
    t->serialize_type = c->serialize_type;
    t->used = true;
cleanup:
    ns_buf_free(&a);
    ns_buf_free(&b);
    return rc;
}

/* The template of c's shape, built when new; NULL when it has none. */
static const ns_rsp_head_t *find(ns_rsp_heads_t *h, const ns_cmd_t *c)
{
    for (unsigned i = 0; i < NS_RSP_HEAD_SLOTS; i++)
        if (same_shape(&h->slot[i], c))
            return &h->slot[i];
    ns_rsp_head_t *t = &h->slot[h->next];
    t->used = false;
    if (build(t, c) != NS_OK)
        return NULL;
    h->next = (h->next + 1) % NS_RSP_HEAD_SLOTS;
    return t;
}

/* How many decimal digits u has. */
static size_t n_digits(uint32_t u)
{
    return 1u + (u >= 10u) + (u >= 100u) + (u >= 1000u) + (u >= 10000u) + (u >= 100000u) +
           (u >= 1000000u) + (u >= 10000000u) + (u >= 100000000u) + (u >= 1000000000u);
}

/* Writes v in decimal at p: len bytes (opaque_len(v)). */
static void put_digits(uint8_t *p, int32_t v, size_t len)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    uint8_t *q = p + len;
    while (u >= 100) {
        uint32_t r = u % 100;
        u /= 100;
        *--q = (uint8_t)pairs[2 * r + 1];
        *--q = (uint8_t)pairs[2 * r];
    }
    if (u >= 10) {
        *--q = (uint8_t)pairs[2 * u + 1];
        *--q = (uint8_t)pairs[2 * u];
    } else {
        *--q = (uint8_t)('0' + u);
    }
    if (v < 0)
        *--q = '-';
}

static size_t opaque_len(int32_t v)
{
    return v < 0 ? 1 + n_digits(0u - (uint32_t)v) : n_digits((uint32_t)v);
}

int ns_rsp_heads_encode(ns_rsp_heads_t *h, ns_buf_t *out, const ns_cmd_t *c)
{
    const ns_rsp_head_t *t = NULL;
    if (c->remark == NULL && !c->has_ext)
        t = find(h, c);
    if (t == NULL)
        return ns_remoting_encode_header(out, c);
    size_t body_len = c->body != NULL ? c->body_len : 0;
    bool json = t->serialize_type == NS_SERIALIZE_JSON;
    /* JSON: the digits replace the template's one '0'; binary: 4 bytes, 4 */
    size_t nd = json ? opaque_len(c->opaque) : 4, skip = json ? 1 : 4;
    size_t hdr_len = t->len - 8 - skip + nd;
    if (body_len > (size_t)INT32_MAX - 4 - hdr_len)
        return NS_ETOOBIG;
    if (out->cap - out->len <= hdr_len + 8 && ns_buf_reserve(out, hdr_len + 8) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = out->data + out->len;
    memcpy(p, t->bytes, t->opq_at);
    ns_be32_write(p, (uint32_t)(4 + hdr_len + body_len));
    ns_be32_write(p + 4, (uint32_t)t->serialize_type << 24 | (uint32_t)hdr_len);
    if (json)
        put_digits(p + t->opq_at, c->opaque, nd);
    else
        ns_be32_write(p + t->opq_at, (uint32_t)c->opaque);
    memcpy(p + t->opq_at + nd, t->bytes + t->opq_at + skip, t->len - t->opq_at - skip);
    out->len += hdr_len + 8;
    out->data[out->len] = 0;
    return NS_OK;
}
