/* clear.c - emptying the store's tables in one write transaction
 * (namesrvctl restore --replace). meta keeps the schema version and the
 * audit sequence, so history numbers never repeat; the admin trail
 * (admin_audit) is kept whole: it outlives a restore. */
#include "internal.h"

int ns_store_clear(ns_txn_t *t)
{
    if (!t->write)
        return NS_EINVAL;
    ns_digest_forget(t); /* the digest table is emptied with the rest */
    for (int i = 0; i < NS_DB_COUNT; i++) {
        MDB_dbi dbi;
        if (i == NS_DB_META || i == NS_DB_ADMIN_AUDIT || ns_dbi(t, i, &dbi) != NS_OK)
            continue;
        int rc = mdb_drop(t->txn, dbi, 0); /* 0: empty it, keep the table */
        if (rc != 0)
            return ns_lmdb_error(rc);
    }
    return NS_OK;
}

/* The name of the first of tables[0..n) that has a row, NULL if none. */
static const char *first_nonempty(ns_txn_t *t, const int *tables, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        MDB_dbi dbi;
        MDB_stat st;
        if (ns_dbi(t, tables[i], &dbi) != NS_OK)
            continue; /* a table this schema does not have is empty */
        if (mdb_stat(t->txn, dbi, &st) != 0 || st.ms_entries > 0)
            return ns_db_names[tables[i]]; /* unreadable counts as not empty */
    }
    return NULL;
}

const char *ns_store_topology_nonempty(ns_txn_t *t)
{
    static const int tables[] = {NS_DB_CLUSTERS,    NS_DB_GROUPS,       NS_DB_LIVE, NS_DB_QUEUES,
                                 NS_DB_ROUTES,      NS_DB_MAPPINGS,     NS_DB_KVNS, NS_DB_KV,
                                 NS_DB_KV_VERSIONS, NS_DB_BROKER_TOPICS};
    return first_nonempty(t, tables, sizeof tables / sizeof tables[0]);
}

const char *ns_store_brokers_nonempty(ns_txn_t *t)
{
    static const int tables[] = {NS_DB_CLUSTERS, NS_DB_GROUPS,   NS_DB_LIVE,         NS_DB_QUEUES,
                                 NS_DB_ROUTES,   NS_DB_MAPPINGS, NS_DB_BROKER_TOPICS};
    return first_nonempty(t, tables, sizeof tables / sizeof tables[0]);
}
