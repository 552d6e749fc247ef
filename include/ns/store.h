/* store.h - the persistent state of the NameServer, on LMDB.
 *
 * Only store/ and migrations/ include lmdb.h; everything else sees this API.
 * The key layout and cross-table invariants are documented at the top of
 * store/keys.h. Errors are NS_* codes (LMDB's are translated once, in
 * store/env.c).
 *
 * Threads and transactions: one writer thread owns all write transactions
 * (src/daemon/core/writer.c); any thread may run read transactions, which never wait for
 * the writer (LMDB MVCC). Values handed out as ns_slice_t or const char *
 * are BORROWED from the map and valid only until their transaction ends.
 * Records returned in *_rec_t structs are heap copies the caller frees with
 * the matching *_free(). Iterators call their callback in key order; a
 * callback returns 0 to go on, anything else stops the walk and becomes the
 * iterator's return value.
 */
#ifndef NS_STORE_H
#define NS_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ns/buf.h"
#include "ns/kvver.h"
#include "ns/model.h"
#include "ns/strlist.h"
#include "ns/strmap.h"

typedef struct ns_store ns_store_t;
typedef struct ns_txn ns_txn_t;

typedef enum { NS_SYNC_FULL = 0, NS_SYNC_NOMETASYNC, NS_SYNC_NOSYNC } ns_sync_mode_t;

typedef struct {
    const char *dir;       /* data directory; created if missing (unless read_only) */
    size_t map_size_bytes; /* initial map size */
    size_t map_max_bytes;  /* growth stops here: NS_EMAPFULL */
    ns_sync_mode_t sync_mode;
    bool read_only;         /* offline readers (dump, verify, stat): no lock, no migrations */
    bool lock;              /* take the exclusive directory lock (namesrvd, restore) */
    uint32_t target_schema; /* migrate up to this version; 0 = latest (tests use older) */
    /* slots of the route memo each reusable read transaction keeps of its
     * snapshot (store/route_memo.h); 0 = none */
    size_t route_memo_slots;
} ns_store_opts_t;

/* Opens (creating if needed) the store in opts->dir, takes the directory
 * lock when asked, clears stale reader slots, and runs pending migrations in
 * one write transaction. On failure *out is NULL and err holds a one-line
 * reason: NS_ELOCKED (names the holder's pid), NS_ESCHEMA (store newer than
 * the binary), NS_ECORRUPT (not a store / damaged; files left untouched),
 * NS_EIO. On success the caller closes with ns_store_close(). */
int ns_store_open(const ns_store_opts_t *opts, ns_store_t **out, char *err, size_t errlen);
void ns_store_close(ns_store_t *s);
/* Schema version of the open store, and the newest this binary knows. */
uint32_t ns_store_schema_version(const ns_store_t *s);
uint32_t ns_store_latest_schema(void);
/* Current map size and bytes in use (last page * page size). */
void ns_store_map_usage(ns_store_t *s, size_t *map_size, size_t *used_bytes);
/* Reader slots used (high-water mark since open) and available. */
void ns_store_readers(ns_store_t *s, unsigned *used, unsigned *max);
/* Copies the environment, compacted, into an empty directory (hot backup). */
int ns_store_backup(ns_store_t *s, const char *dir, char *err, size_t errlen);
/* ---- the store file, before it is mapped (store/file.c) ----
 * Reads dir/data.mdb's two meta pages with pread and checks the file holds
 * every page the newer one names: LMDB maps the file and trusts that, so a
 * file cut short would be a SIGBUS at the first read past its end. Every
 * ns_store_open runs it first. NS_OK (out filled; meta_ok false when the
 * meta pages are not LMDB's: LMDB then refuses the file by itself),
 * NS_ENOTFOUND (no data.mdb), NS_EINVAL (data.mdb is a directory or not a
 * regular file: a usage problem, not damage), NS_ECORRUPT (cut short), NS_EIO;
 * err says which in one line. */
typedef struct {
    bool meta_ok;
    uint32_t page_size;
    uint64_t last_pgno, txnid, map_size, file_size;
} ns_store_file_t;
int ns_store_file_check(const char *dir, ns_store_file_t *out, char *err, size_t errlen);

/* ---- backups (store/file.c) ----
 * A backup is a directory holding data.mdb (a compacted copy) and
 * BACKUP-INFO, a text file:
 *   namesrv-backup 1
 *   sequence N      one more than the largest in its backup directory
 *   txnid T         the store's last committed transaction at the copy
 *   created_ms W    the wall clock, for people: never used to order or prune
 * Backups are ordered by sequence, then txnid, never by name or wall time:
 * a clock set a day ahead and back makes no backup look older or newer
 * than it is. One is written under a ".tmp" name (ns_store_backup_stage:
 * files and directory fsynced), checked, then renamed with
 * ns_fs_rename_durable; a ".tmp" directory is never a backup. */
typedef struct {
    char *name, *path; /* heap: the entry's name in its directory and its path */
    uint64_t seq;      /* 0 when it has no BACKUP-INFO (a copy made by hand) */
    uint64_t txnid;    /* BACKUP-INFO's, else the copy's own meta page's */
    int64_t created_ms;
    bool has_info;
} ns_backup_entry_t;
/* Every directory of bdir that holds a data.mdb (whatever its name, but not
 * "*.tmp" or hidden ones), newest first: by sequence, then txnid, then name.
 * Whether each one checks good is the caller's question (ns_store_check_dir).
 * A missing bdir is an empty list. Free with ns_backup_list_free. */
