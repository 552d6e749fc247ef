/* accept.c - accepting connections by hand, so that running out of
 * descriptors (EMFILE, with ioThreads) pauses accepting instead of spinning
 * the main loop.
 *
 * libuv's own accept loop, when accept(2) fails with EMFILE, closes a spare
 * descriptor, accepts and drops the waiting connections and opens the spare
 * again. When another thread takes the freed descriptor in between (an I/O
 * loop opening its own spare as it adopts a connection, the HTTP thread, a
 * backup), the spare is lost, and from then on the loop calls accept(2)
 * again and again without returning until some descriptor is freed: the
 * main loop spun, and every request that needed it waited (10 s in the
 * EMFILE test with ioThreads=3). Here a uv_poll on the listening socket
 * drives accept4(2); at EMFILE/ENFILE the waiting connections are shed with
 * our own spare, and when that is not possible accepting pauses for
 * ACCEPT_PAUSE_MS instead of spinning. An accepted descriptor goes straight
 * to its loop (no dup(2), which needed one more descriptor at the limit). */
#define _GNU_SOURCE
#include "accept.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/log.h"
#include "net/conn.h"
#include "iothreads.h"

#define ACCEPT_BATCH 128    /* per readiness, then the loop's other work */
#define ACCEPT_PAUSE_MS 100 /* when nothing can be accepted nor shed */
#define ACCEPT_LOG_MS 10000 /* one line per interval, with the count */

static void poll_cb(uv_poll_t *p, int status, int events);

static void log_shed(ns_server_t *srv, int err, int shed)
{
    uint64_t now = uv_now(srv->loop.uv);
    srv->accept_failed += (uint64_t)(shed > 0 ? shed : 1);
    if (srv->accept_logged_ms != 0 && now - srv->accept_logged_ms < ACCEPT_LOG_MS)
        return;
    NS_LOG_WARN("accept failed: %s: %llu connection(s) refused since the last line (the "
                "open connections are served; raise the file descriptor limit)",
                strerror(err), (unsigned long long)srv->accept_failed);
    srv->accept_logged_ms = now ? now : 1;
    srv->accept_failed = 0;
}

static void resume_cb(uv_timer_t *t)
{
    ns_server_t *srv = t->data;
    if (!srv->loop.stopping)
        uv_poll_start(&srv->accept_poll, UV_READABLE, poll_cb);
}

/* Out of descriptors: drops the waiting connections with the spare
 * descriptor's slot, or pauses accepting when even that is gone. */
static void shed(ns_server_t *srv, int lfd, int err)
{
    int n = 0, fd = -1;
    if (srv->spare_fd >= 0) {
        close(srv->spare_fd);
        srv->spare_fd = -1;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0 || errno == EINTR ||
               errno == ECONNABORTED)
            if (fd >= 0) {
                close(fd);
                n++;
            }
        srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    log_shed(srv, err, n);
    NS_M_ADD(srv->loop.m.refused[NS_M_REFUSE_ACCEPT_FAILED], n > 0 ? n : 1);
    if (srv->spare_fd < 0 || (fd < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        uv_poll_stop(&srv->accept_poll);
        uv_timer_start(&srv->accept_timer, resume_cb, ACCEPT_PAUSE_MS, 0);
    }
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
    (void)events;
    ns_server_t *srv = p->data;
    if (status < 0 || srv->loop.stopping)
        return;
    int lfd = -1;
    uv_fileno((uv_handle_t *)&srv->listener, &lfd);
    for (int i = 0; i < ACCEPT_BATCH && !srv->loop.stopping; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            if (!ns_io_take_fd(srv, fd))
                ns_conn_adopt(&srv->loop, fd); /* the main loop's turn */
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            shed(srv, lfd, errno);
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            NS_LOG_WARN("accept failed: %s", strerror(errno));
        return;
    }
}

int ns_accept_listen(ns_server_t *srv, char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    const char *host = srv->loop.cfg->bind_address;
    int port = (int)srv->loop.cfg->listen_port, lfd = -1;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
        snprintf(err, errlen, "bindAddress '%s' is not an IP address", host);
        return NS_EINVAL;
    }
    srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    uv_tcp_init(srv->loop.uv, &srv->listener);
    srv->listener.data = srv;
    srv->listener_init = true;
    uv_timer_init(srv->loop.uv, &srv->accept_timer);
    srv->accept_timer.data = srv;
    int rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_fileno((uv_handle_t *)&srv->listener, &lfd);
    if (rc == 0 && listen(lfd, 1024) != 0)
        rc = -errno;
    if (rc == 0)
        rc = uv_poll_init_socket(srv->loop.uv, &srv->accept_poll, lfd);
    if (rc == 0) {
        srv->accept_poll.data = srv;
        srv->accept_init = true;
        rc = uv_poll_start(&srv->accept_poll, UV_READABLE, poll_cb);
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, uv_strerror(rc));
        return NS_EIO;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &len);
    srv->bound_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                        : ((struct sockaddr_in *)&bound)->sin_port);
    return NS_OK;
}

void ns_accept_stop(ns_server_t *srv)
{
    /* the poll first: it watches the listener's descriptor */
    if (srv->accept_init && !uv_is_closing((uv_handle_t *)&srv->accept_poll))
        uv_close((uv_handle_t *)&srv->accept_poll, NULL);
    if (srv->listener_init) {
        if (!uv_is_closing((uv_handle_t *)&srv->accept_timer))
            uv_close((uv_handle_t *)&srv->accept_timer, NULL);
        if (!uv_is_closing((uv_handle_t *)&srv->listener))
            uv_close((uv_handle_t *)&srv->listener, NULL);
    }
    if (srv->spare_fd >= 0)
        close(srv->spare_fd);
    srv->spare_fd = -1;
}
