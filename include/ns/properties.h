/* properties.h - Java .properties text (base floor: no libuv, no LMDB). */
#ifndef NS_PROPERTIES_H
#define NS_PROPERTIES_H

#include <stddef.h>

#include "ns/buf.h"

/* Java .properties parsing (key=value / key:value / key value, # and !
 * comments, backslash escapes incl. \uXXXX, line continuations; lines end
 * at \n, \r or \r\n). Bytes are passed through as they are (UTF-8); \uXXXX
 * is written as UTF-8. Calls cb for every pair in order with NUL-terminated
 * key and value that are borrowed only for the duration of the call; stops
 * at the first non-zero return and returns it. NS_EINVAL on a malformed
 * \u escape or a NUL byte (raw or \u0000), NS_ENOMEM; pairs before the bad
 * line have been delivered. A UTF-8 byte order mark at the very start is
 * skipped (editors put one there; it is no part of the first key). */
typedef int (*ns_properties_cb)(const char *key, const char *value, void *ctx);
int ns_properties_parse(const char *text, size_t len, ns_properties_cb cb, void *ctx);

/* One pair as ns_properties_scan hands it over: key and value as
 * ns_properties_parse gives them (Java's exact value, trailing blanks
 * included), where the pair stands in the text, and how long the value is
 * without the blanks that end its line unescaped (Java keeps them; a value
 * with trailing blanks is almost always a typing slip in a settings file). */
typedef struct {
    const char *key, *value; /* NUL-terminated, borrowed for the call */
    size_t value_len;        /* strlen(value) */
    size_t trimmed_len;      /* value_len less the unescaped trailing blanks */
    size_t start, end; /* [start, end) in text: the pair's lines, without the last terminator */
} ns_properties_pair_t;
typedef int (*ns_properties_pair_cb)(const ns_properties_pair_t *pair, void *ctx);
/* ns_properties_parse with the pair's place in the text (to rewrite one
 * line and keep the rest, comments included) and its trimmed length. */
int ns_properties_scan(const char *text, size_t len, ns_properties_pair_cb cb, void *ctx);

/* Appends s escaped for a properties value, so that ns_properties_parse
 * reads back exactly s: backslash, \n, \r, \t, \f escaped, and a space
 * that begins or ends the value written as "\ " (a plain one would be
 * skipped, or trimmed with a warning by namesrvd's loader). NS_ENOMEM. */
int ns_properties_append_escaped(ns_buf_t *out, const char *s);

#endif
