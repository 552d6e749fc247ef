/* notify.h - NOTIFY_MIN_BROKER_ID_CHANGE (905): the one request the name
 * server sends on its own (docs/protocol.md §6.15, Java 5.3.3
 * RouteInfoManager.notifyMinBrokerIdChanged).
 *
 * The registry (writer thread) describes a change of a group's smallest
 * broker id as an ns_minid_change_t (ns/store.h); the loop hands it to the
 * notifier when
 * notifyMinBrokerIdChanged is on. The notifier sends each recipient one
 * one-way 905 over a fresh outbound libuv connection on the main loop and
 * closes it once the frame is written. Nothing here blocks the loop.
 *
 * Bounded, so that whoever may register a group (anyone, with authMode off)
 * cannot make the server a connection flood towards addresses of its
 * choosing by churning the group's smallest id (Java opens one connection
 * per member per change, without limit):
 *  - at most NS_NOTIFY_MAX_PER_CHANGE recipients per change (the members
 *    with the smallest ids; a group has a master and a few slaves);
 *  - a recipient with a notification of the same group still waiting gets
 *    the newer one instead of a second (a 905 states the group's smallest
 *    id now: a newer one supersedes the older);
 *  - connections start at most NS_NOTIFY_STARTS_PER_S a second (bursts of
 *    NS_NOTIFY_STARTS_BURST), NS_NOTIFY_MAX_INFLIGHT at a time, with
 *    NS_NOTIFY_MAX_QUEUED waiting, a connect timeout and a write deadline;
 *  - when its turn comes, a recipient must still be a broker of that group
 *    (the owner's member check, ns_notifier_set_member_check).
 * Each recipient that is tried gets one log line saying what became of its
 * notification; the ones superseded or over a bound are counted in one
 * line a second at most. */
#ifndef NS_NOTIFY_H
#define NS_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ns/buf.h"
#include "ns/store.h"

/* Java's NettyClientConfig.connectTimeoutMillis. */
#define NS_NOTIFY_CONNECT_TIMEOUT_MS 3000
/* From the connection being up to the frame being in the kernel. */
#define NS_NOTIFY_WRITE_DEADLINE_MS 1000
#define NS_NOTIFY_MAX_INFLIGHT 8
#define NS_NOTIFY_MAX_QUEUED 256
#define NS_NOTIFY_MAX_PER_CHANGE 16
#define NS_NOTIFY_STARTS_PER_S 10
#define NS_NOTIFY_STARTS_BURST 10

typedef struct ns_notifier ns_notifier_t;

/* True when addr is (still) a broker of group; borrowed strings. */
typedef bool (*ns_notify_member_fn)(void *ctx, const char *group, const char *addr);

/* A notifier sending on loop; ns_notifier_free() after the loop ended. */
int ns_notifier_new(uv_loop_t *loop, ns_notifier_t **out);
/* Installs the member check asked when a recipient's turn comes (none:
 * every recipient is tried). */
void ns_notifier_set_member_check(ns_notifier_t *n, ns_notify_member_fn fn, void *ctx);
/* Sends c to each of its recipients and frees c (always: also when the
 * notifier is stopped or full; every dropped recipient is logged). */
void ns_notifier_send(ns_notifier_t *n, ns_minid_change_t *c);
/* Abandons what is queued and in flight (each logged) and closes its
 * handles; later sends are dropped. For shutdown, before the loop ends. */
void ns_notifier_stop(ns_notifier_t *n);
void ns_notifier_free(ns_notifier_t *n);

/* Encodes the 905 request for c as Java sends it (JSON header, one-way
 * flag, extFields minBrokerId, minBrokerAddr and, when set,
 * offlineBrokerAddr, haBrokerAddr) with the given opaque, appended to out. */
int ns_notify_encode(const ns_minid_change_t *c, int32_t opaque, ns_buf_t *out);

#endif
