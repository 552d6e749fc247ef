/* digest.c - the fleet digest: a tree of hashes over what a NameServer
 * tells its clients, kept by the writer in the transaction that changes the
 * data, so that two servers can find where they differ by comparing a few
 * hashes instead of their tables.
 *
 * The tree. Every node has a path of at most five names; items sit at depth
 * five, interior nodes above them, leaves below them:
 *
 *   []                                  root
 *   ["c", cluster, x, y, brokerName]    a broker group as seen in a cluster
 *   ["t", x, y, z, topic]               a topic
 *   ["k", namespace, x, y, key]         a KV entry
 *
 * x, y, z are buckets: hex digits of a fixed keyed hash of the item's name
 * (the same on every server), so a cluster of 10,000 groups, 100,000 topics
 * or a large KV namespace still lists at most 16 children per node, and a
 * difference is found in five short steps. The leaves of an item are read
 * from the data tables when asked for (never stored twice):
 *
 *   broker item   "member"       the (cluster, brokerName) pair of clusters
 *                 "group"        the group record (zone, actingMaster, id ->
 *                                address), under the cluster it names
 *                 "addr <addr>"  the registered address (cluster, addr):
 *                                brokerId, haAddr, DataVersion, heartbeat
 *                                timeout, filter servers
 *   topic item    "queue <b>"    the QueueData of broker group b (perm,
 *                                read/write queue numbers, sysflag)
 *   KV item       "value"        the value
 *
 * Hashes. A leaf's hash is 128 bits (two SipHash-2-4 under fixed keys) of
 * its canonical encoding: a kind byte, its names and its fields, integers
 * little-endian and strings length-prefixed, so the same leaf hashes the
 * same on every server and architecture. A node's hash is the sum modulo
 * 2^128 of the hashes of all leaves below it, and its count the number of
 * those leaves: the same set of leaves gives the same node whatever order
 * it was written in, and a change moves every ancestor by the same delta.
 *
 * What is left out, and why: when a broker last registered (registered_ms)
 * and every heartbeat or liveness time (each server has its own clock and
 * its own view of the same broker's heartbeats; they differ on healthy
 * fleets); the materialised routes and the broker_topics index (functions
 * of the tables above; verify checks them, invariants I6, I7); the static
 * topic mappings (written only by brokers that use static topics and never
 * removed but by a restore; a later kind); an empty KV namespace (a
 * namespace appears with its first key); the history, the admin trail and
 * the users (local records and credentials, not a view served to clients).
 *
 * Storage: table digest, key [u8 depth] name \0 name ... (depth names),
 * value [u64 lo][u64 hi][u64 count] little-endian; a node exists iff its
 * count is not 0. The children of a node are one prefix walk of the next
 * depth. Changes are summed in memory per node during a write transaction
 * (ns_digest_*) and written once per node when it commits (ns_digest_flush),
 * so a registration of 10,000 topics writes each node it touches once. */
#include <stdlib.h>
#include <string.h>

#include "ns/fleet.h"
#include "ns/hash.h"
#include "ns/log.h"
#include "internal.h"

#define DEPTH_ITEM NS_FLEET_ITEM_DEPTH
#define NODE_VAL_LEN 24

/* Fixed keys: every server must hash alike (not ns_hash's random key). */
static const uint8_t leaf_key_lo[16] = "nsfleet-leaf-lo1";
static const uint8_t leaf_key_hi[16] = "nsfleet-leaf-hi1";
static const uint8_t bucket_key[16] = "nsfleet-bucket-1";

/* ---- 128-bit sums ---- */

static void sum_add(ns_digest_sum_t *a, const ns_digest_sum_t *b, int sign)
{
    uint64_t lo = b->lo, hi = b->hi;
    if (sign < 0) { /* two's complement of the 128-bit value */
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    uint64_t r = a->lo + lo;
    a->hi += hi + (r < lo);
    a->lo = r;
    a->count += sign < 0 ? -b->count : b->count;
}

bool ns_digest_sum_eq(const ns_digest_sum_t *a, const ns_digest_sum_t *b)
{
    return a->lo == b->lo && a->hi == b->hi && a->count == b->count;
}

void ns_digest_hex(const ns_digest_sum_t *s, char out[33])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hx[(s->hi >> (60 - 4 * i)) & 15];
        out[16 + i] = hx[(s->lo >> (60 - 4 * i)) & 15];
    }
    out[32] = 0;
}

