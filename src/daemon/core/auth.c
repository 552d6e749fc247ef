/* auth.c - the dispatcher's one authentication and authorization check
 * (auth.h) and what a refusal does: count, log (rate-limited), record in
 * the admin audit trail (rate-limited), and answer NO_PERMISSION, late when
 * the address keeps failing.
 *
 * The full check runs on the main loop only, so the penalty table, the
 * refusal counters and log, and the writer are touched by one thread. An
 * extra I/O loop first tries ns_auth_check_here on the rows it serves
 * itself: only a request that passes is served there (its own read
 * transaction, its own cache of opened secrets, its own counters); anything
 * else goes to the main loop, which checks it again and refuses it. A
 * refusal's record goes to the admin audit trail (trail_refused.h,
 * ns_trail_refused_auth).
 *
 * Order of the checks, so a remark never tells whether a key exists: the
 * signature is checked first (an unknown key is checked against a dummy
 * secret, so both paths cost one HMAC, and disabled users fail the same
 * way), then the source address, then the role, then the broker name; the
 * last three are only reported to someone who proved they hold the secret.
 *
 * With authKeyFile the stored secrets are sealed (include/ns/seal.h); each
 * is opened once and kept in memory (OPENED_SLOTS, keyed by access key and
 * the sealed text, so a changed secret is opened again): the server holds
 * the secrets in memory either way. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/auth.h"
#include "core/liveness.h"
#include "ns/body.h"
#include "ns/codes.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/sign.h"
#include "core/request.h"
#include "core/trail_refused.h"

#define PENALTY_SLOTS 256       /* addresses remembered */
#define PENALTY_FORGET_MS 60000 /* a quiet minute clears an address */
#define LATE_MAX 1024           /* late replies pending; beyond: close the conn */
#define AUTH_AUDIT_PER_S 20     /* refusal records written a second at most */
#define OPENED_SLOTS 64         /* sealed secrets kept opened (direct-mapped) */

typedef struct {
    char ip[48];
    uint32_t failures;
    uint64_t last_ms;
} penalty_t;

typedef struct {
    ns_reply_to_t to;
    uint64_t due_ms;
    char remark[200];
} late_t;

/* An opened sealed secret: valid while the stored text is the same. */
typedef struct {
    char *ak, *sealed, *plain;
} opened_t;

/* What a signature check writes: one per loop that checks (the main loop's
 * in ns_auth, an I/O loop's behind loop->auth). */
struct ns_auth_cache {
    opened_t opened[OPENED_SLOTS];
    ns_buf_t scratch;
};

struct ns_auth {
    struct ns_auth_cache cache;
    penalty_t pen[PENALTY_SLOTS];
    late_t *late;
    size_t n_late;
    uv_timer_t timer;
    bool timer_init;
    uint64_t log_ms, log_suppressed;
    uint64_t audit_window_ms, audit_in_window, audit_suppressed;
    uint8_t seal_key[NS_SEAL_KEY_BYTES];
    bool have_key;
    bool warned_no_key;
};

static _Atomic int auth_mode = NS_AUTH_OFF;

void ns_auth_set_mode(ns_auth_mode_t m)
{
    atomic_store(&auth_mode, (int)m);
}

ns_auth_mode_t ns_auth_mode(void)
{
    return (ns_auth_mode_t)atomic_load(&auth_mode);
}

int ns_auth_init(ns_server_t *srv, char *err, size_t errlen)
{
    /* the mode from the flags or the file: not one that locks everyone out */
    int rc = ns_auth_may_enable(srv, ns_auth_mode(), err, errlen);
    if (rc != NS_OK)
        return rc;
    srv->auth = calloc(1, sizeof *srv->auth);
    if (srv->auth == NULL) {
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    srv->auth->late = calloc(LATE_MAX, sizeof *srv->auth->late);
    if (srv->auth->late == NULL) {
        free(srv->auth);
        srv->auth = NULL;
        snprintf(err, errlen, "out of memory");
        return NS_ENOMEM;
    }
    const char *kf = srv->loop.cfg->auth_key_file;
    if (kf && *kf) {
        rc = ns_seal_key_load(kf, srv->auth->seal_key, err, errlen);
        if (rc != NS_OK) {
            free(srv->auth->late);
            free(srv->auth);
            srv->auth = NULL;
            return rc;
        }
        srv->auth->have_key = true;
    }
    uv_timer_init(srv->loop.uv, &srv->auth->timer);
    srv->auth->timer.data = srv;
    srv->auth->timer_init = true;
    return NS_OK;
}

void ns_auth_stop(ns_server_t *srv)
{
    ns_auth_t *a = srv->auth;
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n_late; i++)
        ns_conn_unref(a->late[i].to.conn);
    a->n_late = 0;
    if (a->timer_init && !uv_is_closing((uv_handle_t *)&a->timer))
        uv_close((uv_handle_t *)&a->timer, NULL);
}