int ns_backup_list(const char *bdir, ns_backup_entry_t **out, size_t *n);
void ns_backup_list_free(ns_backup_entry_t *v, size_t n);
/* The sequence the next backup of bdir gets: one more than the largest. */
int ns_backup_next_seq(const char *bdir, uint64_t *out);
/* Writes the compacted copy and its BACKUP-INFO (sequence seq) into tmp
 * (removed first if a killed run left it), every file and tmp itself
 * fsynced. *txnid_out (may be NULL) gets the info's txnid. */
int ns_store_backup_stage(ns_store_t *s, const char *tmp, uint64_t seq, uint64_t *txnid_out,
                          char *err, size_t errlen);

/* `namesrvctl recover --data-dir D` journals its steps in D followed by
 * this suffix (tools/namesrvctl/recover.c). While that file exists a
 * recover of D was interrupted: D may still be the old store, or missing
 * for a moment, and namesrvd refuses to start on it (it would serve the
 * old store, or create an empty one in D's place). */
#define NS_RECOVER_JOURNAL_SUFFIX ".recover"

/* Reads the pid recorded in dir's lock file if some process holds the lock;
 * 0 if the directory is not locked. */
long ns_store_lock_holder(const char *dir);

/* ---- transactions ---- */

/* Begins a transaction; caller ends it with ns_txn_commit or ns_txn_abort,
 * which also free *out. A write transaction grows the map on demand: when an
 * operation reports NS_EMAPFULL, the caller aborts, calls ns_store_grow() and
 * retries. */
int ns_txn_begin(ns_store_t *s, bool write, ns_txn_t **out);
int ns_txn_commit(ns_txn_t *t);
void ns_txn_abort(ns_txn_t *t);
/* Key and value bytes a write transaction has put or deleted so far (plus
 * a few dozen per operation): what the writer bounds a batch by, since
 * LMDB holds every page a transaction dirties in memory until it ends. */
size_t ns_txn_written(const ns_txn_t *t);
/* Reusable read transaction: begins (first call) or renews *slot; end it
 * with ns_txn_read_reset (the handle stays for the next renew) and free it
 * with ns_txn_abort when done for good. */
int ns_txn_read_renew(ns_store_t *s, ns_txn_t **slot);
void ns_txn_read_reset(ns_txn_t *t);
/* A counter that moves whenever a read snapshot taken before it should go:
 * by 2 after every write transaction committed (once the commit is visible
 * to new readers), and it is odd while ns_store_grow waits for the readers
 * to let go. A reader that keeps its snapshot between reads loads the
 * counter (acquire) before it renews, and lets the snapshot go once the
 * counter moved or is odd: a write whose reply a peer got before sending a
 * request is then in the snapshot that answers it, and a resize waits for
 * at most the read in progress. Borrowed for the life of the store; any
 * thread. */
typedef _Atomic uint64_t ns_store_epoch_t;
const ns_store_epoch_t *ns_store_read_epoch(ns_store_t *s);
/* Doubles the map size up to map_max_bytes. NS_EMAPFULL when already at the
 * limit. Call only with no write transaction open (the writer thread). */
int ns_store_grow(ns_store_t *s);
/* Grows the map (ns_store_grow, as often as needed) when more than the
 * store's grow percent of it is in use, so that the store ends every write
 * with room for the next one instead of at 100 % (LMDB's map is address
 * space: the file does not grow with it); a grown map is recorded in the
 * file at once. Logged. NS_OK (also on a read-only store), NS_EMAPFULL when
 * map_max stops it (a warning is logged), or the resize's error. Same
 * thread rule as ns_store_grow. Every writable open runs it once; the
 * percent is NS_STORE_GROW_AT_PERCENT until set (namesrvd: mapGrowPercent). */
#define NS_STORE_GROW_AT_PERCENT 80
int ns_store_keep_headroom(ns_store_t *s);
void ns_store_set_grow_percent(ns_store_t *s, unsigned percent);
/* Keeps a hash index of the routes table for the lookups (store/route_index.h:
 * a name to its node in one snapshot, read lock-free; the descent answers
 * whenever it does not). Off until started; call before other threads use
 * the store. NS_OK or NS_ENOMEM. ns_store_route_index_refresh brings it to
 * the newest snapshot and keeps a read transaction of it until the next
 * refresh (LMDB reuses no page freed since: refresh after writes, or let
 * go); ns_store_route_index_let_go ends that transaction.
 * Both on one thread, the one that grows the map (namesrvd's writer), which
 * also lets go before it ends; ns_store_grow lets go itself. */
int ns_store_route_index_start(ns_store_t *s);
void ns_store_route_index_refresh(ns_store_t *s);
void ns_store_route_index_let_go(ns_store_t *s);
/* The index's entries and slots (0, 0 when off). */
void ns_store_route_index_size(ns_store_t *s, size_t *entries, size_t *slots);
/* Gives back the memory of the pages LMDB lists free in the file (copies
 * that write transactions replaced): unmapped and dropped from the page
 * cache, nothing on disk changed (store/free_pages.c). Those freed by the
 * newest committed transaction stay unless newest_too: readers may still
 * read them in the snapshot before it (they would read them back from the
 * file). Each transaction's list is dropped once; *pages says how many
 * pages this call dropped. Same thread rule as ns_store_grow (the writer
 * thread, after a batch and when idle). NS_OK, or a read transaction's
 * error. */
int ns_store_release_free_pages(ns_store_t *s, bool newest_too, uint64_t *pages);
/* How often the map has grown since the store was opened (any thread). */
uint64_t ns_store_map_grown(ns_store_t *s);
/* Runs fn in a write transaction and commits it. When the map fills (fn or
 * the commit says NS_EMAPFULL) the transaction is aborted, the map grown
 * (ns_store_grow) and fn run again from the start, so fn rebuilds whatever
 * it reports each time. Any other error of fn aborts and is returned (a
 * caller that wants no commit without an error returns NS_EREFUSED). After
 * the commit, ns_store_keep_headroom. For the
 * offline writers, which own the store alone. */
