/* 0006_users.c - adds the users table: access key -> packed user record
 * (secret, role, enabled, source allowlist, broker grants); store/keys.h. */
#include "migrations.h"

int ns_migration_0006_users(MDB_txn *txn)
{
    MDB_dbi dbi;
    return mdb_dbi_open(txn, "users", MDB_CREATE, &dbi);
}
