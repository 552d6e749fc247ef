/* http.c - the HTTP endpoint's lifecycle and routes (http.h).
 *
 * libmicrohttpd (Debian libmicrohttpd-dev) does the HTTP: it is the GNU
 * project's small embeddable server, in C, with its own polling thread, a
 * connection limit and timeouts; we write no HTTP parser. It is opened only
 * when the endpoint starts (mhd.h: Debian's build links GnuTLS). It runs
 * with MHD_USE_INTERNAL_POLLING_THREAD: one thread for every scrape, so the
 * request loops never run HTTP code.
 *
 *   GET /metrics   Prometheus text format 0.0.4 (http_text.c)
 *   GET /fleet/digest[?path=...]  a node of the fleet digest as JSON
 *                  (docs/protocol.md, NS_FLEET_DIGEST), read in its own txn
 *   GET /healthz   200 "ok" while the process runs and the store is readable
 *   GET /readyz    200 once listening and the store verified, else 503; the
 *                  JSON body says which, and whether the grace window runs
 *   GET /brokers   the liveness table as JSON (http_snap.c)
 *   GET /rocketmq/<subgroup>  the address server brokers and clients poll
 *                  for their namesrvAddr: this server and its reachable
 *                  peers, "host:port;host:port" (addrsrv.c)
 * Anything else is 404 (405 for methods other than GET and HEAD). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/fleet.h"
#include "ns/log.h"
#include "cmd/dispatch.h"
#include "core/writer.h"
#include "net/ioloop.h"
#include "ops/http_guard.h"
#include "ops/http_int.h"
#include "ops/mhd.h"
#include "ops/startcheck.h"

#define HTTP_TIMEOUT_S 10 /* idle, reset by each byte: http_guard.c has the header deadline */

static uint64_t mono_ms(void)
{
    return uv_hrtime() / 1000000;
}