typedef int (*ns_write_fn)(ns_txn_t *t, void *ctx);
int ns_store_write(ns_store_t *s, ns_write_fn fn, void *ctx);

/* ---- meta ---- */
int ns_meta_get_u64(ns_txn_t *t, const char *key, uint64_t *out); /* NS_ENOTFOUND */
int ns_meta_put_u64(ns_txn_t *t, const char *key, uint64_t v);
int ns_meta_del(ns_txn_t *t, const char *key); /* NS_OK when absent */

/* ---- KV config: namespace -> key -> value ---- */
int ns_kv_put(ns_txn_t *t, const char *ns, const char *key, const char *val);
int ns_kv_get(ns_txn_t *t, const char *ns, const char *key, ns_slice_t *val); /* NS_ENOTFOUND */
int ns_kv_del(ns_txn_t *t, const char *ns, const char *key); /* NS_OK when absent */
bool ns_kv_ns_exists(ns_txn_t *t, const char *ns);
int ns_kv_ns_create(ns_txn_t *t, const char *ns);
typedef int (*ns_kv_cb)(const char *key, const char *val, size_t val_len, void *ctx);
/* Keys of one namespace in key order; NS_ENOTFOUND if the namespace is absent. */
int ns_kv_iter(ns_txn_t *t, const char *ns, ns_kv_cb cb, void *ctx);
typedef int (*ns_name_cb)(const char *name, void *ctx);
int ns_kv_ns_iter(ns_txn_t *t, ns_name_cb cb, void *ctx);
/* Keys in all namespaces. */
int ns_kv_count(ns_txn_t *t, size_t *out);
/* Every KV entry (not the tombstones) whose (ns, key) sorts after the one
 * given (ns NULL: from the first), in store order, with its version ((0, 0)
 * when it has none); strings borrowed for the call, val NUL-terminated. A
 * non-zero return of cb stops the walk and is returned. */
typedef int (*ns_kv_entry_cb)(const char *ns, const char *key, const char *val, size_t val_len,
                              const ns_kvver_t *ver, void *ctx);
int ns_kv_iter_after(ns_txn_t *t, const char *ns, const char *key, ns_kv_entry_cb cb, void *ctx);
/* Writes a table ns_kvconfig_check validated ({ns: {key: "value"}},
 * ns/jsondoc.h) in t: every namespace created, every string value put, null
 * values skipped; *replaced counts keys that held another value. */
struct cJSON;
int ns_kv_import(ns_txn_t *t, const struct cJSON *table, size_t *replaced);

/* ---- KV versions and tombstones (v10; kvSync, include/ns/kvver.h) ----
 * ns_kv_put/del above are plain writes: they leave the entry at version
 * (0, 0) (an import, a restore). The writes of PUT/DELETE_KV_CONFIG are the
 * _local ones: the next hlc of this store (max(now_ms << 16, last + 1),
 * kept in meta so a restart never goes back) with its server id, and a
 * delete leaves a tombstone. *out (may be NULL) gets the version written.
 * Write transactions only. */
int ns_kv_put_local(ns_txn_t *t, const char *ns, const char *key, const char *val, int64_t now_ms,
                    ns_kvver_t *out);
int ns_kv_del_local(ns_txn_t *t, const char *ns, const char *key, int64_t now_ms, ns_kvver_t *out);
/* The stored version of (ns, key): NS_ENOTFOUND when it has none (version
 * (0, 0) if a value exists); NS_ECORRUPT for a row of another format. */
int ns_kv_version_get(ns_txn_t *t, const char *ns, const char *key, ns_kvver_t *out);
/* The entry's whole state: NS_OK with *ver and, unless ver->deleted, *val
 * (borrowed until the txn ends); NS_ENOTFOUND when neither a value nor a
 * tombstone is stored; NS_ECORRUPT when row and value disagree (I10). */
int ns_kv_state_get(ns_txn_t *t, const char *ns, const char *key, ns_kvver_t *ver, ns_slice_t *val);
/* Merges a peer's state of (ns, key): version rv and value val (NULL for a
 * tombstone). Written, value or tombstone with its version, only when it
 * orders above the local state (or nothing is stored); *applied says
 * whether. The local hlc moves up to rv->hlc either way. NS_EINVAL for a
 * tombstone without a version or a value missing. */
int ns_kv_merge(ns_txn_t *t, const char *ns, const char *key, const ns_kvver_t *rv, const char *val,
                bool *applied);
/* This store's tie-break id (meta kv_server_id), made at random by the first
 * call in a write transaction; NS_ENOTFOUND in a read one before that. */
int ns_kv_server_id(ns_txn_t *t, uint64_t *out);
/* The greatest hlc issued or accepted (0 before any). */
int ns_kv_hlc_get(ns_txn_t *t, uint64_t *out);
/* Removes up to max tombstones whose hlc's wall time is before before_ms
 * (*removed) and counts the tombstones that stay (*left). In a read
 * transaction nothing is removed: *removed counts what would be. */
int ns_kv_tombstones_sweep(ns_txn_t *t, int64_t before_ms, size_t max, size_t *removed,
                           size_t *left);

/* ---- clusters: cluster -> set of broker names ---- */
int ns_cluster_add(ns_txn_t *t, const char *cluster, const char *broker_name);
int ns_cluster_del(ns_txn_t *t, const char *cluster, const char *broker_name);
/* NS_OK when the pair / the cluster is stored, NS_ENOTFOUND when not, or
 * the store's error. */
