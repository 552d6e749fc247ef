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
 * Hashes. A leaf's hash is 128 bits (SipHash128-1-3 under a fixed key) of
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
 * Storage: table digest, key [u8 depth] name \0 name ... (depth names).
 * An interior node's value is [u64 lo][u64 hi][u64 count] little-endian,
 * and it exists iff its count is not 0. An item is an entry with an empty
 * value, there iff the item has leaves: its hash is summed from its leaves
 * when asked for (a few records), so a change of a topic's queue data
 * rewrites the four buckets above it but no per-topic record. The
 * children of a node are one prefix walk of the next depth. Changes are
 * appended in memory during a write transaction (ns_digest_*) and, when it
 * commits, sorted, summed per node and written once per node
 * (ns_digest_flush): a registration that changes 10,000 topics writes at
 * most 4,096 + 256 + 16 + 2 nodes. A change of a topic's queue data, which
 * leaves the item's leaf count as it is, is not appended but summed into
 * its topic bucket's delta at once (tb_add): the bulk of a registration
 * costs no sort. */
#include <stdlib.h>
#include <string.h>

#include "ns/fleet.h"
#include "ns/hash.h"
#include "ns/log.h"
#include "internal.h"

#define DEPTH_ITEM NS_FLEET_ITEM_DEPTH
#define NODE_VAL_LEN 24

/* Fixed keys: every server must hash alike (not ns_hash's random key). */
static const uint8_t leaf_key[16] = "nsfleet-leaf-v1.";
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

/* ---- the per-transaction changes: item key -> delta, appended ----
 * A change appends (item key, delta); nothing is hashed or looked up while
 * the transaction runs. When it commits, the changes are sorted by key and
 * summed (finalize): equal items merge, and since every ancestor of an item
 * is a prefix of its key, the ancestors' sums come out of one pass over
 * the sorted items. */

#define TOPIC_BUCKETS 4096 /* the three hex digits under "t" */

typedef struct {
    size_t off; /* key bytes in keys */
    uint32_t len;
    uint64_t pfx; /* the key's first 8 bytes, big-endian: most comparisons end here */
    ns_digest_sum_t d;
} acc_ent_t;

static uint64_t key_prefix(const uint8_t *k, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = v << 8 | (i < n ? k[i] : 0);
    return v;
}

struct ns_digest_acc {
    ns_buf_t keys;
    acc_ent_t *ents;
    size_t n;
    ns_buf_t leaf; /* scratch: the leaf being encoded */
    ns_buf_t path; /* scratch: the item key being built */
    /* Changes that keep every item's leaf count (a topic's queue data
     * rewritten, the bulk of a registration) move only the sums above the
     * item, so they are summed per topic bucket here instead of appended
     * per topic, and folded into entries when the changes are finalized. */
    ns_digest_sum_t *tb; /* [TOPIC_BUCKETS], allocated on first use */
    uint64_t tb_mark[TOPIC_BUCKETS / 64];
    uint16_t tb_list[TOPIC_BUCKETS]; /* the buckets marked, in order of first use */
    size_t n_tb;
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
    free(a->tb);
    free(a);
}

static void tb_clear(ns_digest_acc_t *a)
{
    for (size_t j = 0; j < a->n_tb; j++) {
        unsigned i = a->tb_list[j];
        memset(&a->tb[i], 0, sizeof a->tb[i]);
        a->tb_mark[i / 64] &= ~(UINT64_C(1) << (i % 64));
    }
    a->n_tb = 0;
}

static void acc_reset(ns_digest_acc_t *a)
{
    ns_buf_reset(&a->keys);
    a->n = 0;
    tb_clear(a);
}

static bool acc_empty(const ns_digest_acc_t *a)
{
    return a->n == 0 && a->n_tb == 0;
}

