/* budget.c - server-wide memory budgets and rate-limited refusal logs
 * (budget.h).
 *
 * Usage sums are atomics updated by deltas: each connection remembers what
 * it has accounted (ns_conn_budget_t), so the sums are exact whatever
 * thread's loop the connection lives on. The refusal log keeps, per
 * (peer host, reason) hash slot, when it last logged; a collision only makes
 * a line come early, never lost from the counters. */
#include "net/budget.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ns/hash.h"
#include "ns/log.h"

static struct {
    uint64_t max_per_address; /* 0: no cap */
    uint64_t max_connections, max_unfinished, max_unsent, max_writer_bytes, max_writer_ops;
    uint64_t max_handshakes, max_tls;
    uint64_t connections, unfinished, unsent, writer_bytes, writer_ops, handshakes, tls;
    uint64_t refused[NS_REFUSE_COUNT];
} B = {0, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
       0, 0,          0,          0,          0,          0,          0,          {0}};

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_add_fetch(&(x), (v), __ATOMIC_RELAXED)
#define SUB(x, v) __atomic_sub_fetch(&(x), (v), __ATOMIC_RELAXED)

static const char *const refusal_names[NS_REFUSE_COUNT] = {"name",
                                                           "connections",
                                                           "connections_per_address",
                                                           "unfinished_frames",
                                                           "unsent_replies",
                                                           "writer_queue",
                                                           "handshakes",
                                                           "tls_sessions"};

void ns_budget_init(const ns_config_t *cfg)
{
    B.max_per_address = (uint64_t)cfg->max_connections_per_address;
    B.max_connections = (uint64_t)cfg->max_connections;
    B.max_unfinished = (uint64_t)cfg->max_unfinished_frame_bytes;
    B.max_unsent = (uint64_t)cfg->max_unsent_reply_bytes;
    B.max_writer_bytes = (uint64_t)cfg->writer_queue_max_bytes;
    B.max_writer_ops = (uint64_t)cfg->writer_queue_max_ops;
    B.max_handshakes = (uint64_t)cfg->max_pending_handshakes;
    B.max_tls = (uint64_t)cfg->max_tls_sessions;
    __atomic_store_n(&B.tls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.handshakes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.connections, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.unfinished, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.unsent, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.writer_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&B.writer_ops, 0, __ATOMIC_RELAXED);
}

void ns_budget_snapshot(ns_budget_stats_t *o)
{
    o->max_connections = B.max_connections;
    o->max_unfinished_bytes = B.max_unfinished;
    o->max_unsent_bytes = B.max_unsent;
    o->max_writer_bytes = B.max_writer_bytes;
    o->max_writer_ops = B.max_writer_ops;
    o->max_handshakes = B.max_handshakes;
    o->handshakes = LD(B.handshakes);
    o->max_tls = B.max_tls;
    o->tls = LD(B.tls);
    o->connections = LD(B.connections);
    o->unfinished_bytes = LD(B.unfinished);
    o->unsent_bytes = LD(B.unsent);
    o->writer_bytes = LD(B.writer_bytes);
    o->writer_ops = LD(B.writer_ops);
    for (int i = 0; i < NS_REFUSE_COUNT; i++)
        o->refused[i] = LD(B.refused[i]);
}

const char *ns_refusal_name(ns_refuse_t why)
{
    return (unsigned)why < NS_REFUSE_COUNT ? refusal_names[why] : "?";
}

/* ---- rate-limited refusal log ---- */

#define SLOTS 256

static struct {
    char host[64];
    int why;
    const char *fmt; /* the line's format (a literal): which event it is */
    uint64_t last_ms;
    uint64_t suppressed;
} slots[SLOTS];
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* True when this (host, why, fmt) should be logged now; *suppressed = how
 * many were not logged since the last line. fmt tells two events of one
 * reason apart (a connection that stops being read, a request refused for
 * it): one must not silence the other. */
