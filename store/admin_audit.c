/* admin_audit.c - the trail of admin requests: admin_audit (seq u64 BE ->
 * JSON record), meta "admin_audit_seq" = the last sequence handed out.
 *
 * Records are appended by the writer in the transaction that applies the
 * request's effect, so a committed change always has its record and a
 * rolled-back one never has. Trimming keeps the newest `retention` records:
 * sequences are dense, so everything below last - retention + 1 goes.
 * The table is a sequence log (seqlog.c). */
#include "internal.h"

#define SEQ_KEY "admin_audit_seq"

int ns_admin_audit_append(ns_txn_t *t, const char *json, size_t len, int64_t retention,
                          uint64_t *seq_out)
{
    uint64_t seq = 0;
    if (retention <= 0)
        return NS_OK;
    int rc = ns_seqlog_append(t, NS_DB_ADMIN_AUDIT, SEQ_KEY, json, len, &seq);
    if (rc == NS_OK && (uint64_t)retention < seq)
        rc = ns_seqlog_trim(t, NS_DB_ADMIN_AUDIT, seq - (uint64_t)retention + 1);
    if (rc == NS_OK && seq_out)
        *seq_out = seq;
    return rc;
}

int ns_admin_audit_iter(ns_txn_t *t, uint64_t from_seq, ns_audit_cb cb, void *ctx)
{
    return ns_seqlog_iter(t, NS_DB_ADMIN_AUDIT, from_seq, cb, ctx);
}

int ns_admin_audit_count(ns_txn_t *t, size_t *out)
{
    return ns_db_count(t, NS_DB_ADMIN_AUDIT, out);
}

const char *ns_store_lmdb_version(void)
{
    return mdb_version(NULL, NULL, NULL);
}