static void le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void node_encode(const ns_digest_sum_t *s, uint8_t v[NODE_VAL_LEN])
{
    le64(v, s->lo);
    le64(v + 8, s->hi);
    le64(v + 16, (uint64_t)s->count);
}

static int node_decode(const uint8_t *v, size_t n, ns_digest_sum_t *s)
{
    if (n != NODE_VAL_LEN)
        return NS_ECORRUPT;
    s->lo = rd64(v);
    s->hi = rd64(v + 8);
    s->count = (int64_t)rd64(v + 16);
    return NS_OK;
}

/* ---- the per-transaction sums: node key -> delta (open addressing) ---- */

typedef struct {
    size_t off; /* key bytes in keys */
    uint32_t len;
    uint64_t h;
    ns_digest_sum_t d;
} acc_ent_t;

struct ns_digest_acc {
    ns_buf_t keys;
    acc_ent_t *ents;
    size_t n;
    uint32_t *slots; /* entry index + 1; 0 = empty */
    size_t cap;      /* power of two */
    ns_buf_t leaf;   /* scratch: the leaf being encoded */
    ns_buf_t path;   /* scratch: the node key being built */
};

ns_digest_acc_t *ns_digest_acc_new(void)
{
    return calloc(1, sizeof(ns_digest_acc_t));
}

void ns_digest_acc_free(ns_digest_acc_t *a)
{
    if (a == NULL)
        return;
    ns_buf_free(&a->keys);
    ns_buf_free(&a->leaf);
    ns_buf_free(&a->path);
    free(a->ents);
    free(a->slots);
    free(a);
}

static void acc_reset(ns_digest_acc_t *a)
{
    ns_buf_reset(&a->keys);
    a->n = 0;
    if (a->slots)
        memset(a->slots, 0, a->cap * sizeof *a->slots);
}

static int acc_rehash(ns_digest_acc_t *a)
{
    size_t cap = a->cap ? a->cap * 2 : 64;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        size_t j = a->ents[i].h & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = (uint32_t)(i + 1);
    }
    free(a->slots);
    a->slots = slots;
    a->cap = cap;
    return NS_OK;
}

/* Adds d (sign +1/-1) to the node whose key is [k, k+n). */
static int acc_add(ns_digest_acc_t *a, const uint8_t *k, size_t n, const ns_digest_sum_t *d,
                   int sign)
{
    if ((a->n + 1) * 2 > a->cap && acc_rehash(a) != NS_OK)
        return NS_ENOMEM;
    uint64_t h = ns_hash(k, n);
    size_t j = h & (a->cap - 1);
    for (; a->slots[j]; j = (j + 1) & (a->cap - 1)) {
        acc_ent_t *e = &a->ents[a->slots[j] - 1];
        if (e->h == h && e->len == n && memcmp(a->keys.data + e->off, k, n) == 0) {
            sum_add(&e->d, d, sign);
            return NS_OK;
        }
    }
    acc_ent_t *ents = ns_array_grow(a->ents, a->n, sizeof *ents);
    if (ents == NULL)
        return NS_ENOMEM;
    a->ents = ents;
    acc_ent_t *e = &a->ents[a->n];
    e->off = a->keys.len;
    e->len = (uint32_t)n;
    e->h = h;
    memset(&e->d, 0, sizeof e->d);
    if (ns_buf_append(&a->keys, k, n) != NS_OK)
        return NS_ENOMEM;
    sum_add(&e->d, d, sign);
    a->slots[j] = (uint32_t)(++a->n);
    return NS_OK;
}

/* Builds the key of the node at depth `depth` of path into b. */
static int node_key(ns_buf_t *b, const char *const *path, size_t depth)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, (uint8_t)depth);
    for (size_t i = 0; rc == NS_OK && i < depth; i++) {
        if (i > 0)
            rc = ns_buf_append_u8(b, 0);
        rc = rc ? rc : ns_buf_append_str(b, path[i]);
    }
    return rc;
}

/* The item path of a name under prefix (one or two names), with its
 * bucket digits: levels digits for "t", two for "c" and "k". */
typedef struct {
    const char *v[DEPTH_ITEM];
    char digit[3][2];
} item_path_t;

static void item_path(item_path_t *p, const char *top, const char *sub, const char *name)
{
    uint64_t h = ns_siphash(bucket_key, 2, 4, name, strlen(name));
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 3; i++) {
        p->digit[i][0] = hx[(h >> (60 - 4 * i)) & 15];
        p->digit[i][1] = 0;
    }
    size_t n = 0;
    p->v[n++] = top;
    if (sub)
        p->v[n++] = sub;
    while (n < DEPTH_ITEM - 1) {
        p->v[n] = p->digit[n - (sub ? 2 : 1)];
        n++;
    }
    p->v[n] = name;
}

