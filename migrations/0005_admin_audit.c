/* 0005_admin_audit.c - adds admin_audit: the trail of mutating admin
 * requests (seq u64 BE -> JSON record: time, peer, request code and name,
 * fields, result), written in the same transaction as their effect. */
#include "migrations.h"

int ns_migration_0005_admin_audit(MDB_txn *txn)
{
    MDB_dbi dbi;
    return mdb_dbi_open(txn, "admin_audit", MDB_CREATE, &dbi);
}
