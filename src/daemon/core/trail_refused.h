/* trail_refused.h - audit records of refused admin requests
 * (trail_refused.c), each a write of its own through the writer. */
#ifndef NS_TRAIL_REFUSED_H
#define NS_TRAIL_REFUSED_H

#include "core/request.h"
#include "core/trail.h"

/* Main loop: records a refused admin request in a write of its own (the
 * refusal has no effect to share a transaction with), as its row asks
 * (ns_req_trail_new: nothing for a row without records), and logs it at
 * INFO. The reply is not delayed; failures to record are logged. The
 * dispatcher's, for every refusal of a row that writes records. */
void ns_trail_refused(ns_req_t *req, int rsp_code, const char *remark);

/* Main loop: records a refusal of the authentication check (auth.c) the
 * same way, with these differences: no body (its size is the sender's
 * choice, and a user-management body carries a secret), every key and value
 * of the fields cut at 256 bytes and at most 32 fields kept, no log line
 * (the caller logs, rate-limited), and `detail` (JSON object text, copied;
 * may be NULL) in the record. The caller limits how many a second. */
void ns_trail_refused_auth(ns_req_t *req, int rsp_code, const char *remark, const char *detail);

#endif