int ns_cluster_has(ns_txn_t *t, const char *cluster, const char *broker_name);
int ns_cluster_exists(ns_txn_t *t, const char *cluster);
typedef int (*ns_pair_cb)(const char *a, const char *b, void *ctx);
/* All (cluster, broker name) pairs, sorted. */
int ns_cluster_iter(ns_txn_t *t, ns_pair_cb cb, void *ctx);
/* The pairs after (cluster, broker_name), exclusive; cluster NULL: all. */
int ns_cluster_iter_after(ns_txn_t *t, const char *cluster, const char *broker_name, ns_pair_cb cb,
                          void *ctx);
/* Broker names of one cluster, sorted. */
int ns_cluster_brokers_iter(ns_txn_t *t, const char *cluster, ns_name_cb cb, void *ctx);

/* ---- broker groups: broker name -> BrokerData ---- */
typedef struct {
    char *broker_name;
    char *cluster;
    char *zone_name; /* NULL when none */
    bool enable_acting_master;
    ns_broker_addr_t *addrs; /* sorted by id; addrs[i].addr heap-owned */
    size_t n_addrs;
} ns_group_rec_t;
int ns_group_get(ns_txn_t *t, const char *broker_name, ns_group_rec_t *out); /* NS_ENOTFOUND */
int ns_group_put(ns_txn_t *t, const ns_group_rec_t *g);
int ns_group_del(ns_txn_t *t, const char *broker_name);
/* The callback may keep the record: move *g out and zero it. */
typedef int (*ns_group_cb)(ns_group_rec_t *g, void *ctx);
int ns_group_iter(ns_txn_t *t, ns_group_cb cb, void *ctx);
/* The groups whose name sorts after broker_name (NULL: all). */
int ns_group_iter_after(ns_txn_t *t, const char *broker_name, ns_group_cb cb, void *ctx);
void ns_group_rec_free(ns_group_rec_t *g);
/* Helpers on a record: address of id (NULL), set id->addr, remove by addr. */
const char *ns_group_addr_of(const ns_group_rec_t *g, int64_t id);
int ns_group_set_addr(ns_group_rec_t *g, int64_t id, const char *addr);
size_t ns_group_remove_addr(ns_group_rec_t *g, const char *addr); /* returns how many removed */
/* Fills a model view of the record (borrows g's strings). */
void ns_group_view(const ns_group_rec_t *g, ns_broker_data_t *out);

/* ---- registered broker addresses: (cluster, addr) -> record ----
 * The persistent half of Java's live table: everything but the timestamps. */
typedef struct {
    char *cluster;
    char *addr;
    char *broker_name;
    int64_t broker_id;
    char *ha_addr;
    ns_dataversion_t dv;
    int64_t heartbeat_timeout_ms;
    char **filter_servers;
    size_t n_filter_servers;
    int64_t registered_ms; /* wall clock of the last registration that wrote */
} ns_live_rec_t;
int ns_live_get(ns_txn_t *t, const char *cluster, const char *addr, ns_live_rec_t *out);
int ns_live_put(ns_txn_t *t, const ns_live_rec_t *r);
int ns_live_del(ns_txn_t *t, const char *cluster, const char *addr);
typedef int (*ns_live_cb)(const ns_live_rec_t *r, void *ctx);
int ns_live_iter(ns_txn_t *t, ns_live_cb cb, void *ctx);
/* The records after (cluster, addr), exclusive; cluster NULL: all. */
int ns_live_iter_after(ns_txn_t *t, const char *cluster, const char *addr, ns_live_cb cb,
                       void *ctx);
void ns_live_rec_free(ns_live_rec_t *r);

/* ---- queue data: topic -> broker name -> QueueData (+ reverse index) ---- */
int ns_queue_put(ns_txn_t *t, const char *topic, const ns_queue_data_t *q);
/* Stores q unless the record stored for (topic, q->broker_name) already
 * equals it, with one B-tree search: *existed says whether there was a
 * record (then *had holds it; had->broker_name is q's), *wrote whether q
 * was written. */
int ns_queue_update(ns_txn_t *t, const char *topic, const ns_queue_data_t *q, ns_queue_data_t *had,
                    bool *existed, bool *wrote);
int ns_queue_get(ns_txn_t *t, const char *topic, const char *broker_name, ns_queue_data_t *out);
int ns_queue_del(ns_txn_t *t, const char *topic, const char *broker_name);
/* Deletes every queue data of a broker name (a group that is gone), calling
 * cb with each topic (a NUL-terminated copy) once its rows are gone. */
int ns_queue_del_broker(ns_txn_t *t, const char *broker_name, ns_name_cb cb, void *ctx);
/* Queue data of one topic in broker-name order; q->broker_name is borrowed. */
typedef int (*ns_queue_cb)(const char *topic, const ns_queue_data_t *q, void *ctx);
int ns_queue_iter_topic(ns_txn_t *t, const char *topic, ns_queue_cb cb, void *ctx);
/* Topics that have queue data for a broker name, in topic order. */
int ns_queue_iter_broker(ns_txn_t *t, const char *broker_name, ns_name_cb cb, void *ctx);
/* Every topic once, in order, with its first QueueData. */
int ns_topic_iter(ns_txn_t *t, ns_queue_cb cb, void *ctx);
/* Every (topic, queue data) row after (topic, broker_name), exclusive, in
 * store order (topic NULL: all): one call per broker of a topic. */
int ns_queue_iter_after(ns_txn_t *t, const char *topic, const char *broker_name, ns_queue_cb cb,
                        void *ctx);