static enum MHD_Result send_buf(struct MHD_Connection *conn, unsigned status, const char *type,
                                ns_buf_t *body)
{
    size_t len = 0;
    if (body->data == NULL && ns_buf_append_str(body, "") != NS_OK)
        return MHD_NO;
    len = body->len;
    void *data = ns_buf_steal(body, NULL);
    struct MHD_Response *rsp = ns_mhd.create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (rsp == NULL) {
        free(data);
        return MHD_NO;
    }
    ns_mhd.add_response_header(rsp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    ns_mhd.add_response_header(rsp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result r = ns_mhd.queue_response(conn, status, rsp);
    ns_mhd.destroy_response(rsp);
    return r;
}

static unsigned readyz(ns_http_t *h, const ns_snap_t *s, uint64_t now, ns_buf_t *out)
{
    bool listening = atomic_load(&h->listening);
    int verified = ns_http_verified(h);
    bool readable = s && s->store_ok;
    size_t waiting = 0;
    uint64_t remaining = 0;
    ns_snap_grace(s, now, &waiting, &remaining);
    bool ready = listening && verified == 1 && readable;
    ns_buf_printf(out,
                  "{\"ready\":%s,\"listening\":%s,\"storeVerified\":\"%s\",\"storeReadable\":%s,"
                  "\"graceWindow\":{\"running\":%s,\"brokersWaiting\":%zu,\"remainingMs\":%llu}}\n",
                  ready ? "true" : "false", listening ? "true" : "false",
                  verified == 1  ? "passed"
                  : verified < 0 ? "failed"
                                 : "running",
                  readable ? "true" : "false", waiting > 0 ? "true" : "false", waiting,
                  (unsigned long long)remaining);
    return ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
}

/* GET /fleet/digest[?path=a/b/c | ?path=["a","b/c"]]: the FLEET_DIGEST
 * reply for that one node (docs/protocol.md §3.15), from a read
 * transaction of this thread's own. */
static unsigned fleet_digest(ns_http_t *h, const char *path, ns_buf_t *out)
{
    ns_buf_t body = NS_BUF_INIT;
    ns_fleet_path_t p[NS_FLEET_MAX_PATHS];
    size_t n = 0;
    char *names = NULL, *copy = NULL;
    ns_txn_t *t = NULL;
    int rc = NS_OK;
    if (path && path[0] == '[') {
        rc = ns_buf_printf(&body, "{\"paths\":[%s]}", path);
    } else if (path && *path) {
        ns_fleet_path_t one = {{NULL}, 0};
        copy = strdup(path);
        rc = copy ? NS_OK : NS_ENOMEM;
        for (char *save = NULL, *c = copy ? strtok_r(copy, "/", &save) : NULL; c && rc == NS_OK;
             c = strtok_r(NULL, "/", &save))
            if (one.depth < NS_FLEET_ITEM_DEPTH)
                one.v[one.depth++] = c;
            else
                rc = NS_EINVAL;
        rc = rc ? rc : ns_fleet_paths_encode(&body, &one, 1);
    }
    rc = rc ? rc : ns_fleet_paths_decode(body.data, body.len, p, &n, &names);
    rc = rc ? rc : n == 1 ? NS_OK : NS_EINVAL;
    rc = rc ? rc : ns_txn_begin(h->store, false, &t);
    rc = rc ? rc : ns_digest_reply(t, p, n, out);
    ns_txn_abort(t);
    free(names);
    free(copy);
    ns_buf_free(&body);
    if (rc == NS_OK) {
        ns_buf_append_str(out, "\n");
        return MHD_HTTP_OK;
    }
    ns_buf_reset(out);
    ns_buf_printf(out, "%s\n",
                  rc == NS_EINVAL ? "path: names separated by '/', or a JSON array of at most 5 "
                                    "names, of a node of the digest"
                                  : ns_strerror(rc));
    return rc == NS_EINVAL ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    ns_buf_t *u = cls;
    (void)kind;
    ns_buf_printf(u, "%s%s%s%s", strchr((const char *)u->data, '?') ? "&" : "?", key,
                  value ? "=" : "", value ? value : "");
    return MHD_YES;
}

/* GET /rocketmq/<subgroup>[-<unit>][?nofix=1]: the URL as the poller asked
 * it and its address, for the log line naming what brokers poll. */
static unsigned address_server(ns_http_t *h, struct MHD_Connection *conn, const char *url,
                               ns_buf_t *out)
{
    ns_buf_t u = NS_BUF_INIT;
    char from[INET6_ADDRSTRLEN] = "?";
    const char *host = ns_mhd.lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    ns_buf_printf(&u, "http://%s%s", host ? host : "?", url);
    if (u.data)
        ns_mhd.get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_arg, &u);
    const union MHD_ConnectionInfo *ci =
        ns_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, from,
                  sizeof from);
    else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, from,
                  sizeof from);
    unsigned status = ns_addrsrv_answer(&h->addrsrv, atomic_load(&h->listening), h->peers,
                                        u.data ? (const char *)u.data : url, from, out);
    ns_buf_free(&u);
    return status;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    ns_http_t *h = cls;
    ns_buf_t out = NS_BUF_INIT;
    const char *type = "application/json";
    unsigned status = MHD_HTTP_OK;
    ns_http_guard_request(h->guard, conn); /* the header is whole (GET/HEAD: no body) */
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        ns_buf_append_str(&out, "method not allowed\n");
        return send_buf(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", &out);
    }
    ns_snap_t *s = ns_snap_get(h);
    uint64_t now = mono_ms();
    if (strcmp(url, "/metrics") == 0) {
        type = "text/plain; version=0.0.4; charset=utf-8";
        ns_http_metrics_text(h, s, now, &out);
    } else if (strcmp(url, "/healthz") == 0) {
        type = "text/plain";
        bool ok = s && s->store_ok;
        status = ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        ns_buf_append_str(&out, ok ? "ok\n" : "store unreadable\n");
    } else if (strcmp(url, "/readyz") == 0) {
        status = readyz(h, s, now, &out);
    } else if (strcmp(url, "/brokers") == 0) {
        ns_http_brokers_json(s, now, &out);
    } else if (strcmp(url, "/fleet/digest") == 0) {
        status = fleet_digest(
            h, ns_mhd.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "path"), &out);
        if (status != MHD_HTTP_OK)
            type = "text/plain";
    } else if (ns_addrsrv_path(url)) {
        type = "text/plain; charset=utf-8";
        status = address_server(h, conn, url, &out);
    } else {
        type = "text/plain";
        status = MHD_HTTP_NOT_FOUND;
        ns_buf_append_str(&out, "not found: try /metrics, /healthz, /readyz, /brokers, "
                                "/fleet/digest, /rocketmq/nsaddr\n");
    }
    ns_snap_unref(s);
    enum MHD_Result r = send_buf(conn, status, type, &out);
    ns_buf_free(&out);
    return r;
}

/* Verify thread: the invariant checker over one read snapshot. */
static void *verify_main(void *arg)
{
    ns_server_t *srv = arg;
    ns_http_t *h = srv->http;
    ns_txn_t *txn = NULL;
    ns_buf_t report = NS_BUF_INIT;
    uint64_t t0 = mono_ms();
    int rc = ns_txn_begin(srv->loop.store, false, &txn);
    if (rc == NS_OK)
        rc = ns_store_verify(txn, &report);
    ns_txn_abort(txn);
    if (rc == NS_OK) {
        NS_LOG_INFO("store verified in %llu ms", (unsigned long long)(mono_ms() - t0));
        atomic_store(&h->verified, 1);
    } else {
        NS_LOG_ERROR("store verification failed (%s): %.*s", ns_strerror(rc),
                     (int)(report.len > 2000 ? 2000 : report.len),
                     report.data ? (const char *)report.data : "");
        atomic_store(&h->verified, -1);
    }
    ns_buf_free(&report);
    return NULL;
}

static int parse_listen(const char *spec, struct sockaddr_storage *ss)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || colon == spec || (size_t)(colon - spec) >= sizeof host)
        return NS_EINVAL;
    int64_t port;
    if (ns_parse_i64(colon + 1, strlen(colon + 1), &port) != NS_OK || port < 0 || port > 65535)
        return NS_EINVAL;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [v6]:port */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    memset(ss, 0, sizeof *ss);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0 ||
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0)
        return NS_OK;
    return NS_EINVAL;
}

