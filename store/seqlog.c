/* seqlog.c - sequence logs (internal.h): tables of JSON records under
 * 8-byte big-endian sequence numbers, with the last number handed out kept
 * under a meta key. The audit history (audit.c) and the admin trail
 * (admin_audit.c) are sequence logs.
 * Numbers are dense: each append takes the next one, so the newest N
 * records are those above last - N. */
#include <string.h>

#include "internal.h"

static void seq_key(uint8_t b[8], uint64_t seq)
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

int ns_seqlog_append(ns_txn_t *t, int db, const char *seq_meta, const char *json, size_t len,
                     uint64_t *seq_out)
{
    uint64_t seq = 0;
    uint8_t kb[8];
    MDB_dbi dbi;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    rc = ns_meta_get_u64(t, seq_meta, &seq);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    seq++;
    if ((rc = ns_meta_put_u64(t, seq_meta, seq)) != NS_OK)
        return rc;
    seq_key(kb, seq);
    MDB_val k = ns_val(kb, 8), v = ns_val(len ? json : "", len);
    ns_txn_wrote(t, 8 + len);
    if ((rc = mdb_put(t->txn, dbi, &k, &v, 0)) != 0)
        return ns_lmdb_error(rc);
    if (seq_out)
        *seq_out = seq;
    return NS_OK;
}

int ns_seqlog_iter(ns_txn_t *t, int db, uint64_t from_seq, ns_audit_cb cb, void *ctx)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    uint8_t kb[8];
    ns_buf_t tmp = NS_BUF_INIT;
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    if ((rc = mdb_cursor_open(t->txn, dbi, &cur)) != 0)
        return ns_lmdb_error(rc);
    seq_key(kb, from_seq);
    MDB_val k = ns_val(kb, 8), v;
    /* from the first key, even one too short to be a sequence number */
    for (rc = mdb_cursor_get(cur, &k, &v, from_seq ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
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

int ns_seqlog_del(ns_txn_t *t, int db, uint64_t seq)
{
    MDB_dbi dbi;
    uint8_t kb[8];
    int rc = ns_dbi(t, db, &dbi);
    if (rc != NS_OK)
        return rc;
    seq_key(kb, seq);
    MDB_val k = ns_val(kb, 8);
    rc = mdb_del(t->txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? NS_OK : ns_lmdb_error(rc);
}

int ns_seqlog_trim(ns_txn_t *t, int db, uint64_t keep_from)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = ns_dbi(t, db, &dbi);
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
