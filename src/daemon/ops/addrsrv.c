/* addrsrv.c - the address server on the HTTP listener (addrsrv.h): which
 * path it answers, which address is this server's, and the body. */
#include "ops/addrsrv.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ns/err.h"
#include "ns/log.h"

bool ns_addrsrv_path(const char *url)
{
    size_t pl = strlen(NS_ADDRSRV_PREFIX);
    if (url == NULL || strncmp(url, NS_ADDRSRV_PREFIX, pl) != 0)
        return false;
    const char *seg = url + pl;
    return *seg != 0 && strchr(seg, '/') == NULL;
}

/* host (brackets of [v6] removed) and port of "host:port" into host
 * (hostlen bytes); false when it is not that shape. */
static bool split_addr(const char *addr, char *host, size_t hostlen, long *port)
{
    const char *colon = strrchr(addr, ':');
    char *end = NULL;
    if (colon == NULL || colon == addr)
        return false;
    *port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || *port <= 0 || *port > 65535)
        return false;
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= hostlen)
        return false;
    memcpy(host, h, hl);
    host[hl] = 0;
    return true;
}

/* A literal address every server of this machine answers on. */
static bool local_literal(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) {
        uint32_t ip = ntohl(a4.s_addr);
        return (ip >> 24) == 127 || ip == 0;
    }
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6);
    return false;
}

static bool is_wildcard(const char *bind)
{
    return bind == NULL || *bind == 0 || strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0 ||
           strcmp(bind, "[::]") == 0;
}

/* The first IPv4 address of an interface that is up and not loopback. */
static bool first_interface_ip(char *out, size_t outlen)
{
    struct ifaddrs *ifs = NULL;
    bool found = false;
    if (getifaddrs(&ifs) != 0)
        return false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
            (i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0)
            continue;
        found = inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                          (socklen_t)outlen) != NULL;
    }
    freeifaddrs(ifs);
    return found;
}

int ns_addrsrv_self_pick(const char *advertised, const char *bind, int port, char *out,
                         size_t outlen)
{
    char host[NS_ADDRSRV_ADDR_MAX] = "127.0.0.1";
    long p = 0;
    int n;
    if (advertised && *advertised) {
        if (!split_addr(advertised, host, sizeof host, &p))
            return NS_EINVAL;
        n = snprintf(out, outlen, "%s", advertised);
    } else {
        if (!is_wildcard(bind))
            snprintf(host, sizeof host, "%s", bind);
        else if (!first_interface_ip(host, sizeof host))
            snprintf(host, sizeof host, "127.0.0.1");
        bool v6 = strchr(host, ':') != NULL && host[0] != '[';
        n = snprintf(out, outlen, v6 ? "[%s]:%d" : "%s:%d", host, port);
    }
    return n < 0 || (size_t)n >= outlen ? NS_EINVAL : NS_OK;
}

/* Is entry this server, before (or without) the checks' word on it? */
static bool names_self(const char *entry, const char *self, int port)
{
    char host[NS_ADDRSRV_ADDR_MAX], self_host[NS_ADDRSRV_ADDR_MAX];
    long p = 0, sp = 0;
    if (strcmp(entry, self) == 0)
        return true;
    if (!split_addr(entry, host, sizeof host, &p) || p != port)
        return false;
    if (local_literal(host))
        return true;
    return split_addr(self, self_host, sizeof self_host, &sp) && strcmp(host, self_host) == 0;
}

int ns_addrsrv_body(const char *self, int port, const ns_peer_view_t *v, size_t n, ns_buf_t *out)
{
    bool self_listed = false;
    int rc = NS_OK;
    for (size_t i = 0; i < n && !self_listed; i++)
        self_listed = v[i].self == 1 || (v[i].self < 0 && names_self(v[i].addr, self, port));
    size_t start = out->len;
    if (!self_listed)
        rc = ns_buf_append_str(out, self);
    for (size_t i = 0; i < n && rc == NS_OK; i++) {
        bool is_self = v[i].self == 1 || (v[i].self < 0 && names_self(v[i].addr, self, port));
        if (!is_self && v[i].checked && !v[i].up)
            continue; /* down at the last check */
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcmp(v[j].addr, v[i].addr) == 0;
        if (dup || (!self_listed && strcmp(v[i].addr, self) == 0))
            continue;
        if (out->len > start)
            rc = ns_buf_append_str(out, ";");
        rc = rc ? rc : ns_buf_append_str(out, v[i].addr);
    }
    return rc;
}

