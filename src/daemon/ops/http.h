/* http.h - the HTTP endpoint (httpListen): /metrics, /healthz, /readyz,
 * /brokers, served by libmicrohttpd on its own thread.
 *
 * Threads:
 *  - the HTTP thread (libmicrohttpd's one internal polling thread) answers
 *    every request. It reads the loops' and the writer's counters with
 *    relaxed atomic loads (metrics.h) and everything else from the newest
 *    snapshot; it never touches loop-owned memory and never takes a lock a
 *    loop waits on for longer than a pointer swap.
 *  - the main loop builds a snapshot (brokers from the liveness table, store
 *    counts and map usage) once a second and publishes it: under `mu` it
 *    swaps the `snap` pointer. A snapshot is reference counted: the HTTP
 *    thread takes a reference under `mu` and renders without it; whoever
 *    drops the last reference frees it.
 *  - the verify thread runs the store's invariant checker once at start-up
 *    in its own read transaction; /readyz is 503 until it has passed.
 * A slow or stuck scraper therefore only ever delays other scrapes. */
#ifndef NS_HTTP_H
#define NS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "net/metrics.h"

typedef struct ns_server ns_server_t;

typedef struct ns_http ns_http_t; /* http_int.h */

/* Main loop, before listening: starts the HTTP thread on cfg->http_listen
 * (nothing when empty; srv->http stays NULL) and the verify thread. loops:
 * the counter blocks of every loop, main first (copied; the blocks must
 * outlive ns_http_stop). On failure err says why. */
int ns_http_start(ns_server_t *srv, ns_metrics_loop_t *const *loops, size_t n_loops, char *err,
                  size_t errlen);
/* Writes port and a newline to path through path.tmp and a rename, so a
 * reader never sees half a number (portFile, httpPortFile). NS_EIO. */
int ns_port_file_write(const char *path, int port);
/* Main loop, once listening. */
void ns_http_listening(ns_server_t *srv);
/* Main loop, once a second: builds and publishes a new snapshot. */
void ns_http_refresh(ns_server_t *srv);
/* Main loop: stops the HTTP and verify threads (first thing at shutdown:
 * the counters they read go away after it). Idempotent. */
void ns_http_stop(ns_server_t *srv);
/* What a backup reports when it ended, ok or not (ops/backup.c). Any thread;
 * nothing when httpListen is off. Feeds namesrv_backups_total and
 * namesrv_backup_last_success_timestamp_seconds. */
void ns_http_note_backup(ns_server_t *srv, bool ok);
/* Main loop: verifyOnStart's walk ended (1 passed, -1 damaged). */
void ns_http_note_store_check(ns_server_t *srv, int state);
/* After the loop has ended: frees srv->http. */
void ns_http_free(ns_server_t *srv);

#endif
