/* authlog.c - refused requests (v6): auth_refusals (seq u64 BE -> JSON), a
 * sequence log (seqlog.c); meta "auth_refusal_seq" holds the last sequence
 * number. The writer keeps the newest `keep` records (ns_authlog_append
 * trims). */
#include "internal.h"

int ns_authlog_append(ns_txn_t *t, const char *json, size_t len, uint64_t keep)
{
    uint64_t seq = 0;
    int rc = ns_seqlog_append(t, NS_DB_AUTH_REFUSALS, "auth_refusal_seq", json, len, &seq);
    if (rc == NS_OK && keep > 0 && seq > keep)
        rc = ns_seqlog_del(t, NS_DB_AUTH_REFUSALS, seq - keep);
    return rc;
}

int ns_authlog_iter(ns_txn_t *t, ns_audit_cb cb, void *ctx)
{
    MDB_dbi dbi;
    if (ns_dbi(t, NS_DB_AUTH_REFUSALS, &dbi) != NS_OK)
        return NS_OK; /* no table: nothing refused yet */
    return ns_seqlog_iter(t, NS_DB_AUTH_REFUSALS, 0, cb, ctx);
}
