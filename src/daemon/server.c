/* server.c - process lifecycle: open the store, restore liveness, start the
 * writer, listen; stop in the reverse order.
 *
 * Restart is just opening the store: LMDB needs no replay, so routes are
 * served from the first accepted connection on, and every stored broker gets
 * brokerGraceWindowMillis to heartbeat again before it can expire. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ns/clock.h"
#include "ns/err.h"
#include "ns/log.h"
#include "daemon.h"

#include "net/budget.h"
#include "ops/backup.h"

#include "cmd/cmd.h"
#include "cmd/dispatch.h"
#include "core/auth.h"
#include "core/broker_life.h"
#include "core/liveness.h"
#include "core/notify.h"
#include "core/writer.h"
#include "net/conn.h"
#include "net/secure.h"
#include "ops/http.h"
#include "ops/kvsync.h"
#include "ops/seed.h"
#include "ops/peers.h"
#include "ops/service.h"
#include "ops/kvimport.h"
#include "ops/startcheck.h"
#include "accept.h"
#include "iothreads.h"

/* The main loop's on_request: every row runs here. */
static bool main_request(ns_loop_t *loop, ns_conn_t *c, const ns_cmd_t *cmd, size_t frame_len)
{
    /* the row is one load (ns_dispatch_row): looked up where it is needed,
     * not kept across the budget check */
    if (ns_budget_writer_full() && ns_dispatch_may_write(ns_dispatch_row(cmd->code))) {
        /* the writer queue is at its budget: the frame waits, reading pauses */
        ns_refusal(ns_conn_peer(c), NS_REFUSE_WRITER_PAUSE,
                   "reading paused: the writer queue is at writerQueueMaxBytes/Ops");
        return false;
    }
    ns_dispatch(loop, c, cmd, ns_dispatch_row(cmd->code));
    return true;
}

/* The writer queue got shorter: connections paused on its budget read again. */
static void writer_drained(void *ctx)
{
    ns_server_t *srv = ctx;
    ns_conn_resume_paused(&srv->loop);
}

static void scan_cb(uv_timer_t *t)
{
    ns_broker_scan(t->data);
    ns_broker_count_unconfirmed(t->data); /* what a peer seeding from us is told */
}

static void idle_cb(uv_timer_t *t)
{
    ns_server_t *srv = t->data;
    ns_conn_sweep_idle(&srv->loop, uv_now(srv->loop.uv), srv->loop.cfg->idle_timeout_s);
    ns_http_refresh(srv); /* nothing unless httpListen is set */
}

static void check_cb(uv_check_t *c)
{
    ns_read_release(c->data);
    ns_conn_flush_all(c->data);
}

static void signal_cb(uv_signal_t *s, int signum)
{
    ns_server_t *srv = s->data;
    NS_LOG_INFO("signal %d: shutting down", signum);
    ns_server_stop(srv);
}

/* authMode's apply hook (ns_config_set_hook): every loop reads the mode
 * through ns_auth_mode() (atomic). A value that does not parse changes
 * nothing (the table admits only the modes that do). */
static void config_auth_mode_applied(const ns_config_t *cfg)
{
    ns_auth_mode_t m;
    if (ns_auth_mode_parse(cfg->auth_mode, &m) == NS_OK)
        ns_auth_set_mode(m);
}

/* verifyOnStart's full walk ended (ns_start_check_watch): /readyz says
 * so, and a damaged store stops the server (exit status 4, set by the
 * check). */
static void store_checked(ns_server_t *srv, int state)
{
    ns_http_note_store_check(srv, state);
    if (state < 0)
        ns_server_stop(srv);
}

