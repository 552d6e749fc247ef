/* properties.h - Java .properties text (base floor: no libuv, no LMDB). */
#ifndef NS_PROPERTIES_H
#define NS_PROPERTIES_H

#include <stddef.h>

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

#endif