static void opened_clear(opened_t *o)
{
    if (o->plain)
        OPENSSL_cleanse(o->plain, strlen(o->plain));
    free(o->ak);
    free(o->sealed);
    free(o->plain);
    memset(o, 0, sizeof *o);
}

/* The secret behind a sealed one, opened once and kept while the stored
 * text stays the same (AES-GCM per request costs more than the HMAC).
 * Borrowed from the cache until the next call; NULL when it cannot be
 * opened. */
static const char *open_sealed(const ns_auth_t *a, struct ns_auth_cache *c, const char *ak,
                               const char *sealed)
{
    uint32_t h = 2166136261u;
    for (const char *p = ak; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    opened_t *o = &c->opened[h % OPENED_SLOTS];
    if (o->ak && strcmp(o->ak, ak) == 0 && strcmp(o->sealed, sealed) == 0)
        return o->plain;
    char *plain = NULL;
    if (!a->have_key || ns_unseal(a->seal_key, ak, sealed, &plain) != NS_OK)
        return NULL;
    opened_clear(o);
    o->ak = strdup(ak);
    o->sealed = strdup(sealed);
    o->plain = plain;
    if (o->ak == NULL || o->sealed == NULL) {
        opened_clear(o);
        return NULL;
    }
    return o->plain;
}

const uint8_t *ns_auth_seal_key(const ns_server_t *srv)
{
    return srv->auth && srv->auth->have_key ? srv->auth->seal_key : NULL;
}

static void cache_clear(struct ns_auth_cache *c)
{
    for (size_t i = 0; i < OPENED_SLOTS; i++)
        opened_clear(&c->opened[i]);
    ns_buf_free(&c->scratch);
}

void ns_auth_free(ns_server_t *srv)
{
    if (srv->auth == NULL)
        return;
    OPENSSL_cleanse(srv->auth->seal_key, sizeof srv->auth->seal_key);
    cache_clear(&srv->auth->cache);
    free(srv->auth->late);
    free(srv->auth);
    srv->auth = NULL;
}

void ns_auth_loop_free(ns_loop_t *loop)
{
    if (loop->auth == NULL)
        return;
    cache_clear(loop->auth);
    free(loop->auth);
    loop->auth = NULL;
}

/* ---- late replies ---- */

static void late_cb(uv_timer_t *t)
{
    ns_server_t *srv = t->data;
    ns_auth_t *a = srv->auth;
    uint64_t now = uv_now(srv->loop.uv), next = 0;
    for (size_t i = 0; i < a->n_late;) {
        late_t *l = &a->late[i];
        if (l->due_ms <= now) {
            ns_reply_code(&l->to, NS_RSP_NO_PERMISSION, l->remark);
            ns_conn_unref(l->to.conn);
            a->late[i] = a->late[--a->n_late];
            continue;
        }
        if (next == 0 || l->due_ms < next)
            next = l->due_ms;
        i++;
    }
    if (next)
        uv_timer_start(&a->timer, late_cb, next - now, 0);
}

static void reply_late(ns_server_t *srv, ns_conn_t *conn, const ns_reply_to_t *to,
                       const char *remark, uint64_t delay_ms)
{
    ns_auth_t *a = srv->auth;
    if (a->n_late == LATE_MAX) {
        ns_conn_close(conn, "too many refused requests waiting for their penalty");
        return;
    }
    late_t *l = &a->late[a->n_late++];
    l->to = *to;
    ns_conn_ref(l->to.conn);
    l->due_ms = uv_now(srv->loop.uv) + delay_ms;
    snprintf(l->remark, sizeof l->remark, "%s", remark);
    uint64_t due = uv_timer_get_due_in(&a->timer);
    if (!uv_is_active((uv_handle_t *)&a->timer) || delay_ms < due)
        uv_timer_start(&a->timer, late_cb, delay_ms, 0);
    NS_M_INC(srv->loop.m.auth_delayed);
}

/* The penalty slot of ip (a free or the least recent one when new). */
static penalty_t *penalty_of(ns_auth_t *a, const char *ip, uint64_t now)
{
    penalty_t *oldest = &a->pen[0];
    for (size_t i = 0; i < PENALTY_SLOTS; i++) {
        penalty_t *p = &a->pen[i];
        if (p->ip[0] && strcmp(p->ip, ip) == 0) {
            if (now - p->last_ms > PENALTY_FORGET_MS)
                p->failures = 0;
            return p;
        }
        if (p->ip[0] == 0 || p->last_ms < oldest->last_ms)
            oldest = p;
    }
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->ip, sizeof oldest->ip, "%s", ip);
    return oldest;
}

