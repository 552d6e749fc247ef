/* 0004_derived_legacy_routes.c - from v4 a materialised route may omit its
 * legacy encoding (legacy_insert 0xFFFFFFFF, see store/keys.h) when that form
 * is derived exactly from the standard one. Existing v3 routes stay valid as
 * they are, so the step changes no data: the version bump is what makes a
 * binary that cannot read such routes refuse the store instead of answering
 * old clients with an error. */
#include "migrations.h"

int ns_migration_0004_derived_legacy_routes(MDB_txn *txn)
{
    (void)txn;
    return 0;
}
