/* kvsync.h - KV anti-entropy (kvSync): KV config that converges across the
 * NameServers listed in `peers`, behind PUT/DELETE_KV_CONFIG.
 *
 * What it is. Every KV write already carries a version and a delete leaves
 * a tombstone (store/kv.c, include/ns/kvver.h). With kvSync=true, after the
 * peer check (ops/peers.h) compared this server's digest with a peer's and
 * found KV items that differ, the check thread asks that peer for those
 * entries with their versions (NS_KV_SYNC_GET, include/ns/kvsync.h) and
 * hands what it got to the writer, which keeps, per entry, whichever state
 * orders above: a later write wins everywhere, ties break the same way on
 * every server, and a tombstone stops an older value from coming back. A
 * server that was down pulls what it missed at its first checks; one that
 * missed a delete takes the tombstone. Each server pulls only; nothing is
 * ever pushed to it, so only the peers it lists can change its KV.
 *
 * What it is not: no consensus, no leader, no ordering of writes across
 * keys. Two admins writing one key on two servers at once both get
 * SUCCESS, and a moment later every server holds the later of the two.
 * Broker registrations are not synchronised: brokers send them to every
 * server, and each server stays authoritative for what it was told.
 *
 * Bounds. Per check and peer, at most KVSYNC_MAX_PULL entries, asked for
 * NS_KVSYNC_MAX_KEYS at a time, each request within peerTimeoutMillis (the
 * check thread's, never a loop's or the writer's). A reply that does not
 * parse or names other keys than asked is dropped whole (the connection is
 * closed); an entry whose version lies more than KVSYNC_MAX_AHEAD_MS ahead
 * of this server's clock is refused; both are logged and counted
 * (namesrv_kv_sync_refused_total). Pulled entries wait for the writer in
 * an inbox of at most KVSYNC_INBOX_BYTES; a batch that does not fit is
 * dropped and pulled again at the next check.
 *
 * Tombstones are removed by a sweep on the writer once older than
 * kvTombstoneRetentionMillis (7 days): a server that comes back after
 * longer than that may bring a deleted entry back.
 *
 * Threads: start/stop on the main thread; ns_kvsync_pull on the peer
 * check thread; the inbox under a mutex; the merges and sweeps are writer
 * ops submitted from the main loop (a uv_async wakes it). */
#ifndef NS_KVSYNC_OPS_H
#define NS_KVSYNC_OPS_H

#include "ns/buf.h"
#include "ns/client.h"
#include "ns/fleet.h"

#define KVSYNC_MAX_PULL 256
#define KVSYNC_MAX_AHEAD_MS (3600 * 1000LL)
#define KVSYNC_INBOX_BYTES (8u * 1024 * 1024)

typedef struct ns_kvsync ns_kvsync_t;
typedef struct ns_server ns_server_t;

/* Main thread, before the peer checks start: srv->kvsync. NS_OK/NS_ENOMEM. */
int ns_kvsync_server_start(ns_server_t *srv);
/* Main thread, after the peer checks stopped: closes the handles (the
 * struct is freed in their close callbacks), drops the inbox. */
void ns_kvsync_server_stop(ns_server_t *srv);
/* The peer check's hook (ns_peers_opts_t.diffed): pulls the KV items of r
 * that differ from peer over c. Returns non-zero when c should be closed
 * (it failed or the peer answered garbage). Check thread. */
int ns_kvsync_pull(void *ctx, const char *peer, ns_client_t *c, const ns_fleet_report_t *r);
/* Appends the namesrv_kv_sync_* families to out; nothing for NULL. */
void ns_kvsync_render(ns_kvsync_t *ks, ns_buf_t *out);

#endif
