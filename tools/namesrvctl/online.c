/* online.c - admin commands over the wire (include/ns/client.h), like
 * mqadmin against the name servers of --ns "host:port;host:port".
 *
 *   route TOPIC | clusters | topics [--cluster C] | kv get NS KEY | kv list NS
 *       reads: asked of EVERY server and shown per server (with more than one
 *       server: a "== host:port" line before each answer, or with --json one
 *       {"server":..,"result":..} line per server); an unreachable server is
 *       reported and makes the exit status 5, the others are still shown
 *   kv put NS KEY VALUE | kv delete NS KEY | wipe-perm BROKER | add-perm BROKER
 *   | delete-topic TOPIC [--cluster C] | config set KEY VALUE
 *       writes: sent to EVERY server, one result line per server
 *   config get: read
 *
 * Common options: --ns/-n ADDRS (default $NAMESRV_ADDR, else 127.0.0.1:9876),
 * --json (bodies as JSON: legacy fastjson bodies are normalised with
 * ns_fastjson_normalize so the output is valid JSON), --timeout MS (5000),
 * TLS: --tls (encrypt; the server is verified only with --tls-ca), --tls-ca
 * FILE, --tls-cert FILE --tls-key FILE (client certificate), --tls-name NAME
 * (name to check instead of the host); any --tls-* implies --tls.
 * Requests are JSON-header, language JAVA, version 479 (PROTOCOL.md §3).
 * Exit: the worst over the servers: 0 ok, 1 a server answered with an
 * error, 2 usage, 5 a server could not be reached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/properties.h"
#include "ns/err.h"
#include "ns/model.h"

/* Parses the common options plus extra (NULL-terminated rows). */
static int session_init(session_t *s, const char *cmd, int argc, char **argv,
                        const ctl_opt_t *extra, const char **pos, int min_pos, int max_pos,
                        int *n_pos)
{
    const char *ns = getenv("NAMESRV_ADDR"), *timeout = NULL;
    s->access_key = getenv("NAMESRV_ACCESS_KEY");
    s->secret_key = getenv("NAMESRV_SECRET_KEY");
    ctl_opt_t opts[28] = {{"--access-key", &s->access_key, NULL},
                          {"--secret-key", &s->secret_key, NULL},
                          {"--ns", &ns, NULL},
                          {"-n", &ns, NULL},
                          {"--json", NULL, &s->json},
                          {"--timeout", &timeout, NULL},
                          {"--tls", NULL, &s->use_tls},
                          {"--tls-ca", &s->tls.ca_file, NULL},
                          {"--tls-cert", &s->tls.cert_file, NULL},
                          {"--tls-key", &s->tls.key_file, NULL},
                          {"--tls-name", &s->tls.server_name, NULL}};
    size_t n = 11;
    for (; extra && extra->name && n < 27; extra++)
        opts[n++] = *extra;
    opts[n] = (ctl_opt_t){NULL, NULL, NULL};
    s->cmd = cmd;
    s->timeout_ms = 5000;
    int rc = ctl_parse(cmd, argc, argv, opts, pos, min_pos, max_pos, n_pos);
    if (rc != CTL_OK)
        return rc;
    int64_t t = 0;
    if (timeout && (ns_parse_i64(timeout, strlen(timeout), &t) != NS_OK || t <= 0 || t > 600000)) {
        fprintf(stderr, "namesrvctl %s: --timeout '%s' is not a number of ms\n", cmd, timeout);
        return CTL_USAGE;
    }
    if (timeout)
        s->timeout_ms = (int)t;
    if (s->tls.ca_file || s->tls.cert_file || s->tls.key_file || s->tls.server_name)
        s->use_tls = true;
    s->list = strdup(ns && *ns ? ns : "127.0.0.1:9876");
    if (s->list == NULL)
        return CTL_IO;
    for (char *save = NULL, *a = strtok_r(s->list, ";, ", &save); a;
         a = strtok_r(NULL, ";, ", &save)) {
        const char *colon = strrchr(a, ':');
        if (colon == NULL || colon == a || colon[1] == 0 || s->n_addrs == MAX_SERVERS) {
            fprintf(stderr,
                    "namesrvctl %s: bad name server address '%s' (want host:port, at "
                    "most %d separated by ';')\n",
                    cmd, a, MAX_SERVERS);
            return CTL_USAGE;
        }
        s->addrs[s->n_addrs++] = a;
    }
    if (s->n_addrs == 0) {
        fprintf(stderr, "namesrvctl %s: --ns names no server\n", cmd);
        return CTL_USAGE;
    }
    return CTL_OK;
}

