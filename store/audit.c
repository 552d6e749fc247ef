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
