/* cmd_config.c - UPDATE_NAMESRV_CONFIG and GET_NAMESRV_CONFIG
 * (docs/protocol.md §3.14, §7.3). Settings live in memory on the loop thread;
 * an update is validated whole, applied, and written back to the -c file
 * (or configStorePath) with a .bak copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/strpairs.h"
#include "ns/utf8.h"
#include "cmd/cmd.h"
#include "core/auth.h"

/* What one update may hold. Java has no bound but the frame's; here a
 * 2.2 MB body of 100,000 repeats of one key held the loop 1.2 s and wrote
 * 27 MB of log, since every pair is validated, applied and logged. The
 * whole settings table is 80-odd keys of short values; a TLS path or a
 * black list fits 4 KiB. */
#define UPDATE_MAX_BODY (64 * 1024)
#define UPDATE_MAX_PAIRS 256
#define UPDATE_MAX_VALUE 4096

typedef struct {
    const ns_config_t *cfg;
    ns_strpairs_t kv; /* the keys and values of the request, in order */
    bool blacklisted;
    const char *too_big; /* a bound passed: which ("256 keys") */
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
    if (u->kv.n >= UPDATE_MAX_PAIRS || strlen(value) > UPDATE_MAX_VALUE) {
        u->too_big = u->kv.n >= UPDATE_MAX_PAIRS ? "more than 256 keys" : "a value over 4096 bytes";
        return NS_ETOOBIG;
    }
    if (in_black_list(u->cfg, key))
        u->blacklisted = true;
    return ns_strpairs_add(&u->kv, key, value, strlen(value));
}

/* The settings file, rewritten by the writer thread (its fsyncs must not
 * hold up the loop); the reply waits for it, as it did for Java. Only the
 * lines of the changed keys are rewritten (ns_config_rewrite_file): the
 * operator's comments, order and every other line, secrets included, stay. */
typedef struct {
    char *path;
    ns_strpairs_t changes; /* the keys this update set, with their new values */
    int64_t backups;       /* configStoreBackups when the update was made */
    bool written;          /* apply may run again in a re-run batch: write once */
} persist_op_t;

static void persist_free(void *p)
{
    persist_op_t *o = p;
    free(o->path);
    ns_strpairs_free(&o->changes);
}

static int persist_apply(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    persist_op_t *o = (persist_op_t *)w->payload;
    if (!o->written && o->path && ns_config_rewrite_file(o->path, &o->changes, o->backups) != NS_OK)
        NS_LOG_WARN("config: could not persist the settings to %s", o->path);
    o->written = true;
    return NS_OK; /* not a store change: never fails the batch */
}

/* The pairs of kv that are settings of ours (Java's keys without effect
 * change nothing, so they are not written), copied into out. */
static int copy_changes(const ns_strpairs_t *kv, ns_strpairs_t *out)
{
    for (size_t i = 0; i < kv->n; i++)
        if (ns_config_has_key(kv->a[i]) &&
            ns_strpairs_add(out, kv->a[i], kv->b[i], strlen(kv->b[i])) != NS_OK)
            return NS_ENOMEM;
    return NS_OK;
}

static const ns_wreq_ops_t persist_ops = {persist_apply, NULL, persist_free};

/* Validates every key on a scratch copy first: all or nothing. The rules
 * of the settings file: a key neither Java nor we know is refused, a Java
 * key with no effect here is accepted (and changes nothing), settings
 * fixed at startup are refused. */
static int validate(ns_req_t *req, const update_t *u)
{
    char err[256];
    for (size_t i = 0; i < u->kv.n; i++) {
        if (!ns_config_has_key(u->kv.a[i]) && ns_config_java_ignored(u->kv.a[i]))
            continue;
        if (!ns_config_has_key(u->kv.a[i]))
            return ns_remarkf(req, NS_EINVAL, "unknown key '%s'", u->kv.a[i]);
        if (!ns_config_is_mutable(u->kv.a[i]))
            return ns_remarkf(req, NS_EINVAL, "%s cannot change while the server runs", u->kv.a[i]);
        ns_config_t probe;
        if (ns_config_init(&probe) != NS_OK)
            return NS_ENOMEM;
        int rc = ns_config_set(&probe, u->kv.a[i], u->kv.b[i], err, sizeof err);
        if (rc == NS_OK)
            rc = ns_config_check_runtime(u->kv.a[i], u->kv.b[i], err, sizeof err);
        ns_config_free(&probe);
        ns_auth_mode_t mode;
        if (rc == NS_OK && strcmp(u->kv.a[i], "authMode") == 0 &&
            ns_auth_mode_parse(u->kv.b[i], &mode) == NS_OK)
            rc = ns_auth_may_enable(req->loop->main, mode, err, sizeof err); /* no lockout */
        if (rc != NS_OK)
            return ns_remarkf(req, NS_EINVAL, "%s", err);
    }
    return NS_OK;
}

/* Queues the rewrite of the settings file and the admin record (detail:
 * what changed), SUCCESS after both; without a file, the record alone. */