/* Adds a leaf of hash d (sign +1 or -1) to every node from the item up. */
static int acc_leaf(ns_digest_acc_t *a, const item_path_t *p, const ns_digest_sum_t *d, int sign)
{
    int rc = NS_OK;
    for (size_t depth = 0; rc == NS_OK && depth <= DEPTH_ITEM; depth++) {
        rc = node_key(&a->path, p->v, depth);
        rc = rc ? rc : acc_add(a, a->path.data, a->path.len, d, sign);
    }
    return rc;
}

/* ---- canonical leaf encodings ---- */

static int enc_str(ns_buf_t *b, const char *s)
{
    uint8_t n[4];
    uint32_t len = s ? (uint32_t)strlen(s) : 0xFFFFFFFFu;
    for (int i = 0; i < 4; i++)
        n[i] = (uint8_t)(len >> (8 * i));
    int rc = ns_buf_append(b, n, 4);
    return rc == NS_OK && s ? ns_buf_append(b, s, len) : rc;
}

static int enc_bytes(ns_buf_t *b, const uint8_t *p, size_t len)
{
    uint8_t n[4];
    for (int i = 0; i < 4; i++)
        n[i] = (uint8_t)(len >> (8 * i));
    int rc = ns_buf_append(b, n, 4);
    return rc == NS_OK ? ns_buf_append(b, p, len) : rc;
}

static int enc_i64(ns_buf_t *b, int64_t v)
{
    uint8_t p[8];
    le64(p, (uint64_t)v);
    return ns_buf_append(b, p, 8);
}

static void leaf_hash(const ns_buf_t *b, ns_digest_sum_t *out)
{
    out->lo = ns_siphash(leaf_key_lo, 2, 4, b->data, b->len);
    out->hi = ns_siphash(leaf_key_hi, 2, 4, b->data, b->len);
    out->count = 1;
}

static int member_leaf(ns_buf_t *b, const char *cluster, const char *broker_name)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'M');
    rc = rc ? rc : enc_str(b, cluster);
    return rc ? rc : enc_str(b, broker_name);
}

static int group_leaf(ns_buf_t *b, const ns_group_rec_t *g)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'G');
    rc = rc ? rc : enc_str(b, g->cluster);
    rc = rc ? rc : enc_str(b, g->broker_name);
    rc = rc ? rc : enc_str(b, g->zone_name);
    rc = rc ? rc : ns_buf_append_u8(b, g->enable_acting_master);
    rc = rc ? rc : enc_i64(b, (int64_t)g->n_addrs);
    for (size_t i = 0; rc == NS_OK && i < g->n_addrs; i++) {
        rc = enc_i64(b, g->addrs[i].id);
        rc = rc ? rc : enc_str(b, g->addrs[i].addr);
    }
    return rc;
}

static int live_leaf(ns_buf_t *b, const ns_live_rec_t *r)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'A');
    rc = rc ? rc : enc_str(b, r->cluster);
    rc = rc ? rc : enc_str(b, r->broker_name);
    rc = rc ? rc : enc_str(b, r->addr);
    rc = rc ? rc : enc_i64(b, r->broker_id);
    rc = rc ? rc : enc_str(b, r->ha_addr);
    rc = rc ? rc : enc_i64(b, r->dv.state_version);
    rc = rc ? rc : enc_i64(b, r->dv.timestamp);
    rc = rc ? rc : enc_i64(b, r->dv.counter);
    rc = rc ? rc : enc_i64(b, r->heartbeat_timeout_ms);
    rc = rc ? rc : enc_i64(b, (int64_t)r->n_filter_servers);
    for (size_t i = 0; rc == NS_OK && i < r->n_filter_servers; i++)
        rc = enc_str(b, r->filter_servers[i]);
    return rc;
}

static int queue_leaf(ns_buf_t *b, const char *topic, const ns_queue_data_t *q)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'Q');
    rc = rc ? rc : enc_str(b, topic);
    rc = rc ? rc : enc_str(b, q->broker_name);
    rc = rc ? rc : enc_i64(b, q->perm);
    rc = rc ? rc : enc_i64(b, q->read_queue_nums);
    rc = rc ? rc : enc_i64(b, q->write_queue_nums);
    return rc ? rc : enc_i64(b, q->topic_sys_flag);
}

