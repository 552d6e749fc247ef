/* 0011_packed_seqlogs.c - sequence log records (the audit history and the
 * admin trail) of NS_SEQLOG_PACK_MIN bytes or more are stored packed
 * (store/seqlog_pack.h): the plain ones already there are rewritten packed
 * when that is shorter, so a store upgraded at 1,000 brokers gives back the
 * overflow page each first registration's record took. A value that is
 * packed already is left as it is; nothing else changes. */
#include <errno.h>
#include <string.h>

#include "migrations.h"
#include "ns/err.h"
#include "store/seqlog_pack.h"

static int pack_table(MDB_txn *txn, const char *name)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    uint8_t kb[64]; /* sequence numbers: 8 bytes */
    ns_buf_t packed = NS_BUF_INIT;
    int rc = mdb_dbi_open(txn, name, 0, &dbi);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0 || (rc = mdb_cursor_open(txn, dbi, &cur)) != 0)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (v.mv_size < NS_SEQLOG_PACK_MIN || ns_seqlog_is_packed(v.mv_data, v.mv_size))
            continue;
        ns_buf_reset(&packed);
        int prc = ns_seqlog_pack(&packed, v.mv_data, v.mv_size);
        if (prc == NS_EINVAL)
            continue; /* too large to pack: stays plain, as a new one would */
        if (prc != NS_OK) {
            rc = ENOMEM;
            break;
        }
        if (packed.len >= v.mv_size || k.mv_size > sizeof kb)
            continue;
        /* the key out of the page first: the put rewrites the page it is on */
        memcpy(kb, k.mv_data, k.mv_size);
        MDB_val key = {k.mv_size, kb}, nv = {packed.len, packed.data};
        if ((rc = mdb_cursor_put(cur, &key, &nv, MDB_CURRENT)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    ns_buf_free(&packed);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int ns_migration_0011_packed_seqlogs(MDB_txn *txn)
{
    int rc = pack_table(txn, "audit");
    return rc ? rc : pack_table(txn, "admin_audit");
}