bool ns_topic_exists(ns_txn_t *t, const char *topic);
/* *out = topics with queue data (as far as counted on error). */
int ns_topic_count(ns_txn_t *t, size_t *out);

/* ---- materialised routes: topic -> encoded TopicRouteData (both forms) ---- */
/* legacy NULL: the legacy form is not stored because the caller checked that
 * ns_json_route_legacy() derives it exactly from std (schema v4). */
int ns_route_put(ns_txn_t *t, const char *topic, const ns_buf_t *std, size_t std_insert,
                 const ns_buf_t *legacy, size_t legacy_insert);
/* Brings into cache, together, what the ns_route_get of each of topics[0,
 * n) will read in t's snapshot (the first 16; through the routes index,
 * when it answers for that snapshot): several lookups that follow then wait
 * for memory once, not once each. Answers nothing; costs only time. */
void ns_route_warm(ns_txn_t *t, const ns_slice_t *topics, size_t n);
/* Borrowed bytes of the standard or legacy form and the offset where an
 * orderTopicConf member goes. NS_ENOTFOUND when the topic has no route.
 * *derive is set when the legacy form was asked for but is not stored: out
 * is then the standard form, to pass through ns_json_route_legacy(). */
int ns_route_get(ns_txn_t *t, const char *topic, bool standard, ns_slice_t *out, size_t *insert_at,
                 bool *derive);
int ns_route_del(ns_txn_t *t, const char *topic);
/* *out = stored routes (0 on error). */
int ns_route_count(ns_txn_t *t, size_t *out);

/* ---- static-topic mappings: topic -> bname -> TopicQueueMappingInfo ---- */
int ns_mapping_put(ns_txn_t *t, const ns_mapping_info_t *m);
typedef int (*ns_mapping_cb)(const ns_mapping_info_t *m, void *ctx); /* borrowed */
int ns_mapping_iter_topic(ns_txn_t *t, const char *topic, ns_mapping_cb cb, void *ctx);
int ns_mapping_iter(ns_txn_t *t, ns_mapping_cb cb, void *ctx);

/* ---- audit history of data versions: seq -> JSON record ---- */
int ns_audit_append(ns_txn_t *t, const char *json, size_t len, uint64_t *seq_out);
typedef int (*ns_audit_cb)(uint64_t seq, const char *json, size_t len, void *ctx);
int ns_audit_iter(ns_txn_t *t, ns_audit_cb cb, void *ctx);
int ns_audit_del(ns_txn_t *t, uint64_t seq);
/* Keeps the newest `retention` records (none for 0; all for < 0), deleting
 * the older ones oldest first without reading them. */
int ns_audit_trim(ns_txn_t *t, int64_t retention);

/* ---- admin audit trail: seq -> JSON record (store/admin_audit.c, v5) ----
 * Append in the write transaction that applies the request's effect; keeps
 * the newest `retention` records (<= 0: nothing is written). NS_ECORRUPT on
 * a store older than v5. The iterator starts at from_seq (0 = the oldest);
 * json is NUL-terminated and borrowed for the callback's duration. */
int ns_admin_audit_append(ns_txn_t *t, const char *json, size_t len, int64_t retention,
                          uint64_t *seq_out);
int ns_admin_audit_iter(ns_txn_t *t, uint64_t from_seq, ns_audit_cb cb, void *ctx);
int ns_admin_audit_count(ns_txn_t *t, size_t *out);
/* "LMDB 0.9.x: (date)", static. */
const char *ns_store_lmdb_version(void);

/* ---- users: access key -> packed user record (store/users.c, v6) ----
 * RocketMQ's HmacSHA1 signature can only be checked by someone who holds
 * the secret, so no one-way hash can stand in for it: the secret field is
 * either sealed (include/ns/seal.h, "enc1:...", with authKeyFile) or the
 * secret as it is (docs/security.md "Authentication": what each protects). The store
 * does not tell them apart beyond validation. Never log or return it over
 * the wire. */
typedef enum { NS_ROLE_CLIENT = 1, NS_ROLE_BROKER = 2, NS_ROLE_ADMIN = 3 } ns_role_t;
typedef struct {
    char *access_key;
    char *secret; /* heap; ns_user_rec_free wipes it */
    ns_role_t role;
    bool enabled;
    char *allow;   /* source addresses/CIDRs, ','-separated; "" = any */
    char *brokers; /* broker role: [CLUSTER/]BROKER grants, ','-separated, '*' wildcard */
    int64_t created_ms, updated_ms;
} ns_user_rec_t;
/* NS_ENOTFOUND also for a key no user can have (empty, over 128 bytes). */
int ns_user_get(ns_txn_t *t, const char *access_key, ns_user_rec_t *out);
int ns_user_put(ns_txn_t *t, const ns_user_rec_t *u);
int ns_user_del(ns_txn_t *t, const char *access_key); /* NS_ENOTFOUND when absent */
/* Users in access-key order; u is borrowed for the call. NS_OK (no users)
 * on a store whose schema predates the table. */
typedef int (*ns_user_cb)(const ns_user_rec_t *u, void *ctx);
int ns_user_iter(ns_txn_t *t, ns_user_cb cb, void *ctx);
void ns_user_rec_free(ns_user_rec_t *u);
const char *ns_role_name(ns_role_t r);
/* Checks a record before it is stored: access key 1..128 of [A-Za-z0-9_.@:-],
 * secret 6..256 bytes (RocketMQ asks at least 6; a sealed one any length up
 * to 512, and a plain secret may not look sealed), a known role, allowlist
 * entries of address characters only (0-9 a-f A-F . : / *), broker grants
 * without blanks or control characters. NS_OK or NS_EINVAL with why in err. */
