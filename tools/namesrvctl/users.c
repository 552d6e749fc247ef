/* users.c - `namesrvctl user`: the users request signatures are checked
 * against (include/ns/store.h ns_user_*; src/daemon/core/auth.h), offline in a
 * stopped server's store (--data-dir) or online for an admin (our request
 * codes 9700..9703, src/daemon/cmd/cmd_users.c):
 *
 *   user add KEY --role R (--secret S | --secret-file F) [--allow LIST]
 *                [--brokers LIST] [--disable]
 *   user update KEY [--role R] [--secret S | --secret-file F] [--allow LIST]
 *                [--brokers LIST] [--enable | --disable]
 *   user delete KEY
 *   user list [--json]                  (never shows secrets; says whether
 *                                        each is sealed)
 *   user seal --data-dir D --key-file F (seals every secret still plain)
 * With --key-file F (offline), new secrets are sealed with the key in F
 * (include/ns/seal.h; the server's authKeyFile); online, the server seals.
 *   user refusals --data-dir D [--json] (the authentication refusals of
 *                                        the admin audit trail, oldest
 *                                        first: a filtered view of
 *                                        `namesrvctl audit --admin`)
 * Offline writes take the directory lock (they refuse while namesrvd runs:
 * use the online form then). Online, the secret travels in the request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include <openssl/crypto.h>

#include "ctl.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/seal.h"

typedef struct {
    const char *verb, *key;
    const char *data_dir, *role, *secret, *secret_file, *allow, *brokers, *key_file;
    uint8_t seal_key[NS_SEAL_KEY_BYTES];
    bool have_key;
    bool enable, disable;
    char *secret_buf; /* from --secret-file (wiped and freed) */
} user_args_t;

static int load_secret(user_args_t *a)
{
    size_t len = 0;
    if (a->secret_file == NULL)
        return CTL_OK;
    if (a->secret) {
        ctl_err("user: --secret and --secret-file exclude each other");
        return CTL_USAGE;
    }
    if (ctl_read_file(a->secret_file, &a->secret_buf, &len) != CTL_OK)
        return CTL_IO;
    while (len && (a->secret_buf[len - 1] == '\n' || a->secret_buf[len - 1] == '\r'))
        a->secret_buf[--len] = 0;
    a->secret = a->secret_buf;
    return CTL_OK;
}

/* ---- offline ---- */

/* sealed: whether the store keeps the secret sealed (seal.h). */
static int print_user(const ns_user_rec_t *u, bool sealed, bool json)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "accessKey", u->access_key);
        cJSON_AddStringToObject(o, "role", ns_role_name(u->role));
        cJSON_AddBoolToObject(o, "enabled", u->enabled);
        cJSON_AddBoolToObject(o, "sealed", sealed);
        cJSON_AddStringToObject(o, "allow", u->allow);
        cJSON_AddStringToObject(o, "brokers", u->brokers);
        cJSON_AddNumberToObject(o, "createdMs", (double)u->created_ms);
        cJSON_AddNumberToObject(o, "updatedMs", (double)u->updated_ms);
        char *t = cJSON_PrintUnformatted(o);
        if (t)
            puts(t);
        free(t);
        cJSON_Delete(o);
    } else {
        printf("%-24s %-7s %-8s %-6s %-24s %s\n", ctl_txt(u->access_key), ns_role_name(u->role),
               u->enabled ? "enabled" : "disabled", sealed ? "sealed" : "plain",
               *u->allow ? ctl_txt(u->allow) : "*", *u->brokers ? ctl_txt(u->brokers) : "-");
    }
    return 0;
}

/* The column names above print_user's text rows. */
static void print_user_header(void)
{
    printf("%-24s %-7s %-8s %-6s %-24s %s\n", "ACCESS KEY", "ROLE", "STATE", "SECRET", "ALLOW",
           "BROKERS");
}

static int list_cb(const ns_user_rec_t *u, void *ctx)
{
    return print_user(u, ns_sealed(u->secret), *(bool *)ctx);
}

/* `user refusals`: the admin trail's records of authentication refusals
 * (src/daemon/core/trail.h: result "refused" and a detail with "auth"). */
