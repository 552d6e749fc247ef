/* internal.h - what the store's files share; nothing outside store/ and
 * migrations/ includes this. */
#ifndef NS_STORE_INTERNAL_H
#define NS_STORE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>

#include "keys.h"
#include "tree_walk.h"
#include "ns/err.h"
#include "ns/store.h"

struct ns_store {
    MDB_env *env;
    MDB_dbi dbi[NS_DB_COUNT];
    bool have_db[NS_DB_COUNT];
    uint32_t schema;
    size_t map_size;
    size_t map_max;
    bool read_only;
    int lock_fd;
    char *dir;
    /* Readers hold this shared for the life of a read txn; ns_store_grow
     * takes it exclusively because mdb_env_set_mapsize needs no live txn in
     * the process. Uncontended except during a (rare) resize. */
    pthread_rwlock_t resize_lock;
    uint64_t map_moves; /* resizes (each may move the map); under resize_lock */
    /* Moves after every committed write transaction and before a resize
     * waits for the readers (ns_store_read_epoch). */
    ns_store_epoch_t read_epoch;
    _Atomic uint64_t grown;  /* map growths since open (ns_store_map_grown) */
    unsigned grow_percent;   /* ns_store_keep_headroom's threshold */
    bool warned_at_max;      /* ns_store_keep_headroom said the map is at map_max */
    size_t route_memo_slots; /* each reusable read transaction's memo; 0: none */
    uint64_t free_dropped;   /* the newest free-page record dropped (free_pages.c; writer) */
    struct ns_route_index *route_index; /* NULL: off (route_index.h) */
};

typedef struct ns_digest_acc ns_digest_acc_t;
typedef struct ns_route_memo ns_route_memo_t;

struct ns_txn {
    MDB_txn *txn;
    ns_store_t *s;
    bool write;
    bool holds_resize_lock;
    ns_txn_t *parent;
    ns_digest_acc_t *digest; /* this write transaction's digest changes (digest.c) */
    size_t written;          /* bytes put and deleted so far (ns_txn_wrote) */
    ns_route_memo_t *memo;   /* a reusable read transaction's (route_memo.h) */
    /* The routes table's tree in this read transaction's snapshot, read at
     * its first lookup (route.c, tree_walk.h); tree_txnid and tree_moves
     * say which snapshot and map it is of. */
    ns_tree_t tree;
    uint64_t tree_txnid, tree_moves;
    uint8_t tree_state; /* NS_TREE_UNREAD, NS_TREE_READ, NS_TREE_OFF */
    /* A write transaction's cursors kept open till its end, one per table,
     * lent to one user at a time (ns_db_cursor_take); a bit per table. */
    MDB_cursor *kept[NS_DB_COUNT];
    uint32_t kept_lent;
};
enum { NS_TREE_UNREAD, NS_TREE_READ, NS_TREE_OFF };

/* Counts a put or delete of n key and value bytes in t's top transaction
 * (what ns_txn_written reports; LMDB keeps the pages it dirties in memory
 * until the commit). */
#define NS_TXN_WRITE_OVERHEAD 64
static inline void ns_txn_wrote(ns_txn_t *t, size_t n)
{
    while (t->parent)
        t = t->parent;
    t->written += n + NS_TXN_WRITE_OVERHEAD;
}

/* Whether the lookup path's descent of the routes tree (tree_walk.h) and
 * the routes index (route_index.h) find topic (n bytes) at val, vlen bytes,
 * where a cursor of read transaction t found it; true for the one that
 * declines (the next answers then) or when t writes. verify.c asks it of
 * every route. */
bool ns_route_walk_agrees(ns_txn_t *t, const char *topic, size_t n, const void *val, size_t vlen);

/* The compacted hot copy of ns_store_backup (env.c); *txnid gets the last
 * committed transaction when the copy began (the copy holds it or a later
 * one). */
int ns_store_copy(ns_store_t *s, const char *dir, uint64_t *txnid, char *err, size_t errlen);

/* ns_store_open without ns_store_file_check first: for the KV salvage's
 * child only, which reads what it can of a damaged file before it crashes. */
int ns_store_open_unchecked(const ns_store_opts_t *opts, ns_store_t **out, char *err,
                            size_t errlen);

/* The one place LMDB error codes become NS_* codes. */
int ns_lmdb_error(int rc);

/* Database handle for table id in t; fails with NS_ECORRUPT when the store's
 * schema predates that table. */
static inline int ns_dbi(ns_txn_t *t, int id, MDB_dbi *out)
{
    if (!t->s->have_db[id])
        return NS_ECORRUPT;
    *out = t->s->dbi[id];
    return NS_OK;
}

static inline MDB_val ns_val(const void *p, size_t n)
{
    MDB_val v = {n, (void *)p};
    return v;
}

/* Small record packer: [u32 len][bytes][NUL] strings (len 0xFFFFFFFF =
 * NULL), i64, u8; integers in host byte order (memcpy), as LMDB's file is. */
int ns_pack_str(ns_buf_t *b, const char *s);
int ns_pack_i64(ns_buf_t *b, int64_t v);
int ns_pack_u8(ns_buf_t *b, uint8_t v);

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    bool bad;
} ns_unpack_t;

