/* load.c - the client engine (nsbench.h, load.h): load_run() sets up a
 * run (checks, topic names, request templates, connections), runs the loop
 * and frees everything afterwards. The phases are in load_phase.c, the
 * connections in load_conn.c, the output in load_out.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <uv.h>

#include "load.h"
#include "ns/err.h"

#define OPAQUE_SENTINEL 1234567890
#define KEEPALIVE_MS 20000

/* ---- templates ---- */

static void tmpl_free(tmpl_t *t)
{
    ns_buf_free(&t->pre);
    ns_buf_free(&t->post);
    ns_buf_free(&t->body);
}

/* frame was encoded with opaque OPAQUE_SENTINEL. */
static int tmpl_from_frame(tmpl_t *t, const ns_buf_t *frame)
{
    static const char key[] = "\"opaque\":1234567890";
    memset(t, 0, sizeof *t);
    if (frame->len < 8)
        return NS_EINVAL;
    uint32_t hlen = ns_be32_read(frame->data + 4) & 0xFFFFFFu;
    const uint8_t *h = frame->data + 8;
    const uint8_t *p = memmem(h, hlen, key, sizeof key - 1);
    if (p == NULL)
        return NS_EINVAL;
    size_t digits_at = (size_t)(p - h) + 9;
    int rc = ns_buf_append(&t->pre, h, digits_at);
    rc = rc ? rc : ns_buf_append(&t->post, h + digits_at + 10, hlen - digits_at - 10);
    rc = rc ? rc : ns_buf_append(&t->body, h + hlen, frame->len - 8 - hlen);
    return rc;
}

int tmpl_emit(ns_buf_t *out, const tmpl_t *t, int32_t opaque)
{
    char num[16];
    int nl = snprintf(num, sizeof num, "%d", (int)opaque);
    size_t hlen = t->pre.len + (size_t)nl + t->post.len;
    if (ns_buf_reserve(out, 8 + hlen + t->body.len + 1) != NS_OK)
        return NS_ENOMEM;
    uint8_t *p = out->data + out->len;
    ns_be32_write(p, (uint32_t)(4 + hlen + t->body.len));
    ns_be32_write(p + 4, (uint32_t)hlen);
    p += 8;
    memcpy(p, t->pre.data, t->pre.len);
    p += t->pre.len;
    memcpy(p, num, (size_t)nl);
    p += nl;
    if (t->post.len)
        memcpy(p, t->post.data, t->post.len);
    p += t->post.len;
    if (t->body.len)
        memcpy(p, t->body.data, t->body.len);
    out->len += 8 + hlen + t->body.len;
    out->data[out->len] = 0;
    return NS_OK;
}

/* ---- set-up of the run ---- */

