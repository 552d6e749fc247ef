/* names.c - name checks and log escaping (include/ns/names.h). */
#include "ns/names.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
/* Whether any byte of w is below 0x20 or 0x7f. A marked byte above a true
 * one may be a borrow's artefact, but none is marked without a true one. */
static inline bool word_has_control(uint64_t w)
{
    uint64_t del = w ^ (ONES * 0x7f);
    return (((w - ONES * 0x20) & ~w) | ((del - ONES) & ~del)) & HIGHS;
}
#endif

const char *ns_name_problem(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0)
        return "is empty";
    if (n > NS_NAME_MAX_BYTES)
        return "is longer than 255 bytes";
#ifdef HIGHS
    for (; i + 8 <= n; i += 8) { /* names are checked on every request */
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (word_has_control(w))
            break;
    }
#endif
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return "contains a NUL or control character";
    }
    return NULL;
}

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

bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size)
{
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const ns_ext_field_t *e = &cmd->ext[i];
        if (e->key == NULL || e->val == NULL || !is_name_key(e->key, e->key_len))
            continue;
        const char *why = ns_name_problem(e->val, e->val_len);
        if (why == NULL)
            continue;
        char shown[48];
        snprintf(remark, remark_size, "invalid %.*s \"%s\": %s (%zu bytes)", (int)e->key_len,
                 e->key, ns_escape(e->val, e->val_len, shown, sizeof shown), why, e->val_len);
        return false;
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
