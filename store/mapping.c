/* mapping.c - static-topic mappings: mappings (topic \0 bname -> packed
 * TopicQueueMappingInfo: scope, totalQueues, epoch, dirty, n, pairs). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int ns_mapping_put(ns_txn_t *t, const ns_mapping_info_t *m)
{
    ns_buf_t k = NS_BUF_INIT, v = NS_BUF_INIT;
    int rc = ns_key2(&k, m->topic, m->bname);
    rc = rc ? rc : ns_pack_str(&v, m->scope);
    rc = rc ? rc : ns_pack_i64(&v, m->total_queues);
    rc = rc ? rc : ns_pack_i64(&v, m->epoch);
    rc = rc ? rc : ns_pack_u8(&v, m->dirty);
    rc = rc ? rc : ns_pack_i64(&v, (int64_t)m->n_curr_id_map);
    for (size_t i = 0; rc == NS_OK && i < m->n_curr_id_map; i++) {
        rc = ns_pack_i64(&v, m->curr_id_map[i].logical);
        rc = rc ? rc : ns_pack_i64(&v, m->curr_id_map[i].physical);
    }
    rc = rc ? rc : ns_db_put(t, NS_DB_MAPPINGS, &k, v.data, v.len);
    ns_buf_free(&k);
    ns_buf_free(&v);
    return rc;
}

struct mapping_walk {
    ns_mapping_cb cb;
    void *ctx;
    const char *topic; /* NULL: the key holds the topic too */
};

static int mapping_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct mapping_walk *w = ctx;
    ns_mapping_info_t m;
    ns_id_pair_t *pairs = NULL;
    const char *kstr = ks;
    memset(&m, 0, sizeof m);
    if (w->topic) {
        m.topic = w->topic;
        m.bname = kstr;
    } else {
        size_t tlen = strnlen(kstr, kl);
        if (tlen >= kl)
            return NS_ECORRUPT;
        m.topic = kstr;
        m.bname = kstr + tlen + 1;
    }
    ns_unpack_t u = {v, v + vl, false};
    m.scope = ns_unpack_str(&u);
    m.total_queues = (int32_t)ns_unpack_i64(&u);
    m.epoch = ns_unpack_i64(&u);
    m.dirty = ns_unpack_u8(&u) != 0;
    int64_t n = ns_unpack_i64(&u);
    if (u.bad || n < 0 || n > 1 << 20)
        return NS_ECORRUPT;
    pairs = calloc((size_t)n + 1, sizeof *pairs);
    if (pairs == NULL)
        return NS_ENOMEM;
    for (int64_t i = 0; i < n; i++) {
        pairs[i].logical = (int32_t)ns_unpack_i64(&u);
        pairs[i].physical = (int32_t)ns_unpack_i64(&u);
    }
    int rc = NS_ECORRUPT;
    if (!u.bad) {
        m.curr_id_map = pairs;
        m.n_curr_id_map = (size_t)n;
        rc = w->cb(&m, w->ctx);
    }
    free(pairs);
    return rc;
}

int ns_mapping_iter_topic(ns_txn_t *t, const char *topic, ns_mapping_cb cb, void *ctx)
{
    size_t n = 0;
    int crc = ns_db_count(t, NS_DB_MAPPINGS, &n);
    if (crc != NS_OK || n == 0)
        return crc; /* the usual case: no static topics, no cursor needed */
    struct mapping_walk w = {cb, ctx, topic};
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, topic, NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_MAPPINGS, &k, mapping_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}

int ns_mapping_iter(ns_txn_t *t, ns_mapping_cb cb, void *ctx)
{
    struct mapping_walk w = {cb, ctx, NULL};
    return ns_db_walk(t, NS_DB_MAPPINGS, NULL, mapping_walk_cb, &w);
}