static int build_templates(bench_t *b)
{
    const nsb_opts_t *o = b->o;
    uint32_t **lists = NULL, *counts = NULL;
    ns_buf_t body = NS_BUF_INIT, frame = NS_BUF_INIT;
    uint32_t *rt = NULL;
    int rc = NS_OK;
    uint32_t nb = b->n_brokers;
    b->setup_t = calloc(nb + 1, sizeof *b->setup_t);
    b->hb_t = calloc(nb + 1, sizeof *b->hb_t);
    b->reg_t = calloc((size_t)b->n_regs * b->n_versions + 1, sizeof *b->reg_t);
    b->reg_hb_t = calloc(b->n_regs + 1, sizeof *b->reg_hb_t);
    if (!b->setup_t || !b->hb_t || !b->reg_t || !b->reg_hb_t)
        return NS_ENOMEM;
    if (nb > 0 && (rc = topo_broker_topics(o->setup_topics, nb, &lists, &counts)) != NS_OK)
        return rc;
    for (uint32_t i = 0; i < nb && rc == NS_OK; i++) {
        ns_dataversion_t dv = {1, 0, 1700000000000ll + i};
        ns_buf_reset(&body);
        ns_buf_reset(&frame);
        rc = o->no_setup ? NS_OK : topo_regbody(&body, lists[i], counts[i], 4, &dv);
        rc = rc ? rc : topo_register_frame(&frame, i, false, &body, OPAQUE_SENTINEL);
        rc = rc ? rc : tmpl_from_frame(&b->setup_t[i], &frame);
        ns_buf_reset(&frame);
        rc = rc ? rc : topo_heartbeat_frame(&frame, i, false, OPAQUE_SENTINEL, false);
        rc = rc ? rc : tmpl_from_frame(&b->hb_t[i], &frame);
    }
    if (o->reg_topics > 0 && (rt = malloc(o->reg_topics * sizeof *rt)) == NULL)
        rc = NS_ENOMEM;
    for (uint32_t r = 0; r < b->n_regs && rc == NS_OK; r++) {
        for (uint32_t k = 0; k < o->reg_topics; k++)
            rt[k] = r * o->reg_topics + k;
        /* growing DataVersions; with --reg-mutate every other one flips the
         * queue counts, so that each new version really changes every topic */
        for (uint32_t v = 0; v < b->n_versions && rc == NS_OK; v++) {
            ns_dataversion_t dv = {1 + (int64_t)v, 0, 1700000000000ll + 1000000ll * r + v};
            int32_t qn = (v % 2 == 1 && o->reg_mutate) ? 8 : 4;
            ns_buf_reset(&body);
            ns_buf_reset(&frame);
            rc = topo_regbody(&body, rt, o->reg_topics, qn, &dv);
            rc = rc ? rc : topo_register_frame(&frame, r, true, &body, OPAQUE_SENTINEL);
            rc = rc ? rc : tmpl_from_frame(&b->reg_t[(size_t)r * b->n_versions + v], &frame);
        }
        ns_buf_reset(&frame);
        rc = rc ? rc : topo_heartbeat_frame(&frame, r, true, OPAQUE_SENTINEL, false);
        rc = rc ? rc : tmpl_from_frame(&b->reg_hb_t[r], &frame);
    }
    free(rt);
    ns_buf_free(&body);
    ns_buf_free(&frame);
    topo_lists_free(lists, counts, nb);
    return rc;
}

static int resolve(const nsb_opts_t *o, struct sockaddr_storage *ss)
{
    if (uv_ip4_addr(o->host, o->port, (struct sockaddr_in *)ss) == 0)
        return NS_OK;
    if (uv_ip6_addr(o->host, o->port, (struct sockaddr_in6 *)ss) == 0)
        return NS_OK;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    if (getaddrinfo(o->host, port, &hints, &res) != 0 || res == NULL)
        return NS_EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return NS_OK;
}

/* nsbench generates load on this machine only. */
static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_loopback,
                      sizeof in6addr_loopback) == 0;
    return false;
}

