/* utf8.h - strict UTF-8 (RFC 3629) and the escaping of text shown to a
 * reader (a log line, an operator's terminal, a remark).
 *
 * Strict: a sequence is valid only in its shortest form (no overlongs such as
 * C0 AF for '/'), never a UTF-16 surrogate encoded in UTF-8 (ED A0 80..ED BF
 * BF, which is how a lone \ud800 escape or Java's modified UTF-8 would come
 * out) and never above U+10FFFF (F4 90 and up, F5..FF); a continuation byte
 * (80..BF) never starts one.
 *
 * Escaping: what a reader could mistake for something else is written as
 * text. C0 controls and DEL as \n, \r, \t or \xHH (a stored newline or ESC
 * cannot forge a line or drive the terminal); C1 controls (U+0080..U+009F,
 * CSI U+009B among them), the bidi embeddings, overrides and isolates
 * (U+202A..U+202E, U+2066..U+2069, which reorder what follows on screen) and
 * the Unicode line and paragraph separators (U+2028, U+2029) as \uHHHH;
 * every byte of an invalid sequence as \xHH. Everything else, UTF-8 included,
 * is copied as it is. Flags add '\\' (so that the escaped form reads back
 * unambiguously) and '"' (for text shown between quotes).
 */
#ifndef NS_UTF8_H
#define NS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

/* Length (1..4) of the valid UTF-8 sequence at s[0] (n > 0 bytes left) and
 * its code point in *cp; 0 when none starts there (*cp untouched). */
size_t ns_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

/* Whether [s, s+n) is valid UTF-8. ASCII runs go eight bytes at a time. */
bool ns_utf8_valid(const char *s, size_t n);

/* The first problem of [s, s+n) as UTF-8, as a phrase for a remark ("is
 * not valid UTF-8: an overlong sequence", "...: a surrogate encoded in
 * UTF-8", "...: a code point above U+10FFFF", "...: a stray continuation
 * byte", "...: a truncated sequence", "...: a byte UTF-8 never uses"), or
 * NULL when it is valid. Static text. */
const char *ns_utf8_problem(const char *s, size_t n);

/* Whether code point cp is a C1 control (U+0080..U+009F). */
static inline bool ns_utf8_is_c1(uint32_t cp)
{
    return cp >= 0x80 && cp <= 0x9f;
}

#define NS_ESC_BACKSLASH 1u /* also '\\' as "\\\\" */
#define NS_ESC_QUOTE 2u     /* also '"' as "\\\"" */

/* Writes the escaped form of s (n bytes) into out (size > 0, always
 * NUL-terminated), cut short with "..." (never inside an escape) when it
 * does not fit. Returns out. */
char *ns_escape(const char *s, size_t n, unsigned flags, char *out, size_t out_size);

/* Appends the escaped form of s (n bytes) to b. NS_OK or NS_ENOMEM (b keeps
 * what it had). */
int ns_buf_append_escaped(ns_buf_t *b, const char *s, size_t n, unsigned flags);

#endif
