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
 * Requests are JSON-header, language JAVA, version 479 (docs/protocol.md §3).
 * Exit: the worst over the servers: 0 ok, 1 a server answered with an
 * error, 2 usage, 5 a server could not be reached.
 * The session (options, requests, asking each server) is in session.c.
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
        ctl_print_json_result(s, addr, (const char *)norm.data, norm.len);
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
        printf("%-20s %-20s %-12s %-4s %s\n", ctl_txt(first_col), ctl_txt(jstr(b, "brokerName")),
               ctl_txt(jstr(b, "zoneName")), ctl_txt(addrs[i]->string),
               ctl_txt(cJSON_IsString(addrs[i]) ? addrs[i]->valuestring : "?"));
    if (n == 0)
        printf("%-20s %-20s %-12s %-4s %s\n", ctl_txt(first_col), ctl_txt(jstr(b, "brokerName")),
               ctl_txt(jstr(b, "zoneName")), "-", "-");
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
        printf("%-20s %-6lld %-6lld %-2lld %-7s %lld\n", ctl_txt(jstr(e, "brokerName")),
               jnum(e, "readQueueNums"), jnum(e, "writeQueueNums"), jnum(e, "perm"), perm,
               jnum(e, "topicSysFlag"));
    }
    cJSON *ord = cJSON_GetObjectItemCaseSensitive(r, "orderTopicConf");
    if (cJSON_IsString(ord))
        printf("\norderTopicConf: %s\n", ctl_txt(ord->valuestring));
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "filterServerTable"))
    {
        char *list = cJSON_PrintUnformatted(e);
        printf("filter servers of %s: %s\n", ctl_txt(e->string), ctl_txt_json(list ? list : "?"));
        free(list);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(r, "topicQueueMappingByBroker"))
        printf("static mapping on %s: totalQueues %lld, epoch %lld\n", ctl_txt(e->string),
               jnum(e, "totalQueues"), jnum(e, "epoch"));
    cJSON_Delete(r);
    ns_buf_free(&norm);
    return CTL_OK;
}

int ctl_cmd_route(int argc, char **argv)
{
    session_t s = {0};
    const char *topic = NULL;
    int rc = ctl_session_init(&s, "route", argc, argv, NULL, &topic, 1, 1, NULL);
    request_t r = {NS_REQ_GET_ROUTEINFO_BY_TOPIC, {"topic", topic, NULL}, NULL, 0};
    rc = rc ? rc : ctl_ask_one(&s, &r, route_reply, NULL);
    ctl_session_free(&s);
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
        /* the deadline the server applies: the grace window or, when longer,
         * the broker's own heartbeat timeout (graceUntil is the first alone) */
        ctl_format_time(jnum(e, "deadline"), when, sizeof when);
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
        printf("%-16s %-16s %-4s %-21s %-38s %s\n", ctl_txt(cluster),
               ctl_txt(jstr(b, "brokerName")), ctl_txt(addrs[i]->string), ctl_txt(a), hb, state);
    }
    if (n == 0)
        printf("%-16s %-16s %-4s %-21s %-38s %s\n", ctl_txt(cluster),
               ctl_txt(jstr(b, "brokerName")), "-", "-", "-",
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
    int rc = ctl_session_init(&s, "clusters", argc, argv, NULL, NULL, 0, 0, NULL);
    request_t r = {NS_REQ_GET_BROKER_CLUSTER_INFO, {"withLiveness", "true", NULL}, NULL, 0};
    rc = rc ? rc : ctl_ask_one(&s, &r, clusters_reply, NULL);
    ctl_session_free(&s);
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
        puts(ctl_txt(names[i]));
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
    int rc = ctl_session_init(&s, "topics", argc, argv, extra, NULL, 0, 0, NULL);
    request_t r = {cluster ? NS_REQ_GET_TOPICS_BY_CLUSTER
                           : NS_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                   {cluster ? "cluster" : NULL, cluster, NULL},
                   NULL,
                   0};
    rc = rc ? rc : ctl_ask_one(&s, &r, topics_reply, NULL);
    ctl_session_free(&s);
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
        printf("%s: OK, %s=%s\n", addr, count_key, ctl_txt(count));
    } else {
        printf("%s: OK\n", addr);
    }
    /* Java answers SUCCESS with a count of 0 for a broker it does not know:
     * for an operator that is a typo, not a success */
    if (count && strcmp(count, "0") == 0) {
        ctl_err("%s: %s: no topic of that broker was changed (is the broker name right?)", s->cmd,
                addr);
        return CTL_FAILED;
    }
    return CTL_OK;
}

