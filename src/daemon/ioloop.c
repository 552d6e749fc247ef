/* ioloop.c - ioThreads > 1: extra libuv loops that serve route lookups.
 *
 * The main loop listens. Each new connection goes, in turn, to the main loop
 * or to one of the ioThreads - 1 extra loops; a connection stays on its loop
 * for life. An extra loop runs its own ns_server_t over the shared store:
 * its own read transaction (LMDB readers never wait), buffers, idle sweep
 * and reply batching. It answers GET_ROUTEINFO_BY_TOPIC itself and forwards
 * every other frame to the main loop, which alone owns the writer, the
 * registry, liveness and the configuration, and which answers them against
 * a proxy of the connection (conn.c). So everything that changes state
 * still happens on one thread, in arrival order per connection. A lookup,
 * though, does not wait for a forwarded request sent before it on the same
 * connection (as in Java, where route queries run on their own executor):
 * its answer may come first and may not reflect that request yet.
 *
 * Loops talk by messages: a mutex-guarded FIFO per receiving loop, drained
 * by a uv_async_t. Main -> I/O loop: a new socket, reply bytes, a close
 * request, the release of a closed connection; and, beside the queue, a
 * stop flag and the latest settings. I/O loop -> main: a frame, a closed
 * connection.
 *
 * Flow control: a loop counts the bytes of the frames it forwarded that the
 * main loop has not handled yet. Above ioBacklogBytes a connection with a
 * frame to forward stops reading, as one loop would stop reading while it
 * is busy (TCP then holds the client back); the main loop wakes the loop
 * once the backlog is below half of that, and the paused connections go on.
 *
 * Settings changed by UPDATE_NAMESRV_CONFIG are published to each loop
 * before the update is answered, and a loop checks for new ones (one atomic
 * load) before it serves what it has read: a lookup sent after the answer
 * sees the new settings, on any connection.
 *
 * Shutdown (ns_io_stop, main loop, after the writer has committed what was
 * queued and the replies are flushed to the proxies): each loop is told to
 * stop, writes out its replies, closes its connections and ends; the main
 * thread joins them and then handles what is left in every mailbox on its
 * own, since no other thread runs any more. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "auth.h"
#include "server.h"

typedef enum {
    MSG_CONN,    /* main -> io: serve socket fd for proxy */
    MSG_OUT,     /* main -> io: reply bytes for conn */
    MSG_CLOSE,   /* main -> io: close conn */
    MSG_RELEASE, /* main -> io: the proxy of conn is finished; drop its link */
    MSG_REQ,     /* io -> main: a frame of conn for proxy */
    MSG_CLOSED,  /* io -> main: conn (NULL: never opened) of proxy closed */
} msg_kind_t;

typedef struct msg {
    struct msg *next;
    msg_kind_t kind;
    ns_io_t *from;    /* io -> main: the sending loop */
    ns_conn_t *conn;  /* the I/O loop's connection */
    ns_conn_t *proxy; /* its main-loop proxy */
    int fd;
    ns_buf_t bytes;
} msg_t;

struct ns_mailbox {
    pthread_mutex_t mu;
    msg_t *head, *tail;
    uv_async_t wake;
    bool wake_init;
    bool stop; /* I/O loops: end once the messages before it are handled */
};

struct ns_io {
    ns_server_t *main;
    ns_server_t shard;    /* this loop's server */
    ns_config_t cfg;      /* the main configuration's scalars; strings NULL */
    ns_config_t posted;   /* the newest settings, under in.mu */
    uint64_t cfg_posted;  /* bumped (atomic) under in.mu when posted changes */
    uint64_t cfg_applied; /* the I/O loop's: the generation in cfg */
    size_t backlog;       /* atomic: forwarded frame bytes the main loop has not handled */
    size_t backlog_max;   /* ioBacklogBytes */
    bool paused;          /* atomic: some connection stopped reading for the backlog */
    uv_loop_t loop;
    ns_mailbox_t in;
    uv_thread_t thread;
    bool running;
    int index;
};

/* ---- mailboxes ---- */

static void mb_init(ns_mailbox_t *mb)
{
    pthread_mutex_init(&mb->mu, NULL);
    mb->head = mb->tail = NULL;
}

static void mb_post(ns_mailbox_t *mb, msg_t *m)
{
    m->next = NULL;
    pthread_mutex_lock(&mb->mu);
    if (mb->tail)
        mb->tail->next = m;
    else
        mb->head = m;
    mb->tail = m;
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(&mb->wake);
}

/* Takes every message, oldest first; the caller owns the list. *stop (may
 * be NULL) tells whether a stop was asked for before them. */
