/* 0001_initial.c - the first schema: KV config, clusters, broker groups,
 * registered addresses, queue data, materialised routes, static-topic
 * mappings (key layout: store/keys.h). */
#include "migrations.h"

int ns_migration_0001_initial(MDB_txn *txn)
{
    static const char *const names[] = {"meta", "kvns",   "kv",     "clusters", "groups",
                                        "live", "queues", "routes", "mappings"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        MDB_dbi dbi;
        int rc = mdb_dbi_open(txn, names[i], MDB_CREATE, &dbi);
        if (rc != 0)
            return rc;
    }
    return 0;
}
