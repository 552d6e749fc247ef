/* server.h - the main server: the main loop and what only it has.
 *
 * Ownership: the main server embeds the main loop's ns_loop_t (`loop`,
 * the first member) and owns everything the loops share (the store, the
 * configuration, the wire settings) and everything only the main thread
 * touches: the writer, the registry, liveness, notifications, auth state,
 * the listener, the timers and signals of the process, the extra I/O
 * loops, and the operations' state (HTTP, backups, the start check). Every
 * loop points at it (ns_loop_t.main), but an I/O loop never reads its
 * main-only fields: it mails the main loop instead (iothreads.c).
 * ns_server_at tells code that runs on any loop whether it is on main.
 *
 * Started, stopped and freed by the wiring (daemon.h, server.c); the rooms
 * above core keep their part behind a forward-declared pointer. */
#ifndef NS_SERVER_H
#define NS_SERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "net/ioloop.h"

typedef struct ns_writer ns_writer_t;     /* writer.h */
typedef struct ns_liveness ns_liveness_t; /* liveness.h */
typedef struct ns_notifier ns_notifier_t; /* notify.h: outbound 905 notifications */
typedef struct ns_peers ns_peers_t;       /* ops/peers.h: the fleet's peer checks */

struct ns_server {
    ns_loop_t loop; /* the main loop's own state, as every loop has it */
    ns_writer_t *writer;
    ns_registry_t *registry;
    ns_liveness_t *liveness;
    ns_notifier_t *notifier;
    struct ns_auth *auth;    /* authMode state, penalties, counters (auth.c) */
    uv_tcp_t listener;       /* bound and listening (accept.c) */
    uv_poll_t accept_poll;   /* drives accept4 on the listener */
    uv_timer_t accept_timer; /* resumes accepting after a pause at EMFILE */
    int spare_fd;            /* sheds waiting connections at EMFILE */
    bool accept_init, listener_init;
    uint64_t accept_failed, accept_logged_ms; /* refused since the last log line */
    int bound_port;
    uv_timer_t scan_timer; /* liveness scan */
    uint64_t scan_last_ms; /* loop time of the last scan (ns_clock_stall), 0 before it */
    uv_signal_t sig_int, sig_term;
    uv_signal_t sig_hup;       /* reopens the log file (service.c) */
    uv_timer_t watchdog_timer; /* systemd watchdog pings (service.c) */
    bool handles_init;         /* the timers, the check and the signals above */
    ns_io_t **ios;             /* the extra loops (iothreads.c) */
    size_t n_ios, next_io;
    struct ns_backup *backup;         /* periodic hot backups (backup.c), or NULL */
    struct ns_startcheck *startcheck; /* verifyOnStart's walk while serving, or NULL */
    struct ns_http *http;             /* the HTTP endpoint (http.h); NULL when off */
    ns_peers_t *peers;                /* the peer checks' thread (ops/peers.h) */
    struct ns_kvsync *kvsync;         /* KV anti-entropy (ops/kvsync.h) */
    int exit_status;                  /* namesrvd's exit status once the loop ends */
    /* Read by NS_SEED_PAGE on any loop, hence atomic (cmd/cmd_seed.c):
     * when this server began to serve (ns_clock_mono_ms) and how many of
     * its broker addresses were restored (from the store or a seed) and
     * have not registered since (counted at each liveness scan). */
    _Atomic int64_t serving_since_ms;
    atomic_llong unconfirmed;
};

/* The main server when loop is the main loop, NULL on an I/O loop: what
 * runs on any loop and needs main-only state looks here first. */
static inline ns_server_t *ns_server_at(const ns_loop_t *loop)
{
    return loop->io == NULL ? loop->main : NULL;
}

#endif
