/* peers.h - the fleet: this server's digest compared with each of its
 * peers' (setting `peers`), on a thread of its own, and the result as
 * metrics and log lines.
 *
 * Every peerCheckIntervalMillis the thread asks each peer for its digest
 * over the remoting port (FLEET_DIGEST, include/ns/fleet.h; TLS and
 * signing from the peer* settings) and compares it with the local one read
 * from the store in a read transaction: one request when the roots agree,
 * a few when they do not (ns_fleet_diff descends only where they differ).
 * Nothing of it runs on a loop or the writer: a slow or dead peer delays
 * only the next check of the other peers.
 *
 * When a difference is divergent. Brokers register with every NameServer
 * one after the other, and a change reaches them a few milliseconds to a
 * registration period apart, so a difference seen once is normal. A peer
 * is divergent when its digest differed from ours at two checks in a row
 * (at least) and the first of them is at least peerDivergenceMillis ago
 * (30 s by default: a broker's registration period, after which every live
 * broker has sent the same state to every server it lists). The episode
 * ends with the first check that finds both digests equal. It is logged
 * once when it becomes divergent (the first differences and their count)
 * and once when it ends; a peer that cannot be reached leaves the episode
 * as it was (nothing is known) and is namesrv_peer_up 0.
 *
 * Threads: ns_peers_start/stop/set_list on the main thread; render on the
 * HTTP thread; the check thread owns the connections. The shared state
 * (the list, each peer's last result) is under one mutex held for copies
 * only. */
#ifndef NS_PEERS_H
#define NS_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/client.h"
#include "ns/fleet.h"
#include "ns/store.h"

typedef struct ns_peers ns_peers_t;

#define NS_PEERS_MAX 64 /* entries of `peers` */

typedef struct {
    ns_store_t *store;     /* read from the check thread (read txns) */
    int64_t interval_ms;   /* peerCheckIntervalMillis */
    int64_t divergence_ms; /* peerDivergenceMillis */
    int64_t timeout_ms;    /* per request to a peer */
    bool tls;              /* peerTls */
    const char *tls_ca, *tls_cert, *tls_key, *tls_key_password; /* copied */
    const char *access_key, *secret_key;                        /* copied; NULL = unsigned */
    /* Check thread, after a diff that reached the peer, with the peer's
     * connection (TLS and signing as above): kvSync pulls the KV items
     * that differ (ops/kvsync.h). Non-zero: close the connection. NULL:
     * nothing. */
    int (*diffed)(void *ctx, const char *peer, ns_client_t *c, const ns_fleet_report_t *r);
    void *diffed_ctx;
} ns_peers_opts_t;

/* Starts the check thread with the peer list `list` ("host:port;..."; an
 * empty list: the thread waits for one and sends nothing). *out is freed
 * with ns_peers_stop. NS_OK, NS_ENOMEM, NS_EINVAL (a malformed entry; why
 * in err). */
int ns_peers_start(const ns_peers_opts_t *o, const char *list, ns_peers_t **out, char *err,
                   size_t errlen);
/* Replaces the list (UPDATE_NAMESRV_CONFIG peers=...): peers that stay keep
 * their state; the next check runs at once. NS_OK, NS_ENOMEM, NS_EINVAL. */
int ns_peers_set_list(ns_peers_t *p, const char *list, char *err, size_t errlen);
/* Checks "host:port;..." without applying it (the config's validation). */
int ns_peers_check_list(const char *list, char *err, size_t errlen);
/* Stops the thread (waits for the check in progress, bounded by the
 * request timeout) and frees p. NULL is fine. */
void ns_peers_stop(ns_peers_t *p);
/* The bound remoting port, once listening: a peer entry naming it on an
 * address of this machine is this server, and no peer is checked before
 * it is known. Any thread. */
void ns_peers_set_listen_port(ns_peers_t *p, int port);
/* One peer as the checks last saw it (ns_peers_view). */
#define NS_PEER_ADDR_MAX 300 /* longer entries are left out of a view */
typedef struct {
    char addr[NS_PEER_ADDR_MAX]; /* as written in `peers` */
    int self;                    /* -1 not known yet, 0 another server, 1 this server */
    bool checked;                /* a check has ended since it entered the list */
    bool up;                     /* it answered at the last check */
} ns_peer_view_t;
/* Copies at most max peers, in list order, into out (the caller's) under
 * the lock the checks take for copies only: never waits for a check.
 * Returns how many; 0 for NULL. Any thread. */
size_t ns_peers_view(ns_peers_t *p, ns_peer_view_t *out, size_t max);
/* Appends the namesrv_peer_* families (Prometheus text) to out; nothing
 * for NULL. */
void ns_peers_render(ns_peers_t *p, ns_buf_t *out);

/* ---- the server's side (main thread) ----
 * Starts the checks from the settings (peers, peerCheckIntervalMillis,
 * peerDivergenceMillis, peerTimeoutMillis, peerTls and tls.client.*,
 * peerAccessKey/peerSecretKey) into srv->peers, and installs the apply
 * hook of `peers`, so that UPDATE_NAMESRV_CONFIG peers=... takes effect at
 * once (the hook reaches this one server of the process). With no peers
 * set the thread only waits: no traffic. */
typedef struct ns_server ns_server_t;
int ns_peers_server_start(ns_server_t *srv, char *err, size_t errlen);
void ns_peers_server_stop(ns_server_t *srv);

#endif
