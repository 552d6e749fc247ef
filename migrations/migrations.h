/* migrations.h - numbered schema steps of the LMDB store.
 *
 * Each step is self-contained: it receives the open write transaction and
 * creates or rewrites what its version needs. store/env.c runs every pending
 * step and the schema_version bump in ONE write transaction, so a crash in
 * the middle of a migration applies nothing. Steps are never edited once
 * released; a change is a new step at the end of the table. */
#ifndef NS_MIGRATIONS_H
#define NS_MIGRATIONS_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t version; /* the schema version after this step */
    const char *name;
    int (*apply)(MDB_txn *txn); /* returns an LMDB or errno code, 0 = ok */
} ns_migration_t;

extern const ns_migration_t ns_migrations[];
extern const size_t ns_migrations_count;

int ns_migration_0001_initial(MDB_txn *txn);
int ns_migration_0002_broker_topics_index(MDB_txn *txn);
int ns_migration_0003_audit(MDB_txn *txn);
int ns_migration_0004_derived_legacy_routes(MDB_txn *txn);
int ns_migration_0005_admin_audit(MDB_txn *txn);
int ns_migration_0006_users(MDB_txn *txn);
int ns_migration_0008_auth_refusals_to_trail(MDB_txn *txn);
int ns_migration_0009_fleet_digest(MDB_txn *txn);
int ns_migration_0010_kv_versions(MDB_txn *txn);
int ns_migration_0011_packed_seqlogs(MDB_txn *txn);

#endif
