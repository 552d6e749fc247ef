/* queue.c - queue data: queues (topic \0 brokerName -> 4 x i32 LE) and its
 * reverse index broker_topics (brokerName \0 topic -> ""), always changed
 * together (invariant I6 of keys.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int index_key(ns_buf_t *k, const char *broker_name, const char *topic)
{
    return ns_key2(k, broker_name, topic);
}

void ns_queue_decode(const uint8_t *v, size_t vl, ns_queue_data_t *out)
{
    int32_t f[4] = {0, 0, 0, 0};
    memcpy(f, v, vl < sizeof f ? vl : sizeof f);
    out->perm = f[0];
    out->read_queue_nums = f[1];
    out->write_queue_nums = f[2];
    out->topic_sys_flag = f[3];
}

/* One B-tree search: an existing record is compared and overwritten through
 * the cursor, and only a new one adds its index entry (which I6 says exists
 * otherwise; rewriting it would dirty the index pages of every topic
 * re-registered). */
int ns_queue_update(ns_txn_t *t, const char *topic, const ns_queue_data_t *q, ns_queue_data_t *had,
                    bool *existed, bool *wrote)
{
    ns_skey_t k;
    MDB_cursor *cur = NULL;
    int32_t v[4] = {q->perm, q->read_queue_nums, q->write_queue_nums, q->topic_sys_flag};
    *existed = *wrote = false;
    int rc = ns_skey2(&k, topic, q->broker_name);
    if (rc == NS_OK && (rc = ns_db_cursor_take(t, NS_DB_QUEUES, &cur)) == NS_OK) {
        MDB_val mk = ns_val(k.buf.data, k.buf.len), mv;
        int found = mdb_cursor_get(cur, &mk, &mv, MDB_SET_KEY);
        if (found == 0) {
            *existed = true;
            ns_queue_decode(mv.mv_data, mv.mv_size, had);
            had->broker_name = q->broker_name;
            if (mv.mv_size != sizeof v || memcmp(mv.mv_data, v, sizeof v) != 0) {
                mv = ns_val(v, sizeof v);
                rc = ns_digest_queue(t, topic, had, q);
                ns_txn_wrote(t, mk.mv_size + mv.mv_size);
                rc = rc ? rc : ns_lmdb_error(mdb_cursor_put(cur, &mk, &mv, MDB_CURRENT));
                *wrote = rc == NS_OK;
            }
        } else if (found == MDB_NOTFOUND) {
            mv = ns_val(v, sizeof v);
            rc = ns_digest_queue(t, topic, NULL, q);
            ns_txn_wrote(t, mk.mv_size + mv.mv_size);
            rc = rc ? rc : ns_lmdb_error(mdb_cursor_put(cur, &mk, &mv, 0));
            if (rc == NS_OK) { /* the index key: broker_name \0 topic */
                ns_skey_free(&k);
                rc = ns_skey2(&k, q->broker_name, topic);
            }
            rc = rc ? rc : ns_db_put(t, NS_DB_BROKER_TOPICS, &k.buf, "", 0);
            *wrote = rc == NS_OK;
        } else {
            rc = ns_lmdb_error(found);
        }
        ns_db_cursor_give(t, NS_DB_QUEUES, cur);
    }
    ns_skey_free(&k);
    return rc;
}

int ns_queue_put(ns_txn_t *t, const char *topic, const ns_queue_data_t *q)
{
    ns_queue_data_t had;
    bool existed, wrote;
    return ns_queue_update(t, topic, q, &had, &existed, &wrote);
}

int ns_queue_get(ns_txn_t *t, const char *topic, const char *broker_name, ns_queue_data_t *out)
{
    ns_skey_t k;
    ns_slice_t v;
    int rc = ns_skey2(&k, topic, broker_name);
    rc = rc ? rc : ns_db_get(t, NS_DB_QUEUES, &k.buf, &v);
    if (rc == NS_OK) {
        ns_queue_decode(v.ptr, v.len, out);
        out->broker_name = broker_name;
    }
    ns_skey_free(&k);
    return rc;
}

/* Deletes the queues row of (topic, broker_name) through cur, with its
 * digest change; NS_OK when there is none (I6 broken: verify reports it). */