static msg_t *mb_take(ns_mailbox_t *mb, bool *stop)
{
    pthread_mutex_lock(&mb->mu);
    msg_t *m = mb->head;
    mb->head = mb->tail = NULL;
    if (stop)
        *stop = mb->stop;
    pthread_mutex_unlock(&mb->mu);
    return m;
}

static void mb_stop(ns_mailbox_t *mb)
{
    pthread_mutex_lock(&mb->mu);
    mb->stop = true;
    pthread_mutex_unlock(&mb->mu);
    uv_async_send(&mb->wake);
}

/* A new message of kind; NULL (logged) when out of memory. Owned by the
 * caller until posted, then by the receiver (msg_free). */
static msg_t *msg_new(msg_kind_t kind, ns_conn_t *conn, ns_conn_t *proxy)
{
    msg_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        NS_LOG_ERROR("ioThreads: out of memory for a message between loops");
        return NULL;
    }
    m->kind = kind;
    m->conn = conn;
    m->proxy = proxy;
    m->fd = -1;
    return m;
}

static void msg_free(msg_t *m)
{
    ns_buf_free(&m->bytes);
    free(m);
}

/* ---- the I/O loop's side ---- */

static void io_stop(ns_io_t *io);

/* Handles one message from the main loop; true when the message was kept
 * (as a connection's spare, or sent on) and must not be freed. */
static bool io_handle(ns_io_t *io, msg_t *m)
{
    switch (m->kind) {
    case MSG_CONN: /* the message then reports the close, now or later */
        if (!io->shard.stopping && ns_conn_adopt(&io->shard, m->fd, m->proxy, m))
            return true;
        if (io->shard.stopping)
            close(m->fd);
        ns_io_closed(&io->shard, NULL, m->proxy, m);
        return true;
    case MSG_OUT:
        ns_conn_deliver(m->conn, &m->bytes);
        break;
    case MSG_CLOSE:
        ns_conn_close(m->conn, "closed by the main loop");
        break;
    case MSG_RELEASE:
        ns_conn_unref(m->conn);
        break;
    default:
        break;
    }
    return false;
}

void ns_io_sync(ns_server_t *shard)
{
    ns_io_t *io = shard->io;
    if (__atomic_load_n(&io->cfg_posted, __ATOMIC_ACQUIRE) == io->cfg_applied)
        return;
    pthread_mutex_lock(&io->in.mu);
    io->cfg = io->posted;
    io->cfg_applied = __atomic_load_n(&io->cfg_posted, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&io->in.mu);
}

