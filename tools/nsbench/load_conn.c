/* load_conn.c - connections of the client engine (load.h): connecting,
 * issuing requests into slots, writing, reading and matching responses, and
 * what happens when a connection is lost. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "load.h"
#include "ns/err.h"
#include "ns/remoting.h"

/* ---- helpers ---- */

static bool is_load(const bench_t *b, const bconn_t *c)
{
    switch (b->o->mode) {
    case MODE_SETUP:
        return false;
    case MODE_ROUTE:
    case MODE_MIXED:
        return c->role == ROLE_READER;
    case MODE_HEARTBEAT:
        return c->role == ROLE_BROKER;
    case MODE_REGISTER:
        return c->role == ROLE_REG;
    }
    return false;
}

int main_kind(const bench_t *b)
{
    switch (b->o->mode) {
    case MODE_HEARTBEAT:
        return b->o->hb_kind == HB_REREGISTER ? K_REREG : K_HB;
    case MODE_REGISTER:
        return K_REG_NEW;
    default:
        return K_ROUTE;
    }
}

static void note_error_code(bench_t *b, int code)
{
    b->errors++;
    for (int i = 0; i < MAX_ERR_CODES; i++) {
        if (b->err_code_n[i] && b->err_code[i] == code) {
            b->err_code_n[i]++;
            return;
        }
        if (b->err_code_n[i] == 0) {
            b->err_code[i] = code;
            b->err_code_n[i] = 1;
            return;
        }
    }
}

/* ---- slots ---- */

static slot_t *slot_take(bconn_t *c, int32_t *opaque)
{
    if (c->nfree == 0)
        return NULL;
    uint32_t si = c->freelist[--c->nfree];
    slot_t *s = &c->slots[si];
    c->seq++;
    *opaque = (int32_t)(((uint32_t)c->seq * c->nslots + si) & 0x7FFFFFFFu);
    s->opaque = *opaque;
    s->used = true;
    c->inflight++;
    return s;
}

static void slot_give(bconn_t *c, slot_t *s)
{
    s->used = false;
    c->freelist[c->nfree++] = (uint32_t)(s - c->slots);
    c->inflight--;
}

/* ---- issuing ---- */

bool phase_issues(const bench_t *b)
{
    return (b->phase == PH_WARMUP || b->phase == PH_MEASURE) && !b->end_requested;
}

/* May a load connection issue one more request (--rate applies to these only)? */
static bool can_issue(bench_t *b)
{
    return phase_issues(b) && (b->o->rate <= 0 || b->tokens >= 1.0);
}

static void after_issue(bench_t *b, slot_t *s, uint8_t kind)
{
    s->kind = kind;
    s->measured = b->phase == PH_MEASURE;
    s->during_reg = b->reg_inflight > 0;
    s->t_send = uv_hrtime();
    if (b->o->rate > 0 && kind == main_kind(b))
        b->tokens -= 1.0;
    if (s->measured) {
        b->measured_issued++;
        if (b->o->count && b->measured_issued >= b->o->count)
            b->end_requested = true;
    }
}

static const tmpl_t *reg_body(const bench_t *b, const bconn_t *c)
{
    return &b->reg_t[(size_t)c->broker * b->n_versions + (size_t)c->cur_body];
}