static void session_free(session_t *s)
{
    free(s->list);
}

/* One request to one server. CTL_OK with the response in *rsp (valid until
 * the client is closed), CTL_IO when the server cannot be reached (said on
 * stderr, adding that the next server is tried when try_next). */
static int call(session_t *s, const char *addr, const request_t *r, bool try_next, ns_client_t **c,
                ns_cmd_msg_t *rsp)
{
    ns_ext_field_t ext[MAX_EXT];
    size_t n = 0;
    for (; n < MAX_EXT && r->kv[2 * n]; n++)
        ext[n] = ns_ext_field(r->kv[2 * n], r->kv[2 * n + 1]);
    ns_cmd_t req;
    ns_cmd_request_init(&req, r->code, n ? ext : NULL, n);
    req.body = r->body;
    req.body_len = r->body_len;
    const char *why = NULL;
    int rc = ns_client_connect_addr_tls(addr, s->timeout_ms, s->use_tls ? &s->tls : NULL, c, &why);
    bool tls_failed = rc != NS_OK && why && *why;
    if (rc == NS_OK && s->access_key && *s->access_key)
        rc = ns_client_set_credentials(*c, s->access_key, s->secret_key ? s->secret_key : "");
    rc = rc ? rc : ns_client_call(*c, &req, s->timeout_ms, rsp);
    if (rc != NS_OK) {
        ctl_err("%s: %s: %s%s%s%s", s->cmd, addr, ns_strerror(rc), tls_failed ? ": " : "",
                tls_failed ? why : "", try_next ? "; trying the next" : "");
        return CTL_IO;
    }
    return CTL_OK;
}

static int report_error(session_t *s, const char *addr, const ns_cmd_t *rsp)
{
    const char *name = ns_response_code_name(rsp->code);
    ctl_err("%s: %s answered %s (%d)%s%.*s", s->cmd, addr, name ? name : "error", rsp->code,
            rsp->remark ? ": " : "", rsp->remark ? (int)rsp->remark_len : 0,
            rsp->remark ? rsp->remark : "");
    return CTL_FAILED;
}

/* Reads go to every server, each answer shown under its server. */
static int ask_each(session_t *s, const request_t *r, reply_fn fn, void *ctx)
{
    int worst = CTL_OK;
    size_t reached = 0;
    for (size_t i = 0; i < s->n_addrs; i++) {
        ns_client_t *c = NULL;
        ns_cmd_msg_t rsp;
        ns_cmd_msg_init(&rsp);
        int rc = call(s, s->addrs[i], r, false, &c, &rsp);
        if (rc == CTL_OK) {
            reached++;
            if (s->n_addrs > 1 && !s->json)
                printf("%s== %s\n", i ? "\n" : "", s->addrs[i]);
            rc = rsp.cmd.code == NS_RSP_SUCCESS ? fn(s, s->addrs[i], &rsp.cmd, ctx)
                                                : report_error(s, s->addrs[i], &rsp.cmd);
            fflush(stdout);
        }
        ns_cmd_msg_free(&rsp);
        ns_client_close(c);
        if (rc > worst)
            worst = rc;
    }
    if (reached == 0)
        ctl_err("%s: no name server could be reached", s->cmd);
    return worst;
}

/* Prints one server's JSON result: as it is with one server, else wrapped
 * as {"server":addr,"result":json} so every line says whose it is. */
static void print_json_result(session_t *s, const char *addr, const char *json, size_t len)
{
    if (s->n_addrs <= 1) {
        printf("%.*s\n", (int)len, json);
        return;
    }
    ns_buf_t b = NS_BUF_INIT;
    ns_buf_append_str(&b, "{\"server\":");
    ns_buf_append_json_str(&b, addr, strlen(addr), false);
    printf("%.*s,\"result\":%.*s}\n", (int)b.len, b.data ? (const char *)b.data : "", (int)len,
           json);
    ns_buf_free(&b);
}