int ns_user_validate(const ns_user_rec_t *u, char *err, size_t errlen);
int ns_role_parse(const char *s, ns_role_t *out); /* NS_OK, NS_EINVAL */

/* ---- the fleet digest (store/digest.c, v9) ----
 * A tree of hashes over clusters, broker groups and their addresses, topics'
 * queue data and KV entries, kept by every write transaction that changes
 * them; the tree and what it leaves out are at the top of store/digest.c.
 * A node is a path of names (root: depth 0; items at ns_digest_item_depth());
 * its hash is the sum modulo 2^128 of its leaves' hashes and count their
 * number, so equal state gives equal nodes in any order of writes. */
typedef struct {
    uint64_t lo, hi;
    int64_t count; /* leaves below the node */
} ns_digest_sum_t;
bool ns_digest_sum_eq(const ns_digest_sum_t *a, const ns_digest_sum_t *b);
/* The root (every leaf) as it is in t, a write transaction's changes so far
 * included (they are summed first, as its commit would). Zero when empty. */
int ns_digest_root(ns_txn_t *t, ns_digest_sum_t *out);
/* 32 lowercase hex digits, hi then lo. */
void ns_digest_hex(const ns_digest_sum_t *s, char out[33]);
size_t ns_digest_item_depth(void);
/* The node at path[0..depth): NS_ENOTFOUND when it has no leaf (*out zero),
 * NS_ECORRUPT on a schema without the digest. One mdb_get. */
int ns_digest_get(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_sum_t *out);
/* Children of an interior node (depth < item depth) in name order, from
 * the stored nodes (at most 16 but at the top and the clusters' and KV
 * namespaces' level); name and sum borrowed for the call. NS_EINVAL for
 * an item's depth. */
typedef int (*ns_digest_child_cb)(const char *name, const ns_digest_sum_t *sum, void *ctx);
int ns_digest_children(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_child_cb cb,
                       void *ctx);
/* Leaves of an item, read from the data tables: name ("queue <broker>",
 * "member", "group", "addr <addr>", "value"), hash (count 1) and the value
 * as a JSON text, all borrowed for the call. NS_EINVAL when path is not an
 * item where its buckets say; NS_OK with no call when it has no leaf. */
typedef int (*ns_digest_leaf_cb)(const char *name, const ns_digest_sum_t *hash, const char *json,
                                 size_t json_len, void *ctx);
int ns_digest_leaves(ns_txn_t *t, const char *const *path, size_t depth, ns_digest_leaf_cb cb,
                     void *ctx);
/* The FLEET_DIGEST reply body (include/ns/fleet.h) for paths[0..n),
 * appended to out: each node with its children or, for an item, its
 * leaves. NS_EINVAL for a path that names no node of the tree (too deep,
 * an item outside its buckets); a node without leaves is answered empty. */
struct ns_fleet_path;
int ns_digest_reply(ns_txn_t *t, const struct ns_fleet_path *paths, size_t n, ns_buf_t *out);
/* Recomputes the digest from the data and compares it with the stored
 * nodes: one line per difference in report; returns their number (>= 0)
 * or an NS_E* error. Part of ns_store_verify (invariant I9). */
int ns_digest_verify(ns_txn_t *t, ns_buf_t *report);
/* Recomputes the whole digest from the data in write transaction t (after
 * the migration that adds it). */
int ns_digest_rebuild(ns_txn_t *t);

/* ---- emptying (store/clear.c) ----
 * Empties every table but meta (schema version and audit sequence stay) in
 * write transaction t; NS_EINVAL for a read transaction. Used by
 * `namesrvctl restore --replace` before it writes the document. */
int ns_store_clear(ns_txn_t *t);
/* NULL when the store holds no topology and no KV config (no cluster,
 * group, registration, queue data, route, mapping, KV namespace, entry or
 * tombstone), else the name of the first table that has a row. Users, the
 * history and the admin trail are not looked at: they are local records. */
const char *ns_store_topology_nonempty(ns_txn_t *t);
/* The same for the brokers' part only (the KV tables not looked at). */
const char *ns_store_brokers_nonempty(ns_txn_t *t);
/* meta key: written (wall ms) by `namesrvctl recover` when it found no good
 * backup and made a new store of the KV config it salvaged; seedFromPeers
 * then seeds the topology of that store once (ops/seed.c) and deletes it,
 * and so does the first start that does not seed. */
#define NS_META_RECOVERED_FRESH "recovered_without_backup_ms"

/* ---- invariant checker ----
 * Checks the cross-table invariants of store/keys.h; appends one line per
 * violation to report. Returns the number of violations (>= 0) or an NS_E*
 * error (< 0). */
int ns_store_verify(ns_txn_t *t, ns_buf_t *report);

/* ---- full check in a child process (store/check.c) ----
 * Reads every page and record of every table of the store in dir, decodes
 * every value and checks every invariant, in a forked child that opens the
 * store read-only (no lock: safe beside a running namesrvd), so that damage
 * that makes LMDB crash is reported instead of crashing the caller. */
typedef struct {
    bool damaged;           /* LMDB or a decoder reported damage, or the walk crashed */
    char table[64];         /* the table being read when the damage showed */
    char detail[256];       /* what was seen ("MDB_CORRUPTED: ...", "crashed (signal 11)") */
    int violations;         /* invariant violations (the store is readable) */
    uint64_t records;       /* records read, all tables */
    uint64_t quick_records; /* records read by the quick part (ns_store_check_read) */
    ns_buf_t *report;       /* caller's (may be NULL): one line per violation appended */
} ns_check_result_t;
/* NS_OK (readable; res->violations may be > 0), NS_ECORRUPT (damaged: see
 * res->table and res->detail), NS_EIO (cannot open it or cannot fork).
 * res->report is kept; every other field of res is reset first. */
