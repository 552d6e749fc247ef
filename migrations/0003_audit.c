/* 0003_audit.c - adds the audit table: the history of every broker's
 * topic-config data versions (seq u64 BE -> JSON record). */
#include "migrations.h"

int ns_migration_0003_audit(MDB_txn *txn)
{
    MDB_dbi dbi;
    return mdb_dbi_open(txn, "audit", MDB_CREATE, &dbi);
}
