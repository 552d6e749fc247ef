/* secure.c - the server's TLS and PROXY settings: read once at start,
 * certificates reloaded while running (secure.h: ns_secure_*).
 *
 * Settings are Java's TlsSystemConfig keys (config_table.c), overridden by the
 * tls.server.* keys of tls.config.file when that file exists, as Java's
 * TlsHelper does. tls.server.mode=permissive without certPath/keyPath
 * serves plain only and refuses a ClientHello (Java would make up a
 * self-signed certificate in its test mode, which proves nothing to a
 * client); enforcing without them is a start-up error.
 *
 * Reload: the main loop polls the certificate, key and trust files every
 * 500 ms (Java's FileWatchService interval) and SIGHUP forces a rebuild. A
 * new context serves connections accepted from then on, on every loop;
 * open connections keep theirs. A file that does not load is logged once
 * per change and the previous context stays in use.
 *
 * Every accepted connection gets a filter (conn.h's byte seam) over a wire
 * (wire.c): it strips a PROXY preamble (the address renames the peer),
 * decides TLS or plain, and is removed as soon as the connection turns out
 * plain, so plain connections read exactly as before after their first
 * bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn.h"
#include "ns/err.h"
#include "ns/log.h"
#include "net/budget.h"
#include "net/secure.h"
#include "net/wire.h"

#define RELOAD_POLL_MS 500

/* ---- the connection filter ---- */

/* Counts c in or out of the pending handshakes; false (logged, counted)
 * when maxPendingHandshakes are under way already. */
static bool handshake_slot(ns_conn_t *c, bool pending)
{
    if (ns_conn_handshake_pending(c, pending))
        return true;
    ns_refusal(ns_conn_peer(c), NS_REFUSE_HANDSHAKES,
               "closed: maxPendingHandshakes TLS handshakes under way already");
    return false;
}

/* A ClientHello takes a TLS session slot for as long as its connection
 * lives (ns_conn_tls_session). */
static bool tls_slot(ns_conn_t *c)
{
    if (ns_conn_tls_session(c))
        return true;
    ns_refusal(ns_conn_peer(c), NS_REFUSE_TLS_SESSIONS,
               "closed: maxTlsSessions TLS connections open already");
    return false;
}

/* Before bytes are fed: a ClientHello takes its slot before the key
 * operation it costs (NS_ECONN when there is none); NS_EAGAIN when the bytes
 * are a costly step (they open a TLS handshake, a TLS record of type 22, or
 * continue one), which the connection may feed off its loop. */
static int filter_step(void *ctx, ns_conn_t *c, const uint8_t *in, size_t n)
{
    ns_wire_t *w = ctx;
    ns_wire_state_t st = ns_wire_state(w);
    bool opening = st == NS_WIRE_DETECT && n > 0 && in[0] == 22;
    if (opening && !tls_slot(c))
        return NS_ECONN;
    if (opening && !handshake_slot(c, true))
        return NS_ECONN;
    if (opening || (st == NS_WIRE_TLS && ns_wire_handshaking(w)) ||
        (st == NS_WIRE_DETECT && ns_wire_handshaking(w)))
        return NS_EAGAIN;
    return NS_OK;
}

/* Touches only the wire: may run on a worker thread (conn_offload.c). */
static int filter_feed(void *ctx, const uint8_t *in, size_t n, ns_buf_t *plain, const char **why)
{
    return ns_wire_feed(ctx, in, n, plain, why);
}

/* On the connection's loop, after filter_feed. */
static int filter_fed(void *ctx, ns_conn_t *c, int rc, const char *why)
{
    ns_wire_t *w = ctx;
    if (rc == NS_ESHUTDOWN) /* close_notify: an orderly end, like EOF */
        return rc;
    if (rc != NS_OK) {
        NS_LOG_WARN("conn %s: closed: %s", ns_conn_peer(c),
                    rc == NS_ENOMEM ? "out of memory" : why);
        return NS_ECONN;
    }
    const char *proxied = ns_wire_proxied_peer(w);
    if (proxied && !ns_conn_peer_claimed(c)) {
        /* a claim even when it repeats the socket's peer (auth.h: bootstrap) */
        if (strcmp(proxied, ns_conn_peer(c)) != 0)
            NS_LOG_INFO("conn %s: PROXY header names the client %s", ns_conn_peer(c), proxied);
        ns_conn_set_peer(c, proxied);
    }
    if (!handshake_slot(c, ns_wire_state(w) == NS_WIRE_TLS && ns_wire_handshaking(w)))
        return NS_ECONN;
    if (ns_wire_pending(w)->len > 0)
        ns_conn_want_flush(c); /* handshake bytes to send */
    if (ns_wire_state(w) == NS_WIRE_PLAIN)
        ns_conn_clear_filter(c); /* frees w: plain from here on */
    return NS_OK;
}