static int kv_leaf(ns_buf_t *b, const char *ns, const char *key, const uint8_t *v, size_t n)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'K');
    rc = rc ? rc : enc_str(b, ns);
    rc = rc ? rc : enc_str(b, key);
    return rc ? rc : enc_bytes(b, v, n);
}

/* Encodes, hashes and adds one leaf of each kind. */
static int add_member(ns_digest_acc_t *a, const char *cluster, const char *broker_name, int sign)
{
    item_path_t p;
    ns_digest_sum_t h;
    int rc = member_leaf(&a->leaf, cluster, broker_name);
    if (rc != NS_OK)
        return rc;
    leaf_hash(&a->leaf, &h);
    item_path(&p, "c", cluster, broker_name);
    return acc_leaf(a, &p, &h, sign);
}

static int add_group(ns_digest_acc_t *a, const ns_group_rec_t *g, int sign)
{
    item_path_t p;
    ns_digest_sum_t h;
    int rc = group_leaf(&a->leaf, g);
    if (rc != NS_OK)
        return rc;
    leaf_hash(&a->leaf, &h);
    item_path(&p, "c", g->cluster, g->broker_name);
    return acc_leaf(a, &p, &h, sign);
}

static int add_live(ns_digest_acc_t *a, const ns_live_rec_t *r, int sign)
{
    item_path_t p;
    ns_digest_sum_t h;
    int rc = live_leaf(&a->leaf, r);
    if (rc != NS_OK)
        return rc;
    leaf_hash(&a->leaf, &h);
    item_path(&p, "c", r->cluster, r->broker_name);
    return acc_leaf(a, &p, &h, sign);
}

static int add_queue(ns_digest_acc_t *a, const char *topic, const ns_queue_data_t *q, int sign)
{
    item_path_t p;
    ns_digest_sum_t h;
    int rc = queue_leaf(&a->leaf, topic, q);
    if (rc != NS_OK)
        return rc;
    leaf_hash(&a->leaf, &h);
    item_path(&p, "t", NULL, topic);
    return acc_leaf(a, &p, &h, sign);
}

static int add_kv(ns_digest_acc_t *a, const char *ns, const char *key, const uint8_t *v, size_t n,
                  int sign)
{
    item_path_t p;
    ns_digest_sum_t h;
    int rc = kv_leaf(&a->leaf, ns, key, v, n);
    if (rc != NS_OK)
        return rc;
    leaf_hash(&a->leaf, &h);
    item_path(&p, "k", ns, key);
    return acc_leaf(a, &p, &h, sign);
}

/* ---- the writer's hooks (internal.h) ---- */

/* The transaction's sums, allocated on first use; NULL when the digest is
 * not kept (a read transaction, or a schema without the table). */
static ns_digest_acc_t *txn_acc(ns_txn_t *t)
{
    if (!t->write || !t->s->have_db[NS_DB_DIGEST])
        return NULL;
    if (t->digest == NULL)
        t->digest = ns_digest_acc_new();
    return t->digest;
}

bool ns_digest_kept(ns_txn_t *t)
{
    return t->write && t->s->have_db[NS_DB_DIGEST];
}

#define WITH_ACC(t, call)                                                                          \
    do {                                                                                           \
        if (!ns_digest_kept(t))                                                                    \
            return NS_OK;                                                                          \
        ns_digest_acc_t *acc_ = txn_acc(t);                                                        \
        return acc_ ? (call) : NS_ENOMEM;                                                          \
    } while (0)

int ns_digest_member(ns_txn_t *t, const char *cluster, const char *broker_name, int sign)
{
    WITH_ACC(t, add_member(acc_, cluster, broker_name, sign));
}

int ns_digest_group(ns_txn_t *t, const ns_group_rec_t *g, int sign)
{
    WITH_ACC(t, add_group(acc_, g, sign));
}

int ns_digest_live(ns_txn_t *t, const ns_live_rec_t *r, int sign)
{
    WITH_ACC(t, add_live(acc_, r, sign));
}

int ns_digest_queue(ns_txn_t *t, const char *topic, const ns_queue_data_t *q, int sign)
{
    WITH_ACC(t, add_queue(acc_, topic, q, sign));
}

int ns_digest_kv(ns_txn_t *t, const char *ns, const char *key, const uint8_t *v, size_t n, int sign)
{
    WITH_ACC(t, add_kv(acc_, ns, key, v, n, sign));
}

