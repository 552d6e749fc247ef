/* names.c - name checks and log escaping (include/ns/names.h). */
#include "ns/names.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* True when one of the 8 bytes of w is below 0x20 or is 0x7f (the exact
 * "has a byte less than n" and "has a zero byte" word tests). */
static inline bool word_has_control(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t del = w ^ (ones * 0x7f);
    return (((w - ones * 0x20) & ~w) | ((del - ones) & ~del)) & highs;
}

/* No control byte in [s, s+n): eight bytes at a time, the last word
 * overlapping the one before (no call, no read past the end); names under
 * 8 bytes byte by byte. */
static inline bool no_control(const char *s, size_t n)
{
    uint64_t w;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
                return false;
        return true;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&w, s + i, 8);
        if (word_has_control(w))
            return false;
    }
    memcpy(&w, s + n - 8, 8);
    return !word_has_control(w);
}

/* The check runs on every name of every request: a route lookup's topic
 * costs a few instructions per word, not a compare and a branch per byte. */
const char *ns_name_problem(const char *s, size_t n)
{
    if (n == 0)
        return "is empty";
    if (n > NS_NAME_MAX_BYTES)
        return "is longer than 255 bytes";
    return no_control(s, n) ? NULL : "contains a NUL or control character";
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

/* The remark for a refused name (out of the hot path). */
__attribute__((noinline, cold)) static bool refuse(const ns_ext_field_t *e, char *remark,
                                                   size_t remark_size)
{
    char shown[48];
    snprintf(remark, remark_size, "invalid %.*s \"%s\": %s (%zu bytes)", (int)e->key_len, e->key,
             ns_escape(e->val, e->val_len, shown, sizeof shown),
             ns_name_problem(e->val, e->val_len), e->val_len);
    return false;
}

bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size)
{
    if (cmd->n_ext == 0)
        return true; /* ext may be NULL then */
    const ns_ext_field_t *e = cmd->ext, *end = cmd->ext + cmd->n_ext;
    for (; e != end; e++) {
        size_t kl = e->key_len, vl = e->val_len;
        if (kl > 11 || !((NAME_KEY_LENS >> kl) & 1) || e->key == NULL || e->val == NULL ||
            !is_name_key(e->key, kl))
            continue;
        if (vl == 0 || vl > NS_NAME_MAX_BYTES || !no_control(e->val, vl))
            return refuse(e, remark, remark_size);
    }
    return true;
}

/* Escaped form of byte c into tmp (at most 4 bytes); returns its length. */
static size_t escape_byte(unsigned char c, char *tmp)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    if (c == '\n' || c == '\r' || c == '\t' || c == '\\' || c == '"') {
        tmp[k++] = '\\';
        tmp[k++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : (char)c;
    } else if (c < 0x20 || c == 0x7f) {
        tmp[k++] = '\\';
        tmp[k++] = 'x';
        tmp[k++] = hex[c >> 4];
        tmp[k++] = hex[c & 15];
    } else {
        tmp[k++] = (char)c;
    }
    return k;
}

char *ns_escape(const char *s, size_t n, char *out, size_t out_size)
{
    char tmp[4];
    size_t total = 0, o = 0;
    if (out_size == 0)
        return out;
    for (size_t i = 0; i < n; i++)
        total += escape_byte((unsigned char)s[i], tmp);
    /* all of it when it fits; else as much as fits before a "..." */
    size_t room = total < out_size ? out_size - 1 : (out_size >= 4 ? out_size - 4 : 0);
    for (size_t i = 0; i < n; i++) {
        size_t k = escape_byte((unsigned char)s[i], tmp);
        if (o + k > room)
            break;
        memcpy(out + o, tmp, k);
        o += k;
    }
    if (total >= out_size && out_size >= 4) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return out;
}