static void io_wake_cb(uv_async_t *a)
{
    ns_io_t *io = a->data;
    bool stop = false;
    ns_io_sync(&io->shard);
    for (msg_t *m = mb_take(&io->in, &stop), *next; m; m = next) {
        next = m->next;
        if (!io_handle(io, m))
            msg_free(m);
    }
    if (!io->shard.stopping && __atomic_load_n(&io->paused, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max / 2) {
        __atomic_store_n(&io->paused, false, __ATOMIC_SEQ_CST);
        ns_conn_resume_all(&io->shard);
    }
    if (stop && !io->shard.stopping)
        io_stop(io);
}

static void io_idle_cb(uv_timer_t *t)
{
    ns_server_t *shard = t->data;
    ns_io_sync(shard);
    ns_conn_sweep_idle(shard, uv_now(shard->loop), shard->cfg->idle_timeout_s);
}

static void io_check_cb(uv_check_t *c)
{
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
    ns_conn_flush_all(&io->shard);
    ns_conn_close_all(&io->shard);
    uv_walk(&io->loop, close_walk_cb, NULL);
}

static void io_main(void *arg)
{
    ns_io_t *io = arg;
    uv_run(&io->loop, UV_RUN_DEFAULT);
    ns_txn_abort(io->shard.rtxn);
    io->shard.rtxn = NULL;
}

bool ns_io_serves(const ns_cmd_t *cmd)
{
    /* With authMode on, every request is checked on the main loop (auth.c). */
    if (ns_auth_mode() != NS_AUTH_OFF)
        return false;
    return cmd->code == NS_REQ_GET_ROUTEINFO_BY_TOPIC && !(cmd->flag & NS_FLAG_RESPONSE);
}

bool ns_io_backlogged(ns_server_t *shard)
{
    ns_io_t *io = shard->io;
    if (__atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max)
        return false;
    __atomic_store_n(&io->paused, true, __ATOMIC_SEQ_CST);
    /* the main loop may have drained it before it could see the flag */
    if (__atomic_load_n(&io->backlog, __ATOMIC_SEQ_CST) < io->backlog_max / 2)
        uv_async_send(&io->in.wake);
    return true;
}

void ns_io_forward(ns_server_t *shard, ns_conn_t *c, ns_conn_t *proxy, const uint8_t *frame,
                   size_t len)
{
    msg_t *m = msg_new(MSG_REQ, c, proxy);
    if (m == NULL || ns_buf_append(&m->bytes, frame, len) != NS_OK) {
        if (m)
            msg_free(m);
        ns_conn_close(c, "out of memory");
        return;
    }
    m->from = shard->io;
    __atomic_add_fetch(&shard->io->backlog, len, __ATOMIC_SEQ_CST);
    mb_post(shard->io->main->inbox, m);
}

/* Turns a kept message into one of kind, or allocates it; NULL when out
 * of memory. */
static msg_t *msg_reuse(void *spare, msg_kind_t kind, ns_conn_t *conn, ns_conn_t *proxy)
{
    msg_t *m = spare;
    if (m == NULL)
        return msg_new(kind, conn, proxy);
    m->kind = kind;
    m->conn = conn;
    m->proxy = proxy;
    m->fd = -1;
    return m;
}

void ns_io_msg_free(void *spare)
{
    if (spare)
        msg_free(spare);
}

void ns_io_closed(ns_server_t *shard, ns_conn_t *c, ns_conn_t *proxy, void *spare)
{
    msg_t *m = msg_reuse(spare, MSG_CLOSED, c, proxy);
    if (m == NULL) /* only without a spare: the proxy (and c's link) stay */
        return;
    m->from = shard->io;
    mb_post(shard->io->main->inbox, m);
}

/* ---- the main loop's side ---- */

/* A forwarded frame of len bytes was handled: wakes the loop when it paused
 * reading and the backlog is down to half. */
static void backlog_handled(ns_io_t *io, size_t len)
{
    if (__atomic_sub_fetch(&io->backlog, len, __ATOMIC_SEQ_CST) < io->backlog_max / 2 &&
        __atomic_load_n(&io->paused, __ATOMIC_SEQ_CST))
        uv_async_send(&io->in.wake);
}

/* Handles one message from an I/O loop; io_alive is false after the loops
 * were joined, when the main thread releases their connections itself.
 * True when the message was sent on and must not be freed. */
static bool main_handle(msg_t *m, bool io_alive)
{
    switch (m->kind) {
    case MSG_REQ:
        if (!io_alive)
            break;
        ns_conn_proxy_request(m->proxy, m->conn, m->bytes.data, m->bytes.len);
        backlog_handled(m->from, m->bytes.len);
        break;
    case MSG_CLOSED:
        ns_conn_proxy_finish(m->proxy);
        if (m->conn == NULL)
            break;
        if (!io_alive) {
            ns_conn_unref(m->conn);
            break;
        }
        mb_post(&m->from->in, msg_reuse(m, MSG_RELEASE, m->conn, NULL)); /* back it goes */
        return true;
    default:
        break;
    }
    return false;
}

static void main_wake_cb(uv_async_t *a)
{
    ns_server_t *srv = a->data;
    for (msg_t *m = mb_take(srv->inbox, NULL), *next; m; m = next) {
        next = m->next;
        if (!main_handle(m, true))
            msg_free(m);
    }
}

void ns_io_reply(ns_io_t *home, ns_conn_t *remote, ns_buf_t *out)
{
    msg_t *m = msg_new(MSG_OUT, remote, NULL);
    if (m == NULL)
        return; /* out stays as it is: the next flush tries again */
    m->bytes = *out;
    ns_buf_init(out);
    mb_post(&home->in, m);
}

void ns_io_close_remote(ns_io_t *home, ns_conn_t *remote, void *spare)
{
    msg_t *m = msg_reuse(spare, MSG_CLOSE, remote, NULL);
    if (m)
        mb_post(&home->in, m);
}

bool ns_io_take_connection(ns_server_t *srv)
{
    if (srv->n_ios == 0)
        return false;
    size_t turn = srv->next_io++ % (srv->n_ios + 1);
    if (turn == srv->n_ios)
        return false; /* the main loop's turn */
    ns_io_t *io = srv->ios[turn];
    uv_tcp_t *tmp = malloc(sizeof *tmp);
    if (tmp == NULL)
        return false;
    uv_tcp_init(srv->loop, tmp);
    uv_os_fd_t fd = -1;
    int dup_fd = -1;
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)tmp) == 0 &&
        uv_fileno((uv_handle_t *)tmp, &fd) == 0)
        dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    uv_close((uv_handle_t *)tmp, (uv_close_cb)free);
    if (dup_fd < 0) {
        NS_LOG_WARN("accept failed: cannot hand the connection to an I/O loop");
        return true;
    }
    /* every message the connection's close needs is allocated here, so
     * that closing never fails: m travels on as MSG_CLOSED and MSG_RELEASE,
     * the proxy keeps one for MSG_CLOSE */
    msg_t *m = msg_new(MSG_CONN, NULL, NULL), *close_m = msg_new(MSG_CLOSE, NULL, NULL);
    ns_conn_t *p = m && close_m ? ns_conn_proxy_new(srv, io, dup_fd, close_m) : NULL;
    if (p == NULL) {
        close(dup_fd);
        ns_io_msg_free(m);
        ns_io_msg_free(close_m);
        return true;
    }
    m->proxy = p;
    m->fd = dup_fd;
    mb_post(&io->in, m);
    return true;
}