void ns_digest_forget(ns_txn_t *t)
{
    if (t->digest)
        acc_reset(t->digest);
}

static const ns_digest_acc_t *sort_acc; /* qsort has no context argument */

static int cmp_ent(const void *x, const void *y)
{
    const acc_ent_t *a = &sort_acc->ents[*(const uint32_t *)x];
    const acc_ent_t *b = &sort_acc->ents[*(const uint32_t *)y];
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(sort_acc->keys.data + a->off, sort_acc->keys.data + b->off, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Applies the sums of a to the stored nodes in key order (neighbouring
 * nodes share pages), through one cursor: a node's delta is added to what
 * is stored, and a node left with no leaf is deleted. */
static int acc_apply(ns_txn_t *t, ns_digest_acc_t *a)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    uint32_t *order = NULL;
    int rc = ns_dbi(t, NS_DB_DIGEST, &dbi);
    if (rc != NS_OK || a->n == 0)
        return rc;
    if ((order = malloc(a->n * sizeof *order)) == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < a->n; i++)
        order[i] = (uint32_t)i;
    sort_acc = a;
    qsort(order, a->n, sizeof *order, cmp_ent);
    sort_acc = NULL;
    if ((rc = ns_lmdb_error(mdb_cursor_open(t->txn, dbi, &cur))) != NS_OK)
        goto out;
    for (size_t i = 0; i < a->n && rc == NS_OK; i++) {
        acc_ent_t *e = &a->ents[order[i]];
        if (e->d.lo == 0 && e->d.hi == 0 && e->d.count == 0)
            continue; /* a change undone in the same transaction */
        MDB_val k = ns_val(a->keys.data + e->off, e->len), v;
        ns_digest_sum_t s = {0, 0, 0};
        int found = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
        if (found == 0)
            rc = node_decode(v.mv_data, v.mv_size, &s);
        else if (found != MDB_NOTFOUND)
            rc = ns_lmdb_error(found);
        if (rc != NS_OK)
            break;
        sum_add(&s, &e->d, 1);
        if (s.count <= 0) {
            if (s.count < 0 || s.lo || s.hi)
                NS_LOG_WARN("fleet digest: node of depth %u left with count %lld; removed "
                            "(verify recomputes the digest)",
                            (unsigned)*(a->keys.data + e->off), (long long)s.count);
            rc = found == 0 ? ns_lmdb_error(mdb_cursor_del(cur, 0)) : NS_OK;
            continue;
        }
        uint8_t buf[NODE_VAL_LEN];
        node_encode(&s, buf);
        v = ns_val(buf, sizeof buf);
        k = ns_val(a->keys.data + e->off, e->len);
        rc = ns_lmdb_error(mdb_cursor_put(cur, &k, &v, found == 0 ? MDB_CURRENT : 0));
    }
out:
    if (cur)
        mdb_cursor_close(cur);
    free(order);
    return rc;
}

int ns_digest_flush(ns_txn_t *t)
{
    if (t->digest == NULL || t->digest->n == 0)
        return NS_OK;
    int rc = acc_apply(t, t->digest);
    acc_reset(t->digest);
    return rc;
}

/* ---- recomputing from the data (verify, rebuild) ---- */

static int walk_member_cb(const char *a, const char *b, void *ctx)
{
    return add_member(ctx, a, b, 1);
}

static int walk_group_cb(ns_group_rec_t *g, void *ctx)
{
    return add_group(ctx, g, 1);
}

static int walk_live_cb(const ns_live_rec_t *r, void *ctx)
{
    return add_live(ctx, r, 1);
}

static int walk_queue_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    size_t tl = strnlen(ks, kl);
    ns_queue_data_t q;
    if (tl >= kl)
        return 0; /* a malformed key is left to verify's own checks */
    ns_queue_decode(v, vl, &q);
    q.broker_name = ks + tl + 1;
    return add_queue(ctx, ks, &q, 1);
}

static int walk_kv_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    size_t nl = strnlen(ks, kl);
    if (nl >= kl)
        return 0; /* as above */
    return add_kv(ctx, ks, ks + nl + 1, v, vl, 1);
}

/* Sums every leaf of the data tables into a (which starts empty). */
static int compute_all(ns_txn_t *t, ns_digest_acc_t *a)
{
    int rc = ns_cluster_iter(t, walk_member_cb, a);
    rc = rc ? rc : ns_group_iter(t, walk_group_cb, a);
    rc = rc ? rc : ns_live_iter(t, walk_live_cb, a);
    rc = rc ? rc : ns_db_walk(t, NS_DB_QUEUES, NULL, walk_queue_cb, a);
    return rc ? rc : ns_db_walk(t, NS_DB_KV, NULL, walk_kv_cb, a);
}

