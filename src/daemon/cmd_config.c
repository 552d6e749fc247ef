/* cmd_config.c - UPDATE_NAMESRV_CONFIG and GET_NAMESRV_CONFIG
 * (PROTOCOL.md §3.14, §7.3). Settings live in memory on the loop thread;
 * an update is validated whole (unknown keys refused, Java keys with no
 * effect accepted with a WARN), its admin audit record committed, then it
 * is applied and written back to the -c file (or configStorePath) with a
 * .bak copy. Refusals are recorded too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "server.h"
#include "trail.h"

typedef struct {
    const ns_config_t *cfg;
    char **keys, **vals;
    size_t n;
    bool blacklisted;
} update_t;

static bool in_black_list(const ns_config_t *cfg, const char *key)
{
    static const char *const always[] = {"configBlackList", "configStorePath", "kvConfigPath",
                                         "rocketmqHome"};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        if (strcmp(key, always[i]) == 0)
            return true;
    const char *list = cfg->config_black_list ? cfg->config_black_list : "";
    size_t klen = strlen(key);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == klen && strncmp(p, key, n) == 0)
            return true;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return false;
}

static int collect_cb(const char *key, const char *value, void *ctx)
{
    update_t *u = ctx;
    if (in_black_list(u->cfg, key))
        u->blacklisted = true;
    char **k = ns_array_grow(u->keys, u->n, sizeof *k);
    if (k)
        u->keys = k;
    char **v = ns_array_grow(u->vals, u->n, sizeof *v);
    if (v)
        u->vals = v;
    if (!k || !v)
        return NS_ENOMEM;
    u->keys[u->n] = strdup(key);
    u->vals[u->n] = strdup(value);
    u->n++;
    return u->keys[u->n - 1] && u->vals[u->n - 1] ? 0 : NS_ENOMEM;
}

static void update_free(update_t *u)
{
    for (size_t i = 0; i < u->n; i++) {
        free(u->keys[i]);
        free(u->vals[i]);
    }
    free(u->keys);
    free(u->vals);
}

/* The validated update on its way through the writer: the audit record is
 * committed first, then the settings change on the loop thread (they live
 * in memory and in the settings file, not in the store). */
typedef struct {
    ns_wop_t op;
    ns_server_t *srv;
    ns_reply_to_t to;
    ns_trail_t *trail;
    update_t u;
    char **olds;  /* value of each key before the update (NULL: Java key) */
    char *detail; /* {"changed":{key:{"old":..,"new":..}},"ignored":[..]} */
} config_op_t;

static void config_op_free(config_op_t *op)
{
    for (size_t i = 0; op->olds && i < op->u.n; i++)
        free(op->olds[i]);
    free(op->olds);
    free(op->detail);
    update_free(&op->u);
    ns_trail_free(op->trail);
    ns_reply_to_release(&op->to);
    free(op);
}

static int config_apply(ns_wop_t *w, ns_txn_t *txn, void *hook_ctx)
{
    config_op_t *op = (config_op_t *)w;
    return ns_trail_write(txn, op->trail, "ok", NS_RSP_SUCCESS, NULL, op->detail);
}

static void config_done(ns_wop_t *w)
{
    config_op_t *op = (config_op_t *)w;
    ns_server_t *srv = op->srv;
    char err[256];
    if (w->rc != NS_OK) {
        ns_reply_code(&op->to, NS_RSP_SYSTEM_ERROR, ns_err_remark(w->rc));
        config_op_free(op);
        return;
    }
    for (size_t i = 0; i < op->u.n; i++) {
        const char *key = op->u.keys[i], *val = op->u.vals[i];
        if (!ns_config_has_key(key)) {
            NS_LOG_WARN("conn %s: config: %s=%s accepted without effect: %s",
                        ns_trail_peer(op->trail), key, val, ns_config_java_ignored(key));
            continue;
        }
        if (ns_config_set(srv->cfg, key, val, err, sizeof err) != NS_OK) {
            NS_LOG_ERROR("config: %s", err); /* validated before: cannot happen */
            continue;
        }
        NS_LOG_INFO("conn %s: config changed: %s '%s' -> '%s' (UPDATE_NAMESRV_CONFIG)",
                    ns_trail_peer(op->trail), key, op->olds[i] ? op->olds[i] : "", val);
        if (ns_config_noeffect(key))
            NS_LOG_WARN("config: %s has no effect here: %s", key, ns_config_noeffect(key));
        if (strcmp(key, "logLevel") == 0 && ns_log_level_parse(val) >= 0)
            ns_log_set_level((ns_log_level_t)ns_log_level_parse(val));
    }
    ns_io_config_changed(srv);
    const char *path = srv->cfg->config_file ? srv->cfg->config_file : srv->cfg->config_store_path;
    if (path && *path && ns_config_write_file(srv->cfg, path) != NS_OK)
        NS_LOG_WARN("config: could not persist the settings to %s", path);
    ns_reply_code(&op->to, NS_RSP_SUCCESS, NULL);
    config_op_free(op);
}