void ns_addrsrv_init(ns_addrsrv_t *a)
{
    memset(a, 0, sizeof *a);
    atomic_init(&a->requests, 0);
    pthread_mutex_init(&a->mu, NULL);
}

void ns_addrsrv_close(ns_addrsrv_t *a)
{
    for (size_t i = 0; i < a->n_logged; i++)
        free(a->logged[i]);
    a->n_logged = 0;
    pthread_mutex_destroy(&a->mu);
}

int ns_addrsrv_set_self(ns_addrsrv_t *a, const char *advertised, const char *bind, int port)
{
    int rc = ns_addrsrv_self_pick(advertised, bind, port, a->self, sizeof a->self);
    if (rc != NS_OK) {
        NS_LOG_WARN("address server: advertisedAddress '%s' is not host:port; answering with "
                    "bindAddress and listenPort",
                    advertised ? advertised : "");
        rc = ns_addrsrv_self_pick(NULL, bind, port, a->self, sizeof a->self);
    }
    a->port = port;
    if (rc == NS_OK)
        NS_LOG_INFO("address server: this server is %s in the lists of /rocketmq/<subgroup>",
                    a->self);
    return rc;
}

/* INFO the first time a URL is asked (up to NS_ADDRSRV_LOGGED of them),
 * so the log names what the brokers and clients poll; DEBUG after. */
static void note_url(ns_addrsrv_t *a, const char *url, const char *from, const char *body)
{
    bool first = false;
    pthread_mutex_lock(&a->mu);
    bool seen = false;
    for (size_t i = 0; i < a->n_logged && !seen; i++)
        seen = strcmp(a->logged[i], url) == 0;
    if (!seen && a->n_logged < NS_ADDRSRV_LOGGED && (a->logged[a->n_logged] = strdup(url)))
        first = true, a->n_logged++;
    pthread_mutex_unlock(&a->mu);
    if (first)
        NS_LOG_INFO("address server: GET %s from %s, answered '%s'", url, from, body);
    else
        NS_LOG_DEBUG("address server: GET %s from %s, answered '%s'", url, from, body);
}

unsigned ns_addrsrv_answer(ns_addrsrv_t *a, bool listening, ns_peers_t *peers, const char *url,
                           const char *from, ns_buf_t *out)
{
    ns_peer_view_t v[NS_PEERS_MAX];
    if (!listening || a->self[0] == 0) {
        ns_buf_append_str(out, "not listening yet\n");
        return 503;
    }
    size_t n = ns_peers_view(peers, v, NS_PEERS_MAX);
    size_t start = out->len;
    if (ns_addrsrv_body(a->self, a->port, v, n, out) != NS_OK) {
        ns_buf_reset(out);
        ns_buf_append_str(out, "out of memory\n");
        return 500;
    }
    atomic_fetch_add_explicit(&a->requests, 1, memory_order_relaxed);
    note_url(a, url, from, (const char *)out->data + start); /* the buffer keeps a NUL */
    return 200;
}

void ns_addrsrv_render(ns_addrsrv_t *a, ns_buf_t *out)
{
    ns_buf_printf(out,
                  "# HELP namesrv_address_server_requests_total Address server polls (GET "
                  "/rocketmq/<subgroup>) answered with the fleet's list.\n"
                  "# TYPE namesrv_address_server_requests_total counter\n"
                  "namesrv_address_server_requests_total %llu\n",
                  (unsigned long long)atomic_load_explicit(&a->requests, memory_order_relaxed));
}
