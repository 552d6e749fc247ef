/* config_help.c - what the config table tells people rather than the
 * server: the --help text, the man page's settings section, and the key
 * closest to a mistyped one (include/ns/config.h). Walks the same table as
 * config.c, so none of it can drift from what the settings file accepts. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "ns/config.h"
#include "ns/err.h"
#include "config/config_table.h"

/* Levenshtein distance of a and b, ASCII case folded, capped at cap (keys
 * are short: one row of 64 suffices; longer ones count as far). Written by
 * hand: a dozen lines, for one error message. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return cap;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t subst =
                diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            size_t best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = subst < best ? subst : best;
            diag = up;
        }
    }
    return row[lb] < cap ? row[lb] : cap;
}

const char *ns_config_closest_key(const char *key)
{
    const char *best = NULL;
    size_t cap = strlen(key) / 3 + 2, best_d = cap; /* a slip, not another word */
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        size_t d = edit_distance(key, ns_config_table[i].key, cap);
        if (d < best_d) {
            best_d = d;
            best = ns_config_table[i].key;
        }
    }
    const char *java = NULL;
    for (size_t i = 0; (java = ns_config_java_key(i)) != NULL; i++) {
        size_t d = edit_distance(key, java, cap);
        if (d < best_d) {
            best_d = d;
            best = java;
        }
    }
    return best;
}

/* ---- --help ----------------------------------------------------------- */

/* Appends "--key=META" for e. */
static int append_flag(ns_buf_t *out, const ns_cfg_entry_t *e)
{
    static const char *const meta[] = {[NS_CFG_INT64] = "INT",
                                       [NS_CFG_BOOL] = "BOOL",
                                       [NS_CFG_STRING] = "STRING",
                                       [NS_CFG_ENUM] = NULL};
    if (ns_buf_printf(out, "--%s=", e->key) != NS_OK)
        return NS_ENOMEM;
    return e->type == NS_CFG_ENUM ? ns_cfg_append_enum_values(out, e)
                                  : ns_buf_append_str(out, meta[e->type]);
}

/* Appends "default: X; min..max" for e. */
static int append_default_bounds(ns_buf_t *out, const ns_cfg_entry_t *e)
{
    int rc = ns_buf_printf(out, "default: %s", *e->def ? e->def : "empty");
    if (rc == NS_OK && e->type == NS_CFG_INT64 && e->max == INT64_MAX)
        rc = ns_buf_printf(out, "; min %lld", (long long)e->min);
    else if (rc == NS_OK && e->type == NS_CFG_INT64)
        rc = ns_buf_printf(out, "; %lld..%lld", (long long)e->min, (long long)e->max);
    return rc;
}

/* Appends s for roff: backslashes as \e, a dot or quote that would begin a
 * line guarded with \&. */
static int append_roff(ns_buf_t *out, const char *s)
{
    int rc = NS_OK;
    for (size_t i = 0; s[i] && rc == NS_OK; i++) {
        if (s[i] == '\\')
            rc = ns_buf_append_str(out, "\\e");
        else if ((s[i] == '.' || s[i] == '\'') && (i == 0 || s[i - 1] == '\n'))
            rc = ns_buf_printf(out, "\\&%c", s[i]);
        else if (s[i] == '-')
            rc = ns_buf_append_str(out, "\\-");
        else
            rc = ns_buf_append_u8(out, (uint8_t)s[i]);
    }
    return rc;
}

int ns_config_help_roff(ns_buf_t *out)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = NS_OK;
    for (size_t i = 0; i < ns_config_n_entries && rc == NS_OK; i++) {
        const ns_cfg_entry_t *e = &ns_config_table[i];
        ns_buf_reset(&text);
        rc = ns_buf_append_str(out, ".TP\n.B ");
        rc = rc ? rc : append_flag(&text, e);
        rc = rc ? rc : ns_buf_append_u8(&text, 0);
        rc = rc ? rc : append_roff(out, (const char *)text.data + 2); /* without "--" */
        rc = rc ? rc : ns_buf_append_u8(out, '\n');
        rc = rc ? rc : append_roff(out, e->help);
        ns_buf_reset(&text);
        rc = rc ? rc : append_default_bounds(&text, e);
        rc = rc ? rc : ns_buf_append_u8(&text, 0);
        rc = rc ? rc : ns_buf_append_str(out, " (");
        rc = rc ? rc : append_roff(out, (const char *)text.data);
        rc = rc ? rc
                : ns_buf_printf(out, ")%s%s.\n",
                                e->flags & NS_CFG_MUTABLE ? "; changes while running" : "",
                                e->flags & NS_CFG_OURS ? "; namesrvd's own (not Java's)" : "");
    }
    ns_buf_free(&text);
    return rc;
}

int ns_config_help(ns_buf_t *out)
{
    ns_buf_t flag = NS_BUF_INIT;
    size_t width = 0;
    int rc = NS_OK;
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        ns_buf_reset(&flag);
        rc = append_flag(&flag, &ns_config_table[i]);
        if (rc != NS_OK)
            goto cleanup;
        if (flag.len > width)
            width = flag.len;
    }
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        const ns_cfg_entry_t *e = &ns_config_table[i];
        ns_buf_reset(&flag);
        rc = append_flag(&flag, e);
        if (rc != NS_OK)
            goto cleanup;
        rc = ns_buf_printf(out, "  %-*s  %s (", (int)width, (const char *)flag.data, e->help);
        if (rc == NS_OK)
            rc = append_default_bounds(out, e);
        if (rc == NS_OK)
            rc = ns_buf_append_str(out, ")\n");
        if (rc != NS_OK)
            goto cleanup;
    }
cleanup:
    ns_buf_free(&flag);
    return rc;
}
