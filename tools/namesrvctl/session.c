/* session.c - the session under every online namesrvctl command (ctl.h):
 * the common options (--ns, --json, --timeout, signing keys, TLS), one
 * request to one server over the blocking client (include/ns/client.h),
 * asking every server in turn, error lines, and the per-server JSON
 * wrapping. The commands themselves are in online.c and users.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ns/buf.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/model.h"

/* The common options' rows, pointing into s and at *ns, *timeout; returns
 * how many (out has room for COMMON_OPTS). One list for parsing and for
 * ctl_common_option_arity, so what may stand before a command cannot drift
 * from what a command takes. */
#define COMMON_OPTS 11
static size_t common_opts(session_t *s, const char **ns, const char **timeout, ctl_opt_t *out)
{
    const ctl_opt_t rows[COMMON_OPTS] = {{"--access-key", &s->access_key, NULL},
                                         {"--secret-key", &s->secret_key, NULL},
                                         {"--ns", ns, NULL},
                                         {"-n", ns, NULL},
                                         {"--json", NULL, &s->json},
                                         {"--timeout", timeout, NULL},
                                         {"--tls", NULL, &s->use_tls},
                                         {"--tls-ca", &s->tls.ca_file, NULL},
                                         {"--tls-cert", &s->tls.cert_file, NULL},
                                         {"--tls-key", &s->tls.key_file, NULL},
                                         {"--tls-name", &s->tls.server_name, NULL}};
    memcpy(out, rows, sizeof rows);
    return COMMON_OPTS;
}

int ctl_common_option_arity(const char *arg)
{
    session_t s = {0};
    const char *ns = NULL, *timeout = NULL;
    ctl_opt_t rows[COMMON_OPTS];
    size_t n = common_opts(&s, &ns, &timeout, rows);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(rows[i].name);
        if (strcmp(arg, rows[i].name) == 0)
            return rows[i].value ? 2 : 1;
        if (rows[i].value && strncmp(arg, rows[i].name, len) == 0 && arg[len] == '=')
            return 1;
    }
    return 0;
}

/* Parses the common options plus extra (NULL-terminated rows). */
int ctl_session_init(session_t *s, const char *cmd, int argc, char **argv, const ctl_opt_t *extra,
                     const char **pos, int min_pos, int max_pos, int *n_pos)
{
    const char *ns = getenv("NAMESRV_ADDR"), *timeout = NULL;
    s->access_key = getenv("NAMESRV_ACCESS_KEY");
    s->secret_key = getenv("NAMESRV_SECRET_KEY");
    ctl_opt_t opts[28];
    size_t n = common_opts(s, &ns, &timeout, opts);
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
    /* an access key alone would be sent signed with an empty secret and
     * refused by the server as a bad signature: say what is missing here */
    if (s->access_key && *s->access_key && (s->secret_key == NULL || *s->secret_key == 0)) {
        fprintf(stderr,
                "namesrvctl %s: --access-key needs --secret-key (or $NAMESRV_SECRET_KEY) to "
                "sign with\n",
                cmd);
        return CTL_USAGE;
    }
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

void ctl_session_free(session_t *s)
{
    free(s->list);
}

/* What a failure after the connection was made most likely means. */
static const char *call_hint(const session_t *s, int rc)
{
    if (rc == NS_ECONN && !s->use_tls)
        return " (the server closed the connection: if it enforces TLS "
               "(tls.server.mode=enforcing), add --tls or --tls-ca FILE)";
    if (rc == NS_ETIMEDOUT)
        return " (a server delays its answers to an address whose requests it refused for their "
               "signature, up to authPenaltyMaxMillis: check --access-key/--secret-key, or give "
               "--timeout more)";
    return "";
}

int ctl_connect(session_t *s, const char *addr, ns_client_t **c, const char **why)
{
    *why = NULL;
    int rc = ns_client_connect_addr_tls(addr, s->timeout_ms, s->use_tls ? &s->tls : NULL, c, why);
    if (rc == NS_OK && s->access_key && *s->access_key)
        rc = ns_client_set_credentials(*c, s->access_key, s->secret_key ? s->secret_key : "");
    return rc;
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
    bool tls_failed = rc != NS_OK && why && *why, connected = rc == NS_OK;
    if (rc == NS_OK && s->access_key && *s->access_key)
        rc = ns_client_set_credentials(*c, s->access_key, s->secret_key ? s->secret_key : "");
    rc = rc ? rc : ns_client_call(*c, &req, s->timeout_ms, rsp);
    if (rc != NS_OK) {
        ctl_err("%s: %s: %s%s%s%s%s", s->cmd, addr, ns_strerror(rc), tls_failed ? ": " : "",
                tls_failed ? why : "", connected ? call_hint(s, rc) : "",
                try_next ? "; trying the next" : "");
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
int ctl_ask_one(session_t *s, const request_t *r, reply_fn fn, void *ctx)
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
void ctl_print_json_result(session_t *s, const char *addr, const char *json, size_t len)
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
int ctl_ask_all(session_t *s, const request_t *r, reply_fn fn, void *ctx)
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