static int del_queue_row(ns_txn_t *t, MDB_cursor *cur, ns_buf_t *k, const char *topic,
                         const char *broker_name)
{
    int rc = ns_key2(k, topic, broker_name);
    if (rc != NS_OK)
        return rc;
    MDB_val mk = ns_val(k->data, k->len), mv;
    int found = mdb_cursor_get(cur, &mk, &mv, MDB_SET_KEY);
    if (found == MDB_NOTFOUND)
        return NS_OK;
    if (found != 0)
        return ns_lmdb_error(found);
    ns_queue_data_t had;
    ns_queue_decode(mv.mv_data, mv.mv_size, &had);
    had.broker_name = broker_name;
    rc = ns_digest_queue(t, topic, &had, NULL);
    ns_txn_wrote(t, k->len);
    return rc ? rc : ns_lmdb_error(mdb_cursor_del(cur, 0));
}

int ns_queue_del(ns_txn_t *t, const char *topic, const char *broker_name)
{
    ns_buf_t k = NS_BUF_INIT;
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    int rc = ns_dbi(t, NS_DB_QUEUES, &dbi);
    rc = rc ? rc : ns_lmdb_error(mdb_cursor_open(t->txn, dbi, &cur));
    rc = rc ? rc : del_queue_row(t, cur, &k, topic, broker_name);
    rc = rc ? rc : index_key(&k, broker_name, topic);
    rc = rc ? rc : ns_db_del(t, NS_DB_BROKER_TOPICS, &k);
    if (cur)
        mdb_cursor_close(cur);
    ns_buf_free(&k);
    return rc;
}

/* The index rows of broker_name are walked and deleted through one cursor
 * and their queues rows through another: neighbouring rows share pages, so
 * a delete rarely needs a search from the root (mdb_del's own cursor does
 * one every time). From the last row back: LMDB lays a page's rows out in
 * key order from its end down, and a delete moves the rows laid out below
 * the deleted one. The transaction that removes a group of 200,000 topics
 * took 0.41 s instead of 0.53 s (docs/performance.md). */
int ns_queue_del_broker(ns_txn_t *t, const char *broker_name, ns_name_cb cb, void *ctx)
{
    MDB_dbi qdbi, idbi;
    MDB_cursor *qc = NULL, *ic = NULL;
    ns_buf_t pfx = NS_BUF_INIT, qk = NS_BUF_INIT, topic = NS_BUF_INIT;
    int rc = ns_dbi(t, NS_DB_QUEUES, &qdbi);
    rc = rc ? rc : ns_dbi(t, NS_DB_BROKER_TOPICS, &idbi);
    rc = rc ? rc : ns_key2(&pfx, broker_name, NULL);
    rc = rc ? rc : ns_lmdb_error(mdb_cursor_open(t->txn, qdbi, &qc));
    rc = rc ? rc : ns_lmdb_error(mdb_cursor_open(t->txn, idbi, &ic));
    if (rc != NS_OK)
        goto out;
    pfx.data[pfx.len - 1] = 1; /* broker_name \1: just past its rows */
    MDB_val k = ns_val(pfx.data, pfx.len), v;
    int found = mdb_cursor_get(ic, &k, &v, MDB_SET_RANGE);
    if (found == 0 || found == MDB_NOTFOUND) /* the row before, or the last of all */
        found = mdb_cursor_get(ic, &k, &v, found == 0 ? MDB_PREV : MDB_LAST);
    pfx.data[pfx.len - 1] = 0;
    for (; found == 0 && rc == NS_OK; found = mdb_cursor_get(ic, &k, &v, MDB_PREV)) {
        if (k.mv_size < pfx.len || memcmp(k.mv_data, pfx.data, pfx.len) != 0)
            break;
        /* copied: the page under k changes with the deletes */
        ns_buf_reset(&topic);
        rc = ns_buf_append(&topic, (const uint8_t *)k.mv_data + pfx.len, k.mv_size - pfx.len);
        rc = rc ? rc : ns_buf_append_u8(&topic, 0);
        rc = rc ? rc : del_queue_row(t, qc, &qk, (const char *)topic.data, broker_name);
        if (rc != NS_OK)
            break;
        ns_txn_wrote(t, k.mv_size);
        rc = ns_lmdb_error(mdb_cursor_del(ic, 0)); /* MDB_PREV then reads the row before */
        rc = rc ? rc : cb((const char *)topic.data, ctx);
    }
    if (rc == NS_OK && found != 0 && found != MDB_NOTFOUND)
        rc = ns_lmdb_error(found);
out:
    if (ic)
        mdb_cursor_close(ic);
    if (qc)
        mdb_cursor_close(qc);
    ns_buf_free(&pfx);
    ns_buf_free(&qk);
    ns_buf_free(&topic);
    return rc;
}

