/* nstest_json.h - comparing responses with recorded Java responses when map
 * entries and list elements may come in another order.
 *
 * "Equivalent" frames (nstest_frame_compare): both decode with
 * ns_remoting_decode and have the same code, flag, opaque and remark, the
 * same extFields as a set of key/value pairs (absent and {} are the same
 * empty set), and equivalent bodies. The serialize type, language and
 * version of the headers are not compared (our server answers a binary-header
 * request in the binary type, Java in JSON). Bodies are equivalent when both
 * are empty, or both are JSON (fastjson bare numeric keys allowed) and equal
 * with objects compared as key sets and arrays as multisets, or - when the
 * expected body is not JSON (properties text) - byte for byte.
 */
#ifndef NS_TEST_JSON_H
#define NS_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    NSTEST_SAME_BYTES = 0, /* byte-identical frames */
    NSTEST_EQUIVALENT = 1, /* different bytes, same meaning */
    NSTEST_DIFFERENT = 2,
} nstest_match_t;

/* Body equivalence as above. On a difference, why (may be NULL) receives a
 * short description with the JSON path of the first difference found
 * (e.g. "$.brokerDatas[0].brokerAddrs: member \"1\" missing"). */
bool nstest_body_equiv(const uint8_t *expected, size_t ne, const uint8_t *actual, size_t na,
                       char *why, size_t whylen);

/* JSON text equivalence (fastjson accepted); false when either side does not
 * parse. */
bool nstest_json_equiv(const char *expected, size_t ne, const char *actual, size_t na, char *why,
                       size_t whylen);

/* Compares two whole frames (length prefix included). why as above. */
nstest_match_t nstest_frame_compare(const uint8_t *expected, size_t ne, const uint8_t *actual,
                                    size_t na, char *why, size_t whylen);

/* Prints a readable rendering of a frame to stdout: decoded header fields,
 * extFields and the body as text (non-printable bytes escaped), each line
 * prefixed with label. */
void nstest_frame_print(const char *label, const uint8_t *frame, size_t n);

#endif