static int perm_cmd(int argc, char **argv, const char *cmd, int code, const char *count_key)
{
    session_t s = {0};
    const char *broker = NULL;
    int rc = ctl_session_init(&s, cmd, argc, argv, NULL, &broker, 1, 1, NULL);
    request_t r = {code, {"brokerName", broker, NULL}, NULL, 0};
    rc = rc ? rc : ctl_ask_all(&s, &r, write_reply, (void *)count_key);
    ctl_session_free(&s);
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
    int rc = ctl_session_init(&s, "delete-topic", argc, argv, extra, &topic, 1, 1, NULL);
    request_t r = {NS_REQ_DELETE_TOPIC_IN_NAMESRV,
                   {"topic", topic, cluster ? "clusterName" : NULL, cluster, NULL},
                   NULL,
                   0};
    rc = rc ? rc : ctl_ask_all(&s, &r, write_reply, NULL);
    ctl_session_free(&s);
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
        ctl_print_json_result(s, addr, b.data ? (const char *)b.data : "{}", b.len);
        ns_buf_free(&b);
    } else {
        puts(ctl_txt(v));
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
        printf("%s=%s\n", ctl_txt(kv[i]->string),
               ctl_txt(cJSON_IsString(kv[i]) ? kv[i]->valuestring : ""));
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
    int rc = ctl_session_init(&s, "kv", argc, argv, NULL, pos, 1, 4, &n);
    const char *verb = pos[0];
    request_t r = {0};
    if (rc != CTL_OK)
        goto out;
    rc = CTL_USAGE;
    if (strcmp(verb, "get") == 0 && n == 3) {
        r = (request_t){NS_REQ_GET_KV_CONFIG, {"namespace", pos[1], "key", pos[2], NULL}, NULL, 0};
        rc = ctl_ask_one(&s, &r, kv_get_reply, NULL);
    } else if (strcmp(verb, "list") == 0 && n == 2) {
        r = (request_t){NS_REQ_GET_KVLIST_BY_NAMESPACE, {"namespace", pos[1], NULL}, NULL, 0};
        rc = ctl_ask_one(&s, &r, kv_list_reply, NULL);
    } else if (strcmp(verb, "put") == 0 && n == 4) {
        r = (request_t){NS_REQ_PUT_KV_CONFIG,
                        {"namespace", pos[1], "key", pos[2], "value", pos[3], NULL},
                        NULL,
                        0};
        rc = ctl_ask_all(&s, &r, write_reply, NULL);
    } else if (strcmp(verb, "delete") == 0 && n == 3) {
        r = (request_t){
            NS_REQ_DELETE_KV_CONFIG, {"namespace", pos[1], "key", pos[2], NULL}, NULL, 0};
        rc = ctl_ask_all(&s, &r, write_reply, NULL);
    } else {
        fprintf(stderr, "namesrvctl kv: want 'get NS KEY', 'put NS KEY VALUE', 'delete NS KEY' "
                        "or 'list NS'\n");
    }
out:
    ctl_session_free(&s);
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
        ctl_print_lines(stdout, (const char *)rsp->body, rsp->body_len);
        return CTL_OK;
    }
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    int rc = CTL_FAILED;
    if (o &&
        ns_properties_parse((const char *)rsp->body, rsp->body_len, props_to_json_cb, o) == NS_OK &&
        (text = cJSON_PrintUnformatted(o)) != NULL) {
        ctl_print_json_result(s, addr, text, strlen(text));
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
    int rc = ctl_session_init(&s, "config", argc, argv, NULL, pos, 1, 3, &n);
    if (rc != CTL_OK)
        goto out;
    if (strcmp(pos[0], "get") == 0 && n == 1) {
        request_t r = {NS_REQ_GET_NAMESRV_CONFIG, {NULL}, NULL, 0};
        rc = ctl_ask_one(&s, &r, config_get_reply, NULL);
    } else if (strcmp(pos[0], "set") == 0 && n == 3) {
        prop_escape(&body, pos[1], true);
        ns_buf_append_u8(&body, '=');
        prop_escape(&body, pos[2], false);
        ns_buf_append_u8(&body, '\n');
        request_t r = {NS_REQ_UPDATE_NAMESRV_CONFIG, {NULL}, body.data, body.len};
        rc = ctl_ask_all(&s, &r, write_reply, NULL);
    } else {
        fprintf(stderr, "namesrvctl config: want 'get' or 'set KEY VALUE'\n");
        rc = CTL_USAGE;
    }
out:
    ns_buf_free(&body);
    ctl_session_free(&s);
    return rc;
}
