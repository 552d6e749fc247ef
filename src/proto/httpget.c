/* httpget.c - one blocking HTTP/1.0 GET (include/ns/httpget.h).
 *
 * HTTP/1.0 with "Connection: close": the server ends the body by closing,
 * so the response is everything read until EOF; the status is the second
 * word of the first line and the body starts after the first empty line. */
#define _GNU_SOURCE /* memmem */
#include "ns/httpget.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ns/err.h"

#define HTTPGET_MAX_BYTES (64u * 1024 * 1024)

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until deadline: NS_OK, NS_ETIMEDOUT or NS_ECONN. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return NS_ETIMEDOUT;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return NS_OK;
        if (n < 0 && errno != EINTR)
            return NS_ECONN;
    }
}

static int connect_to(const char *host, int port, int64_t deadline, int *out)
{
    struct addrinfo hints = {0}, *ai = NULL;
    char service[16];
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &ai) != 0)
        return NS_ECONN;
    int rc = NS_ECONN;
    for (struct addrinfo *a = ai; a && rc != NS_OK; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == NS_OK)) {
            int err = 0;
            socklen_t len = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
                *out = fd;
                rc = NS_OK;
                continue;
            }
        }
        close(fd);
    }
    freeaddrinfo(ai);
    return rc;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            int rc = wait_fd(fd, POLLOUT, deadline);
            if (rc != NS_OK)
                return rc;
        } else {
            return NS_ECONN;
        }
    }
    return NS_OK;
}

static int recv_all(int fd, ns_buf_t *raw, int64_t deadline)
{
    for (;;) {
        if (ns_buf_reserve(raw, 16384) != NS_OK)
            return NS_ENOMEM;
        ssize_t r = recv(fd, raw->data + raw->len, raw->cap - raw->len, 0);
        if (r > 0) {
            raw->len += (size_t)r;
            if (raw->len > HTTPGET_MAX_BYTES)
                return NS_ETOOBIG;
        } else if (r == 0) {
            return NS_OK;
        } else if (errno == EAGAIN || errno == EINTR) {
            int rc = wait_fd(fd, POLLIN, deadline);
            if (rc != NS_OK)
                return rc;
        } else {
            return NS_ECONN;
        }
    }
}

/* Status and body of a whole response in raw. */
static int parse(const ns_buf_t *raw, int *status, ns_buf_t *body)
{
    const char *p = (const char *)raw->data;
    size_t n = raw->len;
    if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
        return NS_EINVAL;
    int code = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return NS_EINVAL;
        code = code * 10 + (p[i] - '0');
    }
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (end == NULL)
        return NS_EINVAL;
    end += 4;
    *status = code;
    return ns_buf_append(body, end, n - (size_t)(end - p));
}

int ns_http_get(const char *host, int port, const char *path, int timeout_ms, int *status,
                ns_buf_t *body)
{
    int64_t deadline = mono_ms() + timeout_ms;
    int fd = -1;
    ns_buf_t req = NS_BUF_INIT, raw = NS_BUF_INIT;
    int rc = connect_to(host, port, deadline, &fd);
    if (rc != NS_OK)
        goto out;
    rc = ns_buf_printf(&req, "GET %s HTTP/1.0\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", path,
                       host, port);
    if (rc == NS_OK)
        rc = send_all(fd, (const char *)req.data, req.len, deadline);
    if (rc == NS_OK)
        rc = recv_all(fd, &raw, deadline);
    if (rc == NS_OK)
        rc = parse(&raw, status, body);
out:
    if (fd >= 0)
        close(fd);
    ns_buf_free(&req);
    ns_buf_free(&raw);
    return rc;
}

int ns_http_get_addr(const char *addr, const char *path, int timeout_ms, int *status,
                     ns_buf_t *body)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr || (size_t)(colon - addr) >= sizeof host)
        return NS_EINVAL;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    char *endp = NULL;
    long port = strtol(colon + 1, &endp, 10);
    if (endp == colon + 1 || *endp || port <= 0 || port > 65535)
        return NS_EINVAL;
    return ns_http_get(host, (int)port, path, timeout_ms, status, body);
}