/* Writes go to every server; the worst outcome is the exit code. */
static int ask_all(session_t *s, const request_t *r, reply_fn fn, void *ctx)
{
    int worst = CTL_OK;
    for (size_t i = 0; i < s->n_addrs; i++) {
        ns_client_t *c = NULL;
        ns_cmd_msg_t rsp;
        ns_cmd_msg_init(&rsp);
        int rc = call(s, s->addrs[i], r, false, &c, &rsp);
        if (rc == CTL_OK)
            rc = rsp.cmd.code == NS_RSP_SUCCESS ? fn(s, s->addrs[i], &rsp.cmd, ctx)
                                                : report_error(s, s->addrs[i], &rsp.cmd);
        ns_cmd_msg_free(&rsp);
        ns_client_close(c);
        if (rc > worst)
            worst = rc;
    }
    return worst;
}

/* ---- output helpers ---- */

/* The body as a strict-JSON cJSON tree (legacy bodies normalised). */
static cJSON *body_json(const ns_cmd_t *rsp, ns_buf_t *norm)
{
    ns_buf_reset(norm);
    if (rsp->body_len == 0 || ns_fastjson_normalize(rsp->body, rsp->body_len, norm) != NS_OK)
        return NULL;
    return cJSON_ParseWithLength((const char *)norm->data, norm->len);
}

static int print_body_json(session_t *s, const char *addr, const ns_cmd_t *rsp)
{
    ns_buf_t norm = NS_BUF_INIT;
    int rc = CTL_OK;
    if (rsp->body_len == 0 || ns_fastjson_normalize(rsp->body, rsp->body_len, &norm) != NS_OK) {
        ctl_err("%s: %s sent no JSON body", s->cmd, addr);
        rc = CTL_FAILED;
    } else {
        print_json_result(s, addr, (const char *)norm.data, norm.len);
    }
    ns_buf_free(&norm);
    return rc;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "-";
}

static long long jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Members of an object sorted by name (caller frees the array). */
static cJSON **sorted_members(const cJSON *obj, size_t *n)
{
    size_t k = 0, cap = (size_t)cJSON_GetArraySize(obj);
    cJSON **v = calloc(cap + 1, sizeof *v);
    for (cJSON *c = obj ? obj->child : NULL; v && c; c = c->next)
        v[k++] = c;
    if (v)
        qsort(v, k, sizeof *v, cmp_member);
    *n = v ? k : 0;
    return v;
}

static void perm_text(long long perm, char *out)
{
    snprintf(out, 8, "%c%c%c", perm & NS_PERM_READ ? 'r' : '-', perm & NS_PERM_WRITE ? 'w' : '-',
             perm & NS_PERM_INHERIT ? 'x' : '-');
}

static void print_broker_rows(const cJSON *b, const char *first_col)
{
    size_t n;
    cJSON **addrs = sorted_members(cJSON_GetObjectItemCaseSensitive(b, "brokerAddrs"), &n);
    for (size_t i = 0; i < n; i++)
        printf("%-20s %-20s %-12s %-4s %s\n", first_col, jstr(b, "brokerName"), jstr(b, "zoneName"),
               addrs[i]->string, cJSON_IsString(addrs[i]) ? addrs[i]->valuestring : "?");
    if (n == 0)
        printf("%-20s %-20s %-12s %-4s %s\n", first_col, jstr(b, "brokerName"), jstr(b, "zoneName"),
               "-", "-");
    free(addrs);
}

/* ---- route ---- */

