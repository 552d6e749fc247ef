/* doc_json.h - typed access to the members of a JSON document, for the
 * validators of doc.c (and doc.h's loaders). Private to namesrvctl.
 *
 * Every getter names the member by its JSON path ($.a.b, $.a['odd key'],
 * $.a[3]) and reports the first problem into d->err through ctl_doc_bad();
 * later problems are dropped, so the error is always the first one met.
 * Strings are borrowed from the cJSON tree. Every call returns CTL_OK or
 * CTL_INVALID.
 */
#ifndef NS_CTL_DOC_JSON_H
#define NS_CTL_DOC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "doc.h"
#include "ns/buf.h"
#include "ns/jsondoc.h"

/* Records "<path>: <fmt...>" as d's problem unless one is recorded already;
 * returns CTL_INVALID. */
int ctl_doc_bad(ctl_doc_t *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* JSON path of element i under base: $.a[i]. */
void ctl_doc_path_idx(char *out, size_t n, const char *base, size_t i);
/* An integer (a number without fraction within 2^53, or a numeric string)
 * in [min, max] into *out. */
int ctl_doc_value_i64(ctl_doc_t *d, const cJSON *v, const char *path, int64_t min, int64_t max,
                      int64_t *out);
/* Member key of obj: *out NULL when absent (an error when required); its
 * path into path. */
int ctl_doc_member(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key, bool required,
                   cJSON **out, char *path, size_t pn);
/* A string member, *out NULL when absent (or null and nullable); not empty
 * unless nullable; names (cluster, brokerAddr, brokerName, bname) must pass
 * ns_name_problem(). */
int ctl_doc_get_str(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, bool nullable, const char **out);
/* An integer member in [min, max]; def when absent. */
int ctl_doc_get_i64(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, int64_t def, int64_t min, int64_t max, int64_t *out);
/* An int32 member; 0 when absent. */
int ctl_doc_get_i32(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                    bool required, int32_t *out);
/* The same inside [min, max]: queue counts and flags are never negative. */
int ctl_doc_get_i32_in(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                       bool required, int32_t min, int32_t max, int32_t *out);
/* An optional boolean member, false when absent. */
int ctl_doc_get_bool(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key, bool *out);
/* Member that must be an object (want_array false) or an array; its path
 * into path. */
int ctl_doc_get_container(ctl_doc_t *d, const cJSON *obj, const char *base, const char *key,
                          bool required, bool want_array, cJSON **out, char *path, size_t pn);
/* Rejects an object that names one member twice (cJSON keeps both). */
int ctl_doc_unique_keys(ctl_doc_t *d, const cJSON *obj, const char *path);

/* Path keys, type names and the byte escaping are ns/jsondoc.h's. */

/* Writes a printed JSON document (NUL-terminated text) to path as
 * ctl_write_file does, its bytes escaped by ns_json_escape_bytes and a
 * newline at the end; *written (may be NULL) gets the bytes written.
 * CTL_OK or CTL_IO. */
int ctl_write_json_text(const char *path, const char *text, size_t *written);

#endif