static int refusal_cb(uint64_t seq, const char *json, size_t len, void *ctx)
{
    cJSON *o = cJSON_ParseWithLength(json, len);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "detail");
    const char *cls = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "auth"));
    if (cls == NULL) { /* another admin record, or not JSON: not an auth refusal */
        cJSON_Delete(o);
        return 0;
    }
    if (*(bool *)ctx) {
        printf("{\"seq\":%llu,%.*s\n", (unsigned long long)seq, (int)len - 1, json + 1);
        cJSON_Delete(o);
        return 0;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time");
    char when[32] = "?";
    if (cJSON_IsNumber(t))
        ctl_format_time((int64_t)t->valuedouble, when, sizeof when);
    const char *peer = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "peer"));
    const char *req = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "request"));
    const char *ak = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "accessKey"));
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "remark"));
    printf("%llu %s %s %s %s %s: %s\n", (unsigned long long)seq, when, ctl_txt(peer ? peer : "?"),
           ctl_txt(req ? req : "?"), ctl_txt(ak ? ak : "-"), ctl_txt(cls),
           ctl_txt(why ? why : "?"));
    cJSON_Delete(o);
    return 0;
}

static int offline_read(const user_args_t *a, bool json)
{
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    int rc = ctl_store_open_ro(a->data_dir, &st);
    if (rc != CTL_OK)
        return rc;
    int nrc = ns_txn_begin(st, false, &t);
    if (nrc == NS_OK) {
        if (strcmp(a->verb, "list") == 0) {
            if (!json)
                print_user_header();
            nrc = ns_user_iter(t, list_cb, &json);
        } else
            nrc = ns_admin_audit_iter(t, 0, refusal_cb, &json);
        ns_txn_abort(t);
    }
    if (nrc != NS_OK)
        ctl_err("user %s: %s", a->verb, ns_strerror(nrc));
    ns_store_close(st);
    return nrc == NS_OK ? CTL_OK : ctl_exit_for(nrc);
}

/* Collects the access keys whose secret is plain, NUL-separated. */
static int plain_cb(const ns_user_rec_t *u, void *ctx)
{
    if (ns_sealed(u->secret))
        return 0;
    return ns_buf_append(ctx, u->access_key, strlen(u->access_key) + 1);
}

/* Fills u from the arguments over what the store holds (update) or
 * nothing (add). */
static int merge(const user_args_t *a, ns_user_rec_t *u)
{
    if (a->role && ns_role_parse(a->role, &u->role) != NS_OK) {
        ctl_err("user: --role must be admin, broker or client");
        return CTL_USAGE;
    }
    char *s = NULL;
    if (a->secret && ns_sealed(a->secret)) {
        ctl_err("user: a secret may not start with %s", NS_SEAL_PREFIX);
        return CTL_USAGE;
    }
    if (a->secret && (strlen(a->secret) < 6 || strlen(a->secret) > 256)) {
        ctl_err("user: the secret must be 6..256 bytes");
        return CTL_USAGE;
    }
    if (a->secret && a->have_key) {
        if (ns_seal(a->seal_key, u->access_key, a->secret, &s) != NS_OK) {
            ctl_err("user: cannot seal the secret");
            return CTL_IO;
        }
    } else if (a->secret) {
        s = strdup(a->secret);
    }
    if (a->secret) {
        if (u->secret) {
            OPENSSL_cleanse(u->secret, strlen(u->secret));
            free(u->secret);
        }
        u->secret = s;
    }
    if (a->allow) {
        free(u->allow);
        u->allow = strdup(a->allow);
    }
    if (a->brokers) {
        free(u->brokers);
        u->brokers = strdup(a->brokers);
    }
    if (a->enable || a->disable)
        u->enabled = a->enable;
    return CTL_OK;
}