static int route_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    if (s->json)
        return print_body_json(s, addr, rsp);
    ns_buf_t norm = NS_BUF_INIT;
    cJSON *r = body_json(rsp, &norm), *e;
    char perm[8];
    if (r == NULL) {
        ns_buf_free(&norm);
        ctl_err("%s: %s sent an unreadable route body", s->cmd, addr);
        return CTL_FAILED;
    }
    printf("%-20s %-20s %-12s %-4s %s\n", "CLUSTER", "BROKER", "ZONE", "ID", "ADDR");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "brokerDatas"))
        print_broker_rows(e, jstr(e, "cluster"));
    printf("\n%-20s %-6s %-6s %-10s %s\n", "BROKER", "READ", "WRITE", "PERM", "SYSFLAG");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "queueDatas"))
    {
        perm_text(jnum(e, "perm"), perm);
        printf("%-20s %-6lld %-6lld %-2lld %-7s %lld\n", jstr(e, "brokerName"),
               jnum(e, "readQueueNums"), jnum(e, "writeQueueNums"), jnum(e, "perm"), perm,
               jnum(e, "topicSysFlag"));
    }
    cJSON *ord = cJSON_GetObjectItemCaseSensitive(r, "orderTopicConf");
    if (cJSON_IsString(ord))
        printf("\norderTopicConf: %s\n", ord->valuestring);
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "filterServerTable"))
    {
        char *list = cJSON_PrintUnformatted(e);
        printf("filter servers of %s: %s\n", e->string, list ? list : "?");
        free(list);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "topicQueueMappingByBroker"))
        printf("static mapping on %s: totalQueues %lld, epoch %lld\n", e->string,
               jnum(e, "totalQueues"), jnum(e, "epoch"));
    cJSON_Delete(r);
    ns_buf_free(&norm);
    return CTL_OK;
}

int ctl_cmd_route(int argc, char **argv)
{
    session_t s = {0};
    const char *topic = NULL;
    int rc = session_init(&s, "route", argc, argv, NULL, &topic, 1, 1, NULL);
    request_t r = {NS_REQ_GET_ROUTEINFO_BY_TOPIC, {"topic", topic, NULL}, NULL, 0};
    rc = rc ? rc : ask_each(&s, &r, route_reply, NULL);
    session_free(&s);
    return rc;
}

/* ---- clusters ---- */

/* "12:00:01Z (3 s ago)" / state of one address from brokerLiveTable. */
static void live_columns(const cJSON *live, const char *baddr, char *hb, size_t hbn, char *state,
                         size_t sn)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(live, baddr);
    char when[40];
    if (!cJSON_IsObject(e)) {
        snprintf(hb, hbn, "-");
        snprintf(state, sn, live ? "not live" : "?");
        return;
    }
    long long last = jnum(e, "lastUpdateTimestamp"), now = (long long)ctl_now_ms();
    ctl_format_time(last, when, sizeof when);
    snprintf(hb, hbn, "%s (%llds ago)", when, (now - last) / 1000);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "evicting"))) {
        snprintf(state, sn, "expiring");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "onGrace"))) {
        snprintf(hb, hbn, "none since the restart");
        ctl_format_time(jnum(e, "graceUntil"), when, sizeof when);
        snprintf(state, sn, "grace until %s", when);
    } else {
        snprintf(state, sn, "alive, timeout %llds", jnum(e, "heartbeatTimeoutMillis") / 1000);
    }
}

static void print_live_rows(const cJSON *b, const char *cluster, const cJSON *live)
{
    size_t n;
    char hb[80], state[80];
    cJSON **addrs = sorted_members(cJSON_GetObjectItemCaseSensitive(b, "brokerAddrs"), &n);
    for (size_t i = 0; i < n; i++) {
        const char *a = cJSON_IsString(addrs[i]) ? addrs[i]->valuestring : "?";
        live_columns(live, a, hb, sizeof hb, state, sizeof state);
        printf("%-16s %-16s %-4s %-21s %-38s %s\n", cluster, jstr(b, "brokerName"),
               addrs[i]->string, a, hb, state);
    }
    if (n == 0)
        printf("%-16s %-16s %-4s %-21s %-38s %s\n", cluster, jstr(b, "brokerName"), "-", "-", "-",
               "no address (namesrvctl prune-groups removes it)");
    free(addrs);
}

