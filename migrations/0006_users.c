/* 0006_users.c - adds the users table (access key -> packed user record:
 * secret, role, enabled, source allowlist, broker grants) and the log of
 * refused requests (auth_refusals); store/keys.h. */
#include "migrations.h"

int ns_migration_0006_users(MDB_txn *txn)
{
    MDB_dbi dbi;
    int rc = mdb_dbi_open(txn, "users", MDB_CREATE, &dbi);
    return rc ? rc : mdb_dbi_open(txn, "auth_refusals", MDB_CREATE, &dbi);
}
