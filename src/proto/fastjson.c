/* fastjson.c - rewrites fastjson output into strict JSON (include/ns/body.h).
 *
 * fastjson writes maps with Integer/Long keys with bare numeric keys
 * ({0:"a",1:"b"}, {"currIdMap":{0:0}}), which strict parsers such as cJSON
 * reject. ns_fastjson_normalize() copies the text and puts quotes around such
 * keys; everything else (strings, values, whitespace) is copied unchanged.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
    if (rc == NS_OK)
        ns_json_nul_to_soh(out->data + start, out->len - start);

cleanup:
    ns_buf_free(&stack);
    if (rc != NS_OK && out->data != NULL) {
        out->len = start;
        out->data[start] = 0;
    }
    return rc;
}

size_t ns_json_nul_to_soh(uint8_t *p, size_t n)
{
    size_t count = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        if (!in_str) {
            in_str = p[i] == '"';
        } else if (p[i] == '"') {
            in_str = false;
        } else if (p[i] == '\\' && i + 1 < n) {
            if (p[i + 1] == 'u' && i + 5 < n && p[i + 2] == '0' && p[i + 3] == '0' &&
                p[i + 4] == '0' && p[i + 5] == '0') {
                p[i + 5] = '1';
                count++;
            }
            i++; /* the escaped byte */
        }
    }
    return count;
}
