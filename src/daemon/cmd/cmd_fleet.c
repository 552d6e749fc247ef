/* cmd_fleet.c - NS_FLEET_DIGEST (9710, ours): nodes of the fleet digest
 * (include/ns/fleet.h, store/digest.c) from the request's read snapshot.
 * The body names the paths asked for (none: the root); each is answered
 * with its hash and its children's, or an item's leaves. A peer's check
 * and `namesrvctl fleet diff` descend with it only where hashes differ. */
#include <stdlib.h>

#include "cmd.h"
#include "ns/fleet.h"
#include "ns/store.h"

int ns_cmd_fleet_digest(ns_req_t *req)
{
    ns_fleet_path_t paths[NS_FLEET_MAX_PATHS];
    size_t n = 0;
    char *names = NULL;
    ns_buf_t body = NS_BUF_INIT;
    int rc = ns_fleet_paths_decode(req->cmd->body, req->cmd->body_len, paths, &n, &names);
    if (rc == NS_EINVAL)
        rc = ns_fail(&req->to, NS_RSP_INVALID_PARAMETER,
                     "body: {\"paths\":[[name, ...], ...]}, at most 64 paths of 5 names");
    rc = rc ? rc : ns_digest_reply(req->txn, paths, n, &body);
    if (rc == NS_EINVAL)
        rc = ns_fail(&req->to, NS_RSP_INVALID_PARAMETER, "a path names no node of the digest");
    rc = ns_cmd_reply_body(req, rc, &body);
    ns_buf_free(&body);
    free(names);
    return rc;
}
