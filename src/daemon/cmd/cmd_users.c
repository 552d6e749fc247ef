/* cmd_users.c - online user management, our own request codes 9700..9703
 * (include/ns/codes.h), for an admin in every authMode (auth.h):
 *
 *   NS_USER_ADD (9700)     ext userAccessKey, userSecretKey, role, and
 *                          optional enabled (true), allow (""), brokers ("")
 *   NS_USER_UPDATE (9701)  ext userAccessKey and any of userSecretKey, role,
 *                          enabled, allow, brokers
 *   NS_USER_DELETE (9702)  ext userAccessKey
 *   NS_USER_LIST (9703)    body: JSON array of {accessKey, role, enabled,
 *                          sealed, allow, brokers, createdMs, updatedMs};
 *                          never the secret
 * With authKeyFile the new secret is sealed before it is stored.
 * Errors: INVALID_PARAMETER (bad field, with why), SYSTEM_ERROR "user
 * exists" / "no such user" (only an admin gets this far), and, while
 * authMode is on, SYSTEM_ERROR LAST_ADMIN for a change that would leave no
 * enabled admin (no one could sign in again: auth.h, no lockout).
 * The secret travels in the request: in the clear without TLS (docs/security.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <openssl/crypto.h>

#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "cmd/cmd.h"
#include "core/auth.h"
#include "ns/seal.h"

typedef struct {
    ns_user_rec_t rec;
    bool create;
    bool has_secret, has_role, has_enabled, has_allow, has_brokers;
    int outcome;   /* NS_OK, NS_EEXIST, NS_ENOTFOUND, NS_EINVAL, NS_EPERM (writer -> reply) */
    char err[128]; /* why, for NS_EINVAL */
} user_change_t;

#define LAST_ADMIN                                                                                 \
    "this would leave no enabled admin user while authMode is on (no one could sign in again): "   \
    "add another admin first, or turn authMode off"

/* Stops the walk at an enabled admin other than the access key ctx. */
static int other_admin_cb(const ns_user_rec_t *u, void *ctx)
{
    return u->role == NS_ROLE_ADMIN && u->enabled && strcmp(u->access_key, ctx) != 0 ? 1 : 0;
}

/* Whether taking the enabled admin ak away (deleted, disabled or another
 * role) would leave none, with authMode on: *last; the store's error. */
static int last_admin(ns_txn_t *txn, const char *ak, bool *last)
{
    *last = false;
    if (ns_auth_mode() == NS_AUTH_OFF)
        return NS_OK;
    int rc = ns_user_iter(txn, other_admin_cb, (void *)ak);
    *last = rc == NS_OK;
    return rc == 1 ? NS_OK : rc;
}

static void change_free(void *p)
{
    user_change_t *c = p;
    ns_user_rec_free(&c->rec);
}

static char *dup_or_null(const char *s, bool *has)
{
    *has = s != NULL;
    return s ? strdup(s) : NULL;
}

/* Reads the request's fields into c (zeroed); NULL, or why a field is bad
 * (c is then to be freed with change_free). */
static const char *change_of(ns_req_t *req, user_change_t *c, bool create)
{
    const char *ak = ns_req_str(req, "userAccessKey"), *role = ns_req_str(req, "role");
    const char *enabled = ns_req_str(req, "enabled");
    bool has_ak;
    c->create = create;
    c->rec.access_key = dup_or_null(ak, &has_ak);
    c->rec.secret = dup_or_null(ns_req_str(req, "userSecretKey"), &c->has_secret);
    c->rec.allow = dup_or_null(ns_req_str(req, "allow"), &c->has_allow);
    c->rec.brokers = dup_or_null(ns_req_str(req, "brokers"), &c->has_brokers);
    c->has_role = role != NULL;
    c->has_enabled = enabled != NULL;
    c->rec.enabled = enabled == NULL || strcasecmp(enabled, "true") == 0;
    c->rec.role = NS_ROLE_CLIENT;
    const char *why = NULL;
    if (!has_ak)
        why = "userAccessKey is missing";
    else if (role && ns_role_parse(role, &c->rec.role) != NS_OK)
        why = "role must be admin, broker or client";
    else if (enabled && strcasecmp(enabled, "true") != 0 && strcasecmp(enabled, "false") != 0)
        why = "enabled must be true or false";
    else if (create && (!c->has_secret || !c->has_role))
        why = "userSecretKey and role are required";
    else if (c->has_secret && ns_sealed(c->rec.secret))
        why = "userSecretKey may not start with " NS_SEAL_PREFIX;
    else if (c->has_secret && (strlen(c->rec.secret) < 6 || strlen(c->rec.secret) > 256))
        why = "secret key must be 6..256 bytes";
    const uint8_t *key = ns_auth_seal_key(req->loop->main);
    char *sealed = NULL;
    if (why == NULL && c->has_secret && key) { /* authKeyFile: sealed at rest */
        if (ns_seal(key, c->rec.access_key, c->rec.secret, &sealed) != NS_OK) {
            why = "cannot seal the secret";
        } else {
            OPENSSL_cleanse(c->rec.secret, strlen(c->rec.secret));
            free(c->rec.secret);
            c->rec.secret = sealed;
        }
    }
    return why;
}

