/* dispatch.h - the handler contract: the request table and the one
 * wrapper around every handler (ns_dispatch). Handlers see request.h.
 *
 * A row of the table (dispatch.c) is: the request code (its name from the
 * X-macro list in ns/codes.h), the header fields it requires and the remark
 * Java answers when one is missing, its kind and its function. The
 * dispatcher checks the required fields, opens the loop's read transaction
 * for rows that read the store, calls the handler, and turns the NS_E* code
 * it returns into a RocketMQ response code and remark (ns_reply_error, the
 * only place that does). A handler that replied returns NS_OK; one that
 * fails returns an NS_E* code (SYSTEM_ERROR), with the remark of its reply
 * through ns_remark(...) when it says more than ns_err_remark; one that
 * wants a specific RocketMQ code and remark returns ns_fail(...). For the
 * rows that write an admin-trail record the dispatcher makes it: the
 * handler's write takes it (ns_req_submit), a refusal gets its own; the
 * handler adds only what it alone knows (ns_req_trail_detail,
 * ns_trail_set_count).
 *
 * Kinds:
 *   READ   runs in the loop's read transaction; with NS_ROW_ANY_LOOP on
 *          whichever loop owns the connection, else on the main loop.
 *   WRITE  runs on the main loop in the read transaction (to answer an
 *          unchanged request at once) and usually queues an ns_wreq_t on
 *          the writer, which replies after the commit.
 *   ADMIN  runs on the main loop without a transaction (settings).
 */
#ifndef NS_DISPATCH_H
#define NS_DISPATCH_H

#include "core/request.h"

typedef enum { NS_CMD_READ, NS_CMD_WRITE, NS_CMD_ADMIN } ns_cmd_kind_t;

/* A row of the request table (dispatch.c). */
typedef struct ns_cmd_row ns_cmd_row_t;

/* The rows of the codes below NS_DISPATCH_DIRECT (every code RocketMQ
 * defines) by code, NULL for none; filled before main, read only through
 * ns_dispatch_row. */
#define NS_DISPATCH_DIRECT 1024
extern const ns_cmd_row_t *ns_dispatch_by_code[NS_DISPATCH_DIRECT];
/* ns_dispatch_row for the codes beyond (a scan: only the user rows). */
const ns_cmd_row_t *ns_dispatch_row_far(int code);

/* The row of a request code, found once per request and passed to the
 * calls below; NULL for a code we do not serve. One load for the codes
 * RocketMQ defines. */
static inline const ns_cmd_row_t *ns_dispatch_row(int code)
{
    return (unsigned)code < NS_DISPATCH_DIRECT ? ns_dispatch_by_code[code]
                                               : ns_dispatch_row_far(code);
}
/* Request name of a metrics row (metrics.h): NULL for rows not in use. */
const char *ns_dispatch_row_name(int m_row);
/* Dispatches one decoded request of conn (never NULL: the request's
 * connection, ns_req_t), of row `row`, on loop. */
void ns_dispatch(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd, const ns_cmd_row_t *row);
/* The loops' on_read_ahead (ioloop.h): the route lookups among msgs[0, n),
 * the requests of one read, have their topics' routes brought into cache
 * together in txn's snapshot (ns_route_warm) before the first runs. Runs
 * nothing, answers nothing. */
void ns_dispatch_warm(ns_loop_t *loop, ns_txn_t *txn, const ns_cmd_msg_t *msgs, size_t n);
/* True when a request of row `row` may queue a mutation on the writer (its
 * reading pauses while the writer queue is at its budget, budget.h). */
bool ns_dispatch_may_write(const ns_cmd_row_t *row);
/* An I/O loop's dispatch: runs cmd here when its row may run on any loop
 * and, with authMode on, passes the check here (ns_auth_check_here); it
 * answers unknown codes and drops stray responses here too; false, with
 * nothing done, when it must go to the main loop (with its row). */
bool ns_dispatch_local(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd,
                       const ns_cmd_row_t *row);

#endif
