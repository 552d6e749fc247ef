/* 0009_fleet_digest.c - adds the digest table (the fleet digest's nodes,
 * store/keys.h) and marks it stale in meta ("digest_stale"): the nodes are
 * sums of hashes of records whose encodings the store's code owns, so the
 * store computes them from the data once the migration has committed
 * (store/env.c), in its own write transaction, rather than this step
 * decoding every table a second way. */
#include "migrations.h"

int ns_migration_0009_fleet_digest(MDB_txn *txn)
{
    MDB_dbi dbi, meta;
    uint64_t one = 1;
    MDB_val k = {12, "digest_stale"}, v = {sizeof one, &one};
    int rc = mdb_dbi_open(txn, "digest", MDB_CREATE, &dbi);
    rc = rc ? rc : mdb_dbi_open(txn, "meta", 0, &meta);
    return rc ? rc : mdb_put(txn, meta, &k, &v, 0);
}
