/* names.h - what a name may be: topics, broker and cluster names, broker
 * addresses, KV namespaces and keys: whatever a peer names, checked before
 * it reaches a store key, a log line or a hash index.
 *
 * A name is 1..NS_NAME_MAX_BYTES bytes of valid UTF-8 (ns/utf8.h: no
 * overlong, no surrogate, nothing above U+10FFFF) with no NUL and no other
 * control character (0x00-0x1f, 0x7f, C1 U+0080-U+009F).
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
 *
 * Why valid UTF-8: names are shown in JSON (routes, /brokers, dumps), where
 * invalid bytes make the whole text invalid. No Java or Go peer can send
 * invalid UTF-8 (Java's String.getBytes(UTF_8) and Go's encoding/json
 * replace what they cannot encode), so refusing it breaks none; only a
 * crafted frame, or a lone \ud800 escape read in a JSON body, carries it.
 *
 * Every other header value (a KV value, a zone, a user's role...) only has
 * to be valid UTF-8: it may be long and hold newlines, as in Java.
 */
#ifndef NS_NAMES_H
#define NS_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "ns/remoting.h"
#include "ns/utf8.h"

#define NS_NAME_MAX_BYTES 255

/* Why [s, s+n) is not a valid name ("is empty", "is longer than 255 bytes",
 * "contains a NUL or control character", "is not valid UTF-8: ..."), or
 * NULL when it is. Static text. */
const char *ns_name_problem(const char *s, size_t n);
/* The rules of a stored name before the UTF-8 rule (empty, length, NUL and
 * C0 controls), for restore and import: a dump of a store that an older
 * namesrvd wrote may hold names that are not UTF-8 (dump encodes each such
 * byte as \uDC80..\uDCFF), and it must restore byte for byte. */
const char *ns_name_problem_stored(const char *s, size_t n);

/* Checks every header field of cmd that carries a name (topic, clusterName,
 * brokerName, brokerAddr, cluster, namespace, key) by the name rules and
 * every other value for valid UTF-8. On the first bad one, writes a remark
 * naming the field into remark (e.g. "invalid topic \"...\": is longer than
 * 255 bytes (300 bytes)") and returns false. Absent fields pass. */
bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size);

#endif