static int change_run(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    user_change_t *c = (user_change_t *)w->payload;
    ns_user_rec_t cur;
    int rc = ns_user_get(txn, c->rec.access_key, &cur);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    bool exists = rc == NS_OK;
    c->outcome = c->create && exists ? NS_EEXIST : !c->create && !exists ? NS_ENOTFOUND : NS_OK;
    if (c->outcome != NS_OK) {
        if (exists)
            ns_user_rec_free(&cur);
        return NS_OK;
    }
    ns_user_rec_t u = c->rec;
    int64_t now = ns_wall_ms();
    if (exists) {
        u.secret = c->has_secret ? c->rec.secret : cur.secret;
        u.role = c->has_role ? c->rec.role : cur.role;
        u.enabled = c->has_enabled ? c->rec.enabled : cur.enabled;
        u.allow = c->has_allow ? c->rec.allow : cur.allow;
        u.brokers = c->has_brokers ? c->rec.brokers : cur.brokers;
        u.created_ms = cur.created_ms;
    } else {
        u.created_ms = now;
    }
    u.updated_ms = now;
    bool last = false;
    rc = ns_user_validate(&u, c->err, sizeof c->err);
    if (rc != NS_OK)
        c->outcome = NS_EINVAL;
    else if (exists && cur.role == NS_ROLE_ADMIN && cur.enabled &&
             !(u.role == NS_ROLE_ADMIN && u.enabled) &&
             ((rc = last_admin(txn, u.access_key, &last)) != NS_OK || last))
        c->outcome = rc == NS_OK ? NS_EPERM : c->outcome;
    else
        rc = ns_user_put(txn, &u);
    if (exists)
        ns_user_rec_free(&cur);
    return c->outcome == NS_EINVAL || c->outcome == NS_EPERM ? NS_OK : rc;
}

static int change_reply(ns_wreq_t *w, int rc)
{
    user_change_t *c = (user_change_t *)w->payload;
    if (rc != NS_OK)
        return rc;
    switch (c->outcome) {
    case NS_OK:
        NS_LOG_INFO("auth: user '%s' %s over the wire", c->rec.access_key,
                    c->create ? "added" : "updated");
        ns_reply_code(&w->to, NS_RSP_SUCCESS, NULL);
        return NS_OK;
    case NS_EEXIST:
        return ns_remark(&w->to, NS_EEXIST, "user exists");
    case NS_ENOTFOUND:
        return ns_remark(&w->to, NS_ENOTFOUND, "no such user");
    case NS_EPERM:
        return ns_remark(&w->to, NS_EPERM, LAST_ADMIN);
    default:
        return ns_fail(&w->to, NS_RSP_INVALID_PARAMETER, c->err);
    }
}

static const ns_wreq_ops_t change_ops = {change_run, change_reply, change_free};

static int submit_change(ns_req_t *req, bool create)
{
    ns_wreq_t *w = ns_wreq_new(&change_ops, sizeof(user_change_t));
    if (w == NULL)
        return NS_ENOMEM;
    const char *why = change_of(req, (user_change_t *)w->payload, create);
    if (why) {
        ns_wreq_free(w);
        return ns_fail(&req->to, NS_RSP_INVALID_PARAMETER, why);
    }
    ns_req_submit(req, w);
    return NS_OK;
}