static bool should_log(const char *peer, ns_refuse_t why, const char *fmt, uint64_t *suppressed)
{
    char host[64];
    snprintf(host, sizeof host, "%s", peer);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = 0; /* the address, not the port: one line per peer */
    uint64_t h = (1469598103934665603ull ^ (uint64_t)why) * 1099511628211ull ^ (uintptr_t)fmt;
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t now = mono_ms();
    bool log = false;
    pthread_mutex_lock(&slots_mu);
    size_t i = (size_t)(h % SLOTS);
    bool same = slots[i].why == (int)why && slots[i].fmt == fmt && strcmp(slots[i].host, host) == 0;
    if (!same || slots[i].last_ms == 0 || now - slots[i].last_ms >= NS_REFUSAL_LOG_INTERVAL_MS) {
        *suppressed = same ? slots[i].suppressed : 0;
        snprintf(slots[i].host, sizeof slots[i].host, "%s", host);
        slots[i].why = (int)why;
        slots[i].fmt = fmt;
        slots[i].last_ms = now ? now : 1;
        slots[i].suppressed = 0;
        log = true;
    } else {
        slots[i].suppressed++;
    }
    pthread_mutex_unlock(&slots_mu);
    return log;
}

__attribute__((format(printf, 3, 0))) static void vrefusal(const char *peer, ns_refuse_t why,
                                                           const char *fmt, va_list ap)
{
    uint64_t suppressed = 0;
    if ((unsigned)why < NS_REFUSE_COUNT)
        ADD(B.refused[why], 1);
    if (!should_log(peer, why, fmt, &suppressed))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (suppressed)
        NS_LOG_WARN("conn %s: %s (and %llu more %s refusal(s) from this peer not logged)", peer,
                    msg, (unsigned long long)suppressed, ns_refusal_name(why));
    else
        NS_LOG_WARN("conn %s: %s", peer, msg);
}

void ns_refusal(const char *peer, ns_refuse_t why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrefusal(peer, why, fmt, ap);
    va_end(ap);
}

/* ---- connections per client address ----
 * One source could take every maxConnections slot. The open connections
 * of each address are counted in a chained table under a mutex (accepts
 * happen on every loop; one lock per accept and close), keyed by a hash
 * with the process's random key so addresses cannot be chosen to share a
 * chain; an entry goes when its count does. */
#define ADDR_BUCKETS 1024

typedef struct addr_ent {
    struct addr_ent *next;
    uint32_t n;
    uint8_t len;
    uint8_t key[16];
} addr_ent_t;

static pthread_mutex_t addr_mu = PTHREAD_MUTEX_INITIALIZER;
static addr_ent_t *addr_tab[ADDR_BUCKETS];

/* The address bytes of sa into key: their count, 0 for another family. */
static uint8_t addr_key(const struct sockaddr *sa, uint8_t key[16])
{
    if (sa && sa->sa_family == AF_INET) {
        memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa == NULL || sa->sa_family != AF_INET6)
        return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) {
        memcpy(key, a->s6_addr + 12, 4);
        return 4;
    }
    memcpy(key, a->s6_addr, 16);
    return 16;
}

/* Under addr_mu: the entry of b's address, its link's place in *at. */
static addr_ent_t *addr_find(const ns_conn_budget_t *b, addr_ent_t ***at)
{
    addr_ent_t **p = &addr_tab[ns_hash(b->addr, b->addr_len) % ADDR_BUCKETS];
    while (*p && ((*p)->len != b->addr_len || memcmp((*p)->key, b->addr, b->addr_len) != 0))
        p = &(*p)->next;
    *at = p;
    return *p;
}

/* Counts b against its address: false when the address is at its cap. */
static bool addr_take(ns_conn_budget_t *b, const struct sockaddr *peer)
{
    b->addr_len = addr_key(peer, b->addr);
    if (b->addr_len == 0 || B.max_per_address == 0)
        return true;
    addr_ent_t **at, *e;
    bool ok = true;
    pthread_mutex_lock(&addr_mu);
    if ((e = addr_find(b, &at)) == NULL && (e = calloc(1, sizeof *e)) != NULL) {
        e->len = b->addr_len;
        memcpy(e->key, b->addr, b->addr_len);
        *at = e;
    }
    if (e && e->n >= B.max_per_address)
        ok = false;
    else if (e)
        b->addr_counted = ++e->n > 0; /* (no memory for an entry: not counted) */
    pthread_mutex_unlock(&addr_mu);
    return ok;
}

