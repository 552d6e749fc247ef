/* peers.c - the peer checks of the fleet (peers.h): the thread, the
 * divergence rule, the log lines and the namesrv_peer_* metrics. */
#include "ops/peers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ns/clock.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/fleet.h"
#include "ns/config.h"
#include "ns/log.h"
#include "core/server.h"
#include "ops/kvsync.h"

#define MAX_PEERS NS_PEERS_MAX
#define LOGGED_DIFFS 5 /* differences named in the divergence log line */
#define MAX_ITEMS 1000 /* items a check looks at (the counts stop there) */

typedef struct {
    char *addr;
    /* the check thread's own */
    ns_client_t *c;
    int self;              /* -1 unknown, 0 no, 1 this server (skipped); set under mu */
    bool episode;          /* differences seen since the last agreement */
    int64_t first_diff_ms; /* monotonic, first check of the episode */
    int checks_differing;  /* in the episode */
    bool logged;           /* its divergence was logged */
    /* shared with the HTTP thread (under mu) */
    bool checked, up, in_sync, divergent;
    size_t diff[NS_FLEET_KINDS];
} peer_t;

struct ns_peers {
    ns_peers_opts_t o;
    atomic_int listen_port; /* 0 until listening: no check before */
    char *tls_ca, *tls_cert, *tls_key, *tls_key_password, *access_key, *secret_key;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, kick;
    peer_t *p[MAX_PEERS];
    size_t n;
    peer_t **retired; /* dropped from the list; freed by the thread between checks */
    size_t n_retired;
};

/* ---- the list ---- */

static int parse_entry(const char *a, char *err, size_t errlen)
{
    const char *colon = strrchr(a, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    bool host_ok = colon != NULL && colon != a;
    for (const char *c = a; host_ok && c < colon; c++)
        host_ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || strchr(".-_:[]", *c) != NULL;
    if (!host_ok || end == colon + 1 || *end || port <= 0 || port > 65535) {
        snprintf(err, errlen, "peers: '%s' is not host:port", a);
        return NS_EINVAL;
    }
    return NS_OK;
}

/* Splits list on ';' (and ',' or blanks, as namesrvAddr is written) into
 * heap copies; NS_EINVAL names the first bad entry. */
static int split(const char *list, char ***out, size_t *n, char *err, size_t errlen)
{
    char *copy = strdup(list ? list : "");
    char **v = calloc(MAX_PEERS, sizeof *v);
    int rc = copy && v ? NS_OK : NS_ENOMEM;
    *n = 0;
    for (char *save = NULL, *a = rc ? NULL : strtok_r(copy, ";, ", &save); a && rc == NS_OK;
         a = strtok_r(NULL, ";, ", &save)) {
        if (*n == MAX_PEERS) {
            snprintf(err, errlen, "peers: more than %d entries", MAX_PEERS);
            rc = NS_EINVAL;
        } else if ((rc = parse_entry(a, err, errlen)) == NS_OK) {
            bool dup = false;
            for (size_t i = 0; i < *n; i++)
                dup = dup || strcmp(v[i], a) == 0;
            if (!dup && (v[(*n)++] = strdup(a)) == NULL)
                rc = NS_ENOMEM;
        }
    }
    free(copy);
    if (rc != NS_OK) {
        for (size_t i = 0; v && i < *n; i++)
            free(v[i]);
        free(v);
        v = NULL;
        *n = 0;
    }
    *out = v;
    return rc;
}

int ns_peers_check_list(const char *list, char *err, size_t errlen)
{
    char **v = NULL;
    size_t n = 0;
    int rc = split(list, &v, &n, err, errlen);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return rc;
}

static void peer_free(peer_t *p)
{
    if (p == NULL)
        return;
    ns_client_close(p->c);
    free(p->addr);
    free(p);
}

int ns_peers_set_list(ns_peers_t *ps, const char *list, char *err, size_t errlen)
{
    char **v = NULL;
    size_t n = 0;
    peer_t *fresh[MAX_PEERS] = {NULL};
    int rc = split(list, &v, &n, err, errlen);
    if (rc != NS_OK)
        return rc;
    /* a new entry for every address (used only for those not kept), and
     * room to retire the current ones, before anything changes */
    for (size_t i = 0; i < n && rc == NS_OK; i++) {
        if ((fresh[i] = calloc(1, sizeof *fresh[i])) == NULL)
            rc = NS_ENOMEM;
        else {
            fresh[i]->addr = v[i];
            fresh[i]->self = -1;
            v[i] = NULL;
        }
    }
    pthread_mutex_lock(&ps->mu);
    peer_t **r = rc == NS_OK ? realloc(ps->retired, (ps->n_retired + ps->n + 1) * sizeof *r) : NULL;
    if (rc == NS_OK && r == NULL)
        rc = NS_ENOMEM;
    if (rc == NS_OK) {
        peer_t *next[MAX_PEERS] = {NULL};
        ps->retired = r;
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < ps->n && next[i] == NULL; j++)
                if (ps->p[j] && strcmp(ps->p[j]->addr, fresh[i]->addr) == 0) {
                    next[i] = ps->p[j]; /* kept, with its state and connection */
                    ps->p[j] = NULL;
                }
            if (next[i] == NULL) {
                next[i] = fresh[i];
                fresh[i] = NULL;
            }
        }
        /* the peers dropped may be in a check right now: the thread frees
         * them between checks */
        for (size_t j = 0; j < ps->n; j++)
            if (ps->p[j])
                ps->retired[ps->n_retired++] = ps->p[j];
        memcpy(ps->p, next, sizeof next);
        ps->n = n;
        ps->kick = true;
        pthread_cond_signal(&ps->cv);
    }
    pthread_mutex_unlock(&ps->mu);
    for (size_t i = 0; i < n; i++) {
        peer_free(fresh[i]);
        free(v[i]);
    }
    free(v);
    return rc;
}

