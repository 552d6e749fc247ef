/* jsondoc.h - JSON documents an operator hands over as files: a dump
 * (namesrvctl restore) and Java's kvConfig.json (namesrvctl import-kvconfig,
 * and namesrvd's first start with kvConfigPath). Parsing with the problem
 * named by line and column or by JSON path, and the byte escaping that lets
 * a name which is not UTF-8 travel through a UTF-8 JSON text.
 *
 * Paths are written $.a.b, $.a['odd key'], $.a[3]. Every error text is
 * "<where>: <what>", NUL-terminated in the caller's buffer.
 */
#ifndef NS_JSONDOC_H
#define NS_JSONDOC_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "ns/buf.h"

/* Names are bytes: the server takes any byte but NUL in a topic, a key or
 * a value, and a JSON text must be UTF-8. So every byte of a printed
 * document that is not part of a well-formed UTF-8 sequence (they can only
 * be inside strings: cJSON copies them there as they are) is written as
 * the escape \uDC80..\uDCFF, the lone low surrogate Python's
 * "surrogateescape" uses for the same purpose: the text is UTF-8 JSON for
 * every reader, and the loaders read the byte back. out gets the text,
 * NUL-terminated. NS_OK or NS_ENOMEM. */
int ns_json_escape_bytes(const char *text, size_t len, ns_buf_t *out);
/* Before parsing (cJSON rejects lone surrogates): \uDC80..\uDCFF inside
 * strings become the bytes 0x80..0xFF again. \u0000 is refused, NS_EINVAL
 * with *bad_at its offset: no name or value may hold NUL (the server
 * refuses it; a C string would end there). out gets the text,
 * NUL-terminated. */
int ns_json_unescape_bytes(const char *text, size_t len, ns_buf_t *out, size_t *bad_at);

/* Parses text (len bytes) into *root, which must be an object; the caller
 * owns *root (cJSON_Delete). NS_OK, or NS_EINVAL with err "not valid JSON
 * (line L, column C)", the \u0000 position, or "$: expected an object", or
 * NS_ENOMEM; *root is NULL on every error. */
int ns_json_parse_object(const char *text, size_t len, cJSON **root, char *err, size_t errlen);

/* JSON path of member key under base: $.a.b, or $.a['odd key'] (truncated
 * to a readable prefix when out is too small). */
void ns_json_path_key(char *out, size_t n, const char *base, const char *key);
/* "a string", "a number", ... for the messages. */
const char *ns_json_type_name(const cJSON *v);
/* The first member name obj holds twice (cJSON keeps both), borrowed from
 * the tree; NULL when every name is unique. NS_ENOMEM is reported as *oom. */
const char *ns_json_dup_member(const cJSON *obj, bool *oom);

/* ---- kvConfig.json: {"configTable":{namespace:{key:"value"}}} ---- */

typedef struct {
    size_t namespaces, keys, nulls; /* nulls: values that are null (Java drops them) */
} ns_kvconfig_counts_t;

/* Validates a {namespace: {key: "value"}} object found at path base:
 * unique names, namespaces and keys that ns_name_problem_stored accepts,
 * string values (null too when allow_null, counted and to be skipped).
 * Counts into *c (added to). NS_OK, or NS_EINVAL with "<path>: <what>" in
 * err. */
int ns_kvconfig_check(const cJSON *table, const char *base, bool allow_null,
                      ns_kvconfig_counts_t *c, char *err, size_t errlen);
/* Parses and validates a whole kvConfig.json. *root is the caller's
 * (cJSON_Delete, NULL on error); *table borrows from it. Null values are
 * allowed (counted). NS_OK, NS_EINVAL (err) or NS_ENOMEM. */
int ns_kvconfig_parse(const char *text, size_t len, cJSON **root, const cJSON **table,
                      ns_kvconfig_counts_t *c, char *err, size_t errlen);

#endif
