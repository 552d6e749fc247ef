/* migrations.c - the ordered table of schema steps (see migrations.h). */
#include "migrations.h"

const ns_migration_t ns_migrations[] = {
    {1, "initial tables", ns_migration_0001_initial},
    {2, "broker_topics reverse index of queues", ns_migration_0002_broker_topics_index},
    {3, "audit history of data versions", ns_migration_0003_audit},
    {4, "routes may derive their legacy form", ns_migration_0004_derived_legacy_routes},
    {5, "admin_audit trail of admin requests", ns_migration_0005_admin_audit},
    {6, "users and their roles for request signatures", ns_migration_0006_users},
    /* 7: never used. It was held for the damage-check and backup work, which
     * needed no schema step; a version number is not handed out twice, and
     * store/env.c runs whatever steps lie above a store's version, gaps and all. */
    {8, "authentication refusals move into the admin audit trail",
     ns_migration_0008_auth_refusals_to_trail},
    {9, "fleet digest: a tree of hashes over the served state", ns_migration_0009_fleet_digest},
    {10, "kv_versions: versions and tombstones of KV entries", ns_migration_0010_kv_versions},
    {11, "history and admin trail records of 256 bytes or more stored packed (zlib)",
     ns_migration_0011_packed_seqlogs},
};

const size_t ns_migrations_count = sizeof ns_migrations / sizeof ns_migrations[0];
