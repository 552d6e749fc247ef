/* admin_audit.c - the trail of admin requests: admin_audit (seq u64 BE ->
 * JSON record), meta "admin_audit_seq" = the last sequence handed out.
 *
 * Records are appended by the writer in the transaction that applies the
 * request's effect, so a committed change always has its record and a
 * rolled-back one never has. Trimming keeps the newest `retention` records:
 * sequences are dense, so everything below last - retention + 1 goes. */
#include <string.h>

#include "internal.h"

#define SEQ_KEY "admin_audit_seq"

static void seq_bytes(uint8_t b[8], uint64_t seq)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(seq >> (56 - 8 * i));
}

static uint64_t seq_of(const uint8_t *b)
{
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++)
        seq = seq << 8 | b[i];
    return seq;
}

/* Deletes records with seq < keep_from, oldest first. */
static int trim(ns_txn_t *t, uint64_t keep_from)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = ns_dbi(t, NS_DB_ADMIN_AUDIT, &dbi);
    if (rc != NS_OK)
        return rc;
    if ((rc = mdb_cursor_open(t->txn, dbi, &cur)) != 0)
        return ns_lmdb_error(rc);
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        if (k.mv_size != 8 || seq_of(k.mv_data) >= keep_from)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    return rc == 0 || rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
}

int ns_admin_audit_append(ns_txn_t *t, const char *json, size_t len, int64_t retention,
                          uint64_t *seq_out)
{
    uint64_t seq = 0;
    uint8_t kb[8];
    MDB_dbi dbi;
    if (retention <= 0)
        return NS_OK;
    int rc = ns_dbi(t, NS_DB_ADMIN_AUDIT, &dbi);
    if (rc != NS_OK)
        return rc;
    rc = ns_meta_get_u64(t, SEQ_KEY, &seq);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    seq++;
    if ((rc = ns_meta_put_u64(t, SEQ_KEY, seq)) != NS_OK)
        return rc;
    seq_bytes(kb, seq);
    MDB_val k = ns_val(kb, 8), v = ns_val(json, len);
    if ((rc = mdb_put(t->txn, dbi, &k, &v, 0)) != 0)
        return ns_lmdb_error(rc);
    if ((uint64_t)retention < seq && (rc = trim(t, seq - (uint64_t)retention + 1)) != NS_OK)
        return rc;
    if (seq_out)
        *seq_out = seq;
    return NS_OK;
}

int ns_admin_audit_iter(ns_txn_t *t, uint64_t from_seq, ns_audit_cb cb, void *ctx)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    uint8_t kb[8];
    ns_buf_t tmp = NS_BUF_INIT;
    int rc = ns_dbi(t, NS_DB_ADMIN_AUDIT, &dbi);
    if (rc != NS_OK)
        return rc;
    if ((rc = mdb_cursor_open(t->txn, dbi, &cur)) != 0)
        return ns_lmdb_error(rc);
    seq_bytes(kb, from_seq);
    MDB_val k = ns_val(kb, 8), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = NS_ECORRUPT;
            goto out;
        }
        /* a NUL-terminated copy: the callback may parse it as a C string */
        ns_buf_reset(&tmp);
        if (ns_buf_append(&tmp, v.mv_data, v.mv_size) != NS_OK ||
            ns_buf_append_u8(&tmp, 0) != NS_OK) {
            rc = NS_ENOMEM;
            goto out;
        }
        rc = cb(seq_of(k.mv_data), (const char *)tmp.data, v.mv_size, ctx);
        if (rc != 0)
            goto out;
    }
    rc = rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
out:
    mdb_cursor_close(cur);
    ns_buf_free(&tmp);
    return rc;
}

int ns_admin_audit_count(ns_txn_t *t, size_t *out)
{
    return ns_db_count(t, NS_DB_ADMIN_AUDIT, out);
}

const char *ns_store_lmdb_version(void)
{
    return mdb_version(NULL, NULL, NULL);
}