/* Appends (key [k, k+n), d with sign) to a. */
static int acc_add(ns_digest_acc_t *a, const uint8_t *k, size_t n, const ns_digest_sum_t *d,
                   int sign)
{
    acc_ent_t *ents = ns_array_grow(a->ents, a->n, sizeof *ents);
    if (ents == NULL)
        return NS_ENOMEM;
    a->ents = ents;
    acc_ent_t *e = &a->ents[a->n];
    e->off = a->keys.len;
    e->len = (uint32_t)n;
    e->pfx = key_prefix(k, n);
    memset(&e->d, 0, sizeof e->d);
    if (ns_buf_append(&a->keys, k, n) != NS_OK)
        return NS_ENOMEM;
    sum_add(&e->d, d, sign);
    a->n++;
    return NS_OK;
}

/* LMDB's largest key (MDB_MAXKEYSIZE as Debian builds it). Two names of up
 * to 255 bytes (a cluster and a broker, a namespace and a key) with the
 * bucket digits pass it, so in a path that would, every name longer than
 * DIGEST_NAME_KEEP is stored as "#" and 32 hex digits of a fixed hash of it:
 * the same on every server, so digests still compare; fleet diff shows such
 * a name by that hash. */
#define DIGEST_KEY_MAX 511
#define DIGEST_NAME_KEEP 64