/* Borrowed pointer into the packed value (NUL-terminated), NULL for a packed
 * NULL or on error (sets u->bad). */
const char *ns_unpack_str(ns_unpack_t *u);
/* Heap copy of the next string (NULL stays NULL); sets bad on ENOMEM. */
char *ns_unpack_strdup(ns_unpack_t *u);
int64_t ns_unpack_i64(ns_unpack_t *u);
uint8_t ns_unpack_u8(ns_unpack_t *u);

/* Generic helpers over one table. */
int ns_db_put(ns_txn_t *t, int db, const ns_buf_t *key, const void *val, size_t n);
int ns_db_get(ns_txn_t *t, int db, const ns_buf_t *key, ns_slice_t *val);
int ns_db_del(ns_txn_t *t, int db, const ns_buf_t *key); /* NS_OK when absent */
/* Walks keys starting with prefix (all keys when prefix->len == 0). The
 * callback gets the key after the prefix as a NUL-terminated copy, borrowed
 * for the call (so a two-part suffix "a \0 b" reads as the string a, and b
 * is the string after a's NUL), its length, and the value. A callback's
 * non-zero return stops the walk and is returned. */
typedef int (*ns_db_walk_cb)(const char *key, size_t klen, const uint8_t *val, size_t vlen,
                             void *ctx);
int ns_db_walk(ns_txn_t *t, int db, const ns_buf_t *prefix, ns_db_walk_cb cb, void *ctx);
/* Walks every key of db that sorts after `after` (all keys when it is NULL
 * or empty), as ns_db_walk with an empty prefix: a page of a table. */
int ns_db_walk_after(ns_txn_t *t, int db, const ns_buf_t *after, ns_db_walk_cb cb, void *ctx);
int ns_db_count(ns_txn_t *t, int db, size_t *out);
/* A cursor on db for one use, given back with ns_db_cursor_give. In a write
 * transaction it is the table's kept cursor when that is not lent already:
 * where it stopped, it finds a key on the same leaf page without descending
 * the tree again (LMDB's cursor set compares the key with that page's first
 * and last keys), so a batch of puts or walks in key order, as a commit's
 * routes are written, descends about once per leaf, not once per key. LMDB
 * keeps it right across the transaction's other writes; it is closed before
 * the transaction ends (ns_db_cursors_close). Otherwise a new cursor. */
int ns_db_cursor_take(ns_txn_t *t, int db, MDB_cursor **out);
void ns_db_cursor_give(ns_txn_t *t, int db, MDB_cursor *cur);
void ns_db_cursors_close(ns_txn_t *t);

/* Sequence logs (seqlog.c): JSON records under 8-byte big-endian sequence
 * numbers in table db, the last number handed out under meta key seq_meta.
 * Append takes the next number (into *seq_out when not NULL). Iter calls cb
 * in order from from_seq (0: the first key) with a NUL-terminated copy of
 * each record; a key that is not 8 bytes is NS_ECORRUPT; a non-zero return
 * of cb stops and is returned. Del removes one record (NS_OK when absent),
 * trim every record below keep_from. */
int ns_seqlog_append(ns_txn_t *t, int db, const char *seq_meta, const char *json, size_t len,
                     uint64_t *seq_out);
int ns_seqlog_iter(ns_txn_t *t, int db, uint64_t from_seq, ns_audit_cb cb, void *ctx);
int ns_seqlog_del(ns_txn_t *t, int db, uint64_t seq);
int ns_seqlog_trim(ns_txn_t *t, int db, uint64_t keep_from);
#include "seqlog_pack.h"

/* QueueData from its stored value (queue.c). */
void ns_queue_decode(const uint8_t *v, size_t vl, ns_queue_data_t *out);

/* The fleet digest's side of every table change (digest.c). Each adds
 * (sign +1) or takes away (sign -1) one leaf in write transaction t; the
 * table functions call them with the record before and after a change, so
 * the digest follows whatever writes the tables. No-ops (NS_OK) when the
 * digest is not kept (ns_digest_kept: a schema without the table). The
 * changes are written when t commits (ns_digest_flush, from ns_txn_commit)
 * and dropped with t when it aborts; ns_digest_forget drops them earlier
 * (ns_store_clear). */
bool ns_digest_kept(ns_txn_t *t);
int ns_digest_member(ns_txn_t *t, const char *cluster, const char *broker_name, int sign);
int ns_digest_group(ns_txn_t *t, const ns_group_rec_t *g, int sign);
int ns_digest_live(ns_txn_t *t, const ns_live_rec_t *r, int sign);
/* A topic's queue data for one broker changes from had to q (either NULL:
 * added, removed); one entry for both, or, when both are given (the item
 * keeps its leaf count), only its bucket's sum (digest.c). */
int ns_digest_queue(ns_txn_t *t, const char *topic, const ns_queue_data_t *had,
                    const ns_queue_data_t *q);
int ns_digest_kv(ns_txn_t *t, const char *ns, const char *key, const uint8_t *v, size_t n,
                 int sign);
int ns_digest_flush(ns_txn_t *t);
void ns_digest_forget(ns_txn_t *t);
ns_digest_acc_t *ns_digest_acc_new(void);
void ns_digest_acc_free(ns_digest_acc_t *a);

#endif
