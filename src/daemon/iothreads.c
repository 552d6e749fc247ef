/* iothreads.c - ioThreads > 1: the extra libuv loops (iothreads.h), and
 * what each loop does with the mail it gets.
 *
 * The main loop listens. Each new connection goes, in turn, to the main loop
 * or to one of the ioThreads - 1 extra loops; a connection stays on its loop
 * for life. An extra loop runs its own ns_loop_t over the shared store:
 * its own read transaction (LMDB readers never wait), buffers, idle sweep
 * and reply batching. It answers the rows that may run on any loop (route
 * lookups) itself and forwards every other request, decoded, to the main
 * loop, which alone owns the writer, the registry, liveness and the
 * configuration. So everything that changes state still happens on one
 * thread, in arrival order per connection. A lookup, though, does not wait
 * for a forwarded request sent before it on the same connection (as in
 * Java, where route queries run on their own executor): its answer may come
 * first and may not reflect that request yet.
 *
 * Mailboxes: a mutex-guarded FIFO per receiving loop, drained by a
 * uv_async_t. Beside the queue, a stop flag and the latest settings.
 *
 * Flow control: a loop counts the bytes of the requests it forwarded that
 * the main loop has not handled yet. Above ioBacklogBytes a connection with
 * a request to forward stops reading, as one loop would stop reading while
 * it is busy (TCP then holds the client back); the main loop wakes the loop
 * once the backlog is below half of that, and the paused connections go on.
 *
 * Settings changed by UPDATE_NAMESRV_CONFIG are published to each loop
 * before the update is answered, and a loop checks for new ones (one atomic
 * load) before it serves what it has read: a lookup sent after the answer
 * sees the new settings, on any connection.
 *
 * Shutdown (ns_io_stop, main loop, after the writer has committed what was
 * queued): each loop is told to stop, writes out its replies, closes its
 * connections and ends; the main thread joins them, closes their mailboxes
 * and then handles what is left in every mailbox on its own, since no
 * other thread runs any more. */
#include "iothreads.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/dispatch.h"
#include "core/auth.h"
#include "core/broker_life.h"
#include "net/budget.h"
#include "ns/err.h"
#include "ns/log.h"

struct ns_io {
    ns_server_t *main;
    ns_loop_t shard; /* this loop */
    ns_config_t cfg; /* the main configuration's scalars; strings NULL */
    pthread_mutex_t cfg_mu;
    ns_config_t posted;   /* the newest settings, under cfg_mu */
    uint64_t cfg_posted;  /* bumped (atomic) under cfg_mu when posted changes */
    uint64_t cfg_applied; /* the I/O loop's: the generation in cfg */
    size_t backlog;       /* atomic: forwarded request bytes the main loop has not handled */
    size_t backlog_max;   /* ioBacklogBytes */
    bool paused;          /* atomic: some connection stopped reading for the backlog */
    uv_loop_t loop;
    uv_thread_t thread;
    bool running, stopped;
};

/* ---- the I/O loop's side ---- */

static void io_stop(ns_io_t *io);

/* Frees m, then drops the reference it carried (an embedded mail goes with
 * its connection). */
static void mail_done(ns_mail_t *m)
{
    ns_conn_t *conn = m->conn;
    ns_mail_free(m);
    if (conn)
        ns_conn_unref(conn);
}

static void io_handle(ns_io_t *io, ns_mail_t *m)
{
    switch (m->kind) {
    case NS_MAIL_CONN:
        if (io->shard.stopping)
            close(m->fd);
        else
            ns_conn_adopt(&io->shard, m->fd);
        break;
    case NS_MAIL_OUT:
        ns_conn_deliver(m->conn, &m->bytes);
        break;
    case NS_MAIL_CLOSE:
        ns_conn_close(m->conn, NULL); /* the sender logged why */
        break;
    default:
        break;
    }
    mail_done(m);
}

/* I/O loop, before serving a request: takes settings changed since. */
static void io_sync(ns_io_t *io)
{
    if (__atomic_load_n(&io->cfg_posted, __ATOMIC_ACQUIRE) == io->cfg_applied)
        return;
    pthread_mutex_lock(&io->cfg_mu);
    io->cfg = io->posted;
    io->cfg_applied = __atomic_load_n(&io->cfg_posted, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&io->cfg_mu);
}