/* ---- is a peer this server? ---- */

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
    return false;
}

/* True when addr's port is our listening port and its host one of this
 * machine's addresses (loopback, unspecified, or an interface's). */
static bool is_self(const char *addr, int listen_port)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    size_t hl = (size_t)(colon - addr);
    if (atoi(colon + 1) != listen_port || hl == 0 || hl >= sizeof host)
        return false;
    memcpy(host, addr, hl);
    host[hl] = 0;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    struct addrinfo hints = {0}, *res = NULL;
    struct ifaddrs *ifs = NULL;
    bool self = false;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return false;
    if (getifaddrs(&ifs) != 0)
        ifs = NULL;
    for (struct addrinfo *a = res; a && !self; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            uint32_t ip = ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr);
            self = (ip >> 24) == 127 || ip == 0;
        } else if (a->ai_family == AF_INET6) {
            const struct in6_addr *ip = &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
            self = IN6_IS_ADDR_LOOPBACK(ip) || IN6_IS_ADDR_UNSPECIFIED(ip);
        }
        for (struct ifaddrs *i = ifs; i && !self; i = i->ifa_next)
            self = i->ifa_addr && same_ip(i->ifa_addr, a->ai_addr);
    }
    freeifaddrs(ifs);
    freeaddrinfo(res);
    return self;
}

/* ---- one check ---- */

typedef struct {
    ns_peers_t *ps;
    peer_t *peer;
    char why[200];
} check_ctx_t;

/* Server 0 is this one (its store), server 1 the peer. */
static int fetch(void *ctx, size_t i, const ns_buf_t *req, ns_buf_t *resp, const char **why)
{
    check_ctx_t *c = ctx;
    ns_peers_t *ps = c->ps;
    peer_t *p = c->peer;
    int rc;
    if (i == 0) {
        ns_fleet_path_t paths[NS_FLEET_MAX_PATHS];
        size_t n = 0;
        char *names = NULL;
        ns_txn_t *t = NULL;
        rc = ns_fleet_paths_decode(req->data, req->len, paths, &n, &names);
        rc = rc ? rc : ns_txn_begin(ps->o.store, false, &t);
        rc = rc ? rc : ns_digest_reply(t, paths, n, resp);
        ns_txn_abort(t);
        free(names);
        if (rc != NS_OK)
            *why = "the local store could not be read";
        return rc;
    }
    const char *cwhy = NULL;
    if (p->c == NULL) {
        ns_client_tls_t tls = {ps->tls_ca, ps->tls_cert, ps->tls_key, ps->tls_key_password,
                               NULL,       false,        NULL,        0};
        rc = ns_client_connect_addr_tls(p->addr, (int)ps->o.timeout_ms, ps->o.tls ? &tls : NULL,
                                        &p->c, &cwhy);
        if (rc == NS_OK && ps->access_key && *ps->access_key)
            rc = ns_client_set_credentials(p->c, ps->access_key,
                                           ps->secret_key ? ps->secret_key : "");
        if (rc != NS_OK) {
            snprintf(c->why, sizeof c->why, "%s%s%s", ns_strerror(rc), cwhy && *cwhy ? ": " : "",
                     cwhy ? cwhy : "");
            goto fail;
        }
    }
    rc = ns_fleet_call(p->c, req, (int)ps->o.timeout_ms, resp, c->why, sizeof c->why);
    if (rc == NS_OK)
        return NS_OK;
fail:
    ns_client_close(p->c); /* a fresh connection next time */
    p->c = NULL;
    *why = c->why;
    return rc;
}