static int filter_write(void *ctx, ns_conn_t *c, ns_buf_t *plain)
{
    const char *why = NULL;
    int rc = ns_wire_seal(ctx, plain, &why);
    if (rc != NS_OK) {
        NS_LOG_WARN("conn %s: closed: %s", ns_conn_peer(c), why && *why ? why : "out of memory");
        return NS_ECONN;
    }
    return NS_OK;
}

static bool filter_ready(void *ctx)
{
    return !ns_wire_handshaking(ctx);
}

static const ns_buf_t *filter_closing(void *ctx)
{
    ns_wire_t *w = ctx;
    if (ns_wire_pending(w)->len == 0) /* else an alert is waiting already */
        ns_wire_close(w);
    return ns_wire_pending(w);
}

static void filter_free(void *ctx)
{
    ns_wire_free(ctx);
}

static void attach(ns_loop_t *loop, ns_conn_t *c, const struct sockaddr *peer)
{
    ns_wire_t *w = ns_wire_new(loop->wire_cfg, peer);
    if (w == NULL) {
        ns_conn_close(c, "out of memory");
        return;
    }
    ns_conn_filter_t f = {.step = filter_step,
                          .feed = filter_feed,
                          .fed = filter_fed,
                          .write = filter_write,
                          .ready = filter_ready,
                          .closing = filter_closing,
                          .free = filter_free,
                          .ctx = w};
    ns_conn_set_filter(c, &f);
}

/* ---- settings and reload ---- */

static ns_tls_mode_t parse_mode(const char *s)
{
    if (s && strcmp(s, "disabled") == 0)
        return NS_TLS_MODE_DISABLED;
    if (s && strcmp(s, "enforcing") == 0)
        return NS_TLS_MODE_ENFORCING;
    return NS_TLS_MODE_PERMISSIVE;
}

/* The main loop's wire settings and their watcher handles: the settings
 * first, so the loop's wire_cfg (which every loop points at) is this. */
typedef struct {
    ns_wire_cfg_t wc;
    uv_timer_t timer;    /* polls the certificate files (Java: every 500 ms) */
    uv_signal_t sig_hup; /* reloads them now (beside service.c's log reopen) */
    bool handles;
} secure_t;

static secure_t *secure_of(const ns_loop_t *loop)
{
    return (secure_t *)loop->wire_cfg;
}

static const char *str_or(const char *s, const char *def)
{
    return s && *s ? s : def;
}

static void reload(ns_loop_t *loop, bool force)
{
    char err[512] = "";
    ns_tls_server_t *tls = loop->wire_cfg->tls;
    int rc = ns_tls_server_reload(tls, force, err, sizeof err);
    if (rc == NS_OK)
        NS_LOG_INFO("TLS: certificate %s reloaded (context %llu); new connections use it",
                    loop->cfg->tls_server_cert_path,
                    (unsigned long long)ns_tls_server_generation(tls));
    else if (rc != NS_EAGAIN && strstr(err, "does not match") != NULL)
        NS_LOG_WARN("TLS: %s (one of the pair replaced so far?); the previous certificate "
                    "stays in use until both match",
                    err);
    else if (rc != NS_EAGAIN)
        NS_LOG_ERROR("TLS: reload failed, the previous certificate stays in use: %s", err);
}

static void poll_cb(uv_timer_t *t)
{
    reload(t->data, false);
}

static void hup_cb(uv_signal_t *s, int signum)
{
    ns_loop_t *loop = s->data;
    if (loop->wire_cfg->tls == NULL) {
        NS_LOG_INFO("SIGHUP: no TLS certificate configured, nothing to reload");
        return;
    }
    NS_LOG_INFO("SIGHUP: reloading the TLS certificate");
    reload(loop, true);
}