static int clusters_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    if (s->json)
        return print_body_json(s, addr, rsp);
    ns_buf_t norm = NS_BUF_INIT;
    cJSON *info = body_json(rsp, &norm);
    size_t nc;
    cJSON **clusters =
        sorted_members(cJSON_GetObjectItemCaseSensitive(info, "clusterAddrTable"), &nc);
    cJSON *brokers = cJSON_GetObjectItemCaseSensitive(info, "brokerAddrTable");
    cJSON *live = cJSON_GetObjectItemCaseSensitive(info, "brokerLiveTable");
    printf("%-16s %-16s %-4s %-21s %-38s %s\n", "CLUSTER", "BROKER", "ID", "ADDR",
           "LAST HEARTBEAT (UTC)", "STATE");
    for (size_t i = 0; i < nc; i++) {
        cJSON *name;
        cJSON_ArrayForEach(name, clusters[i])
        {
            cJSON *b = cJSON_IsString(name)
                           ? cJSON_GetObjectItemCaseSensitive(brokers, name->valuestring)
                           : NULL;
            if (b)
                print_live_rows(b, clusters[i]->string, live);
        }
    }
    free(clusters);
    cJSON_Delete(info);
    ns_buf_free(&norm);
    return CTL_OK;
}

int ctl_cmd_clusters(int argc, char **argv)
{
    session_t s = {0};
    int rc = session_init(&s, "clusters", argc, argv, NULL, NULL, 0, 0, NULL);
    request_t r = {NS_REQ_GET_BROKER_CLUSTER_INFO, {"withLiveness", "true", NULL}, NULL, 0};
    rc = rc ? rc : ask_each(&s, &r, clusters_reply, NULL);
    session_free(&s);
    return rc;
}

/* ---- topics ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int topics_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    if (s->json)
        return print_body_json(s, addr, rsp);
    ns_buf_t norm = NS_BUF_INIT;
    cJSON *body = body_json(rsp, &norm), *e;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "topicList");
    size_t n = 0;
    const char **names = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *names);
    cJSON_ArrayForEach(e, list)
    {
        if (names && cJSON_IsString(e))
            names[n++] = e->valuestring;
    }
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++)
        puts(names[i]);
    free(names);
    cJSON_Delete(body);
    ns_buf_free(&norm);
    return CTL_OK;
}

int ctl_cmd_topics(int argc, char **argv)
{
    session_t s = {0};
    const char *cluster = NULL;
    ctl_opt_t extra[] = {{"--cluster", &cluster, NULL}, {"-c", &cluster, NULL}, {NULL, NULL, NULL}};
    int rc = session_init(&s, "topics", argc, argv, extra, NULL, 0, 0, NULL);
    request_t r = {cluster ? NS_REQ_GET_TOPICS_BY_CLUSTER
                           : NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                   {cluster ? "cluster" : NULL, cluster, NULL},
                   NULL,
                   0};
    rc = rc ? rc : ask_each(&s, &r, topics_reply, NULL);
    session_free(&s);
    return rc;
}

/* ---- writes: one line (or JSON object) per server ---- */

static int write_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    const char *count_key = ctx; /* response header to show, or NULL */
    const char *count = count_key ? ns_cmd_ext_get(rsp, count_key) : NULL;
    if (s->json) {
        ns_buf_t b = NS_BUF_INIT;
        ns_buf_append_str(&b, "{\"server\":");
        ns_buf_append_json_str(&b, addr, strlen(addr), false);
        ns_buf_append_str(&b, ",\"code\":0");
        int64_t n = 0;
        if (count && ns_parse_i64(count, strlen(count), &n) == NS_OK) {
            ns_buf_printf(&b, ",\"%s\":%lld", count_key, (long long)n);
        } else if (count) {
            ns_buf_printf(&b, ",\"%s\":", count_key);
            ns_buf_append_json_str(&b, count, strlen(count), false);
        }
        ns_buf_append_str(&b, "}");
        printf("%.*s\n", (int)b.len, b.data ? (const char *)b.data : "");
        ns_buf_free(&b);
    } else if (count) {
        printf("%s: OK, %s=%s\n", addr, count_key, count);
    } else {
        printf("%s: OK\n", addr);
    }
    return CTL_OK;
}

static int perm_cmd(int argc, char **argv, const char *cmd, int code, const char *count_key)
{
    session_t s = {0};
    const char *broker = NULL;
    int rc = session_init(&s, cmd, argc, argv, NULL, &broker, 1, 1, NULL);
    request_t r = {code, {"brokerName", broker, NULL}, NULL, 0};
    rc = rc ? rc : ask_all(&s, &r, write_reply, (void *)count_key);
    session_free(&s);
    return rc;
}

