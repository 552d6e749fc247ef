/* json_read.h - tolerant access to JSON written by Java peers (docs/protocol.md
 * §4.4): fastjson text parsed with cJSON, values coerced as fastjson does.
 * Shared by the body decoders (json_body_read.c, regbody.c). */
#ifndef NS_JSON_READ_H
#define NS_JSON_READ_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses fastjson text (bare numeric keys allowed) into a cJSON tree the
 * caller deletes with cJSON_Delete. NS_EINVAL if it is not JSON. */
int ns_jr_parse(const uint8_t *p, size_t n, cJSON **out);
/* The same, and NS_EINVAL (*out NULL) unless the text is a JSON object. */
int ns_jr_parse_object(const uint8_t *p, size_t n, cJSON **out);
/* True when [p, p+n) holds only whitespace. */
bool ns_jr_blank(const uint8_t *p, size_t n);
/* Missing, null and {"$ref":...} values are all "absent". */
bool ns_jr_absent(const cJSON *v);
/* Member of an object, or NULL. */
const cJSON *ns_jr_get(const cJSON *o, const char *name);
/* Integer coercion: numbers (fraction dropped), numeric strings, booleans
 * (1/0). Absent values, "" and "null" leave *out unchanged. NS_EINVAL for
 * anything else or out of range. */
int ns_jr_i64(const cJSON *v, int64_t *out);
int ns_jr_i32(const cJSON *v, int32_t *out);
/* Boolean coercion: true/false, numbers, "true"/"false"/"1"/"0". */
int ns_jr_bool(const cJSON *v, bool *out);
/* String coercion (numbers and booleans as their text) into a heap copy the
 * caller frees; absent values give *out = NULL. */
int ns_jr_str(const cJSON *v, char **out);

#endif