int ns_digest_rebuild(ns_txn_t *t)
{
    MDB_dbi dbi;
    ns_digest_acc_t *a = NULL;
    int rc = t->write ? ns_dbi(t, NS_DB_DIGEST, &dbi) : NS_EINVAL;
    if (rc != NS_OK)
        return rc;
    ns_digest_forget(t);
    if ((rc = ns_lmdb_error(mdb_drop(t->txn, dbi, 0))) != NS_OK)
        return rc;
    if ((a = ns_digest_acc_new()) == NULL)
        return NS_ENOMEM;
    rc = compute_all(t, a);
    rc = rc ? rc : acc_apply(t, a);
    ns_digest_acc_free(a);
    return rc;
}

/* Appends a readable form of the node key [k, k+n) to report. */
static void report_path(ns_buf_t *report, const uint8_t *k, size_t n)
{
    ns_buf_append_str(report, "[");
    for (size_t i = 1; i < n; i++)
        ns_buf_append_u8(report, k[i] ? k[i] : '/');
    ns_buf_append_str(report, "]");
}

struct stored_walk {
    ns_digest_acc_t *want;
    ns_buf_t *report;
    int bad;
};

static const acc_ent_t *acc_find(const ns_digest_acc_t *a, const uint8_t *k, size_t n)
{
    if (a->cap == 0)
        return NULL;
    uint64_t h = ns_hash(k, n);
    for (size_t j = h & (a->cap - 1); a->slots[j]; j = (j + 1) & (a->cap - 1)) {
        const acc_ent_t *e = &a->ents[a->slots[j] - 1];
        if (e->h == h && e->len == n && memcmp(a->keys.data + e->off, k, n) == 0)
            return e;
    }
    return NULL;
}

int ns_digest_verify(ns_txn_t *t, ns_buf_t *report)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    ns_digest_acc_t *want = NULL;
    size_t present = 0, want_nodes = 0;
    int bad = 0;
    if (ns_dbi(t, NS_DB_DIGEST, &dbi) != NS_OK)
        return 0; /* a schema without the digest has nothing to check */
    /* in a write transaction (restore checks before it commits): the
     * changes summed so far first, as the commit would write them */
    int rc = t->write ? ns_digest_flush(t) : NS_OK;
    if (rc != NS_OK)
        return rc;
    if ((want = ns_digest_acc_new()) == NULL)
        return NS_ENOMEM;
    rc = compute_all(t, want);
    if (rc == NS_OK)
        rc = ns_lmdb_error(mdb_cursor_open(t->txn, dbi, &cur));
    MDB_val k, v;
    for (int g = rc == NS_OK ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : MDB_NOTFOUND; g == 0;
         g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        ns_digest_sum_t s;
        const acc_ent_t *e = acc_find(want, k.mv_data, k.mv_size);
        if (e != NULL && e->d.count != 0)
            present++;
        if (node_decode(v.mv_data, v.mv_size, &s) != NS_OK || e == NULL ||
            !ns_digest_sum_eq(&s, &e->d)) {
            bad++;
            report_path(report, k.mv_data, k.mv_size);
            ns_buf_printf(report, " digest: stored node %s the data\n",
                          e == NULL ? "has no leaf in" : "differs from");
        }
    }
    for (size_t i = 0; want && i < want->n; i++)
        if (want->ents[i].d.count != 0)
            want_nodes++;
    if (rc == NS_OK && present < want_nodes) {
        bad += (int)(want_nodes - present);
        ns_buf_printf(report, "digest: %zu node(s) of the data are not stored\n",
                      want_nodes - present);
    }
    if (cur)
        mdb_cursor_close(cur);
    ns_digest_acc_free(want);
    return rc == NS_OK ? bad : rc;
}

/* ---- reading ---- */

int ns_digest_get(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_sum_t *out)
{
    ns_buf_t k = NS_BUF_INIT;
    ns_slice_t v;
    memset(out, 0, sizeof *out);
    int rc = depth <= DEPTH_ITEM ? node_key(&k, path, depth) : NS_EINVAL;
    rc = rc ? rc : ns_db_get(t, NS_DB_DIGEST, &k, &v);
    rc = rc ? rc : node_decode(v.ptr, v.len, out);
    ns_buf_free(&k);
    return rc;
}