int issue(bconn_t *c, uint8_t kind)
{
    bench_t *b = c->b;
    int32_t op;
    slot_t *s = slot_take(c, &op);
    if (s == NULL)
        return NS_EAGAIN;
    int rc = NS_OK;
    switch (kind) {
    case K_ROUTE: {
        uint32_t t = dist_next(&b->dist, &b->rng);
        s->topic = t;
        rc = topo_route_frame(&c->out, b->topic_names + (size_t)t * TOPIC_STRIDE, b->topic_lens[t],
                              op);
        break;
    }
    case K_HB:
        rc = tmpl_emit(&c->out, &b->hb_t[c->broker], op);
        break;
    case K_REREG:
        rc = tmpl_emit(&c->out, &b->setup_t[c->broker], op);
        break;
    case K_SETUP:
        rc = c->role == ROLE_REG ? tmpl_emit(&c->out, reg_body(b, c), op)
                                 : tmpl_emit(&c->out, &b->setup_t[c->broker], op);
        break;
    case K_REG_NEW: /* the next DataVersion (wraps around after n_versions) */
        c->cur_body = (c->cur_body + 1) % (int)b->n_versions;
        rc = tmpl_emit(&c->out, reg_body(b, c), op);
        break;
    case K_REG_SAME:
        rc = tmpl_emit(&c->out, reg_body(b, c), op);
        break;
    }
    if (rc != NS_OK) {
        slot_give(c, s);
        return rc;
    }
    if (kind == K_SETUP) {
        s->kind = K_SETUP;
        s->measured = false;
        s->t_send = uv_hrtime();
    } else {
        after_issue(b, s, kind);
    }
    if ((kind == K_REG_NEW || kind == K_REG_SAME) && b->o->mode == MODE_MIXED)
        b->reg_inflight++;
    return NS_OK;
}

/* Tops up a load connection to `depth` requests in flight (no write). */
static void pump(bconn_t *c)
{
    bench_t *b = c->b;
    if (c->dead || !c->connected || !is_load(b, c))
        return;
    int kind = main_kind(b);
    while (c->inflight < b->depth && can_issue(b))
        if (issue(c, (uint8_t)kind) != NS_OK)
            break;
}

void pump_all(bench_t *b)
{
    for (uint32_t i = 0; i < b->n_conns; i++) {
        pump(&b->conns[i]);
        flush(&b->conns[i]);
    }
    if (b->end_requested && b->phase == PH_MEASURE)
        end_measure(b);
}

/* ---- writing ---- */

static void conn_dead(bconn_t *c, const char *why);

static void write_cb(uv_write_t *req, int status)
{
    bconn_t *c = req->data;
    c->writing = false;
    ns_buf_reset(&c->wbuf);
    if (status < 0) {
        conn_dead(c, uv_strerror(status));
        return;
    }
    flush(c);
}

/* TLS: the plaintext in out becomes records after the pending handshake
 * bytes, and out then holds what goes on the wire. */
static bool seal(bconn_t *c)
{
    const char *why = NULL;
    if (c->out.len > 0 &&
        ns_tls_sess_seal(c->tls, c->out.data, c->out.len, &c->tout, &why) != NS_OK) {
        conn_dead(c, why);
        return false;
    }
    ns_buf_t t = c->out;
    c->out = c->tout;
    c->tout = t;
    ns_buf_reset(&c->tout);
    return true;
}

void flush(bconn_t *c)
{
    if (c->dead || c->writing || !c->linked)
        return;
    if (c->tls && !seal(c))
        return;
    if (c->out.len == 0)
        return;
    ns_buf_t t = c->wbuf;
    c->wbuf = c->out;
    c->out = t;
    ns_buf_reset(&c->out);
    uv_buf_t ub = uv_buf_init((char *)c->wbuf.data, (unsigned)c->wbuf.len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &ub, 1);
    if (n == (int)c->wbuf.len) {
        ns_buf_reset(&c->wbuf);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        conn_dead(c, uv_strerror(n));
        return;
    }
    if (n > 0) {
        ub.base += n;
        ub.len -= (unsigned)n;
    }
    c->writing = true;
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &ub, 1, write_cb) != 0) {
        c->writing = false;
        conn_dead(c, "uv_write failed");
    }
}

/* ---- responses ---- */