static int offline_write(const user_args_t *a)
{
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    ns_user_rec_t u = {0};
    char err[160];
    int rc = ctl_store_open_rw(a->data_dir, 0, &st);
    if (rc != CTL_OK)
        return rc;
    int nrc = ns_txn_begin(st, true, &t);
    if (nrc != NS_OK)
        goto out;
    nrc = ns_user_get(t, a->key, &u);
    bool add = strcmp(a->verb, "add") == 0;
    if (strcmp(a->verb, "delete") == 0) {
        nrc = ns_user_del(t, a->key);
    } else if (add && nrc == NS_OK) {
        nrc = NS_EEXIST;
    } else if (!add && nrc != NS_OK) {
        /* no such user (or a store error): nrc says which */
    } else {
        if (add) {
            u.access_key = strdup(a->key);
            u.enabled = true;
            u.created_ms = ctl_now_ms();
        }
        rc = merge(a, &u);
        u.updated_ms = ctl_now_ms();
        if (rc == CTL_OK && ns_user_validate(&u, err, sizeof err) != NS_OK) {
            ctl_err("user %s: %s", a->verb, err);
            rc = CTL_USAGE;
        }
        nrc = rc == CTL_OK ? ns_user_put(t, &u) : NS_EINVAL;
    }
    if (nrc == NS_OK)
        nrc = ns_txn_commit(t);
    else
        ns_txn_abort(t);
out:
    if (nrc == NS_ENOTFOUND)
        ctl_err("user %s: no user '%s'", a->verb, a->key);
    else if (nrc == NS_EEXIST)
        ctl_err("user add: user '%s' exists (use update)", a->key);
    else if (nrc != NS_OK && rc == CTL_OK)
        ctl_err("user %s: %s", a->verb, ns_strerror(nrc));
    else if (nrc == NS_OK)
        printf("user %s: %s done\n", ctl_txt(a->key), a->verb);
    ns_user_rec_free(&u);
    ns_store_close(st);
    if (rc != CTL_OK)
        return rc;
    return nrc == NS_OK                              ? CTL_OK
           : nrc == NS_ENOTFOUND || nrc == NS_EEXIST ? CTL_FAILED
                                                     : ctl_exit_for(nrc);
}

/* `user seal`: seals every secret still stored as it is. */
static int seal_all(const user_args_t *a)
{
    ns_store_t *st = NULL;
    ns_txn_t *t = NULL;
    ns_buf_t keys = NS_BUF_INIT;
    size_t n = 0;
    int rc = ctl_store_open_rw(a->data_dir, 0, &st);
    if (rc != CTL_OK)
        return rc;
    int nrc = ns_txn_begin(st, true, &t);
    nrc = nrc ? nrc : ns_user_iter(t, plain_cb, &keys);
    for (size_t off = 0; nrc == NS_OK && off < keys.len;
         off += strlen((char *)keys.data + off) + 1) {
        ns_user_rec_t u;
        char *sealed = NULL;
        nrc = ns_user_get(t, (char *)keys.data + off, &u);
        if (nrc != NS_OK)
            break;
        nrc = ns_seal(a->seal_key, u.access_key, u.secret, &sealed);
        if (nrc == NS_OK) {
            OPENSSL_cleanse(u.secret, strlen(u.secret));
            free(u.secret);
            u.secret = sealed;
            u.updated_ms = ctl_now_ms();
            nrc = ns_user_put(t, &u);
            n++;
        }
        ns_user_rec_free(&u);
    }
    if (nrc == NS_OK)
        nrc = ns_txn_commit(t);
    else if (t)
        ns_txn_abort(t);
    ns_buf_free(&keys);
    ns_store_close(st);
    if (nrc != NS_OK) {
        ctl_err("user seal: %s", ns_strerror(nrc));
        return ctl_exit_for(nrc);
    }
    printf("user seal: %zu secret(s) sealed\n", n);
    return CTL_OK;
}

/* ---- online ---- */

static int ok_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    printf("%s: OK\n", addr);
    return CTL_OK;
}

static int list_reply(session_t *s, const char *addr, const ns_cmd_t *rsp, void *ctx)
{
    cJSON *arr = cJSON_ParseWithLength((const char *)rsp->body, rsp->body_len), *e;
    if (!cJSON_IsArray(arr)) {
        ctl_err("user list: %s sent no user list", addr);
        cJSON_Delete(arr);
        return CTL_FAILED;
    }
    if (!s->json)
        print_user_header();
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(e, "enabled");
        const cJSON *cr = cJSON_GetObjectItemCaseSensitive(e, "createdMs");
        const cJSON *up = cJSON_GetObjectItemCaseSensitive(e, "updatedMs");
        ns_user_rec_t u = {0};
        u.access_key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "accessKey"));
        ns_role_parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "role")), &u.role);
        u.enabled = cJSON_IsTrue(en);
        u.allow = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "allow"));
        u.brokers = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "brokers"));
        u.created_ms = cJSON_IsNumber(cr) ? (int64_t)cr->valuedouble : 0;
        u.updated_ms = cJSON_IsNumber(up) ? (int64_t)up->valuedouble : 0;
        if (u.access_key && u.allow && u.brokers)
            print_user(&u, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "sealed")), s->json);
    }
    cJSON_Delete(arr);
    return CTL_OK;
}