/* "broker DefaultCluster/broker-a addr 10.0.0.1:10911 (only here)", ... */
static void describe(const ns_fleet_report_t *r, ns_buf_t *out)
{
    for (size_t i = 0; i < r->n && i < LOGGED_DIFFS; i++) {
        const ns_fleet_diff_t *d = &r->d[i];
        ns_buf_printf(out, "%s%s %s %s (%s)", i ? "; " : "", ns_fleet_kind_name(d->kind), d->item,
                      d->leaf,
                      d->values[1] == NULL   ? "only here"
                      : d->values[0] == NULL ? "only there"
                                             : "differs");
    }
    if (r->n > LOGGED_DIFFS)
        ns_buf_printf(out, "; and %zu more", r->n - LOGGED_DIFFS);
}

/* The divergence rule of peers.h, applied to one check's outcome. */
static void judge(ns_peers_t *ps, peer_t *p, const ns_fleet_report_t *r, int64_t now_ms)
{
    bool reached = r->reached[1];
    bool agree = reached && ns_fleet_agree(r);
    size_t items = ns_fleet_items(r);
    if (reached && !agree) {
        if (!p->episode) {
            p->episode = true;
            p->first_diff_ms = now_ms;
            p->checks_differing = 0;
            p->logged = false;
        }
        p->checks_differing++;
    }
    bool divergent =
        p->episode && p->checks_differing >= 2 && now_ms - p->first_diff_ms >= ps->o.divergence_ms;
    if (divergent && !p->logged) {
        ns_buf_t what = NS_BUF_INIT;
        describe(r, &what);
        NS_LOG_WARN("fleet: peer %s is divergent: %zu item(s) differ for %lld ms over %d "
                    "checks (broker %zu, topic %zu, kv %zu%s; %zu identity conflict(s)): %.*s",
                    p->addr, items, (long long)(now_ms - p->first_diff_ms), p->checks_differing,
                    r->items[0], r->items[1], r->items[2], r->truncated ? ", and more" : "",
                    r->items[NS_FLEET_CONFLICT], (int)what.len,
                    what.data ? (const char *)what.data : "");
        ns_buf_free(&what);
        p->logged = true;
    }
    if (agree && p->episode) {
        if (p->logged)
            NS_LOG_INFO("fleet: peer %s agrees again (after %lld ms of differences)", p->addr,
                        (long long)(now_ms - p->first_diff_ms));
        p->episode = p->logged = false;
        divergent = false;
    }
    if (reached && !p->up && p->checked)
        NS_LOG_INFO("fleet: peer %s answers again", p->addr);
    else if (!reached && (p->up || !p->checked))
        NS_LOG_WARN("fleet: peer %s cannot be compared: %s", p->addr,
                    r->error[1] ? r->error[1] : "unreachable");
    pthread_mutex_lock(&ps->mu);
    p->checked = true;
    p->up = reached;
    p->in_sync = agree;
    if (reached) {
        p->divergent = divergent;
        memcpy(p->diff, r->items, sizeof p->diff);
    }
    pthread_mutex_unlock(&ps->mu);
}