static void handle_frame(bconn_t *c, const uint8_t *f, size_t len, uint64_t now)
{
    bench_t *b = c->b;
    int32_t code, opaque, flag;
    const uint8_t *body;
    size_t blen;
    if (frame_scan(f, len, &code, &opaque, &flag, &body, &blen) != NS_OK) {
        conn_dead(c, "undecodable response");
        return;
    }
    if (!(flag & NS_FLAG_RESPONSE))
        return; /* a request from the server: not ours to answer */
    slot_t *s = &c->slots[(uint32_t)opaque & (c->nslots - 1)];
    if (!s->used || s->opaque != opaque) {
        b->unknown_opaque++;
        b->mismatches++;
        return;
    }
    uint8_t kind = s->kind;
    slot_give(c, s);
    if ((kind == K_REG_NEW || kind == K_REG_SAME) && b->o->mode == MODE_MIXED &&
        b->reg_inflight > 0)
        b->reg_inflight--;
    if (kind == K_SETUP) {
        setup_done(b, c, code);
        return;
    }
    bool found = true;
    if (kind == K_ROUTE) {
        /* the route must name the topic's primary broker; scanned even with
         * --no-verify so that the client does the same work on every target */
        uint32_t p = topo_primary(s->topic, b->n_brokers ? b->n_brokers : 1);
        found = p < b->n_brokers && memmem(body, blen, b->patterns[p], b->pattern_lens[p]) != NULL;
    }
    if (code != 0)
        note_error_code(b, code);
    else if (!found && b->o->verify)
        b->mismatches++;
    if (s->measured) {
        uint64_t lat = now - s->t_send;
        hist_record(b->h[kind], lat);
        if (kind == K_ROUTE && b->o->mode == MODE_MIXED)
            hist_record(s->during_reg ? b->h_during : b->h_outside, lat);
        b->n_kind[kind]++;
        if (kind == K_ROUTE) {
            b->body_bytes += blen;
            b->body_n++;
        }
        if (now > b->t_last_done)
            b->t_last_done = now;
    }
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    bconn_t *c = h->data;
    nsb_read_buf(c->tls ? &c->cin : &c->rbuf, buf);
}

static void conn_ready(bconn_t *c);

/* TLS: decrypts what was read into rbuf; false when the connection died. */
static bool tls_in(bconn_t *c, size_t nread)
{
    const char *why = NULL;
    c->cin.len += nread;
    int rc = ns_tls_sess_feed(c->tls, c->cin.data, c->cin.len, &c->rbuf, &c->tout, &why);
    ns_buf_reset(&c->cin);
    if (rc != NS_OK) {
        conn_dead(c, rc == NS_ESHUTDOWN ? "closed by the server" : why);
        return false;
    }
    if (!c->connected && ns_tls_sess_established(c->tls))
        conn_ready(c);
    if (c->tout.len > 0)
        flush(c);
    return !c->dead;
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    bconn_t *c = st->data;
    bench_t *b = c->b;
    if (nread < 0) {
        conn_dead(c, nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread));
        return;
    }
    if (nread == 0)
        return;
    if (c->tls) {
        if (!tls_in(c, (size_t)nread))
            return;
    } else {
        c->rbuf.len += (size_t)nread;
    }
    uint64_t now = uv_hrtime();
    size_t off = 0;
    while (!c->dead) {
        size_t flen = 0;
        int rc = ns_frame_peek(c->rbuf.data + off, c->rbuf.len - off, 256u << 20, &flen);
        if (rc == NS_EAGAIN) {
            if (flen > c->rbuf.len - off && ns_buf_reserve(&c->rbuf, flen) != NS_OK)
                conn_dead(c, "out of memory");
            break;
        }
        if (rc != NS_OK) {
            conn_dead(c, "malformed frame from the server");
            break;
        }
        handle_frame(c, c->rbuf.data + off, flen, now);
        off += flen;
    }
    if (c->dead)
        return;
    if (off > 0) {
        memmove(c->rbuf.data, c->rbuf.data + off, c->rbuf.len - off);
        c->rbuf.len -= off;
    }
    if (b->o->rate > 0) {
        /* paced: every answer is a chance for any idle connection to go on */
        refill(b);
        pump_all(b);
    } else {
        pump(c);
        flush(c);
    }
    if (b->end_requested && b->phase == PH_MEASURE)
        end_measure(b);
    else if (b->phase == PH_DRAIN)
        check_drained(b);
}

/* ---- connections ---- */