static int append_name(ns_buf_t *b, const char *name, bool shorten)
{
    size_t n = strlen(name);
    if (!shorten || n <= DIGEST_NAME_KEEP)
        return ns_buf_append(b, name, n);
    uint64_t h[2];
    ns_siphash128(bucket_key, 1, 3, name, n, h);
    return ns_buf_printf(b, "#%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
}

static int node_key(ns_buf_t *b, const char *const *path, size_t depth)
{
    size_t total = 1;
    for (size_t i = 0; i < depth; i++)
        total += strlen(path[i]) + (i > 0);
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, (uint8_t)depth);
    for (size_t i = 0; rc == NS_OK && i < depth; i++) {
        if (i > 0)
            rc = ns_buf_append_u8(b, 0);
        rc = rc ? rc : append_name(b, path[i], total > DIGEST_KEY_MAX);
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
    uint64_t h = ns_siphash(bucket_key, 1, 3, name, strlen(name));
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

/* Adds d to the sums above topic's item, leaving the item itself as it is
 * (its leaf count does not change): into its bucket's sum. */
static int tb_add(ns_digest_acc_t *a, const char *topic, const ns_digest_sum_t *d)
{
    if (a->tb == NULL && (a->tb = calloc(TOPIC_BUCKETS, sizeof *a->tb)) == NULL)
        return NS_ENOMEM;
    unsigned i = (unsigned)(ns_siphash(bucket_key, 1, 3, topic, strlen(topic)) >> 52);
    if ((a->tb_mark[i / 64] >> (i % 64) & 1) == 0) {
        a->tb_mark[i / 64] |= UINT64_C(1) << (i % 64);
        a->tb_list[a->n_tb++] = (uint16_t)i;
    }
    sum_add(&a->tb[i], d, 1);
    return NS_OK;
}

/* The buckets' sums as entries: each an item key with an empty name in its
 * bucket (item_path's digits of the hash's top 12 bits), so finalize adds
 * it to the bucket and every node above; its count is 0, so the item entry
 * it names is never written (acc_apply). */
static int tb_fold(ns_digest_acc_t *a)
{
    static const char hx[] = "0123456789abcdef";
    int rc = NS_OK;
    for (size_t j = 0; j < a->n_tb && rc == NS_OK; j++) {
        unsigned i = a->tb_list[j];
        const uint8_t k[9] = {
            DEPTH_ITEM,          't', 0, (uint8_t)hx[i >> 8], 0, (uint8_t)hx[(i >> 4) & 15], 0,
            (uint8_t)hx[i & 15], 0};
        if (a->tb[i].lo || a->tb[i].hi || a->tb[i].count)
            rc = acc_add(a, k, sizeof k, &a->tb[i], 1);
    }
    tb_clear(a);
    return rc;
}

/* Adds a leaf of hash d (sign +1 or -1) to its item (and so, when the
 * changes are finalized, to every node above it). */
static int acc_leaf(ns_digest_acc_t *a, const item_path_t *p, const ns_digest_sum_t *d, int sign)
{
    int rc = node_key(&a->path, p->v, DEPTH_ITEM);
    return rc ? rc : acc_add(a, a->path.data, a->path.len, d, sign);
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
    uint64_t h[2];
    ns_siphash128(leaf_key, 1, 3, b->data, b->len, h);
    out->lo = h[0];
    out->hi = h[1];
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

/* A queue leaf is its names, then its four fields (32 bytes). */
static int queue_leaf_names(ns_buf_t *b, const char *topic, const char *broker_name)
{
    ns_buf_reset(b);
    int rc = ns_buf_append_u8(b, 'Q');
    rc = rc ? rc : enc_str(b, topic);
    return rc ? rc : enc_str(b, broker_name);
}

/* Puts q's fields after the names' n bytes in b. */
static int queue_leaf_fields(ns_buf_t *b, size_t n, const ns_queue_data_t *q)
{
    uint8_t f[32];
    le64(f, (uint64_t)(int64_t)q->perm);
    le64(f + 8, (uint64_t)(int64_t)q->read_queue_nums);
    le64(f + 16, (uint64_t)(int64_t)q->write_queue_nums);
    le64(f + 24, (uint64_t)(int64_t)q->topic_sys_flag);
    b->len = n;
    return ns_buf_append(b, f, sizeof f);
}

static int queue_leaf(ns_buf_t *b, const char *topic, const ns_queue_data_t *q)
{
    int rc = queue_leaf_names(b, topic, q->broker_name);
    return rc ? rc : queue_leaf_fields(b, b->len, q);
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

/* One change of a topic's queue data, from had to q (either NULL): one
 * entry, the difference of the two leaves' hashes. */
static int add_queue(ns_digest_acc_t *a, const char *topic, const ns_queue_data_t *had,
                     const ns_queue_data_t *q)
{
    item_path_t p;
    ns_digest_sum_t d = {0, 0, 0}, h;
    const ns_queue_data_t *any = had ? had : q;
    if (any == NULL)
        return NS_OK;
    int rc = queue_leaf_names(&a->leaf, topic, any->broker_name);
    size_t names = a->leaf.len; /* had and q name the same row: their leaves differ in fields */
    if (rc == NS_OK && had && (rc = queue_leaf_fields(&a->leaf, names, had)) == NS_OK) {
        leaf_hash(&a->leaf, &h);
        sum_add(&d, &h, -1);
    }
    if (rc == NS_OK && q && (rc = queue_leaf_fields(&a->leaf, names, q)) == NS_OK) {
        leaf_hash(&a->leaf, &h);
        sum_add(&d, &h, 1);
    }
    if (rc != NS_OK)
        return rc;
    if (had && q)
        return tb_add(a, topic, &d);
    item_path(&p, "t", NULL, topic);
    return acc_leaf(a, &p, &d, 1);
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

int ns_digest_queue(ns_txn_t *t, const char *topic, const ns_queue_data_t *had,
                    const ns_queue_data_t *q)
{
    WITH_ACC(t, add_queue(acc_, topic, had, q));
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
    if (a->pfx != b->pfx)
        return a->pfx < b->pfx ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(sort_acc->keys.data + a->off, sort_acc->keys.data + b->off, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Every node a's changes touch, in key order (so depth by depth, the
 * items last): sums of the changes below each. Keys in keys. */
typedef struct {
    ns_buf_t keys;
    acc_ent_t *v;
    size_t n;
} nodes_t;

static void nodes_free(nodes_t *o)
{
    ns_buf_free(&o->keys);
    free(o->v);
}

static int nodes_add(nodes_t *o, const uint8_t *k, size_t n, const ns_digest_sum_t *d)
{
    acc_ent_t *v = ns_array_grow(o->v, o->n, sizeof *v);
    if (v == NULL)
        return NS_ENOMEM;
    o->v = v;
    o->v[o->n] = (acc_ent_t){o->keys.len, (uint32_t)n, 0, *d};
    if (ns_buf_append(&o->keys, k, n) != NS_OK)
        return NS_ENOMEM;
    o->n++;
    return NS_OK;
}

/* Bytes of the first `depth` names of an item key (after its depth byte). */
static size_t prefix_len(const uint8_t *k, size_t n, size_t depth)
{
    size_t i = 1, seen = 0;
    if (depth == 0)
        return 0;
    for (; i < n; i++)
        if (k[i] == 0 && ++seen == depth)
            break;
    return i - 1;
}

static int finalize(ns_digest_acc_t *a, nodes_t *out)
{
    uint32_t *order = NULL;
    nodes_t items = {NS_BUF_INIT, NULL, 0};
    ns_buf_t key = NS_BUF_INIT;
    memset(out, 0, sizeof *out);
    int rc = tb_fold(a);
    if (rc != NS_OK || a->n == 0)
        return rc;
    if ((order = malloc(a->n * sizeof *order)) == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < a->n; i++)
        order[i] = (uint32_t)i;
    sort_acc = a;
    qsort(order, a->n, sizeof *order, cmp_ent);
    sort_acc = NULL;
    /* equal items merged */
    for (size_t i = 0; i < a->n && rc == NS_OK;) {
        const acc_ent_t *e = &a->ents[order[i]];
        ns_digest_sum_t d = e->d;
        size_t j = i + 1;
        for (; j < a->n; j++) {
            const acc_ent_t *f = &a->ents[order[j]];
            if (f->len != e->len || memcmp(a->keys.data + f->off, a->keys.data + e->off, e->len))
                break;
            sum_add(&d, &f->d, 1);
        }
        if (d.lo || d.hi || d.count)
            rc = nodes_add(&items, a->keys.data + e->off, e->len, &d);
        i = j;
    }
    /* the ancestors, depth by depth: runs of items sharing a prefix */
    for (size_t depth = 0; depth < DEPTH_ITEM && rc == NS_OK; depth++) {
        for (size_t i = 0; i < items.n && rc == NS_OK;) {
            const uint8_t *k = items.keys.data + items.v[i].off;
            size_t pl = prefix_len(k, items.v[i].len, depth);
            ns_digest_sum_t d = items.v[i].d;
            size_t j = i + 1;
            for (; j < items.n; j++) {
                const uint8_t *k2 = items.keys.data + items.v[j].off;
                if (prefix_len(k2, items.v[j].len, depth) != pl || memcmp(k2 + 1, k + 1, pl) != 0)
                    break;
                sum_add(&d, &items.v[j].d, 1);
            }
            ns_buf_reset(&key);
            rc = ns_buf_append_u8(&key, (uint8_t)depth);
            rc = rc ? rc : ns_buf_append(&key, k + 1, pl);
            if (rc == NS_OK && (d.lo || d.hi || d.count))
                rc = nodes_add(out, key.data, key.len, &d);
            i = j;
        }
    }
    for (size_t i = 0; i < items.n && rc == NS_OK; i++)
        rc = nodes_add(out, items.keys.data + items.v[i].off, items.v[i].len, &items.v[i].d);
    free(order);
    nodes_free(&items);
    ns_buf_free(&key);
    if (rc != NS_OK)
        nodes_free(out);
    return rc;
}

static int item_count(ns_txn_t *t, const uint8_t *k, size_t n, int64_t *count);

/* Applies the changes to the stored nodes in key order (neighbouring nodes
 * share pages), through one cursor: an interior node gets its delta added
 * (and goes when no leaf is left below it); an item, whose hash is read
 * from its leaves when asked for, is only an entry in its bucket: put when
 * it gained leaves, deleted when it lost them and has none left. */
static int acc_apply(ns_txn_t *t, ns_digest_acc_t *a)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    nodes_t nodes;
    int rc = ns_dbi(t, NS_DB_DIGEST, &dbi);
    if (rc != NS_OK || acc_empty(a))
        return rc;
    if ((rc = finalize(a, &nodes)) != NS_OK)
        return rc;
    if ((rc = ns_lmdb_error(mdb_cursor_open(t->txn, dbi, &cur))) != NS_OK)
        goto out;
    for (size_t i = 0; i < nodes.n && rc == NS_OK; i++) {
        const acc_ent_t *e = &nodes.v[i];
        const uint8_t *kp = nodes.keys.data + e->off;
        MDB_val k = ns_val(kp, e->len), v;
        if (kp[0] == DEPTH_ITEM) {
            int64_t left = 1;
            if (e->d.count > 0) {
                v = ns_val("", 0);
                int prc = mdb_cursor_put(cur, &k, &v, MDB_NOOVERWRITE);
                rc = prc == MDB_KEYEXIST ? NS_OK : ns_lmdb_error(prc);
            } else if (e->d.count < 0 && (rc = item_count(t, kp, e->len, &left)) == NS_OK &&
                       left == 0 && mdb_cursor_get(cur, &k, &v, MDB_SET_KEY) == 0) {
                rc = ns_lmdb_error(mdb_cursor_del(cur, 0));
            }
            continue;
        }
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
                            (unsigned)kp[0], (long long)s.count);
            rc = found == 0 ? ns_lmdb_error(mdb_cursor_del(cur, 0)) : NS_OK;
            continue;
        }
        uint8_t buf[NODE_VAL_LEN];
        node_encode(&s, buf);
        v = ns_val(buf, sizeof buf);
        k = ns_val(kp, e->len);
        rc = ns_lmdb_error(mdb_cursor_put(cur, &k, &v, found == 0 ? MDB_CURRENT : 0));
    }
out:
    if (cur)
        mdb_cursor_close(cur);
    nodes_free(&nodes);
    return rc;
}

int ns_digest_flush(ns_txn_t *t)
{
    if (t->digest == NULL || acc_empty(t->digest))
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
    return add_queue(ctx, ks, NULL, &q);
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

static int cmp_key(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Walks the stored nodes and the computed ones side by side (both in key
 * order): interior nodes must hold the computed sums, items must be
 * entries exactly where the data has leaves. */
int ns_digest_verify(ns_txn_t *t, ns_buf_t *report)
{
    MDB_dbi dbi;
    MDB_cursor *cur = NULL;
    ns_digest_acc_t *want = NULL;
    nodes_t nodes = {NS_BUF_INIT, NULL, 0};
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
    rc = rc ? rc : finalize(want, &nodes);
    rc = rc ? rc : ns_lmdb_error(mdb_cursor_open(t->txn, dbi, &cur));
    MDB_val k, v;
    size_t i = 0;
    int g = rc == NS_OK ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : MDB_NOTFOUND;
    while (rc == NS_OK && (g == 0 || i < nodes.n)) {
        const acc_ent_t *e = i < nodes.n ? &nodes.v[i] : NULL;
        const uint8_t *ek = e ? nodes.keys.data + e->off : NULL;
        int c = g != 0 ? 1 : e == NULL ? -1 : cmp_key(k.mv_data, k.mv_size, ek, e->len);
        ns_digest_sum_t s;
        if (c < 0) {
            bad++;
            report_path(report, k.mv_data, k.mv_size);
            ns_buf_append_str(report, " digest: stored node has no leaf in the data\n");
        } else if (c > 0) {
            bad++;
            report_path(report, ek, e->len);
            ns_buf_append_str(report, " digest: node of the data is not stored\n");
        } else if (ek[0] == DEPTH_ITEM ? v.mv_size != 0
                                       : node_decode(v.mv_data, v.mv_size, &s) != NS_OK ||
                                             !ns_digest_sum_eq(&s, &e->d)) {
            bad++;
            report_path(report, ek, e->len);
            ns_buf_append_str(report, " digest: stored node differs from the data\n");
        }
        if (c <= 0)
            g = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        if (c >= 0)
            i++;
    }
    if (rc == NS_OK && g != 0 && g != MDB_NOTFOUND)
        rc = ns_lmdb_error(g);
    if (cur)
        mdb_cursor_close(cur);
    nodes_free(&nodes);
    ns_digest_acc_free(want);
    return rc == NS_OK ? bad : rc;
}

/* ---- reading ---- */

static int item_sum(ns_txn_t *t, const char *const *path, ns_digest_sum_t *out);

int ns_digest_get(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_sum_t *out)
{
    ns_buf_t k = NS_BUF_INIT;
    ns_slice_t v;
    memset(out, 0, sizeof *out);
    if (depth == DEPTH_ITEM) {
        int rc = item_sum(t, path, out);
        return rc == NS_OK && out->count == 0 ? NS_ENOTFOUND : rc;
    }
    int rc = depth < DEPTH_ITEM ? node_key(&k, path, depth) : NS_EINVAL;
    rc = rc ? rc : ns_db_get(t, NS_DB_DIGEST, &k, &v);
    rc = rc ? rc : node_decode(v.ptr, v.len, out);
    ns_buf_free(&k);
    return rc;
}

struct child_walk {
    ns_txn_t *t;
    ns_digest_child_cb cb;
    void *ctx;
    const char *const *path; /* the bucket: its items' hashes are computed */
    size_t depth;
};

static int child_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct child_walk *w = ctx;
    ns_digest_sum_t s;
    int rc;
    if (w->depth + 1 == DEPTH_ITEM) {
        const char *item[DEPTH_ITEM];
        memcpy(item, w->path, w->depth * sizeof *item);
        item[w->depth] = ks;
        rc = item_sum(w->t, item, &s);
        if (rc == NS_OK && s.count == 0)
            return 0; /* an entry with no leaf left: verify reports it */
    } else {
        rc = node_decode(v, vl, &s);
    }
    return rc ? rc : w->cb(ks, &s, w->ctx);
}

int ns_digest_children(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_child_cb cb,
                       void *ctx)
{
    ns_buf_t k = NS_BUF_INIT;
    struct child_walk w = {t, cb, ctx, path, depth};
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

/* ---- an item's sum, from its leaves ---- */

static int sum_leaf_cb(const char *name, const ns_digest_sum_t *h, const char *json, size_t len,
                       void *ctx)
{
    sum_add(ctx, h, 1);
    return 0;
}

static int item_sum(ns_txn_t *t, const char *const *path, ns_digest_sum_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = ns_digest_leaves(t, path, DEPTH_ITEM, sum_leaf_cb, out);
    return rc == NS_EINVAL ? NS_OK : rc; /* not an item where it says: no leaf */
}

static int count_row_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    ++*(int64_t *)ctx;
    return 0;
}

/* A topic item's leaves are its queue rows, one each: counted without
 * encoding, hashing or naming them (an unregistration asks this of every
 * topic the broker served). */
static int topic_item_count(ns_txn_t *t, const char *const *path, int64_t *count)
{
    ns_skey_t k;
    *count = 0;
    if (!item_path_ok(path, DEPTH_ITEM))
        return NS_OK; /* not an item where it says: no leaf, as item_sum */
    int rc = ns_skey2(&k, path[DEPTH_ITEM - 1], NULL);
    rc = rc ? rc : ns_db_walk(t, NS_DB_QUEUES, &k.buf, count_row_cb, count);
    ns_skey_free(&k);
    return rc;
}

/* The leaves an item key [k, k+n) has in the data. */
static int item_count(ns_txn_t *t, const uint8_t *k, size_t n, int64_t *count)
{
    char buf[5 * (NS_FLEET_MAX_NAME + 1)];
    const char *path[DEPTH_ITEM];
    size_t d = 0;
    ns_digest_sum_t s;
    if (n > sizeof buf)
        return NS_EINVAL;
    memcpy(buf, k + 1, n - 1);
    buf[n - 1] = 0;
    path[d++] = buf;
    for (size_t i = 0; i + 1 < n && d < DEPTH_ITEM; i++)
        if (buf[i] == 0)
            path[d++] = buf + i + 1;
    if (d != DEPTH_ITEM)
        return NS_EINVAL;
    if (strcmp(path[0], "t") == 0)
        return topic_item_count(t, path, count);
    int rc = item_sum(t, path, &s);
    *count = s.count;
    return rc;
}

int ns_digest_root(ns_txn_t *t, ns_digest_sum_t *out)
{
    int rc = t->write ? ns_digest_flush(t) : NS_OK;
    rc = rc ? rc : ns_digest_get(t, NULL, 0, out);
    return rc == NS_ENOTFOUND ? NS_OK : rc;
}