int ns_cmd_user_add(ns_req_t *req)
{
    return submit_change(req, true);
}

int ns_cmd_user_update(ns_req_t *req)
{
    return submit_change(req, false);
}

typedef struct {
    char *ak;
    bool deleted;
    bool last; /* refused: the last enabled admin */
} user_delete_t;

static void delete_free(void *p)
{
    free(((user_delete_t *)p)->ak);
}

static int delete_run(ns_wreq_t *w, ns_txn_t *txn, ns_registry_t *reg)
{
    user_delete_t *d = (user_delete_t *)w->payload;
    ns_user_rec_t cur;
    d->deleted = d->last = false;
    int rc = ns_user_get(txn, d->ak, &cur);
    if (rc == NS_ENOTFOUND)
        return NS_OK;
    if (rc != NS_OK)
        return rc;
    if (cur.role == NS_ROLE_ADMIN && cur.enabled)
        rc = last_admin(txn, d->ak, &d->last);
    ns_user_rec_free(&cur);
    if (rc != NS_OK || d->last)
        return rc;
    rc = ns_user_del(txn, d->ak);
    d->deleted = rc == NS_OK;
    return rc == NS_ENOTFOUND ? NS_OK : rc;
}

static int delete_reply(ns_wreq_t *w, int rc)
{
    user_delete_t *d = (user_delete_t *)w->payload;
    if (rc != NS_OK)
        return rc;
    if (d->last)
        return ns_remark(&w->to, NS_EPERM, LAST_ADMIN);
    if (!d->deleted)
        return ns_remark(&w->to, NS_ENOTFOUND, "no such user");
    NS_LOG_INFO("auth: user '%s' deleted over the wire", d->ak);
    ns_reply_code(&w->to, NS_RSP_SUCCESS, NULL);
    return NS_OK;
}

static const ns_wreq_ops_t delete_ops = {delete_run, delete_reply, delete_free};

int ns_cmd_user_delete(ns_req_t *req)
{
    const char *ak = ns_req_str(req, "userAccessKey");
    if (ak == NULL)
        return ns_fail(&req->to, NS_RSP_INVALID_PARAMETER, "userAccessKey is missing");
    ns_wreq_t *w = ns_wreq_new(&delete_ops, sizeof(user_delete_t));
    if (w == NULL)
        return NS_ENOMEM;
    user_delete_t *d = (user_delete_t *)w->payload;
    if ((d->ak = strdup(ak)) == NULL) {
        ns_wreq_free(w);
        return NS_ENOMEM;
    }
    ns_req_submit(req, w);
    return NS_OK;
}

static int list_cb(const ns_user_rec_t *u, void *ctx)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL || !cJSON_AddItemToArray(ctx, o))
        return NS_ENOMEM;
    bool ok = cJSON_AddStringToObject(o, "accessKey", u->access_key) &&
              cJSON_AddStringToObject(o, "role", ns_role_name(u->role)) &&
              cJSON_AddBoolToObject(o, "enabled", u->enabled) &&
              cJSON_AddBoolToObject(o, "sealed", ns_sealed(u->secret)) &&
              cJSON_AddStringToObject(o, "allow", u->allow) &&
              cJSON_AddStringToObject(o, "brokers", u->brokers) &&
              cJSON_AddNumberToObject(o, "createdMs", (double)u->created_ms) &&
              cJSON_AddNumberToObject(o, "updatedMs", (double)u->updated_ms);
    return ok ? 0 : NS_ENOMEM;
}

int ns_cmd_user_list(ns_req_t *req)
{
    cJSON *arr = cJSON_CreateArray();
    char *text = NULL;
    int rc = arr ? ns_user_iter(req->txn, list_cb, arr) : NS_ENOMEM;
    if (rc == NS_OK && (text = cJSON_PrintUnformatted(arr)) == NULL)
        rc = NS_ENOMEM;
    if (rc == NS_OK) {
        ns_rsp_t rsp = {0};
        rsp.body = (const uint8_t *)text;
        rsp.body_len = strlen(text);
        ns_reply(&req->to, &rsp);
    }
    free(text);
    cJSON_Delete(arr);
    return rc;
}