static void conn_close_cb(uv_handle_t *h)
{
    bconn_t *c = h->data;
    c->closed = true;
    ns_buf_free(&c->rbuf);
    ns_buf_free(&c->out);
    ns_buf_free(&c->wbuf);
    ns_buf_free(&c->cin);
    ns_buf_free(&c->tout);
    ns_tls_sess_free(c->tls);
    c->tls = NULL;
}

void timer_close_cb(uv_handle_t *h)
{
    (void)h;
}

void conn_close(bconn_t *c)
{
    if (c->timer_init && !uv_is_closing((uv_handle_t *)&c->timer))
        uv_close((uv_handle_t *)&c->timer, timer_close_cb);
    if (c->started && !uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, conn_close_cb);
}

static void conn_dead(bconn_t *c, const char *why)
{
    bench_t *b = c->b;
    if (c->dead)
        return;
    c->dead = true;
    if (c->timer_init)
        uv_timer_stop(&c->timer);
    if (b->phase == PH_HOLD || b->phase == PH_CLOSING) {
        conn_close(c);
        /* the server went away: nothing left to hold */
        bool any = false;
        for (uint32_t i = 0; i < b->n_conns; i++)
            any = any || (!b->conns[i].dead && b->conns[i].role != ROLE_READER);
        if (!any && b->phase == PH_HOLD)
            close_all(b);
        return;
    }
    b->conn_errors++;
    b->lost += c->inflight;
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].used && (c->slots[i].kind == K_REG_NEW || c->slots[i].kind == K_REG_SAME) &&
            b->reg_inflight > 0)
            b->reg_inflight--;
    conn_close(c);
    if (b->phase == PH_CONNECT || b->phase == PH_SETUP) {
        fail(b, "connection %u (%s) failed during %s: %s", c->idx,
             c->role == ROLE_READER ? "reader" : "broker",
             b->phase == PH_CONNECT ? "connect" : "setup", why);
        return;
    }
    fprintf(stderr, "nsbench: connection %u lost: %s\n", c->idx, why);
    bool any_load = false;
    for (uint32_t i = 0; i < b->n_conns; i++)
        any_load = any_load || (!b->conns[i].dead && is_load(b, &b->conns[i]));
    if (!any_load) {
        fail(b, "every load connection is gone");
        return;
    }
    check_drained(b);
}

static void connect_cb(uv_connect_t *req, int status)
{
    bconn_t *c = req->data;
    bench_t *b = c->b;
    b->connecting--;
    if (b->failed || c->dead)
        return;
    if (status < 0) {
        conn_dead(c, uv_strerror(status));
        return;
    }
    c->linked = true;
    uv_tcp_nodelay(&c->tcp, 1);
    if (b->tctx) {
        const char *why = NULL;
        c->tls = ns_tls_sess_client(b->tctx, b->o->host);
        if (c->tls == NULL || ns_tls_sess_start(c->tls, &c->tout, &why) != NS_OK) {
            conn_dead(c, c->tls ? why : "out of memory");
            return;
        }
    }
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0) {
        conn_dead(c, "read start failed");
        return;
    }
    if (c->tls)
        flush(c); /* the ClientHello; conn_ready once the handshake is done */
    else
        conn_ready(c);
}

/* The connection may carry requests now. */
static void conn_ready(bconn_t *c)
{
    bench_t *b = c->b;
    c->connected = true;
    b->connected_n++;
    if (b->connected_n == b->n_conns)
        start_setup(b);
    else
        connect_next(b);
}

void connect_next(bench_t *b)
{
    uint32_t par = b->o->connect_parallel ? b->o->connect_parallel : 64;
    while (b->next_connect < b->n_conns && b->connecting < par && !b->failed) {
        bconn_t *c = &b->conns[b->next_connect++];
        uv_tcp_init(b->loop, &c->tcp);
        c->tcp.data = c;
        c->started = true;
        c->creq.data = c;
        b->connecting++;
        int rc = uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&b->addr, connect_cb);
        if (rc != 0) {
            b->connecting--;
            conn_dead(c, uv_strerror(rc));
            return;
        }
    }
}