int load_run(const nsb_opts_t *o)
{
    bench_t *b = calloc(1, sizeof *b);
    int status = 1;
    if (b == NULL)
        return 1;
    b->o = o;
    b->loop = uv_default_loop();
    if (o->tls) {
        char err[300];
        ns_tls_opts_t t = {.cert_path = o->tls_cert,
                           .key_path = o->tls_key,
                           .trust_path = o->tls_ca,
                           .verify_peer = o->tls_ca != NULL};
        if (ns_tls_ctx_new(&t, false, &b->tctx, err, sizeof err) != NS_OK) {
            fprintf(stderr, "nsbench: TLS: %s\n", err);
            free(b);
            return 1;
        }
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (topo_selftest() != NS_OK) {
        fprintf(stderr, "nsbench: internal error: route frame template differs from the codec\n");
        goto cleanup;
    }
    if (resolve(o, &b->addr) != NS_OK) {
        fprintf(stderr, "nsbench: cannot resolve %s\n", o->host);
        goto cleanup;
    }
    if (!is_loopback(&b->addr)) {
        fprintf(stderr, "nsbench: %s is not a loopback address; nsbench loads this machine only\n",
                o->host);
        goto cleanup;
    }
    b->n_readers = (o->mode == MODE_ROUTE || o->mode == MODE_MIXED) ? o->conns : 0;
    b->n_brokers = o->setup_brokers;
    /* without set-up, reads need the brokers' names only, not their connections */
    b->n_broker_conns = (o->no_setup && o->mode != MODE_HEARTBEAT) ? 0 : b->n_brokers;
    b->n_regs = (o->mode == MODE_MIXED || o->mode == MODE_REGISTER) ? o->reg_brokers : 0;
    b->topics = o->topics ? o->topics : o->setup_topics;
    /* registration bodies with growing DataVersions, built before the run
     * (compressing 10k topics takes ~15 ms: not on the loop while measuring) */
    b->n_versions = o->reg_versions;
    if (b->n_versions == 0) {
        if (o->mode == MODE_REGISTER && o->count)
            b->n_versions = o->count + 1 < 64 ? (uint32_t)o->count + 1 : 64;
        else
            b->n_versions = o->mode == MODE_REGISTER ? 32 : 16;
    }
    b->n_versions += b->n_versions % 2; /* even: the queue flip alternates across the wrap too */
    if (b->n_readers > 0 && b->topics == 0) {
        fprintf(stderr, "nsbench: route lookups need topics (--setup-topics or --topics)\n");
        goto cleanup;
    }
    if (o->mode == MODE_HEARTBEAT && b->n_brokers == 0) {
        fprintf(stderr, "nsbench: heartbeat mode needs --setup-brokers\n");
        goto cleanup;
    }
    if ((o->mode == MODE_MIXED || o->mode == MODE_REGISTER) &&
        (b->n_regs == 0 || o->reg_topics == 0)) {
        fprintf(stderr, "nsbench: %s mode needs --reg-brokers and --reg-topics\n",
                mode_name(o->mode));
        goto cleanup;
    }
    b->n_conns = b->n_readers + b->n_broker_conns + b->n_regs;
    b->conns = calloc(b->n_conns + 1, sizeof *b->conns);
    for (int k = 0; k < K_N; k++)
        b->h[k] = malloc(sizeof(hist_t));
    b->h_during = malloc(sizeof(hist_t));
    b->h_outside = malloc(sizeof(hist_t));
    for (int k = 0; k < K_N; k++)
        if (b->h[k] == NULL)
            goto cleanup;
    if (b->conns == NULL || b->h_during == NULL || b->h_outside == NULL)
        goto cleanup;
    rng_seed(&b->rng, o->seed);
    if (dist_init(&b->dist, b->topics ? b->topics : 1, o->zipf, o->zipf_s, &b->rng) != NS_OK)
        goto cleanup;
    b->topic_names = calloc((size_t)(b->topics + 1), TOPIC_STRIDE);
    b->topic_lens = calloc(b->topics + 1, 1);
    if (b->topic_names == NULL || b->topic_lens == NULL)
        goto cleanup;
    for (uint32_t t = 0; t < b->topics; t++) {
        char *n = b->topic_names + (size_t)t * TOPIC_STRIDE;
        topo_topic_name(n, TOPIC_STRIDE, t);
        b->topic_lens[t] = (uint8_t)strlen(n);
    }
    b->patterns = calloc(b->n_brokers + 1, sizeof *b->patterns);
    b->pattern_lens = calloc(b->n_brokers + 1, sizeof *b->pattern_lens);
    if (b->patterns == NULL || b->pattern_lens == NULL)
        goto cleanup;
    for (uint32_t i = 0; i < b->n_brokers; i++) {
        char name[48], pat[80];
        topo_broker_name(name, sizeof name, i, false);
        snprintf(pat, sizeof pat, "\"brokerName\":\"%s\"", name);
        if ((b->patterns[i] = strdup(pat)) == NULL)
            goto cleanup;
        b->pattern_lens[i] = strlen(pat);
    }
    if (build_templates(b) != NS_OK) {
        fprintf(stderr, "nsbench: cannot build the registration bodies\n");
        goto cleanup;
    }
    uint32_t maxd = 1;
    for (size_t i = 0; i < o->n_depths; i++)
        if (o->depths[i] > maxd)
            maxd = o->depths[i];
    uint32_t ns = 4;
    while (ns < maxd + 1)
        ns *= 2;
    for (uint32_t i = 0; i < b->n_conns; i++) {
        bconn_t *c = &b->conns[i];
        c->b = b;
        c->idx = i;
        if (i < b->n_readers) {
            c->role = ROLE_READER;
        } else if (i < b->n_readers + b->n_broker_conns) {
            c->role = ROLE_BROKER;
            c->broker = i - b->n_readers;
        } else {
            c->role = ROLE_REG;
            c->broker = i - b->n_readers - b->n_broker_conns;
        }
        c->nslots = ns;
        c->slots = calloc(ns, sizeof *c->slots);
        c->freelist = calloc(ns, sizeof *c->freelist);
        if (c->slots == NULL || c->freelist == NULL)
            goto cleanup;
        for (uint32_t s = 0; s < ns; s++)
            c->freelist[c->nfree++] = ns - 1 - s;
        if (c->role == ROLE_REG) {
            uv_timer_init(b->loop, &c->timer);
            c->timer.data = c;
            c->timer_init = true;
        }
    }
    uv_timer_init(b->loop, &b->phase_timer);
    uv_timer_init(b->loop, &b->keepalive_timer);
    uv_timer_init(b->loop, &b->rate_timer);
    b->phase_timer.data = b;
    b->keepalive_timer.data = b;
    b->rate_timer.data = b;
    b->timers_init = true;
    uv_timer_start(&b->keepalive_timer, keepalive_cb, KEEPALIVE_MS, KEEPALIVE_MS);
    if (o->rate > 0) {
        b->t_tokens = uv_hrtime();
        uv_timer_start(&b->rate_timer, rate_cb, 1, 1);
    }
    for (int k = 0; k < K_N; k++)
        hist_reset(b->h[k]);
    hist_reset(b->h_during);
    hist_reset(b->h_outside);
    b->phase = PH_CONNECT;
    if (b->n_conns == 0) {
        fprintf(stderr, "nsbench: nothing to do (no connections)\n");
        close_all(b);
    } else {
        connect_next(b);
    }
    uv_run(b->loop, UV_RUN_DEFAULT);
    status = b->failed ? 1 : 0;
    for (size_t i = 0; i < b->n_runs && status == 0; i++)
        if (b->runs[i].errors || b->runs[i].mismatches || b->runs[i].lost)
            status = 2;
cleanup:
    if (b->conns)
        for (uint32_t i = 0; i < b->n_conns; i++) {
            free(b->conns[i].slots);
            free(b->conns[i].freelist);
        }
    free(b->conns);
    for (int k = 0; k < K_N; k++)
        free(b->h[k]);
    free(b->h_during);
    free(b->h_outside);
    dist_free(&b->dist);
    free(b->topic_names);
    free(b->topic_lens);
    if (b->patterns)
        for (uint32_t i = 0; i < b->n_brokers; i++)
            free(b->patterns[i]);
    free(b->patterns);
    free(b->pattern_lens);
    if (b->setup_t)
        for (uint32_t i = 0; i < b->n_brokers; i++) {
            tmpl_free(&b->setup_t[i]);
            tmpl_free(&b->hb_t[i]);
        }
    if (b->reg_t)
        for (uint32_t i = 0; i < b->n_regs; i++) {
            for (uint32_t v = 0; v < b->n_versions; v++)
                tmpl_free(&b->reg_t[(size_t)i * b->n_versions + v]);
            tmpl_free(&b->reg_hb_t[i]);
        }
    free(b->setup_t);
    free(b->hb_t);
    free(b->reg_t);
    free(b->reg_hb_t);
    ns_buf_free(&b->scratch);
    ns_tls_ctx_free(b->tctx);
    free(b);
    return status;
}