static int persist(ns_req_t *req, const ns_strpairs_t *kv, const char *detail)
{
    ns_loop_t *loop = req->loop;
    const char *path =
        loop->cfg->config_file ? loop->cfg->config_file : loop->cfg->config_store_path;
    ns_wreq_t *w = ns_wreq_new(&persist_ops, sizeof(persist_op_t));
    persist_op_t *o = w ? (persist_op_t *)w->payload : NULL;
    if (o) {
        o->written = path == NULL || *path == 0; /* nothing to write */
        o->backups = loop->cfg->config_store_backups;
    }
    if (o == NULL || (path && *path && (o->path = strdup(path)) == NULL) ||
        copy_changes(kv, &o->changes) != NS_OK) {
        ns_wreq_free(w);
        NS_LOG_WARN("config: could not persist the settings to %s: out of memory", path);
        ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL); /* applied in memory all the same */
        return NS_OK;
    }
    ns_req_trail_detail(req, detail);
    ns_req_submit(req, w);
    return NS_OK;
}

int ns_cmd_update_namesrv_config(ns_req_t *req)
{
    ns_loop_t *loop = req->loop;
    update_t u = {loop->cfg, NS_STRPAIRS_INIT, false, NULL};
    char err[256];
    if (req->cmd->body_len == 0) {
        ns_reply_code(&req->to, NS_RSP_SUCCESS, NULL);
        return NS_OK;
    }
    if (req->cmd->body_len > UPDATE_MAX_BODY) {
        NS_LOG_WARN("conn %s: UPDATE_NAMESRV_CONFIG refused: a body of %zu bytes (at most %d)",
                    ns_conn_peer(req->conn), req->cmd->body_len, UPDATE_MAX_BODY);
        return ns_failf(req, NS_RSP_INVALID_PARAMETER,
                        "config update too large: %zu bytes (at most %d)", req->cmd->body_len,
                        UPDATE_MAX_BODY);
    }
    /* values are written to the settings file and shown (JSON too): UTF-8 */
    const char *bad = ns_utf8_problem((const char *)req->cmd->body, req->cmd->body_len);
    int rc =
        bad ? NS_EINVAL
            : ns_properties_parse((const char *)req->cmd->body, req->cmd->body_len, collect_cb, &u);
    if (bad)
        rc = ns_failf(req, NS_RSP_INVALID_PARAMETER, "invalid body: %s", bad);
    else if (u.too_big)
        rc = ns_failf(req, NS_RSP_INVALID_PARAMETER, "config update too large: %s", u.too_big);
    else if (rc != NS_OK)
        rc = ns_remark(&req->to, NS_EINVAL, "string2Properties error");
    else if (u.blacklisted)
        rc = ns_fail(&req->to, NS_RSP_NO_PERMISSION, "Can not update config in black list.");
    else
        rc = validate(req, &u);
    if (rc != NS_OK)
        goto out;
    const char *peer = ns_conn_peer(req->conn);
    ns_buf_t detail = NS_BUF_INIT, old = NS_BUF_INIT, ignored = NS_BUF_INIT;
    ns_buf_append_str(&detail, "{\"changed\":{");
    for (size_t i = 0, k = 0; i < u.kv.n; i++) {
        const char *key = u.kv.a[i], *val = u.kv.b[i];
        if (!ns_config_has_key(key)) {
            NS_LOG_WARN("conn %s: config: %s=%s accepted without effect: %s", peer, key, val,
                        ns_config_java_ignored(key));
            ns_buf_append_str(&ignored, ignored.len ? "," : "");
            ns_buf_append_json_str(&ignored, key, strlen(key), false);
            continue;
        }
        ns_buf_reset(&old);
        ns_config_get_text(loop->cfg, key, &old);
        const char *was = old.data ? (const char *)old.data : "";
        if (ns_config_update(loop->cfg, key, val, err, sizeof err) != NS_OK)
            continue; /* validated: cannot happen */
        NS_LOG_INFO("conn %s: config changed: %s '%s' -> '%s' (UPDATE_NAMESRV_CONFIG)", peer, key,
                    was, val);
        if (ns_config_noeffect(key))
            NS_LOG_WARN("config: %s has no effect here: %s", key, ns_config_noeffect(key));
        ns_buf_append_str(&detail, k++ ? "," : "");
        ns_buf_append_json_str(&detail, key, strlen(key), false);
        ns_buf_append_str(&detail, ":{\"old\":");
        ns_buf_append_json_str(&detail, was, strlen(was), false);
        ns_buf_append_str(&detail, ",\"new\":");
        ns_buf_append_json_str(&detail, val, strlen(val), false);
        ns_buf_append_u8(&detail, '}');
    }
    ns_buf_printf(&detail, "},\"ignored\":[%s]}", ignored.data ? (const char *)ignored.data : "");
    if (loop->on_config_changed)
        loop->on_config_changed(loop);
    rc = persist(req, &u.kv, detail.data ? (const char *)detail.data : NULL);
    ns_buf_free(&detail);
    ns_buf_free(&old);
    ns_buf_free(&ignored);
out:
    ns_strpairs_free(&u.kv);
    return rc;
}

int ns_cmd_get_namesrv_config(ns_req_t *req)
{
    ns_buf_t *body = &req->loop->scratch;
    ns_buf_reset(body);
    if (ns_config_dump(req->loop->cfg, body) != NS_OK)
        return NS_ENOMEM;
    return ns_cmd_reply_body(req, NS_OK, body);
}
