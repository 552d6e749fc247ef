/* budget.h - the server-wide memory budgets and the refusals they cause.
 *
 * Every connection's buffers are bounded one by one (maxFrameBytes, the
 * 64 MiB reply cap); these budgets bound their sum, so that no number of
 * connections can make the process grow without limit:
 *   maxConnections            open client connections
 *   maxUnfinishedFrameBytes   bytes held for frames that have not fully
 *                             arrived, over all connections
 *   maxUnsentReplyBytes       reply bytes written by the server and not yet
 *                             taken by the peer, over all connections
 *   maxPendingHandshakes      TLS handshakes begun and not finished (each
 *                             holds OpenSSL's handshake state, ~48 KiB)
 *   maxTlsSessions            TLS connections, handshaking or established
 *                             (an established one holds ~21 KiB of OpenSSL
 *                             state for as long as it is open)
 *   writerQueueMaxBytes/Ops   mutations waiting for the writer thread; when
 *                             either is reached, connections stop reading
 *                             requests that write until the writer catches up
 * The limits are set once at start (ns_budget_init) and change only with the
 * settings file and a restart. Usage and refusal counters are process-wide
 * atomics, readable from any thread (for the metrics endpoint): see
 * ns_budget_snapshot.
 *
 * A refusal is logged at most once per peer address, reason and kind of
 * line (its format) per NS_REFUSAL_LOG_INTERVAL_MS (with how many were not
 * logged since); every one is counted. */
#ifndef NS_BUDGET_H
#define NS_BUDGET_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/config.h"

typedef enum {
    NS_REFUSE_NAME = 0,     /* a header name refused (ns/names.h) */
    NS_REFUSE_CONNECTIONS,  /* maxConnections reached: closed at accept */
    NS_REFUSE_PER_ADDRESS,  /* maxConnectionsPerAddress reached: closed at accept */
    NS_REFUSE_UNFINISHED,   /* maxUnfinishedFrameBytes: connection closed */
    NS_REFUSE_UNSENT,       /* maxUnsentReplyBytes: connection closed */
    NS_REFUSE_WRITER_PAUSE, /* writer queue full: reading paused */
    NS_REFUSE_HANDSHAKES,   /* maxPendingHandshakes under way: connection closed */
    NS_REFUSE_TLS_SESSIONS, /* maxTlsSessions open: connection closed at its ClientHello */
    NS_REFUSE_COUNT
} ns_refuse_t;

#define NS_REFUSAL_LOG_INTERVAL_MS 10000

/* What one connection holds against the budgets (embedded in ns_conn). */
typedef struct {
    size_t rbuf;       /* unfinished-frame bytes accounted */
    size_t unsent;     /* unsent reply bytes accounted */
    bool counted;      /* counted in the open connections */
    bool enforce;      /* a sum went over where it could not be enforced (alloc_cb) */
    bool released;     /* closed by ns_budget_enforce: its bytes left the sums
                          (its buffers go with the handle, a loop turn later) */
    bool addr_counted; /* counted against its address (maxConnectionsPerAddress) */
    bool hs_counted;   /* counted in the pending TLS handshakes */
    bool tls_counted;  /* counted in the TLS sessions (until it closes) */
    uint8_t addr_len;  /* 4 or 16: the peer's address bytes in addr */
    uint8_t addr[16];
} ns_conn_budget_t;

/* A copy of the budgets' state (for metrics and tests). */
typedef struct {
    uint64_t max_connections, max_unfinished_bytes, max_unsent_bytes;
    uint64_t max_writer_bytes, max_writer_ops, max_handshakes, max_tls;
    uint64_t connections, unfinished_bytes, unsent_bytes, writer_bytes, writer_ops, handshakes, tls;
    uint64_t refused[NS_REFUSE_COUNT];
} ns_budget_stats_t;

/* Sets the limits from cfg and zeroes usage (at server start). */
void ns_budget_init(const ns_config_t *cfg);
void ns_budget_snapshot(ns_budget_stats_t *out);
/* Name of a refusal reason ("connections", ...), for logs and metrics. */
const char *ns_refusal_name(ns_refuse_t why);

/* Counts a refusal and logs "conn <peer>: <fmt...>" unless this peer
 * ("ip:port", or "?") was already logged for this reason within the
 * interval. Any thread. */
void ns_refusal(const char *peer, ns_refuse_t why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Connections: true (and counted) when one more may open, in all and from
 * peer's address (an IPv4-mapped IPv6 address counts as its IPv4 one;
 * another family has no address cap). false with *why the reason. */
struct sockaddr;
bool ns_budget_conn_open(ns_conn_budget_t *b, const struct sockaddr *peer, ns_refuse_t *why);
void ns_budget_conn_close(ns_conn_budget_t *b);
/* The connection's TLS handshake is under way (pending) or not: counted in,
 * or out of, the pending handshakes. false (not counted) when one more
 * would pass maxPendingHandshakes. */
bool ns_budget_handshake(ns_conn_budget_t *b, bool pending);
/* The connection speaks TLS: counted in the TLS sessions until it closes
 * (once; true when counted already). false (not counted) when one more
 * would pass maxTlsSessions. */
bool ns_budget_tls_session(ns_conn_budget_t *b);

/* Re-accounts a connection's unfinished-frame and unsent bytes; returns true
 * when a server-wide budget is now exceeded (the connection code then closes
 * the connections that hold the most: conn.c). */
bool ns_budget_account(ns_conn_budget_t *b, size_t rbuf_bytes, size_t unsent_bytes);
/* The two sums of the connections' buffers. */
typedef enum { NS_BUDGET_UNFINISHED, NS_BUDGET_UNSENT } ns_budget_sum_t;
/* True while unsent reply bytes hold half of maxUnsentReplyBytes or more:
 * a reply that grows with the store is then not built (dispatch.c). */
bool ns_budget_unsent_pressed(void);
/* True while the sum is over its limit; *max (may be NULL) is the limit. */
bool ns_budget_over(ns_budget_sum_t which, uint64_t *max);
/* A connection closed to enforce a budget: its bytes leave the sums now
 * (its buffers go with the handle, a loop turn later). */
void ns_budget_release(ns_conn_budget_t *b);

/* What every queued op is counted as on top of its own bytes. */
#define NS_WOP_BASE_BYTES 512

/* Writer queue: an op of `bytes` was queued / is done (loop thread). */
void ns_budget_writer_add(size_t bytes);
void ns_budget_writer_done(size_t bytes);
/* True while the writer queue is at either budget (when it is not, the
 * loops' paused connections read again: ns_conn_resume_paused). */
bool ns_budget_writer_full(void);

#endif