int ctl_cmd_wipe_perm(int argc, char **argv)
{
    return perm_cmd(argc, argv, "wipe-perm", NS_REQ_WIPE_WRITE_PERM_OF_BROKER, "wipeTopicCount");
}

int ctl_cmd_add_perm(int argc, char **argv)
{
    return perm_cmd(argc, argv, "add-perm", NS_REQ_ADD_WRITE_PERM_OF_BROKER, "addTopicCount");
}

int ctl_cmd_delete_topic(int argc, char **argv)
{
    session_t s = {0};
    const char *topic = NULL, *cluster = NULL;
    ctl_opt_t extra[] = {{"--cluster", &cluster, NULL}, {"-c", &cluster, NULL}, {NULL, NULL, NULL}};
    int rc = session_init(&s, "delete-topic", argc, argv, extra, &topic, 1, 1, NULL);
    request_t r = {NS_REQ_DELETE_TOPIC_IN_NAMESRV,
                   {"topic", topic, cluster ? "clusterName" : NULL, cluster, NULL},
                   NULL,
                   0};
    rc = rc ? rc : ask_all(&s, &r, write_reply, NULL);
    session_free(&s);
    return rc;
}

/* ---- kv ---- */

static int kv_get_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    const char *v = ns_cmd_ext_get(rsp, "value");
    if (v == NULL) {
        ctl_err("kv get: %s sent no value", addr);
        return CTL_FAILED;
    }
    if (s->json) {
        ns_buf_t b = NS_BUF_INIT;
        ns_buf_append_str(&b, "{\"value\":");
        ns_buf_append_json_str(&b, v, strlen(v), false);
        ns_buf_append_u8(&b, '}');
        print_json_result(s, addr, b.data ? (const char *)b.data : "{}", b.len);
        ns_buf_free(&b);
    } else {
        puts(v);
    }
    return CTL_OK;
}

static int kv_list_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    if (s->json)
        return print_body_json(s, addr, rsp);
    ns_buf_t norm = NS_BUF_INIT;
    cJSON *body = body_json(rsp, &norm);
    size_t n;
    cJSON **kv = sorted_members(cJSON_GetObjectItemCaseSensitive(body, "table"), &n);
    for (size_t i = 0; i < n; i++)
        printf("%s=%s\n", kv[i]->string, cJSON_IsString(kv[i]) ? kv[i]->valuestring : "");
    free(kv);
    cJSON_Delete(body);
    ns_buf_free(&norm);
    return CTL_OK;
}

int ctl_cmd_kv(int argc, char **argv)
{
    session_t s = {0};
    const char *pos[4] = {NULL};
    int n = 0;
    int rc = session_init(&s, "kv", argc, argv, NULL, pos, 1, 4, &n);
    const char *verb = pos[0];
    request_t r = {0};
    if (rc != CTL_OK)
        goto out;
    rc = CTL_USAGE;
    if (strcmp(verb, "get") == 0 && n == 3) {
        r = (request_t){NS_REQ_GET_KV_CONFIG, {"namespace", pos[1], "key", pos[2], NULL}, NULL, 0};
        rc = ask_each(&s, &r, kv_get_reply, NULL);
    } else if (strcmp(verb, "list") == 0 && n == 2) {
        r = (request_t){NS_REQ_GET_KVLIST_BY_NAMESPACE, {"namespace", pos[1], NULL}, NULL, 0};
        rc = ask_each(&s, &r, kv_list_reply, NULL);
    } else if (strcmp(verb, "put") == 0 && n == 4) {
        r = (request_t){NS_REQ_PUT_KV_CONFIG,
                        {"namespace", pos[1], "key", pos[2], "value", pos[3], NULL},
                        NULL,
                        0};
        rc = ask_all(&s, &r, write_reply, NULL);
    } else if (strcmp(verb, "delete") == 0 && n == 3) {
        r = (request_t){
            NS_REQ_DELETE_KV_CONFIG, {"namespace", pos[1], "key", pos[2], NULL}, NULL, 0};
        rc = ask_all(&s, &r, write_reply, NULL);
    } else {
        fprintf(stderr, "namesrvctl kv: want 'get NS KEY', 'put NS KEY VALUE', 'delete NS KEY' "
                        "or 'list NS'\n");
    }
out:
    session_free(&s);
    return rc;
}

