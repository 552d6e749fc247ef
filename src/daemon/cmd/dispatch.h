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
 * wants a specific RocketMQ code and remark returns ns_fail(...).
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

/* Request name of a metrics row (metrics.h): NULL for rows not in use. */
const char *ns_dispatch_row_name(int m_row);
/* Dispatches one decoded request of conn (never NULL: the request's
 * connection, ns_req_t) on loop. */
void ns_dispatch(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd);
/* True when the request may queue a mutation on the writer (its reading
 * pauses while the writer queue is at its budget, budget.h). */
bool ns_dispatch_may_write(const ns_cmd_t *cmd);
/* An I/O loop's dispatch: runs cmd here when its row may run on any loop
 * (and answers unknown codes and drops stray responses here too); false,
 * with nothing done, when it must go to the main loop. */
bool ns_dispatch_local(ns_loop_t *loop, ns_conn_t *conn, const ns_cmd_t *cmd);

#endif
