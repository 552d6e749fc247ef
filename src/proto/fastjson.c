/* fastjson.c - rewrites fastjson output into strict JSON (include/ns/body.h).
 *
 * fastjson writes maps with Integer/Long keys with bare numeric keys
 * ({0:"a",1:"b"}, {"currIdMap":{0:0}}), which strict parsers such as cJSON
 * reject. ns_fastjson_normalize() copies the text and puts quotes around such
 * keys; everything else (strings, values, whitespace) is copied unchanged,
 * but for the two escapes cJSON cannot take as fastjson does (below).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ns/body.h"
#include "ns/buf.h"
#include "ns/err.h"

static bool is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_num_start(uint8_t c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+';
}

static bool is_num_char(uint8_t c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Returns the index just past the closing quote of the string that starts at
 * p[i] (a '"'), or 0 if the string is not terminated. */
static size_t skip_string(const uint8_t *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++; /* the escaped byte can never close the string */
        else if (p[i] == '"')
            return i + 1;
    }
    return 0;
}

int ns_fastjson_normalize(const uint8_t *p, size_t n, ns_buf_t *out)
{
    int rc = NS_OK;
    size_t start = out->len;
    ns_buf_t stack = NS_BUF_INIT; /* one byte per open container: '{' or '[' */
    bool expect_key = false;      /* next token is in object key position */
    size_t run = 0;               /* start of the bytes not yet copied to out */
    size_t i = 0;

    rc = ns_buf_reserve(out, n + 16);
    if (rc != NS_OK)
        goto cleanup;
    while (i < n) {
        uint8_t c = p[i];
        if (is_ws(c)) {
            i++;
            continue;
        }
        if (c == '"') {
            size_t end = skip_string(p, n, i);
            if (end == 0) {
                rc = NS_EINVAL;
                goto cleanup;
            }
            i = end;
            expect_key = false;
            continue;
        }
        if (expect_key && is_num_start(c)) {
            size_t end = i + 1;
            while (end < n && is_num_char(p[end]))
                end++;
            if ((rc = ns_buf_append(out, p + run, i - run)) != NS_OK ||
                (rc = ns_buf_append_u8(out, '"')) != NS_OK ||
                (rc = ns_buf_append(out, p + i, end - i)) != NS_OK ||
                (rc = ns_buf_append_u8(out, '"')) != NS_OK)
                goto cleanup;
            run = end;
            i = end;
            expect_key = false;
            continue;
        }
        expect_key = false;
        if (c == '{' || c == '[') {
            if ((rc = ns_buf_append_u8(&stack, c)) != NS_OK)
                goto cleanup;
            expect_key = c == '{';
        } else if (c == '}' || c == ']') {
            if (stack.len > 0)
                stack.len--;
        } else if (c == ',') {
            expect_key = stack.len > 0 && stack.data[stack.len - 1] == '{';
        }
        i++;
    }
    rc = ns_buf_append(out, p + run, n - run);
    if (rc == NS_OK) {
        out->len = start + ns_json_fix_escapes(out->data + start, out->len - start);
        out->data[out->len] = 0;
    }

cleanup:
    ns_buf_free(&stack);
    if (rc != NS_OK && out->data != NULL) {
        out->len = start;
        out->data[start] = 0;
    }
    return rc;
}

/* The value of the four hex digits at p (n bytes left), or -1. */
static long hex4(const uint8_t *p, size_t n)
{
    long v = 0;
    if (n < 4)
        return -1;
    for (int k = 0; k < 4; k++) {
        int d = ns_hex_digit((char)p[k]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* The code unit of the \uXXXX escape at p[0] (n bytes left), or -1. */
static long u_escape(const uint8_t *p, size_t n)
{
    return n >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2, n - 2) : -1;
}

size_t ns_json_fix_escapes(uint8_t *p, size_t n)
{
    bool in_str = false;
    size_t o = 0, i = 0;
    while (i < n) {
        long u = in_str ? u_escape(p + i, n - i) : -1;
        size_t take = 1;
        if (u == 0) {
            memcpy(p + o, "\\u0001", 6);
            o += 6;
            i += 6;
            continue;
        }
        if (u >= 0xD800 && u <= 0xDFFF) {
            long lo = u <= 0xDBFF ? u_escape(p + i + 6, n - i - 6) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                take = 12; /* a pair: a code point above U+FFFF */
            } else {       /* lone: its UTF-8 form, which no UTF-8 check accepts */
                p[o++] = (uint8_t)(0xE0 | u >> 12);
                p[o++] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                p[o++] = (uint8_t)(0x80 | (u & 0x3F));
                i += 6;
                continue;
            }
        } else if (!in_str) {
            in_str = p[i] == '"';
        } else if (p[i] == '"') {
            in_str = false;
        } else if (p[i] == '\\' && i + 1 < n) {
            take = 2; /* the escaped byte */
        }
        memmove(p + o, p + i, take);
        o += take;
        i += take;
    }
    return o;
}
