/* 0012_hashed_route_keys.c - from v12 the routes table is keyed by the
 * topic name's 8-byte hash, the name first in the value
 * (store/route_key.h): a lookup's descent then compares integers instead
 * of names. Every route is rewritten under its new key into a table of its
 * own, the old table emptied and filled from it in order, and the scratch
 * table dropped: all in the migration's one transaction, so a crash leaves
 * the v11 table as it was. The routes themselves do not change. */
#include <string.h>

#include "migrations.h"
#include "store/route_key.h"

#define SCRATCH "routes_v12_scratch"

/* Every route of from, rekeyed into to. */
static int rekey(MDB_txn *txn, MDB_dbi from, MDB_dbi to)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, from, &cur);
    if (rc != 0)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        uint8_t *route;
        rc = ns_route_entry_reserve(txn, to, k.mv_data, k.mv_size, v.mv_size, &route);
        if (rc != 0)
            break;
        memcpy(route, v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every record of from appended to the empty table to (same order). */
static int copy_all(MDB_txn *txn, MDB_dbi from, MDB_dbi to)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, from, &cur);
    if (rc != 0)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
        if ((rc = mdb_put(txn, to, &k, &v, MDB_APPEND)) != 0)
            break;
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int ns_migration_0012_hashed_route_keys(MDB_txn *txn)
{
    MDB_dbi routes, scratch;
    int rc = mdb_dbi_open(txn, "routes", 0, &routes);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc != 0 || (rc = mdb_dbi_open(txn, SCRATCH, MDB_CREATE, &scratch)) != 0)
        return rc;
    rc = rekey(txn, routes, scratch);
    rc = rc ? rc : mdb_drop(txn, routes, 0);
    rc = rc ? rc : copy_all(txn, scratch, routes);
    rc = rc ? rc : mdb_drop(txn, scratch, 1);
    return rc;
}