/* ---- config ---- */

/* Settings as JSON: values written as decimal integers become JSON numbers
 * and true/false JSON booleans (namesrvd writes integers and booleans only
 * that way); everything else stays a string. */
static bool is_integer_text(const char *v)
{
    const char *p = v + (*v == '-');
    if (*p == 0 || (*p == '0' && p[1] != 0))
        return false;
    return strspn(p, "0123456789") == strlen(p) && strlen(p) <= 15;
}

static int props_to_json_cb(const char *key, const char *value, void *ctx)
{
    cJSON *item = NULL;
    if (is_integer_text(value))
        item = cJSON_AddNumberToObject(ctx, key, strtod(value, NULL));
    else if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
        item = cJSON_AddBoolToObject(ctx, key, strcmp(value, "true") == 0);
    else
        item = cJSON_AddStringToObject(ctx, key, value);
    return item ? 0 : NS_ENOMEM;
}

static int config_get_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    if (!s->json) {
        printf("%.*s", (int)rsp->body_len, (const char *)rsp->body);
        return CTL_OK;
    }
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    int rc = CTL_FAILED;
    if (o &&
        ns_properties_parse((const char *)rsp->body, rsp->body_len, props_to_json_cb, o) == NS_OK &&
        (text = cJSON_PrintUnformatted(o)) != NULL) {
        print_json_result(s, addr, text, strlen(text));
        rc = CTL_OK;
    } else {
        ctl_err("config get: %s sent settings that do not parse as properties", addr);
    }
    free(text);
    cJSON_Delete(o);
    return rc;
}

/* Appends s in .properties syntax: backslash escapes for \, separators in
 * keys (= : space # !), control characters, and a leading space. */
static void prop_escape(ns_buf_t *b, const char *s, bool key)
{
    for (const char *p = s; *p; p++) {
        char c = *p;
        const char *esc = c == '\\'   ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                          : c == '\f' ? "\\f"
                                      : NULL;
        if (esc)
            ns_buf_append_str(b, esc);
        else if ((key && strchr("=: #!", c)) || (c == ' ' && p == s))
            ns_buf_printf(b, "\\%c", c);
        else
            ns_buf_append_u8(b, (uint8_t)c);
    }
}

int ctl_cmd_config(int argc, char **argv)
{
    session_t s = {0};
    const char *pos[3] = {NULL};
    int n = 0;
    ns_buf_t body = NS_BUF_INIT;
    int rc = session_init(&s, "config", argc, argv, NULL, pos, 1, 3, &n);
    if (rc != CTL_OK)
        goto out;
    if (strcmp(pos[0], "get") == 0 && n == 1) {
        request_t r = {NS_REQ_GET_NAMESRV_CONFIG, {NULL}, NULL, 0};
        rc = ask_each(&s, &r, config_get_reply, NULL);
    } else if (strcmp(pos[0], "set") == 0 && n == 3) {
        prop_escape(&body, pos[1], true);
        ns_buf_append_u8(&body, '=');
        prop_escape(&body, pos[2], false);
        ns_buf_append_u8(&body, '\n');
        request_t r = {NS_REQ_UPDATE_NAMESRV_CONFIG, {NULL}, body.data, body.len};
        rc = ask_all(&s, &r, write_reply, NULL);
    } else {
        fprintf(stderr, "namesrvctl config: want 'get' or 'set KEY VALUE'\n");
        rc = CTL_USAGE;
    }
out:
    ns_buf_free(&body);
    session_free(&s);
    return rc;
}

/* ---- for the other subcommands (ctl.h) ---- */

int ctl_session_init(session_t *s, const char *cmd, int argc, char **argv, const ctl_opt_t *extra,
                     const char **pos, int min_pos, int max_pos, int *n_pos)
{
    return session_init(s, cmd, argc, argv, extra, pos, min_pos, max_pos, n_pos);
}

void ctl_session_free(session_t *s)
{
    session_free(s);
}

int ctl_ask_one(session_t *s, const request_t *r, reply_fn fn, void *ctx)
{
    return ask_each(s, r, fn, ctx);
}

int ctl_ask_all(session_t *s, const request_t *r, reply_fn fn, void *ctx)
{
    return ask_all(s, r, fn, ctx);
}