struct child_walk {
    ns_digest_child_cb cb;
    void *ctx;
};

static int child_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct child_walk *w = ctx;
    ns_digest_sum_t s;
    int rc = node_decode(v, vl, &s);
    return rc ? rc : w->cb(ks, &s, w->ctx);
}

int ns_digest_children(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_child_cb cb,
                       void *ctx)
{
    ns_buf_t k = NS_BUF_INIT;
    struct child_walk w = {cb, ctx};
    if (depth >= DEPTH_ITEM)
        return NS_EINVAL;
    int rc = node_key(&k, path, depth);
    if (rc == NS_OK) {
        k.data[0] = (uint8_t)(depth + 1);
        if (depth > 0)
            rc = ns_buf_append_u8(&k, 0);
    }
    rc = rc ? rc : ns_db_walk(t, NS_DB_DIGEST, &k, child_walk_cb, &w);
    ns_buf_free(&k);
    return rc;
}

size_t ns_digest_item_depth(void)
{
    return DEPTH_ITEM;
}

/* ---- an item's leaves, from the data tables ---- */

struct leaf_ctx {
    ns_digest_leaf_cb cb;
    void *ctx;
    ns_buf_t enc, name, json;
    const char *topic;
};

static int emit(struct leaf_ctx *c, ns_buf_t *enc)
{
    ns_digest_sum_t h;
    leaf_hash(enc, &h);
    return c->cb((const char *)c->name.data, &h, (const char *)c->json.data, c->json.len, c->ctx);
}

static int json_str(ns_buf_t *b, const char *s)
{
    return s ? ns_buf_append_json_str(b, s, strlen(s), true) : ns_buf_append_str(b, "null");
}

static int queue_item_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct leaf_ctx *c = ctx;
    ns_queue_data_t q;
    ns_queue_decode(v, vl, &q);
    q.broker_name = ks;
    ns_buf_reset(&c->name);
    ns_buf_reset(&c->json);
    int rc = queue_leaf(&c->enc, c->topic, &q);
    rc = rc ? rc : ns_buf_printf(&c->name, "queue %s", ks);
    rc = rc ? rc
            : ns_buf_printf(&c->json,
                            "{\"perm\":%d,\"readQueueNums\":%d,\"writeQueueNums\":%d,"
                            "\"topicSysFlag\":%d}",
                            (int)q.perm, (int)q.read_queue_nums, (int)q.write_queue_nums,
                            (int)q.topic_sys_flag);
    return rc ? rc : emit(c, &c->enc);
}

static int topic_leaves(ns_txn_t *t, const char *topic, struct leaf_ctx *c)
{
    ns_buf_t k = NS_BUF_INIT;
    c->topic = topic;
    int rc = ns_key2(&k, topic, NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_QUEUES, &k, queue_item_cb, c);
    ns_buf_free(&k);
    return rc;
}

static int group_json(ns_buf_t *b, const ns_group_rec_t *g)
{
    int rc = ns_buf_append_str(b, "{\"zoneName\":");
    rc = rc ? rc : json_str(b, g->zone_name);
    rc = rc ? rc
            : ns_buf_printf(b, ",\"enableActingMaster\":%s,\"brokerAddrs\":{",
                            g->enable_acting_master ? "true" : "false");
    for (size_t i = 0; rc == NS_OK && i < g->n_addrs; i++) {
        rc = ns_buf_printf(b, "%s\"%lld\":", i ? "," : "", (long long)g->addrs[i].id);
        rc = rc ? rc : json_str(b, g->addrs[i].addr);
    }
    return rc ? rc : ns_buf_append_str(b, "}}");
}

static int live_json(ns_buf_t *b, const ns_live_rec_t *r)
{
    int rc = ns_buf_printf(b, "{\"brokerId\":%lld,\"haServerAddr\":", (long long)r->broker_id);
    rc = rc ? rc : json_str(b, r->ha_addr);
    rc = rc ? rc
            : ns_buf_printf(b,
                            ",\"dataVersion\":{\"stateVersion\":%lld,\"timestamp\":%lld,"
                            "\"counter\":%lld},\"heartbeatTimeoutMillis\":%lld,"
                            "\"filterServerList\":[",
                            (long long)r->dv.state_version, (long long)r->dv.timestamp,
                            (long long)r->dv.counter, (long long)r->heartbeat_timeout_ms);
    for (size_t i = 0; rc == NS_OK && i < r->n_filter_servers; i++) {
        rc = i ? ns_buf_append_str(b, ",") : NS_OK;
        rc = rc ? rc : json_str(b, r->filter_servers[i]);
    }
    return rc ? rc : ns_buf_append_str(b, "]}");
}