/* ---- the record of a refusal ---- */

/* One record in the admin audit trail (trail.h), at most AUTH_AUDIT_PER_S
 * a second; the detail says which check refused, the access key as sent
 * (never the secret: the Signature field is redacted) and how many
 * refusals went unrecorded since the last record. */
static void record(ns_req_t *req, const char *ak, const char *why, int reason)
{
    ns_server_t *srv = req->loop->main; /* checks run on the main loop only */
    ns_auth_t *a = srv->auth;
    uint64_t now = uv_now(srv->loop.uv);
    if (now - a->audit_window_ms >= 1000) {
        a->audit_window_ms = now;
        a->audit_in_window = 0;
    }
    if (a->audit_in_window >= AUTH_AUDIT_PER_S) {
        a->audit_suppressed++;
        NS_M_INC(srv->loop.m.auth_unrecorded);
        return;
    }
    a->audit_in_window++;
    ns_buf_t d = NS_BUF_INIT;
    int rc =
        ns_buf_printf(&d, "{\"auth\":\"%s\",\"accessKey\":", ns_metrics_auth_reason_name(reason));
    if (ak) /* a key is at most 128 characters (ns_user_validate) */
        rc = rc ? rc : ns_buf_append_json_str(&d, ak, strnlen(ak, 128), false);
    else
        rc = rc ? rc : ns_buf_append_str(&d, "null");
    rc = rc ? rc
            : ns_buf_printf(&d, ",\"unrecordedBefore\":%llu}",
                            (unsigned long long)a->audit_suppressed);
    rc = rc ? rc : ns_buf_append_u8(&d, 0);
    if (rc != NS_OK) {
        a->audit_suppressed++;
        NS_M_INC(srv->loop.m.auth_unrecorded);
    } else {
        ns_trail_refused_auth(req, NS_RSP_NO_PERMISSION, why, (const char *)d.data);
        a->audit_suppressed = 0;
    }
    ns_buf_free(&d);
}

/* A printable copy of peer-chosen text for the log (control bytes -> '?'). */
static const char *printable(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < n; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[i] = 0;
    return buf;
}

/* Counts, logs, records and answers one refusal. */
static void refuse(ns_req_t *req, const char *name, const char *ak, const char *why, int reason)
{
    ns_server_t *srv = req->loop->main; /* checks run on the main loop only */
    ns_conn_t *conn = req->conn;
    ns_auth_t *a = srv->auth;
    uint64_t now = uv_now(srv->loop.uv);
    NS_M_INC(srv->loop.m.auth_refused[reason]);
    if (a->log_ms == 0 || now - a->log_ms >= 1000) {
        char akp[72], whyp[256];
        NS_LOG_WARN("conn %s: refused %s (AccessKey %s): %s%s", ns_conn_peer(conn), name,
                    ak ? printable(ak, akp, sizeof akp) : "-", printable(why, whyp, sizeof whyp),
                    a->log_suppressed ? " (and more refusals since the last line)" : "");
        a->log_ms = now;
        a->log_suppressed = 0;
    } else {
        a->log_suppressed++;
    }
    record(req, ak, why, reason);
    char ip[48];
    ns_auth_peer_ip(ns_conn_peer(conn), ip, sizeof ip);
    penalty_t *p = penalty_of(a, ip, now);
    p->failures++;
    p->last_ms = now;
    const ns_reply_to_t to = req->to;
    int64_t max = srv->loop.cfg->auth_penalty_max_ms;
    uint64_t delay = ns_auth_penalty_ms(p->failures, max > 0 ? (uint64_t)max : 0);
    if (delay && !to.oneway)
        reply_late(srv, conn, &to, why, delay);
    else
        ns_reply_code(&to, NS_RSP_NO_PERMISSION, why);
}

/* ---- the check ---- */

static const char DUMMY_SECRET[] = "ns-auth-no-such-user-dummy-secret";

