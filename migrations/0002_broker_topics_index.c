/* 0002_broker_topics_index.c - adds broker_topics, the reverse index of
 * queues (brokerName \0 topic -> ""), and fills it from the existing queue
 * data so unregister/wipe-perm no longer scan every topic. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migrations.h"

int ns_migration_0002_broker_topics_index(MDB_txn *txn)
{
    MDB_dbi queues, index;
    MDB_cursor *cur = NULL;
    char *key = NULL;
    int rc = mdb_dbi_open(txn, "queues", 0, &queues);
    if (rc != 0)
        goto out;
    rc = mdb_dbi_open(txn, "broker_topics", MDB_CREATE, &index);
    if (rc != 0)
        goto out;
    rc = mdb_cursor_open(txn, queues, &cur);
    if (rc != 0)
        goto out;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        /* queues key: topic \0 brokerName */
        const char *topic = k.mv_data;
        size_t tlen = strnlen(topic, k.mv_size);
        if (tlen + 1 >= k.mv_size)
            continue; /* malformed key: leave it to the verifier */
        const char *broker = topic + tlen + 1;
        size_t blen = k.mv_size - tlen - 1;
        char *nk = realloc(key, blen + 1 + tlen);
        if (nk == NULL) {
            rc = ENOMEM;
            goto out;
        }
        key = nk;
        memcpy(key, broker, blen);
        key[blen] = 0;
        memcpy(key + blen + 1, topic, tlen);
        MDB_val ik = {blen + 1 + tlen, key}, iv = {0, ""};
        int prc = mdb_put(txn, index, &ik, &iv, 0);
        if (prc != 0) {
            rc = prc;
            goto out;
        }
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
out:
    if (cur)
        mdb_cursor_close(cur);
    free(key);
    return rc;
}
