/* audit.c - history of data-version changes: audit (seq u64 BE -> JSON), a
 * sequence log (seqlog.c); meta "audit_seq" holds the last sequence number
 * handed out. */
#include "internal.h"

int ns_audit_append(ns_txn_t *t, const char *json, size_t len, uint64_t *seq_out)
{
    return ns_seqlog_append(t, NS_DB_AUDIT, "audit_seq", json, len, seq_out);
}

int ns_audit_iter(ns_txn_t *t, ns_audit_cb cb, void *ctx)
{
    return ns_seqlog_iter(t, NS_DB_AUDIT, 0, cb, ctx);
}

int ns_audit_del(ns_txn_t *t, uint64_t seq)
{
    return ns_seqlog_del(t, NS_DB_AUDIT, seq);
}

int ns_audit_trim(ns_txn_t *t, int64_t retention)
{
    uint64_t last = 0;
    int rc = ns_meta_get_u64(t, "audit_seq", &last);
    if (rc != NS_OK || retention < 0 || last <= (uint64_t)retention)
        return rc == NS_ENOTFOUND ? NS_OK : rc;
    return ns_seqlog_trim(t, NS_DB_AUDIT, last - (uint64_t)retention + 1);
}