/* Looks the user up in loop's read transaction and checks the signature
 * with cache c (the loop's). NS_OK and *u filled (caller frees) when it
 * verifies; NS_EPERM otherwise, with no hint why; *unopened set when the
 * user's secret is sealed and could not be opened. */
static int verify_on(ns_loop_t *loop, const ns_auth_t *a, struct ns_auth_cache *c,
                     const ns_cmd_t *cmd, const char *ak, ns_user_rec_t *u, bool *unopened)
{
    const char *sig = ns_cmd_ext_get(cmd, NS_SIGN_SIGNATURE);
    ns_txn_t *txn = NULL;
    const char *opened = NULL; /* the secret, when the store keeps it sealed */
    *unopened = false;
    int rc = ns_read_begin(loop, &txn);
    if (rc != NS_OK)
        return rc;
    rc = ns_user_get(txn, ak, u);
    ns_read_end(loop);
    if (rc != NS_OK && rc != NS_ENOTFOUND)
        return rc;
    bool have = rc == NS_OK, usable = have;
    if (have && ns_sealed(u->secret)) {
        opened = open_sealed(a, c, ak, u->secret);
        *unopened = opened == NULL;
        usable = opened != NULL; /* otherwise it fails like an unknown key */
    }
    char want[NS_SIGN_B64_LEN + 1];
    const char *secret = opened ? opened : usable ? u->secret : DUMMY_SECRET;
    rc = ns_sign_compute(cmd, secret, &c->scratch, want);
    ns_buf_reset(&c->scratch);
    bool ok = rc == NS_OK && sig != NULL && ns_sign_equal(want, sig, strlen(sig));
    if (ok && usable && u->enabled)
        return NS_OK;
    if (have)
        ns_user_rec_free(u);
    return rc != NS_OK ? rc : NS_EPERM;
}

/* verify_on for the main loop, which also says once that a sealed secret
 * cannot be opened. */
static int verify(ns_server_t *srv, const ns_cmd_t *cmd, const char *ak, ns_user_rec_t *u)
{
    ns_auth_t *a = srv->auth;
    bool unopened = false;
    int rc = verify_on(&srv->loop, a, &a->cache, cmd, ak, u, &unopened);
    if (unopened && !a->warned_no_key) {
        NS_LOG_ERROR("auth: the secret of '%s' is sealed and cannot be opened (%s); "
                     "check authKeyFile",
                     ak, a->have_key ? "wrong key or damaged record" : "no authKeyFile set");
        a->warned_no_key = true;
    }
    return rc;
}

/* REGISTER_TOPIC_IN_NAMESRV by a broker user: the first broker name of the
 * body's queue data it is not granted (copied into buf), or NULL when all
 * are. A body that does not decode is left to the handler's answer. */
static const char *body_broker_not_granted(const ns_cmd_t *cmd, const char *grants, char *buf,
                                           size_t n)
{
    ns_queue_data_t *q = NULL;
    size_t nq = 0;
    const char *bad = NULL;
    if (cmd->body_len == 0 ||
        ns_json_queue_datas_decode(cmd->body, cmd->body_len, &q, &nq) != NS_OK)
        return NULL;
    for (size_t i = 0; bad == NULL && i < nq; i++)
        if (!ns_auth_broker_granted(grants, NULL, q[i].broker_name)) {
            snprintf(buf, n, "%s", q[i].broker_name);
            bad = buf;
        }
    ns_queue_datas_free(q, nq);
    return bad;
}

/* Stops the walk at the first enabled admin user. */
static int admin_cb(const ns_user_rec_t *u, void *ctx)
{
    return u->role == NS_ROLE_ADMIN && u->enabled ? 1 : 0;
}

/* True while no enabled admin user exists (online bootstrap); false when
 * the store cannot tell. */
static bool no_admin_yet(ns_server_t *srv)
{
    ns_txn_t *txn = NULL;
    if (ns_read_begin(&srv->loop, &txn) != NS_OK)
        return false;
    int rc = ns_user_iter(txn, admin_cb, NULL);
    ns_read_end(&srv->loop);
    return rc == NS_OK;
}