static void check_one(ns_peers_t *ps, peer_t *p)
{
    check_ctx_t c = {ps, p, ""};
    ns_fleet_report_t r;
    int port = atomic_load(&ps->listen_port);
    if (port == 0)
        return; /* not listening yet */
    if (p->self < 0) {
        int self = is_self(p->addr, port);
        pthread_mutex_lock(&ps->mu); /* render reads it */
        p->self = self;
        pthread_mutex_unlock(&ps->mu);
        if (self)
            NS_LOG_INFO("fleet: peer %s is this server; skipped", p->addr);
    }
    if (p->self)
        return;
    if (ns_fleet_diff(fetch, &c, 2, MAX_ITEMS, &r) != NS_OK)
        return; /* out of memory: the next check tries again */
    if (!r.reached[0])
        NS_LOG_ERROR("fleet: cannot read this server's digest: %s", r.error[0] ? r.error[0] : "?");
    else
        judge(ps, p, &r, ns_clock_mono_ms());
    if (r.reached[0] && r.reached[1] && p->c && ps->o.diffed &&
        ps->o.diffed(ps->o.diffed_ctx, p->addr, p->c, &r) != 0) {
        ns_client_close(p->c);
        p->c = NULL;
    }
    ns_fleet_report_free(&r);
}

static void *peers_main(void *arg)
{
    ns_peers_t *ps = arg;
    pthread_mutex_lock(&ps->mu);
    while (!ps->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += ps->o.interval_ms / 1000;
        until.tv_nsec += (ps->o.interval_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        while (!ps->stop && !ps->kick &&
               pthread_cond_timedwait(&ps->cv, &ps->mu, &until) != ETIMEDOUT)
            ;
        ps->kick = false;
        for (size_t i = 0; i < ps->n_retired; i++)
            peer_free(ps->retired[i]);
        ps->n_retired = 0; /* the array stays for the next list change */
        /* each peer is checked without mu: a list change meanwhile retires
         * the peers it drops instead of freeing them */
        for (size_t i = 0; i < ps->n && !ps->stop; i++) {
            peer_t *p = ps->p[i];
            pthread_mutex_unlock(&ps->mu);
            check_one(ps, p);
            pthread_mutex_lock(&ps->mu);
        }
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

/* ---- start, stop, render ---- */

static char *dup_opt(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

int ns_peers_start(const ns_peers_opts_t *o, const char *list, ns_peers_t **out, char *err,
                   size_t errlen)
{
    ns_peers_t *ps = calloc(1, sizeof *ps);
    pthread_condattr_t ca;
    *out = NULL;
    if (ps == NULL)
        return NS_ENOMEM;
    ps->o = *o;
    ps->tls_ca = dup_opt(o->tls_ca);
    ps->tls_cert = dup_opt(o->tls_cert);
    ps->tls_key = dup_opt(o->tls_key);
    ps->tls_key_password = dup_opt(o->tls_key_password);
    ps->access_key = dup_opt(o->access_key);
    ps->secret_key = dup_opt(o->secret_key);
    pthread_mutex_init(&ps->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ps->cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = ns_peers_set_list(ps, list, err, errlen);
    ps->kick = false; /* the first check after one interval: the server has just started */
    if (rc == NS_OK && pthread_create(&ps->th, NULL, peers_main, ps) != 0) {
        snprintf(err, errlen, "peers: cannot start the check thread");
        rc = NS_ENOMEM;
    }
    ps->started = rc == NS_OK;
    if (rc != NS_OK) {
        ns_peers_stop(ps);
        return rc;
    }
    *out = ps;
    return NS_OK;
}

void ns_peers_stop(ns_peers_t *ps)
{
    if (ps == NULL)
        return;
    if (ps->started) {
        pthread_mutex_lock(&ps->mu);
        ps->stop = true;
        pthread_cond_signal(&ps->cv);
        pthread_mutex_unlock(&ps->mu);
        pthread_join(ps->th, NULL);
    }
    for (size_t i = 0; i < ps->n; i++)
        peer_free(ps->p[i]);
    for (size_t i = 0; i < ps->n_retired; i++)
        peer_free(ps->retired[i]);
    free(ps->retired);
    pthread_cond_destroy(&ps->cv);
    pthread_mutex_destroy(&ps->mu);
    free(ps->tls_ca);
    free(ps->tls_cert);
    free(ps->tls_key);
    free(ps->tls_key_password);
    free(ps->access_key);
    free(ps->secret_key);
    free(ps);
}

void ns_peers_set_listen_port(ns_peers_t *ps, int port)
{
    if (ps)
        atomic_store(&ps->listen_port, port);
}

size_t ns_peers_view(ns_peers_t *ps, ns_peer_view_t *out, size_t max)
{
    size_t n = 0;
    if (ps == NULL)
        return 0;
    pthread_mutex_lock(&ps->mu);
    for (size_t i = 0; i < ps->n && n < max; i++) {
        const peer_t *p = ps->p[i];
        size_t len = strlen(p->addr);
        if (len >= NS_PEER_ADDR_MAX)
            continue;
        memcpy(out[n].addr, p->addr, len + 1);
        out[n].self = p->self;
        out[n].checked = p->checked;
        out[n].up = p->up;
        n++;
    }
    pthread_mutex_unlock(&ps->mu);
    return n;
}

static void family(ns_buf_t *out, const char *name, const char *help)
{
    ns_buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void ns_peers_render(ns_peers_t *ps, ns_buf_t *out)
{
    if (ps == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    static const char *const names[] = {"namesrv_peer_up", "namesrv_peer_in_sync",
                                        "namesrv_peer_divergent"};
    static const char *const helps[] = {
        "1 when the peer answered its digest at the last check",
        "1 when the peer's digest equalled this server's at the last check",
        "1 while the peer's digest has differed for two checks and peerDivergenceMillis"};
    for (int f = 0; f < 3; f++) {
        family(out, names[f], helps[f]);
        for (size_t i = 0; i < ps->n; i++) {
            const peer_t *p = ps->p[i];
            if (p->self == 1 || !p->checked)
                continue;
            bool v = f == 0 ? p->up : f == 1 ? p->in_sync : p->divergent;
            ns_buf_printf(out, "%s{peer=\"%s\"} %d\n", names[f], p->addr, v ? 1 : 0);
        }
    }
    family(out, "namesrv_peer_differences",
           "items (broker groups, topics, KV entries) that differ from the peer at the last "
           "check; kind conflict: broker identity conflicts between the two");
    for (size_t i = 0; i < ps->n; i++) {
        const peer_t *p = ps->p[i];
        for (int k = 0; k < NS_FLEET_KINDS && p->self != 1 && p->checked; k++)
            ns_buf_printf(out, "namesrv_peer_differences{peer=\"%s\",kind=\"%s\"} %zu\n", p->addr,
                          ns_fleet_kind_name((ns_fleet_kind_t)k), p->diff[k]);
    }
    pthread_mutex_unlock(&ps->mu);
}

/* ---- the server's side ---- */

/* The server whose `peers` the apply hook changes: one per process. */
static ns_peers_t *hook_peers;

static void peers_applied(const ns_config_t *cfg)
{
    char err[256];
    if (hook_peers && ns_peers_set_list(hook_peers, cfg->peers, err, sizeof err) != NS_OK)
        NS_LOG_WARN("fleet: %s; the peers stay as they were", err);
    else if (hook_peers)
        NS_LOG_INFO("fleet: peers are now '%s'", cfg->peers);
}

int ns_peers_server_start(ns_server_t *srv, char *err, size_t errlen)
{
    const ns_config_t *cfg = srv->loop.cfg;
    ns_peers_opts_t o = {srv->loop.store,
                         cfg->peer_check_interval_ms,
                         cfg->peer_divergence_ms,
                         cfg->peer_timeout_ms,
                         cfg->peer_tls,
                         cfg->tls_client_trust_cert_path,
                         cfg->tls_client_cert_path,
                         cfg->tls_client_key_path,
                         cfg->tls_client_key_password,
                         cfg->peer_access_key,
                         cfg->peer_secret_key,
                         ns_kvsync_pull,
                         srv->kvsync};
    int rc = ns_peers_start(&o, cfg->peers, &srv->peers, err, errlen);
    if (rc != NS_OK)
        return rc;
    hook_peers = srv->peers;
    ns_config_set_hook("peers", peers_applied);
    if (cfg->peers && *cfg->peers)
        NS_LOG_INFO("fleet: comparing with peers '%s' every %lld ms", cfg->peers,
                    (long long)cfg->peer_check_interval_ms);
    return NS_OK;
}

void ns_peers_server_stop(ns_server_t *srv)
{
    if (srv->peers == NULL)
        return;
    ns_config_set_hook("peers", NULL);
    hook_peers = NULL;
    ns_peers_stop(srv->peers);
    srv->peers = NULL;
}