int ns_store_check_dir(const char *dir, ns_check_result_t *res);
/* The same check in steps (namesrvd's verifyOnStart): the child first reads
 * what a start and the first lookups read (meta pages and schema, every
 * table's root and first and last leaf, the small tables a start reads
 * whole), reports that, then walks everything. */
typedef struct {
    int pid;  /* the child, -1 once reaped */
    FILE *in; /* its report */
    bool quick, done, error;
    pthread_mutex_t mu; /* pid against ns_store_check_kill */
    bool mu_init;
} ns_check_proc_t;
/* Forks the child. NS_OK, or NS_EIO (res->detail says why; nothing to
 * reap). res as for ns_store_check_dir. */
int ns_store_check_spawn(const char *dir, ns_check_proc_t *p, ns_check_result_t *res);
/* Reads the child's report (blocking). until_quick: returns NS_OK once the
 * quick part passed (p->quick; the child goes on). Otherwise, or when the
 * child ends first: reaps it and returns as ns_store_check_dir. */
int ns_store_check_read(ns_check_proc_t *p, ns_check_result_t *res, bool until_quick);
/* Any thread, while another one is in ns_store_check_read: SIGKILLs the
 * child unless it has been reaped (the reader then sees it end). */
void ns_store_check_kill(ns_check_proc_t *p);
/* Kills the child if it still runs, reaps it, releases p (after a spawn,
 * once no thread reads any more). */
void ns_store_check_abandon(ns_check_proc_t *p);
/* Reads the KV config (every namespace and key) of a possibly damaged store
 * in a child process and calls cb for every record it got out before it
 * finished or crashed (strings borrowed for the call). *n_out = records
 * delivered. NS_OK, NS_EIO (no child), or cb's first non-zero return. */
typedef int (*ns_salvage_cb)(const char *ns, const char *key, const char *val, void *ctx);
int ns_store_salvage_kv(const char *dir, ns_salvage_cb cb, void *ctx, size_t *n_out);

/* ---- routes: assembly and materialisation (store/route_build.c) ----
 * Assembling a TopicRouteData from the tables (docs/protocol.md §6.8) and
 * materialising its encoded forms (store/keys.h invariant I7). */

/* Groups (and their members' filter servers) looked up once per
 * transaction. Valid only for the transaction it was filled in. */
typedef struct {
    ns_strmap_t groups; /* broker name -> struct cached_group * */
} ns_route_cache_t;

void ns_route_cache_init(ns_route_cache_t *c);
void ns_route_cache_free(ns_route_cache_t *c);

struct cached_group;

/* An assembled route: `route` views the arrays below, which the parts own.
 * Zero-initialise it (= {0}) before its first assembly. */
typedef struct {
    ns_route_t route;
    ns_queue_data_t *queues;
    ns_broker_data_t *brokers;
    struct cached_group **groups; /* the cache entry of each of brokers[] */
    ns_filter_entry_t *filters;
    ns_mapping_info_t *mappings;
    size_t n_queues, n_brokers, n_filters, n_mappings;
    size_t cap_queues, cap_brokers, cap_groups; /* kept from assembly to assembly */
    char **owned;                               /* strings and arrays the parts allocated */
    size_t n_owned;
} ns_route_parts_t;

/* Builds the route of topic from txn (§6.8 steps 1-4: queue data, copies of
 * the groups, filter servers, static mappings) into out, which is zeroed or
 * holds an earlier assembly (its queue and broker arrays are refilled, so a
 * batch allocates them once). NS_ENOTFOUND when the topic has no route (no
 * queue data, or none of its groups exist). On success the caller frees
 * out with ns_route_parts_free() once done with it (after any number of
 * assemblies); on failure out is freed here. Strings borrow from cache. */
int ns_route_assemble(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                      ns_route_parts_t *out);
void ns_route_parts_free(ns_route_parts_t *p);
/* Hands mem to the parts (freed with them); NS_ENOMEM frees mem at once. */
int ns_route_parts_own(ns_route_parts_t *p, void *mem);

/* Buffers and parts ns_route_materialise reuses from topic to topic.
 * Zero-initialised; freed with ns_route_scratch_free(). */
typedef struct {
    ns_buf_t std, legacy, derived;
    ns_route_parts_t parts;
} ns_route_scratch_t;

void ns_route_scratch_free(ns_route_scratch_t *s);

/* Re-encodes the topic's route in both forms and stores it (the legacy form
 * only when it cannot be derived from the standard one), or deletes the
 * stored route when the topic has none. */
int ns_route_materialise(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                         ns_route_scratch_t *s);

/* ---- route mutations (store/registry.c) ----
 * The §6 algorithms, run inside a write transaction (the daemon's writer
 * batch, or namesrvctl restore). Every mutation marks the topics whose route
 * it changes; before the transaction commits, ns_registry_before_commit
 * re-encodes exactly those routes in the same transaction (store/keys.h
 * invariant I7). Inputs are captured by the caller (including the settings
 * that steer the algorithm), so nothing here reads mutable configuration. */

typedef struct ns_registry ns_registry_t;

/* A change of a group's smallest broker id: the NOTIFY_MIN_BROKER_ID_CHANGE
 * (905) Java would send, header fields and recipients (the daemon's
 * notify.c sends it). Every string is heap and owned by the struct
 * (ns_minid_change_free). */
