/* audit.c - history of data-version changes: audit (seq u64 BE -> JSON).
 * meta "audit_seq" holds the last sequence number handed out. */
#include <string.h>

#include "internal.h"

static void seq_key(ns_buf_t *k, uint64_t seq)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(seq >> (56 - 8 * i));
    ns_buf_reset(k);
    ns_buf_append(k, b, 8);
}

int ns_audit_append(ns_txn_t *t, const char *json, size_t len, uint64_t *seq_out)
{
    uint64_t seq = 0;
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_meta_get_u64(t, "audit_seq", &seq);
    if (rc == NS_ENOTFOUND)
        rc = NS_OK;
    seq++;
    rc = rc ? rc : ns_meta_put_u64(t, "audit_seq", seq);
    if (rc == NS_OK) {
        seq_key(&k, seq);
        rc = k.len == 8 ? ns_db_put(t, NS_DB_AUDIT, &k, json, len) : NS_ENOMEM;
    }
    if (rc == NS_OK && seq_out)
        *seq_out = seq;
    ns_buf_free(&k);
    return rc;
}

struct audit_walk {
    ns_audit_cb cb;
    void *ctx;
    ns_buf_t tmp;
};

static int audit_walk_cb(const uint8_t *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct audit_walk *w = ctx;
    if (kl != 8)
        return NS_ECORRUPT;
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++)
        seq = seq << 8 | ks[i];
    ns_buf_reset(&w->tmp);
    if (ns_buf_append(&w->tmp, v, vl) != NS_OK)
        return NS_ENOMEM;
    return w->cb(seq, (const char *)w->tmp.data, vl, w->ctx);
}

int ns_audit_iter(ns_txn_t *t, ns_audit_cb cb, void *ctx)
{
    struct audit_walk w = {cb, ctx, NS_BUF_INIT};
    int rc = ns_db_walk(t, NS_DB_AUDIT, NULL, audit_walk_cb, &w);
    ns_buf_free(&w.tmp);
    return rc;
}

int ns_audit_del(ns_txn_t *t, uint64_t seq)
{
    ns_buf_t k = NS_BUF_INIT;
    seq_key(&k, seq);
    int rc = k.len == 8 ? ns_db_del(t, NS_DB_AUDIT, &k) : NS_ENOMEM;
    ns_buf_free(&k);
    return rc;
}
