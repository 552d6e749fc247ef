/* names.c - name checks (include/ns/names.h). */
#include "ns/names.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* High bits marking that one of the 8 bytes of w is below 0x20 or is 0x7f
 * (the exact "has a byte less than n" and "has a zero byte" word tests:
 * which byte is marked may be off, that one is, never). */
static inline uint64_t word_controls(uint64_t w)
{
    uint64_t del = w ^ (ONES * 0x7f);
    return (((w - ONES * 0x20) & ~w) | ((del - ONES) & ~del)) & HIGHS;
}

/* What a scan of a name found: a C0 control or DEL, a byte above 0x7f. */
#define SEEN_CONTROL 1u
#define SEEN_HIGH 2u

/* The bytes of [s, s+n): eight at a time, the last word overlapping the one
 * before (no call, no read past the end); names under 8 bytes byte by
 * byte. */
static inline unsigned scan(const char *s, size_t n)
{
    uint64_t w, ctl = 0, high = 0;
    if (n < 8) {
        unsigned seen = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            seen |= (c < 0x20 || c == 0x7f) ? SEEN_CONTROL : c > 0x7f ? SEEN_HIGH : 0;
        }
        return seen;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&w, s + i, 8);
        ctl |= word_controls(w);
        high |= w;
    }
    memcpy(&w, s + n - 8, 8);
    ctl |= word_controls(w);
    high |= w;
    return (ctl ? SEEN_CONTROL : 0) | (high & HIGHS ? SEEN_HIGH : 0);
}

/* The rules a name with a byte above 0x7f also has to pass: strict UTF-8
 * and no C1 control. Out of the hot path: real names are ASCII. */
__attribute__((noinline)) static const char *wide_problem(const char *s, size_t n)
{
    const char *why = ns_utf8_problem(s, n);
    const uint8_t *p = (const uint8_t *)s;
    uint32_t cp = 0;
    for (size_t i = 0, k; why == NULL && i < n; i += k) {
        k = ns_utf8_decode(p + i, n - i, &cp);
        if (ns_utf8_is_c1(cp))
            why = "contains a NUL or control character";
    }
    return why;
}

/* The check runs on every request whose header the fast decoder did not
 * vouch for: a route lookup's topic costs a few instructions per word, not
 * a compare and a branch per byte. */
const char *ns_name_problem(const char *s, size_t n)
{
    if (n == 0)
        return "is empty";
    if (n > NS_NAME_MAX_BYTES)
        return "is longer than 255 bytes";
    unsigned seen = scan(s, n);
    if (seen & SEEN_CONTROL)
        return "contains a NUL or control character";
    return seen & SEEN_HIGH ? wide_problem(s, n) : NULL;
}

const char *ns_name_problem_stored(const char *s, size_t n)
{
    if (n == 0)
        return "is empty";
    if (n > NS_NAME_MAX_BYTES)
        return "is longer than 255 bytes";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return "contains a NUL or control character";
    return NULL;
}

/* Lengths of the ext keys that carry a name (below): one test skips the
 * others. */
#define NAME_KEY_LENS (1u << 3 | 1u << 5 | 1u << 7 | 1u << 9 | 1u << 10 | 1u << 11)

/* Whether ext key [k, k+n) names something stored under a key: topic,
 * clusterName, brokerName, brokerAddr, cluster, namespace, key. */
static bool is_name_key(const char *k, size_t n)
{
    switch (n) {
    case 3:
        return memcmp(k, "key", 3) == 0;
    case 5:
        return memcmp(k, "topic", 5) == 0;
    case 7:
        return memcmp(k, "cluster", 7) == 0;
    case 9:
        return memcmp(k, "namespace", 9) == 0;
    case 10:
        return memcmp(k, "brokerName", 10) == 0 || memcmp(k, "brokerAddr", 10) == 0;
    case 11:
        return memcmp(k, "clusterName", 11) == 0;
    default:
        return false;
    }
}

/* The remark for a refused value (out of the hot path). */
__attribute__((noinline, cold)) static bool refuse(const ns_ext_field_t *e, const char *why,
                                                   char *remark, size_t remark_size)
{
    char key[40], shown[48];
    snprintf(remark, remark_size, "invalid %s \"%s\": %s (%zu bytes)",
             ns_escape(e->key, e->key_len, NS_ESC_BACKSLASH | NS_ESC_QUOTE, key, sizeof key),
             ns_escape(e->val, e->val_len, NS_ESC_BACKSLASH | NS_ESC_QUOTE, shown, sizeof shown),
             why, e->val_len);
    return false;
}

bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size)
{
    if (cmd->n_ext == 0)
        return true; /* ext may be NULL then */
    const ns_ext_field_t *e = cmd->ext, *end = cmd->ext + cmd->n_ext;
    for (; e != end; e++) {
        size_t kl = e->key_len, vl = e->val_len;
        const char *why;
        if (e->key == NULL || e->val == NULL)
            continue;
        if (kl <= 11 && ((NAME_KEY_LENS >> kl) & 1) && is_name_key(e->key, kl)) {
            if ((why = ns_name_problem(e->val, vl)) != NULL)
                return refuse(e, why, remark, remark_size);
        } else if (!ns_utf8_valid(e->val, vl)) {
            return refuse(e, ns_utf8_problem(e->val, vl), remark, remark_size);
        }
    }
    return true;
}
