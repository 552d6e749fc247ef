/* auth.h - who may send which request (authMode), checked once per request
 * by the dispatcher (ns_auth_check), with RocketMQ's own request signatures
 * (include/ns/sign.h) and the users of the store (ns_user_*).
 *
 * authMode (mutable at runtime):
 *   off     nothing is checked, signatures are ignored (Java's behaviour);
 *           only the user-management requests need an admin (see below)
 *   writes  reads are open; broker requests (REGISTER_BROKER,
 *           UNREGISTER_BROKER, BROKER_HEARTBEAT, REGISTER_TOPIC_IN_NAMESRV)
 *           need role broker (or admin), and a broker user only under the
 *           broker names it is granted (for REGISTER_TOPIC_IN_NAMESRV: the
 *           names of its queue data, any cluster); every other write (perms, topic
 *           deletion, KV writes, UPDATE_NAMESRV_CONFIG) needs admin
 *   all     as writes, and reads need at least role client
 * In writes and all, a request that carries an AccessKey is verified even
 * where none is needed: a bad signature is refused, not ignored.
 * The user-management requests (NS_REQ_NSUSER_*) need an admin in every
 * mode; the one exception is bootstrapping: while the store holds no
 * enabled admin user, an unsigned request over a socket whose own peer is
 * on loopback may add users (never one renamed by a PROXY header: a
 * balancer on this host forwards remote clients, and a header claims what
 * its sender likes).
 * Turning authMode on (at start, or UPDATE_NAMESRV_CONFIG) needs an enabled
 * admin user in the store: without one, no one could sign the request that
 * turns it off again (ns_auth_may_enable).
 *
 * A broker acts only for itself (ns_auth_self_t, in every mode): a request
 * naming a broker address (clusterName, brokerAddr) that is registered
 * speaks for it only when
 *   writes/all: the caller is an admin, or a broker user granted the broker
 *     name and cluster the address registered under (not merely the names
 *     the request carries);
 *   off: the request comes over the connection the address registered over
 *     (a Java broker sends all its requests to a name server over one
 *     channel), or from the host the address names.
 * Java checks none of this; docs/security.md ("A broker acts only for itself") says
 * why we do.
 *
 * Refusals answer NO_PERMISSION with a remark naming what was missing,
 * never the secret and never whether the access key exists; they are
 * counted (namesrv_auth_refusals_total{reason}: metrics.h), logged (at most
 * one line a second), recorded in the admin audit trail (trail.h: at most
 * AUTH_AUDIT_PER_S a second, the rest counted) and, after a few failures
 * from one address, answered late (a penalty per address). */
#ifndef NS_AUTH_H
#define NS_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/remoting.h"
#include "ns/seal.h"
#include "ns/store.h"
#include "core/request.h"

typedef enum { NS_AUTH_OFF = 0, NS_AUTH_WRITES, NS_AUTH_ALL } ns_auth_mode_t;

/* What a request row needs (its column in the dispatch table). */
typedef enum {
    NS_NEED_READ = 0,     /* client in all, nothing otherwise */
    NS_NEED_BROKER,       /* broker (or admin) in writes/all */
    NS_NEED_BROKER_NAMED, /* as BROKER, and brokerName/clusterName granted */
    NS_NEED_BROKER_TOPIC, /* as BROKER, and every brokerName of the queueDatas
                             in the body granted (REGISTER_TOPIC_IN_NAMESRV) */
    NS_NEED_ADMIN,        /* admin in writes/all */
    NS_NEED_USERS,        /* admin in every mode (bootstrap exception) */
} ns_auth_need_t;

/* What a row that names a broker address asks of its caller, besides its
 * role (a column of the dispatch table; "speaks for" as above). */
typedef enum {
    NS_SELF_NONE = 0, /* names no broker address */
    NS_SELF_ACT,      /* refused unless the caller speaks for the address
                         (UNREGISTER_BROKER, BROKER_HEARTBEAT) */
    NS_SELF_REFRESH,  /* answered either way; req->speaks_for tells whether
                         it may refresh the address's liveness
                         (QUERY_DATA_VERSION) */
    NS_SELF_CLAIM,    /* refused when the address registered under another
                         broker name and the caller does not speak for it
                         (REGISTER_BROKER: a broker re-registering under its
                         own name over a new connection is let through) */
} ns_auth_self_t;

/* ---- pure policy (auth_policy.c) ---- */

