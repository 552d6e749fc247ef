/* trail.c - admin audit records and the INFO lines of admin changes
 * (trail.h). */
#include "core/trail.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "net/ioloop.h"

struct ns_trail {
    char *head;    /* the record up to the result: `{"time":...,"fields":{...}` */
    char *summary; /* "REQUEST key=value ..." for the log line */
    char peer[64];
    int64_t retention;
    int code;  /* request code */
    int count; /* ns_trail_set_count */
    bool counted;
    char *detail; /* ns_trail_set_detail: heap JSON object text */
};

#define SUMMARY_VALUE_MAX 80     /* longer values are cut in the log line (never in the record) */
#define TRAIL_AUTH_FIELD_CAP 256 /* bytes of a key or value an auth refusal keeps */

/* Credentials (RocketMQ ACL's extFields, and the secret of our user requests,
 * NS_REQ_NS_USER_*) are never recorded or logged. */
static bool is_secret(const ns_ext_field_t *e)
{
    static const char *const secret[] = {"Signature", "SecurityToken", "SecretKey",
                                         "secretKey", "userSecretKey", "password"};
    for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++)
        if (e->key_len == strlen(secret[i]) && memcmp(e->key, secret[i], e->key_len) == 0)
            return true;
    return false;
}

/* cap > 0 bounds what a record keeps of a peer's fields (auth refusals:
 * their size is the sender's choice): each key and value cut at cap bytes,
 * at most CAPPED_FIELDS of them, the rest counted under "(more)". */
#define CAPPED_FIELDS 32

static int append_fields(ns_buf_t *json, ns_buf_t *sum, const ns_cmd_t *cmd, size_t cap)
{
    int rc = ns_buf_append_str(json, ",\"fields\":{");
    size_t n = cmd->has_ext ? cmd->n_ext : 0, kept = cap && n > CAPPED_FIELDS ? CAPPED_FIELDS : n;
    for (size_t i = 0; rc == NS_OK && i < kept; i++) {
        ns_ext_field_t redacted = cmd->ext[i];
        if (is_secret(&redacted)) {
            redacted.val = "(redacted)";
            redacted.val_len = strlen(redacted.val);
        }
        if (cap && redacted.key_len > cap)
            redacted.key_len = cap;
        if (cap && redacted.val_len > cap)
            redacted.val_len = cap;
        const ns_ext_field_t *e = &redacted;
        if (i)
            rc = ns_buf_append_u8(json, ',');
        rc = rc ? rc : ns_buf_append_json_str(json, e->key, e->key_len, false);
        rc = rc ? rc : ns_buf_append_u8(json, ':');
        rc = rc ? rc : ns_buf_append_json_str(json, e->val, e->val_len, false);
        int cut = e->val_len > SUMMARY_VALUE_MAX ? SUMMARY_VALUE_MAX : (int)e->val_len;
        rc = rc ? rc
                : ns_buf_printf(sum, " %.*s=%.*s%s", (int)e->key_len, e->key, cut, e->val,
                                cut < (int)e->val_len ? "..." : "");
    }
    if (rc == NS_OK && kept < n)
        rc = ns_buf_printf(json, "%s\"(more)\":\"%zu fields not recorded\"", kept ? "," : "",
                           n - kept);
    return rc ? rc : ns_buf_append_u8(json, '}');
}

static ns_trail_t *trail_new(const ns_cmd_t *cmd, const char *peer, int64_t retention,
                             bool with_body, size_t cap)
{
    ns_buf_t json = NS_BUF_INIT, sum = NS_BUF_INIT;
    ns_trail_t *t = NULL;
    const char *name = ns_request_code_name(cmd->code);
    int rc = NS_OK;
    if (retention <= 0 && __atomic_load_n(&ns_log_level, __ATOMIC_RELAXED) > NS_LOG_LEVEL_INFO)
        return NULL;
    if ((t = calloc(1, sizeof *t)) == NULL)
        goto fail;
    snprintf(t->peer, sizeof t->peer, "%s", peer);
    t->retention = retention;
    t->code = cmd->code;
    rc = ns_buf_printf(&json, "{\"time\":%lld,\"peer\":", (long long)ns_wall_ms());
    rc = rc ? rc : ns_buf_append_json_str(&json, t->peer, strlen(t->peer), false);
    rc = rc ? rc : ns_buf_printf(&json, ",\"code\":%d,\"request\":", (int)cmd->code);
    rc = rc ? rc : ns_buf_append_json_str(&json, name ? name : "?", name ? strlen(name) : 1, false);
    rc = rc ? rc : ns_buf_append_str(&sum, name ? name : "?");
    rc = rc ? rc : append_fields(&json, &sum, cmd, cap);
    if (rc == NS_OK && with_body && cmd->body_len > 0) {
        rc = ns_buf_append_str(&json, ",\"body\":");
        rc = rc ? rc : ns_buf_append_json_str(&json, (const char *)cmd->body, cmd->body_len, false);
    }
    if (rc != NS_OK || (t->head = ns_buf_strdup(&json)) == NULL ||
        (t->summary = ns_buf_strdup(&sum)) == NULL)
        goto fail;
    ns_buf_free(&json);
    ns_buf_free(&sum);
    return t;
fail:
    NS_LOG_ERROR("conn %s: out of memory for the audit record of request %d", peer, cmd->code);
    ns_trail_free(t);
    ns_buf_free(&json);
    ns_buf_free(&sum);
    return NULL;
}