int ns_port_file_write(const char *path, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return NS_EIO;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return NS_EIO;
    return NS_OK;
}

/* Copies the counter blocks of every loop. */
static int collect_loops(ns_http_t *h, ns_metrics_loop_t *const *loops, size_t n_loops)
{
    h->loops = calloc(n_loops ? n_loops : 1, sizeof *h->loops);
    if (h->loops == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < n_loops; i++)
        h->loops[h->n_loops++] = loops[i];
    return NS_OK;
}

int ns_http_start(ns_server_t *srv, ns_metrics_loop_t *const *loops, size_t n_loops, char *err,
                  size_t errlen)
{
    const ns_config_t *cfg = srv->loop.cfg;
    struct sockaddr_storage ss;
    if (cfg->http_listen == NULL || cfg->http_listen[0] == 0)
        return NS_OK;
    if (parse_listen(cfg->http_listen, &ss) != NS_OK) {
        snprintf(err, errlen, "httpListen '%s' is not IP:PORT", cfg->http_listen);
        return NS_EINVAL;
    }
    ns_http_t *h = calloc(1, sizeof *h);
    if (h == NULL || collect_loops(h, loops, n_loops) != NS_OK) {
        if (h)
            free(h->loops);
        free(h);
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    pthread_mutex_init(&h->mu, NULL);
    ns_addrsrv_init(&h->addrsrv);
    srv->http = h;
    h->start_wall_ms = ns_wall_ms();
    h->start_mono_ms = mono_ms();
    h->map_max_bytes = cfg->map_max_bytes;
    h->backup_interval_s = cfg->backup_interval_s;
    h->fsync = strcmp(cfg->sync_mode, "nosync") != 0;
    h->io_loops = (int)cfg->io_threads;
    h->writer = ns_writer_metrics(srv->writer);
    h->store = srv->loop.store;
    h->peers = srv->peers;
    h->kvsync = srv->kvsync;
    atomic_store(&h->store_check, ns_start_check_running(srv) ? 0 : 1);
    ns_http_refresh(srv); /* the first snapshot, before any scrape */
    int rc = ns_mhd_load(err, errlen);
    if (rc != NS_OK)
        return rc;
    if (ns_http_guard_start((uint64_t)cfg->http_header_timeout_ms, &h->guard) != NS_OK) {
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    h->daemon = ns_mhd.start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, h,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->http_max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)cfg->http_max_per_address, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)HTTP_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, ns_http_guard_notify, h->guard,
        MHD_OPTION_NOTIFY_COMPLETED, ns_http_guard_completed, h->guard, MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(err, errlen, "cannot serve HTTP on httpListen %s", cfg->http_listen);
        return NS_EIO;
    }
    const union MHD_DaemonInfo *info = ns_mhd.get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? (int)info->port : 0;
    if (cfg->http_port_file && *cfg->http_port_file &&
        ns_port_file_write(cfg->http_port_file, h->port) != NS_OK)
        NS_LOG_WARN("cannot write httpPortFile %s", cfg->http_port_file);
    if (pthread_create(&h->verify_thread, NULL, verify_main, srv) == 0)
        h->verify_started = true;
    else
        atomic_store(&h->verified, -1);
    NS_LOG_INFO("http: /metrics, /healthz, /readyz, /brokers, /rocketmq/nsaddr on %s (port %d)",
                cfg->http_listen, h->port);
    return NS_OK;
}

void ns_http_note_store_check(ns_server_t *srv, int state)
{
    if (srv->http)
        atomic_store(&srv->http->store_check, state);
}

void ns_http_listening(ns_server_t *srv)
{
    const ns_config_t *cfg = srv->loop.cfg;
    if (srv->http == NULL)
        return;
    /* before the store below: the HTTP thread reads it once it sees listening */
    ns_addrsrv_set_self(&srv->http->addrsrv, cfg->advertised_address, cfg->bind_address,
                        srv->bound_port);
    atomic_store(&srv->http->listening, true);
}

void ns_http_stop(ns_server_t *srv)
{
    ns_http_t *h = srv->http;
    if (h == NULL)
        return;
    atomic_store(&h->listening, false);
    if (h->daemon) {
        ns_mhd.stop_daemon(h->daemon);
        h->daemon = NULL;
    }
    ns_http_guard_stop(h->guard); /* no callback after MHD_stop_daemon */
    h->guard = NULL;
    if (h->verify_started) {
        pthread_join(h->verify_thread, NULL);
        h->verify_started = false;
    }
}

void ns_http_note_backup(ns_server_t *srv, bool ok)
{
    if (srv->http)
        ns_metrics_backup_done(&srv->http->backup, ok, ns_wall_ms());
}

void ns_http_free(ns_server_t *srv)
{
    ns_http_t *h = srv->http;
    if (h == NULL)
        return;
    ns_http_stop(srv);
    ns_snap_unref(h->snap);
    ns_addrsrv_close(&h->addrsrv);
    pthread_mutex_destroy(&h->mu);
    free(h->loops);
    free(h);
    srv->http = NULL;
}