struct queue_walk {
    ns_queue_cb cb;
    ns_name_cb name_cb;
    void *ctx;
    const char *topic;
    ns_buf_t last; /* ns_topic_iter: last topic reported */
};

static int topic_queue_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct queue_walk *w = ctx;
    ns_queue_data_t q;
    q.broker_name = ks;
    ns_queue_decode(v, vl, &q);
    return w->cb(w->topic, &q, w->ctx);
}

int ns_queue_iter_topic(ns_txn_t *t, const char *topic, ns_queue_cb cb, void *ctx)
{
    struct queue_walk w = {cb, NULL, ctx, topic, NS_BUF_INIT};
    ns_skey_t k;
    int rc = ns_skey2(&k, topic, NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_QUEUES, &k.buf, topic_queue_cb, &w);
    ns_skey_free(&k);
    return rc;
}

static int broker_topic_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct queue_walk *w = ctx;
    return w->name_cb(ks, w->ctx);
}

int ns_queue_iter_broker(ns_txn_t *t, const char *broker_name, ns_name_cb cb, void *ctx)
{
    struct queue_walk w = {NULL, cb, ctx, NULL, NS_BUF_INIT};
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, broker_name, NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_BROKER_TOPICS, &k, broker_topic_cb, &w);
    ns_buf_free(&k);
    return rc;
}

static int all_topics_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct queue_walk *w = ctx;
    size_t tlen = strnlen(ks, kl);
    if (tlen >= kl)
        return NS_ECORRUPT;
    if (w->last.len == tlen + 1 && memcmp(w->last.data, ks, tlen) == 0)
        return 0; /* another broker of the same topic */
    ns_buf_reset(&w->last);
    if (ns_buf_append(&w->last, ks, tlen) != NS_OK || ns_buf_append_u8(&w->last, 0) != NS_OK)
        return NS_ENOMEM;
    ns_queue_data_t q;
    ns_queue_decode(v, vl, &q);
    q.broker_name = ks + tlen + 1;
    return w->cb((const char *)w->last.data, &q, w->ctx);
}

int ns_topic_iter(ns_txn_t *t, ns_queue_cb cb, void *ctx)
{
    struct queue_walk w = {cb, NULL, ctx, NULL, NS_BUF_INIT};
    int rc = ns_db_walk(t, NS_DB_QUEUES, NULL, all_topics_cb, &w);
    ns_buf_free(&w.last);
    return rc;
}

/* Every queues row, not one per topic as all_topics_cb. */
static int queue_row_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct queue_walk *w = ctx;
    size_t tlen = strnlen(ks, kl);
    if (tlen >= kl)
        return NS_ECORRUPT;
    ns_queue_data_t q;
    ns_queue_decode(v, vl, &q);
    q.broker_name = ks + tlen + 1;
    return w->cb(ks, &q, w->ctx);
}

int ns_queue_iter_after(ns_txn_t *t, const char *topic, const char *broker_name, ns_queue_cb cb,
                        void *ctx)
{
    struct queue_walk w = {cb, NULL, ctx, NULL, NS_BUF_INIT};
    ns_buf_t k = NS_BUF_INIT;
    int rc = topic ? ns_key2(&k, topic, broker_name ? broker_name : "") : NS_OK;
    rc = rc ? rc : ns_db_walk_after(t, NS_DB_QUEUES, &k, queue_row_cb, &w);
    ns_buf_free(&k);
    return rc;
}

static int stop_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    return 1;
}

bool ns_topic_exists(ns_txn_t *t, const char *topic)
{
    ns_buf_t k = NS_BUF_INIT;
    int rc = ns_key2(&k, topic, NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_QUEUES, &k, stop_cb, NULL);
    ns_buf_free(&k);
    return rc == 1;
}

static int count_cb(const char *topic, const ns_queue_data_t *q, void *ctx)
{
    (*(size_t *)ctx)++;
    return 0;
}

int ns_topic_count(ns_txn_t *t, size_t *out)
{
    *out = 0;
    return ns_topic_iter(t, count_cb, out);
}
