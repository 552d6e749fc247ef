/* http_guard.c - the HTTP endpoint cannot be held by slow clients
 * (http_guard.h).
 *
 * libmicrohttpd closes a connection idle for its connection timeout, but
 * every byte resets that timeout: 32 clients sending one header byte every
 * few seconds held all 32 connections it allowed, and /healthz and /metrics
 * were unreachable for as long as they liked, so a load balancer would have
 * taken the server out. What the library does not do is done here:
 *   - a deadline for a request's header that bytes do not move: a
 *     connection must have sent a whole header (libmicrohttpd then calls
 *     the request handler, which calls ns_http_guard_request) within
 *     httpHeaderTimeoutMillis of connecting or of the end of its last
 *     request, or a thread of this file shuts its socket down, and the
 *     library closes it as a peer gone;
 *   - the total and per-address caps are the library's own
 *     (MHD_OPTION_CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT),
 *     set from httpMaxConnections and httpMaxConnectionsPerAddress.
 * Connections are tracked from libmicrohttpd's connection notifications;
 * the list is under one mutex, and the library reports a connection closed
 * (removing it here) before it closes the socket, so a shutdown never
 * reaches a descriptor reused by another connection. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ns/err.h"
#include "ns/log.h"
#include "ops/http_guard.h"
#include "ops/mhd.h"

typedef struct guard_conn {
    struct guard_conn *prev, *next;
    int fd;
    uint64_t since_ms; /* connected, or its last request ended */
    bool in_request;   /* a whole header came: its request is being answered */
    bool cut;          /* shut down here */
} guard_conn_t;

struct ns_http_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    guard_conn_t head; /* list sentinel */
    uint64_t timeout_ms;
    bool stop;
    pthread_t th;
    uint64_t cut_total;    /* under mu */
    uint64_t last_log_ms;  /* under mu */
    uint64_t cut_unlogged; /* under mu: cut since the last log line */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Under g->mu: shuts down the connections past their header deadline. */
static void sweep(ns_http_guard_t *g, uint64_t now)
{
    for (guard_conn_t *c = g->head.next; c != &g->head; c = c->next) {
        if (c->in_request || c->cut || now - c->since_ms < g->timeout_ms)
            continue;
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        g->cut_total++;
        g->cut_unlogged++;
    }
    if (g->cut_unlogged && now - g->last_log_ms >= 10000) {
        NS_LOG_WARN("http: closed %llu connection(s) that sent no whole request header within "
                    "httpHeaderTimeoutMillis (%llu ms); %llu in all",
                    (unsigned long long)g->cut_unlogged, (unsigned long long)g->timeout_ms,
                    (unsigned long long)g->cut_total);
        g->cut_unlogged = 0;
        g->last_log_ms = now;
    }
}

static void *guard_main(void *arg)
{
    ns_http_guard_t *g = arg;
    uint64_t step = g->timeout_ms / 4 < 250 ? g->timeout_ms / 4 : 250;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(step * 1000000);
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&g->cv, &g->mu, &until);
        if (!g->stop)
            sweep(g, mono_ms());
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int ns_http_guard_start(uint64_t header_timeout_ms, ns_http_guard_t **out)
{
    *out = NULL;
    ns_http_guard_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NS_ENOMEM;
    g->head.next = g->head.prev = &g->head;
    g->timeout_ms = header_timeout_ms;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->th, NULL, guard_main, g) != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NS_ENOMEM;
    }
    *out = g;
    return NS_OK;
}

void ns_http_guard_stop(ns_http_guard_t *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->th, NULL);
    for (guard_conn_t *c = g->head.next, *n; c != &g->head; c = n) {
        n = c->next;
        free(c);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void ns_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    ns_http_guard_t *g = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            ns_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        guard_conn_t *c = fd ? calloc(1, sizeof *c) : NULL;
        *socket_context = c;
        if (c == NULL)
            return; /* not guarded: the library's own timeout still applies */
        c->fd = fd->connect_fd;
        pthread_mutex_lock(&g->mu);
        c->since_ms = mono_ms();
        c->next = &g->head;
        c->prev = g->head.prev;
        g->head.prev->next = c;
        g->head.prev = c;
        pthread_mutex_unlock(&g->mu);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        guard_conn_t *c = *socket_context;
        pthread_mutex_lock(&g->mu);
        c->prev->next = c->next;
        c->next->prev = c->prev;
        pthread_mutex_unlock(&g->mu);
        free(c);
        *socket_context = NULL;
    }
}

/* The guard's record of conn, NULL when it has none. */
static guard_conn_t *record_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        ns_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

void ns_http_guard_request(ns_http_guard_t *g, struct MHD_Connection *conn)
{
    guard_conn_t *c = g ? record_of(conn) : NULL;
    if (c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    c->in_request = true;
    pthread_mutex_unlock(&g->mu);
}

void ns_http_guard_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)con_cls;
    (void)toe;
    ns_http_guard_t *g = cls;
    guard_conn_t *c = record_of(conn);
    if (c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    c->in_request = false;
    c->since_ms = mono_ms(); /* the next request's header has its own deadline */
    pthread_mutex_unlock(&g->mu);
}

uint64_t ns_http_guard_cut_total(ns_http_guard_t *g)
{
    if (g == NULL)
        return 0;
    pthread_mutex_lock(&g->mu);
    uint64_t n = g->cut_total;
    pthread_mutex_unlock(&g->mu);
    return n;
}