typedef struct {
    char *broker_name;         /* the group, for the log (not sent: Java does not) */
    int64_t min_broker_id;     /* header minBrokerId */
    char *min_broker_addr;     /* header minBrokerAddr */
    char *offline_broker_addr; /* header offlineBrokerAddr; NULL on registration */
    char *ha_broker_addr;      /* header haBrokerAddr; NULL on unregistration */
    ns_strlist_t to;           /* the recipients' addresses */
} ns_minid_change_t;

/* Allocates an empty change for broker_name (NULL on out of memory). */
ns_minid_change_t *ns_minid_change_new(const char *broker_name);
/* Frees c and everything it holds; NULL is fine. */
void ns_minid_change_free(ns_minid_change_t *c);

/* A registry owns the per-batch dirty-topic set; ns_registry_free(). */
int ns_registry_new(ns_registry_t **out);
void ns_registry_free(ns_registry_t *r);

/* Writer hooks (ctx is the registry). */
int ns_registry_before_commit(void *ctx, ns_txn_t *txn);
void ns_registry_batch_reset(void *ctx);

typedef struct {
    const char *cluster;
    const char *addr;
    const char *broker_name;
    int64_t broker_id;
    const char *ha_addr;
    const char *zone_name; /* NULL when the header has no __ZONE_NAME */
    int64_t heartbeat_timeout_ms;
    bool enable_acting_master;
    bool old_version;               /* no enableActingMaster header: a 4.x broker */
    bool delete_absent_topics;      /* deleteTopicWithBrokerRegistration */
    bool reject_identity_conflicts; /* brokerConflict=reject: refuse them (see below) */
    int64_t now_ms;                 /* wall clock, for the audit history */
    int64_t audit_retention;        /* history records kept in all */
    const ns_regbody_t *body;
} ns_register_args_t;

/* Broker identity conflicts a registration can run into (RocketMQ keeps the
 * last writer, silently): its brokerName already in another cluster, its
 * address registered in its cluster under another brokerName, or its
 * brokerName/brokerId held by another address. */
typedef enum {
    NS_IDENTITY_OK = 0,
    NS_IDENTITY_NAME_IN_OTHER_CLUSTER,
    NS_IDENTITY_ADDR_UNDER_OTHER_NAME,
    NS_IDENTITY_ID_AT_OTHER_ADDR,
    NS_IDENTITY_KINDS
} ns_identity_conflict_t;
/* "name_in_other_cluster", ... (static). */
const char *ns_identity_conflict_name(ns_identity_conflict_t k);

typedef struct {
    bool failed;   /* an increment for an unknown id: answer "register broker failed" */
    bool conflict; /* stale stateVersion: answered without master (docs/protocol.md §6.2) */
    bool dv_changed;
    char *master_addr; /* heap, NULL when none (ns_register_result_free) */
    char *ha_addr;
    /* The registration lowered the group's smallest broker id: the 905 Java
     * would send (registerBroker: brokerId < the smallest id before; to
     * every other member, or to the only one). NULL when not. */
    ns_minid_change_t *minid_change;
    /* The first identity conflict found (NS_IDENTITY_OK: none), with both
     * sides as a JSON object text (heap, NULL when none), and whether the
     * registration was refused for it (reject_identity_conflicts: then
     * nothing was written). */
    ns_identity_conflict_t identity;
    char *identity_detail;
    bool identity_rejected;
} ns_register_result_t;

void ns_register_result_free(ns_register_result_t *res);

/* Applies registration a in t by the rules of docs/protocol.md §6.2 (refusals
 * in res->failed and res->conflict). NS_OK, NS_ENOMEM or a store error; on
 * error *res is freed and t must not commit: part of the registration may
 * already be written in it. */
int ns_registry_register(ns_registry_t *r, ns_txn_t *t, const ns_register_args_t *a,
                         ns_register_result_t *res);

/* True when registering a would change nothing in the store (read-only
 * check used to answer unchanged re-registrations without the writer). On
 * true, *res holds the reply (master/ha addresses). */
bool ns_registry_unchanged(ns_txn_t *t, const ns_register_args_t *a, ns_register_result_t *res);

/* §6.5 unregistration of (cluster, addr); broker_name may be NULL (then the
 * stored record names it). Unknown brokers are a no-op, and so is a
 * broker_name other than the one the address registered under, or a group
 * not in cluster: the live record and the group's address are removed
 * together or not at all (I4, I5). broker_id >= 0 fences
 * the removal: if the group now maps addr under another id (a slave promoted
 * to master at the same address since the unregister was decided), the
 * request is stale and nothing is removed (Apache RocketMQ #5374, #11043).
 * *removed tells whether anything was removed. When change is not NULL,
 * *change becomes the 905 Java would send (heap, ns_minid_change_free), or
 * NULL: an address was removed from an enableActingMaster group that keeps
 * members, and broker_id was the group's smallest id; sent to every member
 * left. */
int ns_registry_unregister(ns_registry_t *r, ns_txn_t *t, const char *cluster, const char *addr,
                           const char *broker_name, int64_t broker_id, bool *removed,
                           ns_minid_change_t **change);

/* §3.10: wipe (add=false) or add write permission; *count topics touched. */
int ns_registry_write_perm(ns_registry_t *r, ns_txn_t *t, const char *broker_name, bool add,
                           int *count);

/* §3.11: cluster NULL or "" = everywhere. */
int ns_registry_delete_topic(ns_registry_t *r, ns_txn_t *t, const char *topic, const char *cluster);

/* §3.12 REGISTER_TOPIC_IN_NAMESRV. */
int ns_registry_register_topic(ns_registry_t *r, ns_txn_t *t, const char *topic,
                               const ns_queue_data_t *q, size_t n);

/* Marks every stored topic dirty (used after restore and by migrations). */
int ns_registry_mark_all(ns_registry_t *r, ns_txn_t *t);

#endif