int ns_auth_may_enable(ns_server_t *srv, ns_auth_mode_t mode, char *err, size_t errlen)
{
    ns_txn_t *txn = NULL;
    if (mode == NS_AUTH_OFF)
        return NS_OK;
    /* its own transaction: this also runs at start, before the loop reads */
    int rc = ns_txn_begin(srv->loop.store, false, &txn);
    if (rc == NS_OK) {
        rc = ns_user_iter(txn, admin_cb, NULL);
        ns_txn_abort(txn);
    }
    if (rc == 1)
        return NS_OK;
    if (rc == NS_OK) {
        snprintf(err, errlen,
                 "authMode=%s needs an enabled admin user in the store (none could sign the "
                 "request that turns it off again): add one first, e.g. namesrvctl user add "
                 "NAME --role admin --secret SECRET, online from this host while authMode is "
                 "off, or offline with --data-dir",
                 ns_auth_mode_name(mode));
        return NS_EPERM;
    }
    snprintf(err, errlen, "authMode=%s: cannot read the users from the store: %s",
             ns_auth_mode_name(mode), ns_strerror(rc));
    return rc;
}

/* Whether the caller speaks for the broker address req names (auth.h);
 * u is the verified user, NULL for an unsigned request (or authMode off,
 * where signatures are not looked at). Refuses the request (and returns
 * false) when `self` asks for it; sets req->speaks_for either way. */
static bool check_self(ns_req_t *req, const char *name, const char *ak, const ns_user_rec_t *u,
                       ns_auth_self_t self, ns_auth_mode_t mode)
{
    const ns_cmd_t *cmd = req->cmd;
    const char *cluster = ns_cmd_ext_get(cmd, "clusterName");
    const char *addr = ns_cmd_ext_get(cmd, "brokerAddr");
    req->speaks_for = true;
    /* a missing field is the dispatcher's answer; an address nobody
     * registered has nothing to protect */
    ns_live_entry_t *e =
        cluster && addr ? ns_liveness_get(req->loop->main->liveness, cluster, addr) : NULL;
    req->self_live = e;
    req->self_looked = cluster && addr;
    if (e == NULL)
        return true;
    const char *bname = ns_cmd_ext_get(cmd, "brokerName");
    if (self == NS_SELF_CLAIM && bname && e->broker_name && strcmp(bname, e->broker_name) == 0)
        return true;
    bool ok;
    if (mode == NS_AUTH_OFF) {
        char ip[48];
        ns_auth_peer_ip(ns_conn_peer(req->conn), ip, sizeof ip);
        ok = (req->conn && e->conn == req->conn) || ns_auth_same_host(ip, e->addr);
    } else {
        ok = u && (u->role == NS_ROLE_ADMIN ||
                   (u->role == NS_ROLE_BROKER &&
                    ns_auth_broker_granted(u->brokers, e->cluster, e->broker_name)));
    }
    req->speaks_for = ok;
    if (ok || self == NS_SELF_REFRESH)
        return true;
    char why[320];
    snprintf(why, sizeof why,
             "broker address %.60s in cluster '%.40s' is registered by broker "
             "'%.60s'; %s",
             e->addr, e->cluster, e->broker_name ? e->broker_name : "",
             mode == NS_AUTH_OFF ? "this connection did not register it and is not on its host"
             : u                 ? "this AccessKey is not granted that broker"
                 : "only a signed request of a user granted that broker speaks for it");
    refuse(req, name, ak, why, NS_M_AUTH_BROKER_ADDRESS);
    return false;
}

