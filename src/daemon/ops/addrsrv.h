/* addrsrv.h - the address server RocketMQ's brokers and clients poll,
 * served on the HTTP listener (addrsrv.c).
 *
 * A broker with fetchNamesrvAddrByAddressServer=true and no namesrvAddr,
 * and a client with no namesrvAddr, fetch their NameServer list with a
 * plain HTTP GET of
 *     http://<rocketmq.namesrv.domain>[:8080]/rocketmq/<subgroup>[-<unit>?nofix=1]
 * (":8080" is added unless the domain has a port; subgroup is
 * rocketmq.namesrv.domain.subgroup, "nsaddr" by default; the unit suffix
 * comes with a client's unitName) and take a 200 body, trimmed and cut at
 * the first line end, as their namesrvAddr "host:port;host:port". Any
 * other status leaves the list they have.
 *
 * What is answered: this server (advertisedAddress, see
 * ns_addrsrv_self_init) and every entry of `peers` except those the peer
 * checks last found unreachable (peers.h); a peer not checked yet counts
 * as up, so a fleet that starts together answers whole at once. Every
 * subgroup and unit gets the same list: one NameServer serves one fleet.
 *
 * Threads: the self address is set once on the main loop before the HTTP
 * thread may use it (ns_http_listening publishes it); the body is built
 * on the HTTP thread from a copy of the peers' state taken under the
 * peers' lock, which the checks hold for copies only: nothing here waits
 * for a peer, the loops or the writer. */
#ifndef NS_OPS_ADDRSRV_H
#define NS_OPS_ADDRSRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ops/peers.h"

#define NS_ADDRSRV_PREFIX "/rocketmq/"
#define NS_ADDRSRV_ADDR_MAX 300
#define NS_ADDRSRV_LOGGED 16 /* distinct URLs logged at INFO; later ones at DEBUG */

typedef struct {
    char self[NS_ADDRSRV_ADDR_MAX]; /* host:port, set once before listening is published */
    int port;                       /* the remoting port bound */
    atomic_uint_fast64_t requests;  /* answered with a list */
    pthread_mutex_t mu;             /* logged[] */
    char *logged[NS_ADDRSRV_LOGGED];
    size_t n_logged;
} ns_addrsrv_t;

/* True when url (the path, without the query) is one the address server
 * answers: "/rocketmq/" and one non-empty segment (subgroup, maybe
 * "-unit"). Pure. */
bool ns_addrsrv_path(const char *url);

/* The address this server is reached at, into out (outlen bytes):
 * advertised when set ("host:port", as brokers should dial it); else
 * bind:port when bind is a specific address; else (0.0.0.0, ::, empty)
 * the first IPv4 address of a running non-loopback interface, and
 * 127.0.0.1 when there is none. NS_OK, or NS_EINVAL when advertised is not
 * host:port or out is too small. Reads the interfaces: main thread. */
int ns_addrsrv_self_pick(const char *advertised, const char *bind, int port, char *out,
                         size_t outlen);

/* The body, "a;b;c" with no line end, into out (appended): self first
 * unless an entry of peers is this server (then the list's own order),
 * then the peers in list order, leaving out those checked and found down
 * and repeats. An entry counts as this server when the checks said so or,
 * before they have, when it names port on self's host or on a loopback or
 * unspecified literal address. Pure. NS_OK or NS_ENOMEM. */
int ns_addrsrv_body(const char *self, int port, const ns_peer_view_t *v, size_t n, ns_buf_t *out);

/* ---- the HTTP endpoint's side ---- */
void ns_addrsrv_init(ns_addrsrv_t *a);
/* Frees the logged URLs; a stays usable as after init. */
void ns_addrsrv_close(ns_addrsrv_t *a);
/* Main loop, once listening (before the HTTP thread sees it). */
int ns_addrsrv_set_self(ns_addrsrv_t *a, const char *advertised, const char *bind, int port);
/* HTTP thread: answers one GET of the address path. url: "http://" host
 * path [query] as the client asked (logged once per distinct URL, with
 * from). The body is appended to out; returns the HTTP status (200, or 503
 * before listening: a Java poller keeps its list then). */
unsigned ns_addrsrv_answer(ns_addrsrv_t *a, bool listening, ns_peers_t *peers, const char *url,
                           const char *from, ns_buf_t *out);
/* Appends namesrv_address_server_requests_total. */
void ns_addrsrv_render(ns_addrsrv_t *a, ns_buf_t *out);

#endif
