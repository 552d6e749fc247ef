/* trail.h - the admin audit trail and the operator's log lines for admin
 * changes (trail.c).
 *
 * Every mutating admin request (KV put/delete, write-permission wipe/add,
 * topic delete/register, broker unregistration by request, config update)
 * leaves one record in the store's admin_audit table, written by the writer
 * in the SAME transaction as its effect: committed together or not at all.
 * Which requests leave one is a flag of their row in the dispatcher's table
 * (cmd/dispatch.c), which makes the record for the handler: the handler's
 * write takes it (ns_req_submit, request.h), a refusal by the handler gets
 * a record of its own through ns_trail_refused, an authentication refusal
 * (auth.c) through ns_trail_refused_auth (trail_refused.h).
 *
 * A record is one JSON object:
 *   {"time":ms,"peer":"ip:port","code":205,"request":"WIPE_WRITE_PERM_OF_BROKER",
 *    "fields":{extFields...},"body":"text"?,"result":"ok"|"refused"|"failed",
 *    "responseCode":0,"remark":"..."?,"detail":{...}?}
 * The request part is captured on the loop thread (ns_trail_new); the
 * result is appended on the writer thread (ns_trail_write). Credential
 * fields (Signature, SecurityToken, SecretKey, secretKey, userSecretKey,
 * password) are recorded and logged as "(redacted)". */
#ifndef NS_TRAIL_H
#define NS_TRAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/remoting.h"
#include "ns/store.h"

typedef struct ns_trail ns_trail_t;

/* Loop thread: captures time, peer ("ip:port", copied), the code, name and
 * extFields of cmd and (when with_body) its body as text; retention is
 * adminAuditRetention. Returns a heap record the caller frees with
 * ns_trail_free, or NULL when memory runs out or the trail is off
 * (retention 0 and INFO not logged): writing NULL is a no-op. For a
 * request, ns_req_trail_new (request.h) passes its command and peer. */
ns_trail_t *ns_trail_new(const ns_cmd_t *cmd, const char *peer, int64_t retention, bool with_body);
/* The same for a refusal of the authentication check: no body (its size is
 * the sender's choice, and a user-management body carries a secret), every
 * key and value of the fields cut at 256 bytes and at most 32 fields kept;
 * NULL when retention is 0. */
ns_trail_t *ns_trail_new_auth(const ns_cmd_t *cmd, const char *peer, int64_t retention);
void ns_trail_free(ns_trail_t *t);

/* Writer thread, in the transaction of the effect: appends the record with
 * its result ("ok", "refused"), the response code, an optional remark and
 * a detail object (JSON object text; NULL: the one ns_trail_set_count
 * left, if any). Errors are the store's (the op then fails and its effect
 * is rolled back with the record). NULL t or retention 0: nothing. The
 * write wrapper (request.c) calls it for every ns_wreq_t with a trail. */
int ns_trail_write(ns_txn_t *txn, const ns_trail_t *t, const char *result, int rsp_code,
                   const char *remark, const char *detail);

/* Loop thread, before submitting: the detail object (JSON object text,
 * copied) the record gets. NS_OK or NS_ENOMEM. */
int ns_trail_set_detail(ns_trail_t *t, const char *json);

/* Writer thread, from an apply: what the op did, for the record and the log
 * line (topics a permission change touched; 1/0 removed for unregister). */
void ns_trail_set_count(ns_trail_t *t, int count);

/* Main loop, after the commit: the operator's INFO line,
 * "conn <peer>: <REQUEST> <key=value ...>: <what it did>". */
void ns_trail_done(const ns_trail_t *t);

/* The peer of the request as recorded ("ip:port"); borrowed from t ("-"
 * for NULL). */
const char *ns_trail_peer(const ns_trail_t *t);
/* "REQUEST key=value ..." as logged; borrowed from t ("?" for NULL). */
const char *ns_trail_summary(const ns_trail_t *t);
/* True when t is to be written to the store (adminAuditRetention > 0). */
bool ns_trail_kept(const ns_trail_t *t);
/* The INFO line of a refusal, "conn <peer>: <REQUEST ...>: refused: <remark>";
 * nothing for NULL. */
void ns_trail_log_refused(const ns_trail_t *t, const char *remark);

#endif
