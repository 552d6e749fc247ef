/* names.h - what a name may be: topics, broker and cluster names, broker
 * addresses, KV namespaces and keys: whatever a peer names, checked before
 * it reaches a store key, a log line or a hash index.
 *
 * A name is 1..NS_NAME_MAX_BYTES bytes with no NUL and no other control
 * character (0x00-0x1f, 0x7f).
 *
 * Why 255 bytes: every store key holds at most two names joined by a NUL
 * separator (store/keys.h: "topic \0 brokerName", "namespace \0 key",
 * "cluster \0 brokerAddr"), and LMDB refuses keys over 511 bytes
 * (mdb_env_get_maxkeysize), so 2 x 255 + 1 = 511 is the largest limit under
 * which no accepted name can fail a write. It is twice the Java client's own
 * topic limit (127 characters, TopicValidator), so every topic a Java client
 * can create fits, with room for other clients and long cluster names.
 *
 * Why no control characters: a NUL cannot live in the C strings the store
 * keys are built from (it would cut the name short and merge it into
 * another), and the others let a peer forge log lines. The Java broker's
 * own topic pattern ([%|a-zA-Z0-9_-]) already excludes them all.
 */
#ifndef NS_NAMES_H
#define NS_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "ns/remoting.h"

#define NS_NAME_MAX_BYTES 255

/* Why [s, s+n) is not a valid name ("is empty", "is longer than 255 bytes",
 * "contains a NUL or control character"), or NULL when it is. Static text. */
const char *ns_name_problem(const char *s, size_t n);

/* Checks every header field of cmd that carries a name (topic, clusterName,
 * brokerName, brokerAddr, cluster, namespace, key). On the first bad one,
 * writes a remark naming the field into remark (e.g. "invalid topic: is
 * longer than 255 bytes (300)") and returns false. Absent fields pass. */
bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size);

/* Writes s (n bytes) into out (size > 0, always NUL-terminated) with every
 * byte below 0x20, 0x7f, '\\' and '"' escaped (\n, \t, \xHH...), cut short
 * with "..." when it does not fit. For log lines that carry a peer's text.
 * Returns out. */
char *ns_escape(const char *s, size_t n, char *out, size_t out_size);

#endif