bool ns_auth_check(ns_req_t *req, const char *name, ns_auth_need_t need, ns_auth_self_t self)
{
    ns_conn_t *conn = req->conn;
    const ns_cmd_t *cmd = req->cmd;
    ns_auth_mode_t mode = ns_auth_mode();
    /* An I/O loop (no auth state) serves only route lookups it took while
     * the mode was off; one that raced the switch is let through. */
    ns_server_t *srv = ns_server_at(req->loop);
    if (srv == NULL || srv->auth == NULL)
        return true;
    if (mode == NS_AUTH_OFF && need != NS_NEED_USERS)
        return self == NS_SELF_NONE || check_self(req, name, NULL, NULL, self, mode);
    ns_role_t want = ns_auth_required_role(mode, need);
    const char *ak = ns_cmd_ext_get(cmd, NS_SIGN_ACCESS_KEY);
    char why[200];
    char ip[48];
    ns_auth_peer_ip(ns_conn_peer(conn), ip, sizeof ip);
    NS_M_INC(srv->loop.m.auth_checked);
    if (ak != NULL && *ak == 0)
        ak = NULL; /* names no user: what a C++ client without credentials sends */
    if (ak == NULL) {
        if (want == 0)
            return self == NS_SELF_NONE || check_self(req, name, NULL, NULL, self, mode);
        /* the socket's own peer only: a PROXY header's claim is never local */
        if (need == NS_NEED_USERS && !ns_conn_peer_claimed(conn) && ns_auth_is_loopback(ip) &&
            no_admin_yet(srv))
            return true;
        snprintf(why, sizeof why,
                 "%s needs a signed request (AccessKey and Signature) of a user with role %s", name,
                 ns_role_name(want));
        refuse(req, name, NULL, why, NS_M_AUTH_UNSIGNED);
        return false;
    }
    ns_user_rec_t u;
    int rc = verify(srv, cmd, ak, &u);
    if (rc != NS_OK) {
        snprintf(why, sizeof why,
                 rc == NS_EPERM ? "signature check failed for this AccessKey (unknown key, wrong "
                                  "secret or disabled user)"
                                : "cannot check the signature: store unavailable");
        refuse(req, name, ak, why,
               rc == NS_EPERM ? NS_M_AUTH_BAD_SIGNATURE : NS_M_AUTH_STORE_ERROR);
        return false;
    }
    bool ok = false;
    const char *b = NULL, *broker = ns_cmd_ext_get(cmd, "brokerName");
    const char *cluster = ns_cmd_ext_get(cmd, "clusterName");
    char bname[64];
    if (!ns_auth_addr_allowed(u.allow, ip)) {
        snprintf(why, sizeof why, "source address %s is not allowed for this AccessKey", ip);
        refuse(req, name, ak, why, NS_M_AUTH_ADDRESS);
    } else if (want != 0 && !ns_auth_role_allows(u.role, need)) {
        snprintf(why, sizeof why, "%s needs role %s; this AccessKey has role %s", name,
                 ns_role_name(want), ns_role_name(u.role));
        refuse(req, name, ak, why, NS_M_AUTH_ROLE);
    } else if (want != 0 && need == NS_NEED_BROKER_TOPIC && u.role == NS_ROLE_BROKER &&
               (b = body_broker_not_granted(cmd, u.brokers, bname, sizeof bname)) != NULL) {
        snprintf(why, sizeof why, "this AccessKey is not granted broker name '%.60s'", b);
        refuse(req, name, ak, why, NS_M_AUTH_BROKER_NAME);
    } else if (want != 0 && need == NS_NEED_BROKER_NAMED && u.role == NS_ROLE_BROKER &&
               !ns_auth_broker_granted(u.brokers, cluster ? cluster : "", broker)) {
        snprintf(why, sizeof why,
                 "this AccessKey is not granted broker name '%.60s' in cluster '%.60s'",
                 broker ? broker : "", cluster ? cluster : "");
        refuse(req, name, ak, why, NS_M_AUTH_BROKER_NAME);
    } else {
        ok = self == NS_SELF_NONE || check_self(req, name, ak, &u, self, mode);
    }
    ns_user_rec_free(&u);
    return ok;
}

bool ns_auth_check_here(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd, ns_auth_need_t need,
                        ns_auth_self_t self)
{
    ns_auth_mode_t mode = ns_auth_mode();
    const ns_auth_t *a = loop->main ? loop->main->auth : NULL;
    if (a == NULL || self != NS_SELF_NONE || need == NS_NEED_USERS ||
        need == NS_NEED_BROKER_NAMED || need == NS_NEED_BROKER_TOPIC)
        return false;
    if (mode == NS_AUTH_OFF)
        return true;
    ns_role_t want = ns_auth_required_role(mode, need);
    const char *ak = ns_cmd_ext_get(cmd, NS_SIGN_ACCESS_KEY);
    if (ak == NULL || *ak == 0) {
        if (want != 0)
            return false; /* refused: by the main loop */
        NS_M_INC(loop->m.auth_checked);
        return true;
    }
    if (loop->auth == NULL && (loop->auth = calloc(1, sizeof *loop->auth)) == NULL)
        return false;
    ns_user_rec_t u;
    bool unopened = false;
    if (verify_on(loop, a, loop->auth, cmd, ak, &u, &unopened) != NS_OK)
        return false;
    char ip[48];
    ns_auth_peer_ip(ns_conn_peer(conn), ip, sizeof ip);
    bool ok = ns_auth_addr_allowed(u.allow, ip) && (want == 0 || ns_auth_role_allows(u.role, need));
    ns_user_rec_free(&u);
    if (ok)
        NS_M_INC(loop->m.auth_checked);
    return ok;
}
