/* users.c - the users table (v6): access key -> packed user record
 * (store/keys.h). Secrets are kept as they are; see ns_user_rec_t in
 * include/ns/store.h for why. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "internal.h"
#include "ns/seal.h"

#define USER_REC_VERSION 1

static const char *const role_names[] = {NULL, "client", "broker", "admin"};

const char *ns_role_name(ns_role_t r)
{
    return r >= NS_ROLE_CLIENT && r <= NS_ROLE_ADMIN ? role_names[r] : "none";
}

int ns_role_parse(const char *s, ns_role_t *out)
{
    for (int r = NS_ROLE_CLIENT; r <= NS_ROLE_ADMIN; r++)
        if (s && strcmp(s, role_names[r]) == 0) {
            *out = (ns_role_t)r;
            return NS_OK;
        }
    return NS_EINVAL;
}

/* The longest access key a user may have (ns_user_validate). */
#define ACCESS_KEY_MAX 128

static bool all_in(const char *s, const char *set, bool alnum)
{
    for (; s && *s; s++)
        if (!((alnum && isalnum((unsigned char)*s)) || strchr(set, *s)))
            return false;
    return true;
}

int ns_user_validate(const ns_user_rec_t *u, char *err, size_t errlen)
{
    const char *why = NULL;
    size_t akl = u->access_key ? strlen(u->access_key) : 0;
    size_t skl = u->secret ? strlen(u->secret) : 0;
    if (akl == 0 || akl > ACCESS_KEY_MAX || !all_in(u->access_key, "_.@:-", true))
        why = "access key must be 1..128 characters of A-Z a-z 0-9 _ . @ : -";
    else if (!ns_sealed(u->secret) && (skl < 6 || skl > 256))
        why = "secret key must be 6..256 bytes";
    else if (ns_sealed(u->secret) && skl > 512)
        why = "sealed secret too long";
    else if (u->role < NS_ROLE_CLIENT || u->role > NS_ROLE_ADMIN)
        why = "role must be admin, broker or client";
    else if (!all_in(u->allow, "0123456789abcdefABCDEF.:/*, ", false))
        why = "allow: ','-separated IP addresses or CIDR blocks (or *)";
    else if (u->brokers &&
             (strpbrk(u->brokers, " \t\r\n") || !all_in(u->brokers, "_.-/*,%|", true)))
        why = "brokers: ','-separated [CLUSTER/]BROKER names (or *), no blanks";
    if (why && err && errlen)
        snprintf(err, errlen, "%s", why);
    return why ? NS_EINVAL : NS_OK;
}

static void wipe(ns_buf_t *b)
{
    if (b->data)
        OPENSSL_cleanse(b->data, b->cap);
    ns_buf_free(b);
}

static int unpack_user(const char *ak, const uint8_t *v, size_t n, ns_user_rec_t *out)
{
    ns_unpack_t u = {v, v + n, false};
    memset(out, 0, sizeof *out);
    if (ns_unpack_u8(&u) != USER_REC_VERSION)
        return NS_ECORRUPT;
    out->access_key = strdup(ak);
    out->secret = ns_unpack_strdup(&u);
    out->role = (ns_role_t)ns_unpack_u8(&u);
    out->enabled = ns_unpack_u8(&u) != 0;
    out->allow = ns_unpack_strdup(&u);
    out->brokers = ns_unpack_strdup(&u);
    out->created_ms = ns_unpack_i64(&u);
    out->updated_ms = ns_unpack_i64(&u);
    bool bad = u.bad || out->access_key == NULL || out->secret == NULL || out->allow == NULL ||
               out->brokers == NULL || out->role < NS_ROLE_CLIENT || out->role > NS_ROLE_ADMIN;
    if (bad) {
        ns_user_rec_free(out);
        return NS_ECORRUPT;
    }
    return NS_OK;
}

int ns_user_get(ns_txn_t *t, const char *access_key, ns_user_rec_t *out)
{
    ns_buf_t k = ns_key_view(access_key);
    ns_slice_t v;
    memset(out, 0, sizeof *out);
    /* a key no user can have (empty, or too long to be an LMDB key) is a
     * peer's text, not the store's trouble: LMDB is not asked (it would
     * answer MDB_BAD_VALSIZE, an internal error) */
    size_t n = strnlen(access_key, ACCESS_KEY_MAX + 1);
    if (n == 0 || n > ACCESS_KEY_MAX)
        return NS_ENOTFOUND;
    int rc = ns_db_get(t, NS_DB_USERS, &k, &v);
    return rc == NS_OK ? unpack_user(access_key, (const uint8_t *)v.ptr, v.len, out) : rc;
}

int ns_user_put(ns_txn_t *t, const ns_user_rec_t *u)
{
    ns_buf_t k = NS_BUF_INIT, v = NS_BUF_INIT;
    int rc = u->access_key && *u->access_key && u->secret && u->role >= NS_ROLE_CLIENT &&
                     u->role <= NS_ROLE_ADMIN
                 ? NS_OK
                 : NS_EINVAL;
    rc = rc ? rc : ns_buf_append_str(&k, u->access_key);
    rc = rc ? rc : ns_pack_u8(&v, USER_REC_VERSION);
    rc = rc ? rc : ns_pack_str(&v, u->secret);
    rc = rc ? rc : ns_pack_u8(&v, (uint8_t)u->role);
    rc = rc ? rc : ns_pack_u8(&v, u->enabled ? 1 : 0);
    rc = rc ? rc : ns_pack_str(&v, u->allow ? u->allow : "");
    rc = rc ? rc : ns_pack_str(&v, u->brokers ? u->brokers : "");
    rc = rc ? rc : ns_pack_i64(&v, u->created_ms);
    rc = rc ? rc : ns_pack_i64(&v, u->updated_ms);
    rc = rc ? rc : ns_db_put(t, NS_DB_USERS, &k, v.data, v.len);
    ns_buf_free(&k);
    wipe(&v);
    return rc;
}

int ns_user_del(ns_txn_t *t, const char *access_key)
{
    ns_buf_t k = ns_key_view(access_key);
    int rc = ns_db_get(t, NS_DB_USERS, &k, NULL);
    return rc == NS_OK ? ns_db_del(t, NS_DB_USERS, &k) : rc;
}

struct user_walk {
    ns_user_cb cb;
    void *ctx;
};

static int user_walk_cb(const char *ks, size_t kl, const uint8_t *v, size_t vl, void *ctx)
{
    struct user_walk *w = ctx;
    ns_user_rec_t u;
    int rc = unpack_user(ks, v, vl, &u);
    if (rc != NS_OK)
        return rc;
    rc = w->cb(&u, w->ctx);
    ns_user_rec_free(&u);
    return rc;
}

int ns_user_iter(ns_txn_t *t, ns_user_cb cb, void *ctx)
{
    MDB_dbi dbi;
    if (ns_dbi(t, NS_DB_USERS, &dbi) != NS_OK)
        return NS_OK; /* schema before v6: no users */
    struct user_walk w = {cb, ctx};
    return ns_db_walk(t, NS_DB_USERS, NULL, user_walk_cb, &w);
}

void ns_user_rec_free(ns_user_rec_t *u)
{
    free(u->access_key);
    if (u->secret) {
        OPENSSL_cleanse(u->secret, strlen(u->secret));
        free(u->secret);
    }
    free(u->allow);
    free(u->brokers);
    memset(u, 0, sizeof *u);
}