ns_trail_t *ns_trail_new(const ns_cmd_t *cmd, const char *peer, int64_t retention, bool with_body)
{
    return trail_new(cmd, peer, retention, with_body, 0);
}

ns_trail_t *ns_trail_new_auth(const ns_cmd_t *cmd, const char *peer, int64_t retention)
{
    return retention > 0 ? trail_new(cmd, peer, retention, false, TRAIL_AUTH_FIELD_CAP) : NULL;
}

void ns_trail_free(ns_trail_t *t)
{
    if (t == NULL)
        return;
    free(t->head);
    free(t->summary);
    free(t->detail);
    free(t);
}

const char *ns_trail_peer(const ns_trail_t *t)
{
    return t ? t->peer : "-";
}

const char *ns_trail_summary(const ns_trail_t *t)
{
    return t ? t->summary : "?";
}

bool ns_trail_kept(const ns_trail_t *t)
{
    return t && t->retention > 0;
}

int ns_trail_write(ns_txn_t *txn, const ns_trail_t *t, const char *result, int rsp_code,
                   const char *remark, const char *detail)
{
    ns_buf_t rec = NS_BUF_INIT;
    if (t == NULL || t->retention <= 0)
        return NS_OK;
    int rc = ns_buf_append_str(&rec, t->head);
    rc = rc ? rc : ns_buf_printf(&rec, ",\"result\":\"%s\",\"responseCode\":%d", result, rsp_code);
    if (rc == NS_OK && remark) {
        rc = ns_buf_append_str(&rec, ",\"remark\":");
        rc = rc ? rc : ns_buf_append_json_str(&rec, remark, strlen(remark), false);
    }
    char counted[64];
    if (detail == NULL && t->detail) {
        detail = t->detail;
    } else if (detail == NULL && t->counted && t->code == NS_REQ_UNREGISTER_BROKER) {
        snprintf(counted, sizeof counted, "{\"removed\":%s}", t->count ? "true" : "false");
        detail = counted;
    } else if (detail == NULL && t->counted) {
        snprintf(counted, sizeof counted, "{\"count\":%d}", t->count);
        detail = counted;
    }
    if (rc == NS_OK && detail)
        rc = ns_buf_printf(&rec, ",\"detail\":%s", detail);
    rc = rc ? rc : ns_buf_append_u8(&rec, '}');
    rc = rc ? rc : ns_admin_audit_append(txn, (const char *)rec.data, rec.len, t->retention, NULL);
    ns_buf_free(&rec);
    return rc;
}

int ns_trail_set_detail(ns_trail_t *t, const char *json)
{
    char *copy = t && json ? strdup(json) : NULL;
    if (t == NULL)
        return NS_OK;
    if (json && copy == NULL)
        return NS_ENOMEM;
    free(t->detail);
    t->detail = copy;
    return NS_OK;
}

void ns_trail_set_count(ns_trail_t *t, int count)
{
    if (t) {
        t->count = count;
        t->counted = true;
    }
}

static void describe(int code, int count, char *out, size_t n)
{
    switch (code) {
    case NS_REQ_UPDATE_NAMESRV_CONFIG:
        snprintf(out, n, "settings updated");
        break;
    case NS_REQ_UNREGISTER_BROKER:
        snprintf(out, n, count ? "unregistered" : "nothing to unregister");
        break;
    case NS_REQ_PUT_KV_CONFIG:
        snprintf(out, n, "KV config put");
        break;
    case NS_REQ_DELETE_KV_CONFIG:
        snprintf(out, n, "KV config deleted");
        break;
    case NS_REQ_WIPE_WRITE_PERM_OF_BROKER:
        snprintf(out, n, "write permission wiped on %d topic(s)", count);
        break;
    case NS_REQ_ADD_WRITE_PERM_OF_BROKER:
        snprintf(out, n, "write permission added on %d topic(s)", count);
        break;
    case NS_REQ_DELETE_TOPIC_IN_NAMESRV:
        snprintf(out, n, "topic deleted");
        break;
    case NS_REQ_REGISTER_TOPIC_IN_NAMESRV:
        snprintf(out, n, "topic registered");
        break;
    default:
        snprintf(out, n, "done");
        break;
    }
}

void ns_trail_done(const ns_trail_t *t)
{
    char what[96];
    if (t == NULL)
        return;
    describe(t->code, t->count, what, sizeof what);
    NS_LOG_INFO("conn %s: %s: %s", t->peer, t->summary, what);
}

void ns_trail_log_refused(const ns_trail_t *t, const char *remark)
{
    if (t)
        NS_LOG_INFO("conn %s: %s: refused: %s", t->peer, t->summary, remark ? remark : "");
}