static void addr_put(ns_conn_budget_t *b)
{
    if (!b->addr_counted)
        return;
    b->addr_counted = false;
    addr_ent_t **at, *e;
    pthread_mutex_lock(&addr_mu);
    if ((e = addr_find(b, &at)) != NULL && --e->n == 0) {
        *at = e->next;
        free(e);
    }
    pthread_mutex_unlock(&addr_mu);
}

/* ---- connections and their buffers ---- */

bool ns_budget_conn_open(ns_conn_budget_t *b, const struct sockaddr *peer, ns_refuse_t *why)
{
    if (ADD(B.connections, 1) > B.max_connections) {
        SUB(B.connections, 1);
        *why = NS_REFUSE_CONNECTIONS;
        return false;
    }
    if (!addr_take(b, peer)) {
        SUB(B.connections, 1);
        *why = NS_REFUSE_PER_ADDRESS;
        return false;
    }
    b->counted = true;
    return true;
}

void ns_budget_conn_close(ns_conn_budget_t *b)
{
    ns_budget_account(b, 0, 0);
    if (b->counted)
        SUB(B.connections, 1);
    b->counted = false;
    ns_budget_handshake(b, false);
    if (b->tls_counted)
        SUB(B.tls, 1);
    b->tls_counted = false;
    addr_put(b);
}

bool ns_budget_tls_session(ns_conn_budget_t *b)
{
    if (b->tls_counted)
        return true;
    if (ADD(B.tls, 1) > B.max_tls) {
        SUB(B.tls, 1);
        return false;
    }
    b->tls_counted = true;
    return true;
}

bool ns_budget_handshake(ns_conn_budget_t *b, bool pending)
{
    if (pending == b->hs_counted)
        return true;
    if (!pending) {
        SUB(B.handshakes, 1);
        b->hs_counted = false;
        return true;
    }
    if (ADD(B.handshakes, 1) > B.max_handshakes) {
        SUB(B.handshakes, 1);
        return false;
    }
    b->hs_counted = true;
    return true;
}

/* Moves *sum by the change of *mine to now; true when the sum grew past max. */
static bool adjust(uint64_t *sum, size_t *mine, size_t now, uint64_t max)
{
    bool over = false;
    if (now > *mine)
        over = ADD(*sum, now - *mine) > max;
    else if (now < *mine)
        SUB(*sum, *mine - now);
    *mine = now;
    return over;
}

bool ns_budget_account(ns_conn_budget_t *b, size_t rbuf_bytes, size_t unsent_bytes)
{
    if (b->released)
        rbuf_bytes = unsent_bytes = 0;
    bool over = adjust(&B.unfinished, &b->rbuf, rbuf_bytes, B.max_unfinished);
    return adjust(&B.unsent, &b->unsent, unsent_bytes, B.max_unsent) || over;
}

bool ns_budget_unsent_pressed(void)
{
    return LD(B.unsent) >= B.max_unsent / 2;
}

bool ns_budget_over(ns_budget_sum_t which, uint64_t *max)
{
    bool frames = which == NS_BUDGET_UNFINISHED;
    uint64_t limit = frames ? B.max_unfinished : B.max_unsent;
    if (max)
        *max = limit;
    uint64_t *sum = frames ? &B.unfinished : &B.unsent;
    return LD(*sum) > limit;
}

void ns_budget_release(ns_conn_budget_t *b)
{
    b->released = true;
    ns_budget_account(b, 0, 0);
}

/* ---- writer queue ---- */

void ns_budget_writer_add(size_t bytes)
{
    ADD(B.writer_bytes, bytes);
    ADD(B.writer_ops, 1);
}

void ns_budget_writer_done(size_t bytes)
{
    SUB(B.writer_bytes, bytes);
    SUB(B.writer_ops, 1);
}

bool ns_budget_writer_full(void)
{
    return LD(B.writer_bytes) >= B.max_writer_bytes || LD(B.writer_ops) >= B.max_writer_ops;
}