void ns_io_config_changed(ns_server_t *srv)
{
    for (size_t i = 0; i < srv->n_ios; i++) {
        ns_io_t *io = srv->ios[i];
        pthread_mutex_lock(&io->in.mu);
        ns_config_copy_scalars(&io->posted, srv->cfg); /* the loops never read strings */
        __atomic_add_fetch(&io->cfg_posted, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&io->in.mu);
    }
}

/* Sets up loop i's server and handles; the thread starts afterwards. */
static int io_init(ns_server_t *srv, ns_io_t *io, int index)
{
    io->main = srv;
    io->index = index;
    ns_config_copy_scalars(&io->cfg, srv->cfg);
    io->posted = io->cfg;
    io->backlog_max = (size_t)srv->cfg->io_backlog_bytes;
    if (uv_loop_init(&io->loop) != 0)
        return NS_ENOMEM;
    ns_server_t *sh = &io->shard;
    sh->loop = &io->loop;
    sh->cfg = &io->cfg;
    sh->store = srv->store;
    sh->start_ms = srv->start_ms;
    sh->io = io;
    mb_init(&io->in);
    if (uv_async_init(&io->loop, &io->in.wake, io_wake_cb) != 0) {
        pthread_mutex_destroy(&io->in.mu);
        uv_loop_close(&io->loop);
        return NS_ENOMEM;
    }
    io->in.wake.data = io;
    io->in.wake_init = true;
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
    size_t n = srv->cfg->io_threads > 1 ? (size_t)srv->cfg->io_threads - 1 : 0;
    if (n == 0)
        return NS_OK;
    if ((srv->inbox = calloc(1, sizeof *srv->inbox)) == NULL)
        goto nomem;
    mb_init(srv->inbox);
    if ((srv->ios = calloc(n, sizeof *srv->ios)) == NULL ||
        uv_async_init(srv->loop, &srv->inbox->wake, main_wake_cb) != 0)
        goto nomem;
    srv->inbox->wake.data = srv;
    srv->inbox->wake_init = true;
    for (size_t i = 0; i < n; i++) {
        ns_io_t *io = calloc(1, sizeof *io);
        if (io == NULL)
            goto nomem;
        if (io_init(srv, io, (int)i + 1) != NS_OK) {
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
    for (msg_t *m = mb_take(&io->in, NULL), *next; m; m = next) {
        next = m->next;
        if (m->kind == MSG_CONN) {
            close(m->fd);
            ns_conn_proxy_finish(m->proxy);
        } else if (m->kind == MSG_RELEASE) {
            ns_conn_unref(m->conn);
        }
        msg_free(m);
    }
    if (!io->running && io->in.wake_init) { /* never ran: close its handles here */
        io_stop(io);
        uv_run(&io->loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&io->loop);
    pthread_mutex_destroy(&io->in.mu);
    ns_buf_free(&io->shard.scratch);
    ns_buf_free(&io->shard.derived);
    ns_buf_free(&io->shard.rshared);
    free(io);
}

void ns_io_stop(ns_server_t *srv)
{
    for (size_t i = 0; i < srv->n_ios; i++)
        if (srv->ios[i]->running)
            mb_stop(&srv->ios[i]->in);
    for (size_t i = 0; i < srv->n_ios; i++)
        if (srv->ios[i]->running) {
            uv_thread_join(&srv->ios[i]->thread);
            srv->ios[i]->running = false;
            srv->ios[i]->in.wake_init = false; /* closed by io_stop */
        }
    if (srv->inbox)
        for (msg_t *m = mb_take(srv->inbox, NULL), *next; m; m = next) {
            next = m->next;
            if (!main_handle(m, false))
                msg_free(m);
        }
    for (size_t i = 0; i < srv->n_ios; i++)
        io_free(srv->ios[i]);
    free(srv->ios);
    srv->ios = NULL;
    srv->n_ios = 0;
}

void ns_io_free(ns_server_t *srv)
{
    if (srv->inbox == NULL)
        return;
    pthread_mutex_destroy(&srv->inbox->mu);
    free(srv->inbox);
    srv->inbox = NULL;
}