static void io_wake(void *data)
{
    ns_io_t *io = data;
    bool stop = false;
    io_sync(io);
    for (ns_mail_t *m = ns_mailbox_take(io->shard.inbox, &stop), *next; m; m = next) {
        next = m->next;
        io_handle(io, m);
    }
    if (!io->shard.stopping && __atomic_load_n(&io->paused, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max / 2) {
        __atomic_store_n(&io->paused, false, __ATOMIC_SEQ_CST);
        ns_conn_resume_all(&io->shard);
    }
    ns_conn_resume_paused(&io->shard); /* paused on the writer queue's budget */
    if (stop && !io->shard.stopping)
        io_stop(io);
}

static void io_idle_cb(uv_timer_t *t)
{
    ns_loop_t *shard = t->data;
    io_sync(shard->io);
    ns_conn_resume_paused(shard); /* no reply may come to wake it: look again */
    ns_conn_sweep_idle(shard, uv_now(shard->uv), shard->cfg->idle_timeout_s);
}

static void io_check_cb(uv_check_t *c)
{
    ns_read_release(c->data);
    ns_conn_flush_all(c->data);
}

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Writes out what is queued, closes every connection and handle; the
 * loop then ends. */
static void io_stop(ns_io_t *io)
{
    io->shard.stopping = true;
    io->stopped = true;
    ns_mailbox_close(io->shard.inbox); /* what is left, the main thread releases */
    ns_conn_flush_all(&io->shard);
    ns_conn_close_all(&io->shard);
    uv_walk(&io->loop, close_walk_cb, NULL);
}

static void io_main(void *arg)
{
    ns_io_t *io = arg;
    ns_loop_set_current(&io->shard);
    ns_loop_thread_prefer_latency();
    uv_run(&io->loop, UV_RUN_DEFAULT);
    ns_txn_abort(io->shard.rtxn);
    io->shard.rtxn = NULL;
}

/* True when the main loop has too many of this loop's requests still to
 * handle; the connection then stops reading until it catches up. */
static bool backlogged(ns_io_t *io)
{
    if (__atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max)
        return false;
    __atomic_store_n(&io->paused, true, __ATOMIC_SEQ_CST);
    /* the main loop may have drained it before it could see the flag */
    if (__atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max / 2)
        ns_loop_wake(&io->shard);
    return true;
}

/* Sends request cmd of c, decoded, and its row to the main loop. */
static void forward(ns_io_t *io, ns_conn_t *c, const ns_cmd_t *cmd, const ns_cmd_row_t *row,
                    size_t frame_len)
{
    ns_mail_t *m = ns_mail_new(NS_MAIL_CMD, c);
    if (m == NULL || (m->cmd = ns_cmd_dup(cmd)) == NULL) {
        if (m)
            ns_mail_free(m);
        ns_conn_close(c, "out of memory");
        return;
    }
    ns_conn_ref(c); /* the mail's */
    m->from = &io->shard;
    m->cost = frame_len;
    m->row = row;
    NS_M_INC(io->shard.m.forwarded);
    __atomic_add_fetch(&io->backlog, frame_len, __ATOMIC_SEQ_CST);
    if (!ns_loop_post(&io->main->loop, m))
        mail_done(m);
}

/* The I/O loop's on_request: route lookups here, the rest to the main loop. */
static bool io_request(ns_loop_t *shard, ns_conn_t *c, const ns_cmd_t *cmd, size_t frame_len)
{
    ns_io_t *io = shard->io;
    io_sync(io);
    const ns_cmd_row_t *row = ns_dispatch_row(cmd->code);
    if (ns_dispatch_local(shard, c, cmd, row))
        return true;
    if (backlogged(io))
        return false;
    if (ns_budget_writer_full() && ns_dispatch_may_write(row)) {
        ns_refusal(ns_conn_peer(c), NS_REFUSE_WRITER_PAUSE,
                   "reading paused: the writer queue is at writerQueueMaxBytes/Ops");
        return false; /* resumed by this loop's 1 s timer (ns_budget_resume) */
    }
    forward(io, c, cmd, row, frame_len);
    return true;
}

/* The I/O loop's on_closed: the main loop forgets c's brokers. */
static void io_closed(ns_loop_t *shard, ns_conn_t *c)
{
    ns_mail_t *m = ns_conn_notice(c);
    m->kind = NS_MAIL_CLOSED;
    m->conn = c;
    m->from = shard;
    ns_conn_ref(c);
    if (!ns_loop_post(&shard->main->loop, m)) {
        m->conn = NULL;
        ns_conn_unref(c);
    }
}

/* ---- the main loop's side ---- */

/* A forwarded request of len bytes was handled: wakes the loop when it
 * paused reading and the backlog is down to half. */
static void backlog_handled(ns_io_t *io, size_t len)
{
    if (__atomic_sub_fetch(&io->backlog, len, __ATOMIC_SEQ_CST) < io->backlog_max / 2 &&
        __atomic_load_n(&io->paused, __ATOMIC_SEQ_CST))
        ns_loop_wake(&io->shard);
}

/* Handles one mail from an I/O loop; io_alive is false after the loops
 * were joined, when only what must be released is done. */
static void main_handle(ns_server_t *srv, ns_mail_t *m, bool io_alive)
{
    switch (m->kind) {
    case NS_MAIL_CMD:
        if (io_alive) {
            if (!ns_conn_is_closed(m->conn))
                ns_dispatch(&srv->loop, m->conn, m->cmd, m->row);
            backlog_handled(m->from->io, m->cost);
        }
        break;
    case NS_MAIL_CLOSED:
        ns_broker_conn_closed(&srv->loop, m->conn);
        break;
    default:
        break;
    }
    mail_done(m);
}

static void main_wake(void *data)
{
    ns_server_t *srv = data;
    for (ns_mail_t *m = ns_mailbox_take(srv->loop.inbox, NULL), *next; m; m = next) {
        next = m->next;
        main_handle(srv, m, true);
    }
}

bool ns_io_take_fd(ns_server_t *srv, int fd)
{
    if (srv->n_ios == 0)
        return false;
    size_t turn = srv->next_io++ % (srv->n_ios + 1);
    if (turn == srv->n_ios)
        return false; /* the main loop's turn */
    ns_io_t *io = srv->ios[turn];
    ns_mail_t *m = ns_mail_new(NS_MAIL_CONN, NULL);
    if (m)
        m->fd = fd;
    if (m == NULL || !ns_loop_post(&io->shard, m)) {
        close(fd);
        if (m)
            ns_mail_free(m);
    }
    return true;
}

/* The main loop's on_config_changed: the loops take the new settings
 * before they serve their next request. */
static void config_changed(ns_loop_t *loop)
{
    ns_server_t *srv = loop->main;
    for (size_t i = 0; i < srv->n_ios; i++) {
        ns_io_t *io = srv->ios[i];
        pthread_mutex_lock(&io->cfg_mu);
        ns_config_copy_scalars(&io->posted, srv->loop.cfg); /* the loops never read strings */
        __atomic_add_fetch(&io->cfg_posted, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&io->cfg_mu);
    }
}

/* Sets up an extra loop's state and handles; the thread starts afterwards. */
static int io_init(ns_server_t *srv, ns_io_t *io)
{
    io->main = srv;
    ns_config_copy_scalars(&io->cfg, srv->loop.cfg);
    io->posted = io->cfg;
    io->backlog_max = (size_t)srv->loop.cfg->io_backlog_bytes;
    if (uv_loop_init(&io->loop) != 0)
        return NS_ENOMEM;
    ns_loop_t *sh = &io->shard;
    sh->uv = &io->loop;
    sh->cfg = &io->cfg;
    sh->store = srv->loop.store;
    sh->start_ms = srv->loop.start_ms;
    sh->io = io;
    sh->main = srv;
    sh->wire_cfg = srv->loop.wire_cfg; /* borrowed: the main server frees it after the loops */
    sh->on_accepted = srv->loop.on_accepted;
    sh->on_request = io_request;
    sh->on_read_ahead = ns_dispatch_warm;
    sh->on_closed = io_closed;
    if ((sh->inbox = ns_mailbox_new(&io->loop, io_wake, io)) == NULL) {
        uv_loop_close(&io->loop);
        return NS_ENOMEM;
    }
    pthread_mutex_init(&io->cfg_mu, NULL);
    uv_timer_init(&io->loop, &sh->idle_timer);
    sh->idle_timer.data = sh;
    uv_timer_start(&sh->idle_timer, io_idle_cb, 1000, 1000);
    uv_check_init(&io->loop, &sh->flush_check);
    sh->flush_check.data = sh;
    uv_check_start(&sh->flush_check, io_check_cb);
    return NS_OK;
}

int ns_io_start(ns_server_t *srv, char *err, size_t errlen)
{
    size_t n = srv->loop.cfg->io_threads > 1 ? (size_t)srv->loop.cfg->io_threads - 1 : 0;
    if (n == 0)
        return NS_OK;
    if ((srv->loop.inbox = ns_mailbox_new(srv->loop.uv, main_wake, srv)) == NULL ||
        (srv->ios = calloc(n, sizeof *srv->ios)) == NULL)
        goto nomem;
    srv->loop.on_config_changed = config_changed;
    for (size_t i = 0; i < n; i++) {
        ns_io_t *io = calloc(1, sizeof *io);
        if (io == NULL)
            goto nomem;
        if (io_init(srv, io) != NS_OK) {
            free(io);
            goto nomem;
        }
        srv->ios[srv->n_ios++] = io;
        if (uv_thread_create(&io->thread, io_main, io) != 0) {
            snprintf(err, errlen, "cannot start I/O thread %zu", i + 1);
            return NS_EIO;
        }
        io->running = true;
    }
    NS_LOG_INFO("ioThreads=%zu: route lookups served on %zu loops", n + 1, n + 1);
    return NS_OK;
nomem:
    snprintf(err, errlen, "out of memory");
    return NS_ENOMEM;
}

/* After the loop's thread ended: what is left in its mailbox, its memory. */
static void io_free(ns_io_t *io)
{
    if (!io->stopped) { /* never ran: close its handles here */
        ns_loop_t *prev = ns_loop_current();
        ns_loop_set_current(&io->shard);
        io_stop(io);
        uv_run(&io->loop, UV_RUN_DEFAULT);
        ns_loop_set_current(prev);
    }
    for (ns_mail_t *m = ns_mailbox_take(io->shard.inbox, NULL), *next; m; m = next) {
        next = m->next;
        if (m->kind == NS_MAIL_CONN)
            close(m->fd);
        mail_done(m);
    }
    uv_loop_close(&io->loop);
    ns_mailbox_free(io->shard.inbox);
    pthread_mutex_destroy(&io->cfg_mu);
    ns_buf_free(&io->shard.scratch);
    ns_buf_free(&io->shard.derived);
    ns_buf_free(&io->shard.rshared);
    ns_buf_free(&io->shard.tshared);
    ns_loop_msgs_free(&io->shard);
    ns_buf_free(&io->shard.remark);
    ns_auth_loop_free(&io->shard);
    free(io);
}

void ns_io_stop(ns_server_t *srv)
{
    for (size_t i = 0; i < srv->n_ios; i++)
        if (srv->ios[i]->running)
            ns_mailbox_stop(srv->ios[i]->shard.inbox);
    for (size_t i = 0; i < srv->n_ios; i++) {
        ns_io_t *io = srv->ios[i];
        if (io->running) {
            uv_thread_join(&io->thread);
            io->running = false;
        }
    }
    if (srv->loop.inbox)
        for (ns_mail_t *m = ns_mailbox_take(srv->loop.inbox, NULL), *next; m; m = next) {
            next = m->next;
            main_handle(srv, m, false);
        }
    for (size_t i = 0; i < srv->n_ios; i++)
        io_free(srv->ios[i]);
    free(srv->ios);
    srv->ios = NULL;
    srv->n_ios = 0;
}

void ns_io_free(ns_server_t *srv)
{
    ns_mailbox_free(srv->loop.inbox);
    srv->loop.inbox = NULL;
}

ns_loop_t *ns_io_loop(ns_io_t *io)
{
    return &io->shard;
}
