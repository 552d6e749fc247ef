/* authlog.c - refused requests (v6): auth_refusals (seq u64 BE -> JSON),
 * meta "auth_refusal_seq" holds the last sequence number. The writer keeps
 * the newest `keep` records (ns_authlog_append trims). */
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

int ns_authlog_append(ns_txn_t *t, const char *json, size_t len, uint64_t keep)
{
    uint64_t seq = 0;
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_meta_get_u64(t, "auth_refusal_seq", &seq);
    if (rc == NS_ENOTFOUND)
        rc = NS_OK;
    seq++;
    rc = rc ? rc : ns_meta_put_u64(t, "auth_refusal_seq", seq);
    if (rc == NS_OK) {
        seq_key(&k, seq);
        rc = k.len == 8 ? ns_db_put(t, NS_DB_AUTH_REFUSALS, &k, json, len) : NS_ENOMEM;
    }
    if (rc == NS_OK && keep > 0 && seq > keep) {
        seq_key(&k, seq - keep);
        rc = k.len == 8 ? ns_db_del(t, NS_DB_AUTH_REFUSALS, &k) : NS_ENOMEM;
    }
    ns_buf_free(&k);
    return rc;
}

struct authlog_walk {
    ns_audit_cb cb;
    void *ctx;
    ns_buf_t tmp;
};

static int walk_cb(const uint8_t *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct authlog_walk *w = ctx;
    if (kl != 8)
        return NS_ECORRUPT;
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++)
        seq = seq << 8 | ks[i];
    ns_buf_reset(&w->tmp);
    if (ns_buf_append(&w->tmp, v, vl) != NS_OK || ns_buf_append(&w->tmp, "", 1) != NS_OK)
        return NS_ENOMEM;
    return w->cb(seq, (const char *)w->tmp.data, vl, w->ctx);
}

int ns_authlog_iter(ns_txn_t *t, ns_audit_cb cb, void *ctx)
{
    MDB_dbi dbi;
    if (ns_dbi(t, NS_DB_AUTH_REFUSALS, &dbi) != NS_OK)
        return NS_OK;
    struct authlog_walk w = {cb, ctx, NS_BUF_INIT};
    int rc = ns_db_walk(t, NS_DB_AUTH_REFUSALS, NULL, walk_cb, &w);
    ns_buf_free(&w.tmp);
    return rc;
}