/* The HTTP endpoint reads the counter blocks of every loop, main first. */
static int start_http(ns_server_t *srv, char *err, size_t errlen)
{
    ns_metrics_loop_t **loops = calloc(srv->n_ios + 1, sizeof *loops);
    if (loops == NULL) {
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    size_t n = 0;
    loops[n++] = &srv->loop.m;
    for (size_t i = 0; i < srv->n_ios; i++)
        loops[n++] = &ns_io_loop(srv->ios[i])->m;
    int rc = ns_http_start(srv, loops, n, err, errlen);
    free(loops);
    return rc;
}

static ns_sync_mode_t sync_mode(const char *s)
{
    if (s && strcasecmp(s, "nosync") == 0)
        return NS_SYNC_NOSYNC;
    if (s && strcasecmp(s, "nometasync") == 0)
        return NS_SYNC_NOMETASYNC;
    return NS_SYNC_FULL;
}

int ns_server_start(ns_server_t *srv, uv_loop_t *loop, ns_config_t *cfg, char *err, size_t errlen)
{
    int rc;
    memset(srv, 0, sizeof *srv);
    srv->spare_fd = -1;
    srv->loop.uv = loop;
    srv->loop.cfg = cfg;
    srv->loop.main = srv;
    srv->loop.on_request = main_request;
    srv->loop.on_read_ahead = ns_dispatch_warm;
    srv->loop.on_closed = ns_broker_conn_closed;
    ns_loop_set_current(&srv->loop);
    ns_loop_thread_prefer_latency(); /* before the writer and the others start */
    srv->loop.start_ms = uv_now(loop);
    if ((rc = ns_secure_start(&srv->loop, err, errlen)) != NS_OK) /* a bad certificate fails fast */
        return rc;
    ns_store_opts_t opts = {cfg->data_dir,
                            (size_t)cfg->map_size_bytes,
                            (size_t)cfg->map_max_bytes,
                            sync_mode(cfg->sync_mode),
                            false,
                            true,
                            0,
                            (size_t)cfg->route_memo_slots};
    if ((rc = ns_start_check(srv, err, errlen)) != NS_OK ||
        (rc = ns_store_open(&opts, &srv->loop.store, err, errlen)) != NS_OK)
        return rc;
    ns_store_set_grow_percent(srv->loop.store, (unsigned)cfg->map_grow_percent);
    /* without it (out of memory) lookups only cost more; built by the writer */
    if (cfg->route_index && ns_store_route_index_start(srv->loop.store) != NS_OK)
        NS_LOG_WARN("store: no routes index (out of memory): lookups descend the B-tree");
    ns_start_warn_unenforced_users(srv->loop.store, cfg);
    if ((rc = ns_kvimport_at_start(srv->loop.store, cfg, err, errlen)) != NS_OK)
        return rc;
    ns_auth_mode_t mode = NS_AUTH_OFF;
    ns_auth_mode_parse(cfg->auth_mode, &mode);
    ns_auth_set_mode(mode);
    ns_config_set_hook("authMode", config_auth_mode_applied);
    if ((rc = ns_auth_init(srv, err, errlen)) != NS_OK)
        return rc;
    if ((rc = ns_registry_new(&srv->registry)) != NS_OK ||
        (rc = ns_liveness_new(&srv->liveness)) != NS_OK ||
        (rc = ns_notifier_new(loop, &srv->notifier)) != NS_OK) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    ns_notifier_set_member_check(srv->notifier, ns_broker_is_member, srv);
    /* an empty store is copied from a peer first (seedFromPeers), so that
     * the seeded brokers are restored below like stored ones */
    if ((rc = ns_seed_at_start(srv, err, errlen)) != NS_OK)
        return rc;
    if ((rc = ns_broker_restore(srv)) != NS_OK) {
        snprintf(err, errlen, "cannot read the stored brokers: %s", ns_strerror(rc));
        return rc;
    }
    ns_broker_count_unconfirmed(srv);
    ns_budget_init(cfg);
    ns_writer_hooks_t hooks = {srv->registry, ns_registry_before_commit, ns_registry_batch_reset,
                               writer_drained, srv};
    if ((rc = ns_writer_start(srv->loop.store, loop, (size_t)cfg->writer_batch_max,
                              (size_t)cfg->writer_batch_max_bytes, &hooks, &srv->writer)) !=
        NS_OK) {
        snprintf(err, errlen, "cannot start the writer thread");
        return rc;
    }
    uv_timer_init(loop, &srv->scan_timer);
    srv->scan_timer.data = srv;
    uint64_t scan = (uint64_t)cfg->scan_not_active_broker_interval_ms;
    uv_timer_start(&srv->scan_timer, scan_cb, scan, scan);
    uv_timer_init(loop, &srv->loop.idle_timer);
    srv->loop.idle_timer.data = srv;
    uv_timer_start(&srv->loop.idle_timer, idle_cb, 1000, 1000);
    uv_check_init(loop, &srv->loop.flush_check);
    srv->loop.flush_check.data = &srv->loop;
    uv_check_start(&srv->loop.flush_check, check_cb);
    uv_signal_init(loop, &srv->sig_int);
    uv_signal_init(loop, &srv->sig_term);
    srv->sig_int.data = srv->sig_term.data = srv;
    uv_signal_start(&srv->sig_int, signal_cb, SIGINT);
    uv_signal_start(&srv->sig_term, signal_cb, SIGTERM);
    srv->handles_init = true;
    if ((rc = ns_start_check_watch(srv, store_checked)) != NS_OK) {
        snprintf(err, errlen, "cannot watch the store check");
        return rc;
    }
    if ((rc = ns_io_start(srv, err, errlen)) != NS_OK)
        return rc;
    if ((rc = ns_backup_start(srv)) != NS_OK) {
        snprintf(err, errlen, "cannot start the backups: %s", ns_strerror(rc));
        return rc;
    }
    if ((rc = ns_kvsync_server_start(srv)) != NS_OK) {
        snprintf(err, errlen, "cannot start kvSync: %s", ns_strerror(rc));
        return rc;
    }
    if ((rc = ns_peers_server_start(srv, err, errlen)) != NS_OK ||
        (rc = start_http(srv, err, errlen)) != NS_OK)
        return rc;
    /* listen last: everything a request needs is ready */
    atomic_store(&srv->serving_since_ms, ns_clock_mono_ms());
    if ((rc = ns_accept_listen(srv, err, errlen)) != NS_OK)
        return rc;
    ns_http_listening(srv);
    ns_peers_set_listen_port(srv->peers, srv->bound_port);
    if (cfg->port_file && *cfg->port_file &&
        ns_port_file_write(cfg->port_file, srv->bound_port) != NS_OK)
        NS_LOG_WARN("cannot write portFile %s", cfg->port_file);
    ns_service_started(srv);
    return NS_OK;
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

void ns_server_stop(ns_server_t *srv)
{
    if (srv->loop.stopping)
        return;
    srv->loop.stopping = true;
    ns_read_release(&srv->loop); /* the writer may need the resize lock to finish */
    /* 0. the HTTP thread reads the loops' and the writer's counters */
    ns_http_stop(srv);
    ns_peers_server_stop(srv);  /* a check in progress ends within peerTimeoutMillis */
    ns_kvsync_server_stop(srv); /* after the check thread: nothing pulls any more */
    ns_service_stopping(srv);
    ns_start_check_stop(srv);
    /* 1. stop accepting; answer what was already read. Brokers stay
     * registered: a shutdown is not an unregistration. */
    ns_accept_stop(srv);
    if (srv->handles_init) {
        uv_timer_stop(&srv->scan_timer);
        uv_timer_stop(&srv->loop.idle_timer);
    }
    ns_secure_stop(&srv->loop);
    /* 2. in-flight writes commit and their replies are queued */
    ns_backup_stop(srv); /* a backup in progress ends first */
    ns_writer_stop(srv->writer);
    srv->writer = NULL;
    ns_conn_flush_all(&srv->loop);
    /* notifications still queued or in flight are abandoned (and logged) */
    ns_notifier_stop(srv->notifier);
    /* 3. the I/O loops write out their replies and close their connections */
    ns_io_stop(srv);
    /* 4. close every connection and handle; the loop then ends */
    ns_auth_stop(srv);
    ns_conn_close_all(&srv->loop);
    uv_walk(srv->loop.uv, close_walk_cb, NULL);
}

void ns_server_free(ns_server_t *srv)
{
    ns_start_check_free(srv);
    ns_txn_abort(srv->loop.rtxn);
    srv->loop.rtxn = NULL;
    ns_registry_free(srv->registry);
    ns_liveness_free(srv->liveness);
    ns_notifier_free(srv->notifier);
    ns_store_close(srv->loop.store);
    ns_buf_free(&srv->loop.scratch);
    ns_buf_free(&srv->loop.derived);
    ns_buf_free(&srv->loop.rshared);
    ns_buf_free(&srv->loop.tshared);
    ns_loop_msgs_free(&srv->loop);
    ns_buf_free(&srv->loop.remark);
    ns_io_free(srv);
    ns_secure_free(&srv->loop);
    ns_auth_free(srv);
    ns_http_free(srv);
    memset(srv, 0, sizeof *srv);
}
