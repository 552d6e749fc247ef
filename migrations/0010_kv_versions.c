/* 0010_kv_versions.c - adds the kv_versions table (store/keys.h): the
 * version of each KV entry and the tombstones of deleted ones, which
 * kvSync merges by. Existing entries get no row: an entry without one has
 * version (0, 0), below any write made since, so the first versioned write
 * of a key anywhere in the fleet wins over what every server held before.
 * Nothing is rewritten: the kv table keeps its format (GET_KV_CONFIG, the
 * list, the dump and the digest read it as before), and the versions sit in
 * a table of their own whose rows carry a format byte, so an old value and
 * a version can never be read as one another. */
#include "migrations.h"

int ns_migration_0010_kv_versions(MDB_txn *txn)
{
    MDB_dbi dbi;
    return mdb_dbi_open(txn, "kv_versions", MDB_CREATE, &dbi);
}