/* "off" | "writes" | "all" -> mode; NS_EINVAL otherwise. */
int ns_auth_mode_parse(const char *s, ns_auth_mode_t *out);
const char *ns_auth_mode_name(ns_auth_mode_t m);
/* The least role a request needs in a mode; 0 = none (anyone). */
ns_role_t ns_auth_required_role(ns_auth_mode_t mode, ns_auth_need_t need);
/* True when role r satisfies `need`: admin everything; broker the broker
 * and read rows; client the read rows. */
bool ns_auth_role_allows(ns_role_t r, ns_auth_need_t need);
/* True when ip (numeric, no port) matches the allowlist: ','-separated
 * addresses or CIDR blocks (IPv4 or IPv6; IPv4-mapped IPv6 peers match
 * IPv4 entries), "*" any; an empty list allows any address. */
bool ns_auth_addr_allowed(const char *allow, const char *ip);
/* True when the ','-separated grants allow broker `name` of `cluster`:
 * "NAME" (any cluster), "CLUSTER/NAME", "CLUSTER/" + "*", "*". A NULL
 * cluster (the request names none) matches any CLUSTER part. */
bool ns_auth_broker_granted(const char *grants, const char *cluster, const char *name);
/* The IP part of a peer name "ip:port" (conn.c) into out. */
void ns_auth_peer_ip(const char *peer, char *out, size_t outlen);
/* True when the broker address addr ("ip:port", "[v6]:port") names the
 * host ip (numeric, no port; IPv4-mapped peers match IPv4 addresses).
 * Host names are not resolved: false. */
bool ns_auth_same_host(const char *ip, const char *addr);
/* True for 127.0.0.0/8, ::1 and ::ffff:127.x. */
bool ns_auth_is_loopback(const char *ip);
/* Reply delay for the n-th failure in a row from one address, ms: none
 * for the first three, then 100 ms doubling, at most max_ms. */
uint64_t ns_auth_penalty_ms(uint32_t failures, uint64_t max_ms);

/* ---- the server's side (auth.c) ---- */

typedef struct ns_auth ns_auth_t;

/* The mode every loop reads (atomic; set on the main loop). */
void ns_auth_set_mode(ns_auth_mode_t m);
ns_auth_mode_t ns_auth_mode(void);

/* Allocates srv->auth (main loop) and loads authKeyFile when set, after
 * checking that the mode in force may be on (ns_auth_may_enable). NS_OK,
 * NS_ENOMEM, NS_EPERM, the store's or the key file's error (NS_EIO,
 * NS_EINVAL) with why in err. */
int ns_auth_init(ns_server_t *srv, char *err, size_t errlen);
/* The key secrets are sealed with (include/ns/seal.h), or NULL when
 * authKeyFile is not set. */
const uint8_t *ns_auth_seal_key(const ns_server_t *srv);
/* Closes the penalty timer and drops pending late replies (at shutdown);
 * ns_auth_free after the loop has ended. */
void ns_auth_stop(ns_server_t *srv);
void ns_auth_free(ns_server_t *srv);

/* NS_OK when authMode may be `mode`: off always, writes and all only while
 * the store holds an enabled admin user; NS_EPERM otherwise, or the store's
 * error, with why in err. Main loop (or before the loops run). */
int ns_auth_may_enable(ns_server_t *srv, ns_auth_mode_t mode, char *err, size_t errlen);

/* On an I/O loop, before it serves a row of its own (NS_ROW_ANY_LOOP):
 * true when the request passes the check with nothing only the main loop
 * has, i.e. an unsigned request the mode lets through, or a signature that
 * verifies for an enabled user whose address and role allow the row; the
 * user is read in the loop's own read transaction and a sealed secret
 * opened into the loop's own cache (loop->auth, allocated here, freed by
 * ns_auth_loop_free), so checks on different loops share no lock. false:
 * the main loop's ns_auth_check decides (refusals are counted, logged,
 * recorded and delayed there only). Rows that name a broker (self) or
 * need more than a role always go to the main loop. */
bool ns_auth_check_here(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd, ns_auth_need_t need,
                        ns_auth_self_t self);
/* Frees what ns_auth_check_here kept on loop (its thread, at its end). */
void ns_auth_loop_free(ns_loop_t *loop);

/* The one check of the dispatcher, for the request req of row `name`: the
 * role `need` asks in the mode in force, and what `self` asks (in every
 * mode; sets req->speaks_for). True: go on with the handler. False: the
 * request was refused and answered (or will be, after the penalty). */
bool ns_auth_check(ns_req_t *req, const char *name, ns_auth_need_t need, ns_auth_self_t self);

#endif
