/* doc_users.c - the "users" section of a dump document (dump.c writes it,
 * restore.c reads it): [{accessKey, secretKey, role, enabled, allow,
 * brokers, createdMs, updatedMs}] in access-key order. The secret is in
 * the document as it is in the store: sealed ("enc1:...", authKeyFile) or
 * plain (the signature scheme needs it back); restore writes it back as it
 * is, so a sealed dump needs the same key file on the server. Dumps are
 * written mode 0600. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "ctl.h"
#include "doc.h"
#include "ns/err.h"

static int dump_cb(const ns_user_rec_t *u, void *ctx)
{
    void **c = ctx;
    cJSON *arr = c[0], *o = cJSON_CreateObject();
    size_t *n = c[1];
    if (o == NULL || !cJSON_AddItemToArray(arr, o))
        return NS_ENOMEM;
    bool ok = cJSON_AddStringToObject(o, "accessKey", u->access_key) &&
              cJSON_AddStringToObject(o, "secretKey", u->secret) &&
              cJSON_AddStringToObject(o, "role", ns_role_name(u->role)) &&
              cJSON_AddBoolToObject(o, "enabled", u->enabled) &&
              cJSON_AddStringToObject(o, "allow", u->allow) &&
              cJSON_AddStringToObject(o, "brokers", u->brokers) &&
              cJSON_AddNumberToObject(o, "createdMs", (double)u->created_ms) &&
              cJSON_AddNumberToObject(o, "updatedMs", (double)u->updated_ms);
    (*n)++;
    return ok ? 0 : NS_ENOMEM;
}

int ctl_dump_users(ns_txn_t *t, cJSON *arr, size_t *n)
{
    void *ctx[2] = {arr, n};
    return ns_user_iter(t, dump_cb, ctx);
}

static const char *str_of(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int64_t ms_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* A record over the borrowed strings of o; false (d->err set) when bad. */
static bool user_of(ctl_doc_t *d, const cJSON *o, size_t i, ns_user_rec_t *u)
{
    char why[160];
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "enabled");
    memset(u, 0, sizeof *u);
    u->access_key = (char *)str_of(o, "accessKey");
    u->secret = (char *)str_of(o, "secretKey");
    u->allow = (char *)(str_of(o, "allow") ? str_of(o, "allow") : "");
    u->brokers = (char *)(str_of(o, "brokers") ? str_of(o, "brokers") : "");
    u->enabled = en == NULL || cJSON_IsTrue(en);
    u->created_ms = ms_of(o, "createdMs");
    u->updated_ms = ms_of(o, "updatedMs");
    if (!cJSON_IsObject(o))
        snprintf(why, sizeof why, "expected an object");
    else if (en && !cJSON_IsBool(en))
        snprintf(why, sizeof why, "enabled: expected a boolean");
    else if (ns_role_parse(str_of(o, "role"), &u->role) != NS_OK)
        snprintf(why, sizeof why, "role: want admin, broker or client");
    else if (ns_user_validate(u, why, sizeof why) == NS_OK)
        return true;
    snprintf(d->err, sizeof d->err, "$.users[%zu]: %s", i, why);
    return false;
}

int ctl_doc_users_load(ctl_doc_t *d)
{
    d->users = cJSON_GetObjectItemCaseSensitive(d->root, "users");
    d->n_users = 0;
    if (d->users == NULL)
        return CTL_OK;
    if (!cJSON_IsArray(d->users)) {
        snprintf(d->err, sizeof d->err, "$.users: expected an array");
        return CTL_INVALID;
    }
    size_t i = 0;
    for (const cJSON *o = d->users->child; o; o = o->next, i++) {
        ns_user_rec_t u;
        if (!user_of(d, o, i, &u))
            return CTL_INVALID;
        for (const cJSON *p = d->users->child; p != o; p = p->next)
            if (strcmp(str_of(p, "accessKey"), u.access_key) == 0) {
                snprintf(d->err, sizeof d->err, "$.users[%zu].accessKey: '%s' appears twice", i,
                         u.access_key);
                return CTL_INVALID;
            }
        d->n_users++;
    }
    return CTL_OK;
}

int ctl_doc_users_put(ns_txn_t *t, ctl_doc_t *d)
{
    int rc = NS_OK;
    size_t i = 0;
    for (const cJSON *o = d->users ? d->users->child : NULL; rc == NS_OK && o; o = o->next, i++) {
        ns_user_rec_t u;
        rc = user_of(d, o, i, &u) ? ns_user_put(t, &u) : NS_EINVAL;
    }
    return rc;
}