static int broker_leaves(ns_txn_t *t, const char *cluster, const char *broker_name,
                         struct leaf_ctx *c)
{
    ns_group_rec_t g = {0};
    int rc = ns_cluster_has(t, cluster, broker_name);
    if (rc == NS_OK) {
        ns_buf_reset(&c->name);
        ns_buf_reset(&c->json);
        rc = member_leaf(&c->enc, cluster, broker_name);
        rc = rc ? rc : ns_buf_append_str(&c->name, "member");
        rc = rc ? rc : ns_buf_append_str(&c->json, "{}");
        rc = rc ? rc : emit(c, &c->enc);
    }
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    rc = ns_group_get(t, broker_name, &g);
    if (rc == NS_ENOTFOUND)
        return NS_OK;
    if (rc == NS_OK && strcmp(g.cluster, cluster) == 0) {
        ns_buf_reset(&c->name);
        ns_buf_reset(&c->json);
        rc = group_leaf(&c->enc, &g);
        rc = rc ? rc : ns_buf_append_str(&c->name, "group");
        rc = rc ? rc : group_json(&c->json, &g);
        rc = rc ? rc : emit(c, &c->enc);
    }
    /* the addresses: every live record is in the group that maps it (I4) */
    for (size_t i = 0; rc == NS_OK && i < g.n_addrs; i++) {
        ns_live_rec_t r;
        int lrc = ns_live_get(t, cluster, g.addrs[i].addr, &r);
        if (lrc == NS_ENOTFOUND)
            continue;
        if ((rc = lrc) != NS_OK)
            break;
        if (strcmp(r.broker_name, broker_name) == 0) {
            ns_buf_reset(&c->name);
            ns_buf_reset(&c->json);
            rc = live_leaf(&c->enc, &r);
            rc = rc ? rc : ns_buf_printf(&c->name, "addr %s", r.addr);
            rc = rc ? rc : live_json(&c->json, &r);
            rc = rc ? rc : emit(c, &c->enc);
        }
        ns_live_rec_free(&r);
    }
    ns_group_rec_free(&g);
    return rc;
}

static int kv_leaves(ns_txn_t *t, const char *ns, const char *key, struct leaf_ctx *c)
{
    ns_slice_t v;
    int rc = ns_kv_get(t, ns, key, &v);
    if (rc == NS_ENOTFOUND)
        return NS_OK;
    ns_buf_reset(&c->name);
    ns_buf_reset(&c->json);
    rc = rc ? rc : kv_leaf(&c->enc, ns, key, v.ptr, v.len);
    rc = rc ? rc : ns_buf_append_str(&c->name, "value");
    rc = rc ? rc : ns_buf_append_json_str(&c->json, (const char *)v.ptr, v.len, true);
    return rc ? rc : emit(c, &c->enc);
}

/* True when path is where the item it names sits (its buckets right). */
static bool item_path_ok(const char *const *path, size_t depth)
{
    item_path_t p;
    bool sub = strcmp(path[0], "t") != 0;
    if (depth != DEPTH_ITEM)
        return false;
    item_path(&p, path[0], sub ? path[1] : NULL, path[DEPTH_ITEM - 1]);
    for (size_t i = 0; i < DEPTH_ITEM; i++)
        if (strcmp(p.v[i], path[i]) != 0)
            return false;
    return true;
}

int ns_digest_leaves(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_leaf_cb cb,
                     void *ctx)
{
    struct leaf_ctx c = {cb, ctx, NS_BUF_INIT, NS_BUF_INIT, NS_BUF_INIT, NULL};
    int rc = NS_EINVAL;
    if (!item_path_ok(path, depth))
        return NS_EINVAL;
    if (depth == DEPTH_ITEM && strcmp(path[0], "t") == 0)
        rc = topic_leaves(t, path[4], &c);
    else if (depth == DEPTH_ITEM && strcmp(path[0], "c") == 0)
        rc = broker_leaves(t, path[1], path[4], &c);
    else if (depth == DEPTH_ITEM && strcmp(path[0], "k") == 0)
        rc = kv_leaves(t, path[1], path[4], &c);
    ns_buf_free(&c.enc);
    ns_buf_free(&c.name);
    ns_buf_free(&c.json);
    return rc;
}