/* Old values and the record's detail object. */
static int config_op_prepare(config_op_t *op, const ns_config_t *cfg)
{
    ns_buf_t d = NS_BUF_INIT, v = NS_BUF_INIT;
    size_t n_ignored = 0;
    int rc = (op->olds = calloc(op->u.n + 1, sizeof *op->olds)) ? NS_OK : NS_ENOMEM;
    rc = rc ? rc : ns_buf_append_str(&d, "{\"changed\":{");
    for (size_t i = 0, k = 0; rc == NS_OK && i < op->u.n; i++) {
        const char *key = op->u.keys[i], *val = op->u.vals[i];
        if (!ns_config_has_key(key)) {
            n_ignored++;
            continue;
        }
        ns_buf_reset(&v);
        rc = ns_config_get_text(cfg, key, &v);
        if (rc == NS_OK && (op->olds[i] = strdup(v.data ? (const char *)v.data : "")) == NULL)
            rc = NS_ENOMEM;
        rc = rc ? rc : ns_buf_append_str(&d, k++ ? "," : "");
        rc = rc ? rc : ns_buf_append_json_str(&d, key, strlen(key), false);
        rc = rc ? rc : ns_buf_append_str(&d, ":{\"old\":");
        rc = rc ? rc : ns_buf_append_json_str(&d, op->olds[i], strlen(op->olds[i]), false);
        rc = rc ? rc : ns_buf_append_str(&d, ",\"new\":");
        rc = rc ? rc : ns_buf_append_json_str(&d, val, strlen(val), false);
        rc = rc ? rc : ns_buf_append_u8(&d, '}');
    }
    rc = rc ? rc : ns_buf_append_str(&d, "},\"ignored\":[");
    for (size_t i = 0, k = 0; rc == NS_OK && n_ignored && i < op->u.n; i++) {
        if (ns_config_has_key(op->u.keys[i]))
            continue;
        rc = ns_buf_append_str(&d, k++ ? "," : "");
        rc = rc ? rc : ns_buf_append_json_str(&d, op->u.keys[i], strlen(op->u.keys[i]), false);
    }
    rc = rc ? rc : ns_buf_append_str(&d, "]}");
    if (rc == NS_OK && (op->detail = ns_buf_strdup(&d)) == NULL)
        rc = NS_ENOMEM;
    ns_buf_free(&d);
    ns_buf_free(&v);
    return rc;
}

/* Checks every pair before anything changes: all or nothing. Returns the
 * response code (SUCCESS when the update may go on) and the remark in err. */
static int config_validate(const update_t *u, char *err, size_t errlen)
{
    for (size_t i = 0; i < u->n; i++) {
        const char *key = u->keys[i];
        if (!ns_config_has_key(key)) {
            if (ns_config_java_ignored(key))
                continue;
            snprintf(err, errlen, "unknown key '%s'", key);
            return NS_RSP_SYSTEM_ERROR;
        }
        if (!ns_config_is_mutable(key)) {
            snprintf(err, errlen, "%s cannot change while the server runs", key);
            return NS_RSP_SYSTEM_ERROR;
        }
        ns_config_t probe;
        if (ns_config_init(&probe) != NS_OK) {
            snprintf(err, errlen, "out of memory");
            return NS_RSP_SYSTEM_ERROR;
        }
        int rc = ns_config_set(&probe, key, u->vals[i], err, errlen);
        ns_config_free(&probe);
        if (rc != NS_OK)
            return NS_RSP_SYSTEM_ERROR;
    }
    return NS_RSP_SUCCESS;
}

static void refuse(ns_req_t *req, int code, const char *remark)
{
    ns_trail_refused(req, code, remark);
    ns_reply_code(&req->to, code, remark);
}

void ns_cmd_update_namesrv_config(ns_req_t *req)
{
    ns_server_t *srv = req->srv;
    config_op_t *op = NULL;
    update_t u = {srv->cfg, NULL, NULL, 0, false};
    char err[256];
    if (req->cmd->body_len == 0) {
        ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL);
        return;
    }
    int rc = ns_properties_parse((const char *)req->cmd->body, req->cmd->body_len, collect_cb, &u);
    if (rc != NS_OK) {
        refuse(req, NS_RSP_SYSTEM_ERROR, "string2Properties error");
        goto fail;
    }
    if (u.blacklisted) {
        refuse(req, NS_RSP_NO_PERMISSION, "Can not update config in black list.");
        goto fail;
    }
    int code = config_validate(&u, err, sizeof err);
    if (code != NS_RSP_SUCCESS) {
        refuse(req, code, err);
        goto fail;
    }
    if ((op = calloc(1, sizeof *op)) == NULL)
        goto oom;
    op->u = u;
    u = (update_t){0};
    if (config_op_prepare(op, srv->cfg) != NS_OK)
        goto oom;
    op->trail = ns_trail_new(req, true);
    op->op.apply = config_apply;
    op->op.done = config_done;
    op->srv = srv;
    op->to = req->to;
    ns_reply_to_hold(&op->to);
    ns_writer_submit(srv->writer, &op->op);
    return;
oom:
    ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "out of memory");
fail:
    if (op)
        config_op_free(op);
    update_free(&u);
}

void ns_cmd_get_namesrv_config(ns_req_t *req)
{
    ns_buf_t *body = &req->srv->scratch;
    ns_buf_reset(body);
    if (ns_config_dump(req->srv->cfg, body) != NS_OK) {
        ns_reply_code(&req->to, NS_RSP_SYSTEM_ERROR, "out of memory");
        return;
    }
    ns_rsp_t rsp = {0};
    rsp.body = body->data;
    rsp.body_len = body->len;
    ns_reply(&req->to, &rsp);
}
