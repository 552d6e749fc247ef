/* names.c - name checks and log escaping (include/ns/names.h). */
#include "ns/names.h"

#include <stdio.h>
#include <string.h>

const char *ns_name_problem(const char *s, size_t n)
{
    if (n == 0)
        return "is empty";
    if (n > NS_NAME_MAX_BYTES)
        return "is longer than 255 bytes";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return "contains a NUL or control character";
    }
    return NULL;
}

/* The header fields that name something stored under a key. */
static const char *const name_fields[] = {"topic",   "clusterName", "brokerName", "brokerAddr",
                                          "cluster", "namespace",   "key"};

bool ns_names_check_header(const ns_cmd_t *cmd, char *remark, size_t remark_size)
{
    for (size_t f = 0; f < sizeof name_fields / sizeof name_fields[0]; f++) {
        size_t klen = strlen(name_fields[f]);
        for (size_t i = 0; i < cmd->n_ext; i++) {
            const ns_ext_field_t *e = &cmd->ext[i];
            if (e->key == NULL || e->val == NULL || e->key_len != klen ||
                memcmp(e->key, name_fields[f], klen) != 0)
                continue;
            const char *why = ns_name_problem(e->val, e->val_len);
            if (why == NULL)
                break;
            char shown[48];
            snprintf(remark, remark_size, "invalid %s \"%s\": %s (%zu bytes)", name_fields[f],
                     ns_escape(e->val, e->val_len, shown, sizeof shown), why, e->val_len);
            return false;
        }
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