static int online(session_t *s, const user_args_t *a)
{
    request_t r = {0};
    size_t n = 0;
    const char *en = a->enable ? "true" : a->disable ? "false" : NULL;
    const char *pairs[][2] = {{"userAccessKey", a->key}, {"userSecretKey", a->secret},
                              {"role", a->role},         {"enabled", en},
                              {"allow", a->allow},       {"brokers", a->brokers}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i][1]) {
            r.kv[2 * n] = pairs[i][0];
            r.kv[2 * n + 1] = pairs[i][1];
            n++;
        }
    if (strcmp(a->verb, "list") == 0) {
        r.code = NS_REQ_NS_USER_LIST;
        return ctl_ask_one(s, &r, list_reply, NULL);
    }
    r.code = strcmp(a->verb, "add") == 0      ? NS_REQ_NS_USER_ADD
             : strcmp(a->verb, "update") == 0 ? NS_REQ_NS_USER_UPDATE
                                              : NS_REQ_NS_USER_DELETE;
    return ctl_ask_all(s, &r, ok_reply, NULL);
}

int ctl_cmd_user(int argc, char **argv)
{
    user_args_t a = {0};
    session_t s = {0};
    const char *pos[2] = {NULL};
    int n = 0;
    const ctl_opt_t extra[] = {{"--data-dir", &a.data_dir, NULL},
                               {"-d", &a.data_dir, NULL},
                               {"--role", &a.role, NULL},
                               {"--secret", &a.secret, NULL},
                               {"--secret-file", &a.secret_file, NULL},
                               {"--allow", &a.allow, NULL},
                               {"--brokers", &a.brokers, NULL},
                               {"--enable", NULL, &a.enable},
                               {"--disable", NULL, &a.disable},
                               {"--key-file", &a.key_file, NULL},
                               {NULL, NULL, NULL}};
    int rc = ctl_session_init(&s, "user", argc, argv, extra, pos, 1, 2, &n);
    a.verb = pos[0];
    a.key = pos[1];
    if (rc != CTL_OK)
        goto out;
    bool keyed = strcmp(a.verb, "add") == 0 || strcmp(a.verb, "update") == 0 ||
                 strcmp(a.verb, "delete") == 0;
    bool listing = strcmp(a.verb, "list") == 0 || strcmp(a.verb, "refusals") == 0 ||
                   strcmp(a.verb, "seal") == 0;
    rc = CTL_USAGE;
    if ((!keyed && !listing) || (keyed && n != 2) || (listing && n != 1)) {
        ctl_err("user: want add|update|delete KEY, list, seal or refusals");
        goto out;
    }
    if (a.enable && a.disable) {
        ctl_err("user: --enable and --disable exclude each other");
        goto out;
    }
    if (strcmp(a.verb, "add") == 0 && (a.role == NULL || (!a.secret && !a.secret_file))) {
        ctl_err("user add: --role and --secret (or --secret-file) are required");
        goto out;
    }
    if ((strcmp(a.verb, "refusals") == 0 || strcmp(a.verb, "seal") == 0) && a.data_dir == NULL) {
        rc = ctl_missing(a.verb[0] == 'r' ? "user refusals" : "user seal", "data-dir");
        goto out;
    }
    if (strcmp(a.verb, "seal") == 0 && a.key_file == NULL) {
        rc = ctl_missing("user seal", "key-file");
        goto out;
    }
    if (a.key_file && a.data_dir == NULL) {
        ctl_err("user: --key-file is for offline use; online, the server seals with its "
                "authKeyFile");
        goto out;
    }
    if (a.key_file) {
        char err[256];
        if (ns_seal_key_load(a.key_file, a.seal_key, err, sizeof err) != NS_OK) {
            ctl_err("user: %s", err);
            rc = CTL_IO;
            goto out;
        }
        a.have_key = true;
    }
    if ((rc = load_secret(&a)) != CTL_OK)
        goto out;
    if (a.data_dir && strcmp(a.verb, "seal") == 0)
        rc = seal_all(&a);
    else if (a.data_dir)
        rc = listing ? offline_read(&a, s.json) : offline_write(&a);
    else
        rc = online(&s, &a);
out:
    OPENSSL_cleanse(a.seal_key, sizeof a.seal_key);
    if (a.secret_buf) {
        OPENSSL_cleanse(a.secret_buf, strlen(a.secret_buf));
        free(a.secret_buf);
    }
    ctl_session_free(&s);
    return rc;
}