static int load_tls(ns_loop_t *loop, ns_wire_cfg_t *wc, char *err, size_t errlen)
{
    const ns_config_t *cfg = loop->cfg;
    char why[400] = "";
    bool have = cfg->tls_server_cert_path && *cfg->tls_server_cert_path &&
                cfg->tls_server_key_path && *cfg->tls_server_key_path;
    if (wc->mode == NS_TLS_MODE_DISABLED)
        return NS_OK;
    if (!have) {
        if (wc->mode == NS_TLS_MODE_ENFORCING) {
            snprintf(err, errlen,
                     "tls.server.mode=enforcing needs tls.server.certPath and tls.server.keyPath");
            return NS_EINVAL;
        }
        NS_LOG_INFO("TLS: permissive mode but no tls.server.certPath/keyPath: plain only");
        return NS_OK;
    }
    ns_tls_opts_t o = {
        .cert_path = cfg->tls_server_cert_path,
        .key_path = cfg->tls_server_key_path,
        .key_password = cfg->tls_server_key_password,
        .trust_path = cfg->tls_server_trust_cert_path,
        .client_auth = (ns_tls_auth_t)ns_tls_auth_parse(cfg->tls_server_need_client_auth),
        .protocols = cfg->tls_protocols,
        .ciphers = cfg->tls_ciphers,
    };
    int rc = ns_tls_server_new(&o, &wc->tls, why, sizeof why);
    if (rc != NS_OK) {
        snprintf(err, errlen, "TLS: %s", why);
        return rc;
    }
    NS_LOG_INFO("TLS: %s mode, certificate %s, client auth %s, protocols %s", cfg->tls_server_mode,
                cfg->tls_server_cert_path, str_or(cfg->tls_server_need_client_auth, "none"),
                str_or(cfg->tls_protocols, "OpenSSL's default"));
    return NS_OK;
}

int ns_secure_start(ns_loop_t *loop, char *err, size_t errlen)
{
    char why[512] = "";
    bool loaded = false;
    int rc = ns_config_load_tls_file(loop->cfg, &loaded, why, sizeof why);
    if (rc != NS_OK) {
        snprintf(err, errlen, "tls.config.file %s", why);
        return rc;
    }
    if (loaded)
        NS_LOG_INFO("TLS: settings read from %s", loop->cfg->tls_config_file);
    secure_t *sec = calloc(1, sizeof *sec);
    if (sec == NULL) {
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    ns_wire_cfg_t *wc = &sec->wc;
    loop->wire_cfg = wc;
    loop->on_accepted = attach;
    wc->mode = parse_mode(loop->cfg->tls_server_mode);
    if ((rc = ns_proxy_acl_parse(loop->cfg->proxy_protocol_trusted, &wc->acl, why, sizeof why)) !=
        NS_OK) {
        snprintf(err, errlen, "proxyProtocolTrustedAddresses: %s", why);
        return rc;
    }
    if (wc->acl.any || wc->acl.n > 0)
        NS_LOG_INFO("PROXY protocol: accepted from %s", loop->cfg->proxy_protocol_trusted);
    if ((rc = load_tls(loop, wc, err, errlen)) != NS_OK)
        return rc;
    uv_signal_init(loop->uv, &sec->sig_hup);
    sec->sig_hup.data = loop;
    uv_signal_start(&sec->sig_hup, hup_cb, SIGHUP);
    uv_timer_init(loop->uv, &sec->timer);
    sec->timer.data = loop;
    if (wc->tls)
        uv_timer_start(&sec->timer, poll_cb, RELOAD_POLL_MS, RELOAD_POLL_MS);
    sec->handles = true;
    return NS_OK;
}

void ns_secure_stop(ns_loop_t *loop)
{
    secure_t *sec = secure_of(loop);
    if (sec == NULL || !sec->handles)
        return;
    uv_timer_stop(&sec->timer);
    uv_signal_stop(&sec->sig_hup);
}

void ns_secure_free(ns_loop_t *loop)
{
    if (loop->wire_cfg == NULL)
        return;
    ns_tls_server_free(loop->wire_cfg->tls);
    free(secure_of(loop));
    loop->wire_cfg = NULL;
}
