/* config.c - NameServer settings from one declarative table (include/ns/config.h).
 *
 * Every setting is one row of ns_config_table[]: key (RocketMQ's name where
 * RocketMQ has the setting), type, offset of its field in ns_config_t,
 * default as text, bounds, enum values, flags and a one-line help. Defaults,
 * the properties file, --key=value, GET/UPDATE_NAMESRV_CONFIG, -p and --help
 * all walk the table; no code below knows a setting by name. Adding a
 * setting = one field in ns_config_t + one row in config_table.c, which
 * holds the table; this file holds the code that walks it.
 *
 * Value syntax (ns_config_set), the same everywhere:
 *   INT64   decimal, optional sign, inside [min, max]
 *   BOOL    "true" or "false", case-insensitive. Java's Boolean.parseBoolean
 *           turns anything else into false; we refuse it instead.
 *   STRING  any text (also empty), stored as a heap copy
 *   ENUM    one of the row's values, case-insensitive, stored canonical
 * Defaults go through the same parser after ${VAR} expansion (environment;
 * ${HOME} falls back to the passwd entry), so a row whose default breaks its
 * own bounds makes ns_config_init fail. A failed set leaves cfg unchanged.
 *
 * Properties text is parsed by ns_properties_parse (src/base/properties.c).
 *
 * Dump escaping (ns_config_dump): only what our parser and Java's need to
 * read the value back unchanged: '\\' -> "\\\\", newline -> "\\n", CR -> "\\r",
 * tab -> "\\t", form feed -> "\\f", and a space as the first character ->
 * "\\ ". Keys are plain identifiers and never escaped; non-ASCII stays raw.
 */
#include "ns/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/log.h"
#include "config/config_table.h"

/* ---- helpers ---------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const ns_cfg_entry_t *find_entry(const char *key)
{
    for (size_t i = 0; i < ns_config_n_entries; i++)
        if (strcmp(ns_config_table[i].key, key) == 0)
            return &ns_config_table[i];
    return NULL;
}

static void *slot_of(ns_config_t *cfg, const ns_cfg_entry_t *e)
{
    return (char *)cfg + e->offset;
}

static const void *cslot_of(const ns_config_t *cfg, const ns_cfg_entry_t *e)
{
    return (const char *)cfg + e->offset;
}

/* True if s is an optional sign followed by one or more digits. */
static bool is_decimal(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == 0)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Appends the row's enum values joined by '|'. */
int ns_cfg_append_enum_values(ns_buf_t *out, const ns_cfg_entry_t *e)
{
    for (size_t i = 0; e->values[i]; i++)
        if ((i && ns_buf_append_u8(out, '|') != NS_OK) ||
            ns_buf_append_str(out, e->values[i]) != NS_OK)
            return NS_ENOMEM;
    return NS_OK;
}

/* Replaces the string in *slot with a copy of s. */
static int replace_str(char **slot, const char *s)
{
    char *copy = strdup(s);
    if (copy == NULL)
        return NS_ENOMEM;
    free(*slot);
    *slot = copy;
    return NS_OK;
}

static int set_int(ns_config_t *cfg, const ns_cfg_entry_t *e, const char *value, char *err,
                   size_t errlen)
{
    int64_t v = 0;
    if (!is_decimal(value)) {
        set_err(err, errlen, "%s: '%s' is not an integer", e->key, value);
        return NS_EINVAL;
    }
    if (ns_parse_i64(value, strlen(value), &v) != NS_OK || v < e->min || v > e->max) {
        set_err(err, errlen, "%s: %s is out of range [%lld, %lld]", e->key, value,
                (long long)e->min, (long long)e->max);
        return NS_EINVAL;
    }
    *(int64_t *)slot_of(cfg, e) = v;
    return NS_OK;
}

static int set_bool(ns_config_t *cfg, const ns_cfg_entry_t *e, const char *value, char *err,
                    size_t errlen)
{
    bool *slot = slot_of(cfg, e);
    if (strcasecmp(value, "true") == 0) {
        *slot = true;
    } else if (strcasecmp(value, "false") == 0) {
        *slot = false;
    } else {
        set_err(err, errlen, "%s: '%s' is not a boolean (true or false)", e->key, value);
        return NS_EINVAL;
    }
    return NS_OK;
}

static int set_enum(ns_config_t *cfg, const ns_cfg_entry_t *e, const char *value, char *err,
                    size_t errlen)
{
    ns_buf_t list = NS_BUF_INIT;
    int rc = NS_OK;
    for (size_t i = 0; e->values[i]; i++)
        if (strcasecmp(value, e->values[i]) == 0)
            return replace_str(slot_of(cfg, e), e->values[i]);
    rc = ns_cfg_append_enum_values(&list, e);
    if (rc != NS_OK)
        goto cleanup;
    set_err(err, errlen, "%s: '%s' is not one of %s", e->key, value, (const char *)list.data);
    rc = NS_EINVAL;
cleanup:
    ns_buf_free(&list);
    return rc;
}

static int set_entry(ns_config_t *cfg, const ns_cfg_entry_t *e, const char *value, char *err,
                     size_t errlen)
{
    int rc = NS_EINVAL;
    switch (e->type) {
    case NS_CFG_INT64:
        rc = set_int(cfg, e, value, err, errlen);
        break;
    case NS_CFG_BOOL:
        rc = set_bool(cfg, e, value, err, errlen);
        break;
    case NS_CFG_STRING:
        rc = replace_str(slot_of(cfg, e), value);
        break;
    case NS_CFG_ENUM:
        rc = set_enum(cfg, e, value, err, errlen);
        break;
    }
    if (rc == NS_ENOMEM)
        set_err(err, errlen, "%s: out of memory", e->key);
    return rc;
}

/* Value of ${name} in a default: the environment; HOME falls back to the
 * passwd entry (Java's user.home). Borrowed; never NULL. */
static const char *default_var(const char *name)
{
    const char *v = getenv(name);
    if ((v == NULL || *v == 0) && strcmp(name, "HOME") == 0) {
        struct passwd *pw = getpwuid(getuid());
        v = pw ? pw->pw_dir : NULL;
    }
    return v ? v : "";
}

/* Expands ${NAME} in a default into out (NUL-terminated). An unterminated
 * "${" is copied as it is. */
static int expand_default(const char *def, ns_buf_t *out)
{
    char name[64];
    ns_buf_reset(out);
    if (ns_buf_reserve(out, strlen(def)) != NS_OK)
        return NS_ENOMEM;
    out->data[0] = 0;
    for (const char *p = def; *p;) {
        const char *end = strncmp(p, "${", 2) == 0 ? strchr(p + 2, '}') : NULL;
        size_t n = end ? (size_t)(end - p - 2) : 0;
        if (end == NULL || n >= sizeof name) {
            if (ns_buf_append_u8(out, (uint8_t)*p++) != NS_OK)
                return NS_ENOMEM;
            continue;
        }
        memcpy(name, p + 2, n);
        name[n] = 0;
        if (ns_buf_append_str(out, default_var(name)) != NS_OK)
            return NS_ENOMEM;
        p = end + 1;
    }
    return NS_OK;
}

/* ---- settings --------------------------------------------------------- */

int ns_config_init(ns_config_t *cfg)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = NS_OK;
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        const ns_cfg_entry_t *e = &ns_config_table[i];
        rc = expand_default(e->def, &text);
        if (rc != NS_OK)
            goto cleanup;
        rc = set_entry(cfg, e, (const char *)text.data, NULL, 0);
        if (rc != NS_OK)
            goto cleanup;
    }
cleanup:
    ns_buf_free(&text);
    if (rc != NS_OK)
        ns_config_free(cfg);
    return rc;
}

void ns_config_free(ns_config_t *cfg)
{
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        const ns_cfg_entry_t *e = &ns_config_table[i];
        if (e->type == NS_CFG_STRING || e->type == NS_CFG_ENUM) {
            char **slot = slot_of(cfg, e);
            free(*slot);
            *slot = NULL;
        }
    }
    free(cfg->config_file);
    cfg->config_file = NULL;
    free(cfg->java_warning);
    cfg->java_warning = NULL;
    free(cfg->trim_warning);
    cfg->trim_warning = NULL;
}

void ns_config_copy_scalars(ns_config_t *dst, const ns_config_t *src)
{
    *dst = *src;
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        const ns_cfg_entry_t *e = &ns_config_table[i];
        if (e->type == NS_CFG_STRING || e->type == NS_CFG_ENUM)
            *(char **)slot_of(dst, e) = NULL;
    }
    dst->config_file = NULL;
    dst->java_warning = NULL;
    dst->trim_warning = NULL;
}

int ns_config_set(ns_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    const ns_cfg_entry_t *e = find_entry(key);
    if (e == NULL) {
        const char *near = ns_config_closest_key(key);
        if (near)
            set_err(err, errlen, "unknown key '%s' (did you mean '%s'?)", key, near);
        else
            set_err(err, errlen, "unknown key '%s'", key);
        return NS_EINVAL;
    }
    return set_entry(cfg, e, value, err, errlen);
}

/* The apply hooks of the layers above (ns_config_set_hook), by row: the
 * settings code is base only, so what a setting does in the daemon above it
 * is installed from there. Set at start, before any loop runs. */
static ns_config_apply_fn hooks[NS_CONFIG_MAX_ENTRIES];

int ns_config_set_hook(const char *key, ns_config_apply_fn fn)
{
    const ns_cfg_entry_t *e = find_entry(key);
    if (e == NULL)
        return NS_ENOTFOUND;
    hooks[e - ns_config_table] = fn;
    return NS_OK;
}

static void apply_entry(const ns_config_t *cfg, const ns_cfg_entry_t *e)
{
    if (e->apply)
        e->apply(cfg);
    ns_config_apply_fn hook = hooks[e - ns_config_table];
    if (hook)
        hook(cfg);
}

int ns_config_update(ns_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    int rc = ns_config_set(cfg, key, value, err, errlen);
    const ns_cfg_entry_t *e = rc == NS_OK ? find_entry(key) : NULL;
    if (e)
        apply_entry(cfg, e);
    return rc;
}

void ns_config_apply_all(const ns_config_t *cfg)
{
    for (size_t i = 0; i < ns_config_n_entries; i++)
        apply_entry(cfg, &ns_config_table[i]);
}

static int append_value(ns_buf_t *out, const ns_config_t *cfg, const ns_cfg_entry_t *e);

int ns_config_apply(ns_config_t *cfg, const char *key, const char *value, const char **why,
                    char *err, size_t errlen)
{
    *why = NULL;
    if (find_entry(key) == NULL && (*why = ns_config_java_ignored(key)) != NULL)
        return NS_OK;
    int rc = ns_config_set(cfg, key, value, err, errlen);
    if (rc == NS_OK)
        *why = ns_config_noeffect(key);
    return rc;
}

int ns_config_get_text(const ns_config_t *cfg, const char *key, ns_buf_t *out)
{
    const ns_cfg_entry_t *e = find_entry(key);
    if (e == NULL)
        return NS_ENOTFOUND;
    if ((e->type == NS_CFG_STRING || e->type == NS_CFG_ENUM) &&
        *(char *const *)cslot_of(cfg, e) == NULL)
        return NS_OK;
    if (e->type == NS_CFG_STRING || e->type == NS_CFG_ENUM)
        return ns_buf_append_str(out, *(char *const *)cslot_of(cfg, e));
    return append_value(out, cfg, e);
}

bool ns_config_has_key(const char *key)
{
    return find_entry(key) != NULL;
}

int ns_config_check_runtime(const char *key, const char *value, char *err, size_t errlen)
{
    const ns_cfg_entry_t *e = find_entry(key);
    if (e == NULL || !(e->flags & NS_CFG_MUTABLE)) {
        set_err(err, errlen, "%s cannot change while the server runs", key);
        return NS_EINVAL;
    }
    if (e->type != NS_CFG_INT64 || (e->rt_min == 0 && e->rt_max == 0))
        return NS_OK;
    int64_t v = 0;
    if (ns_parse_i64(value, strlen(value), &v) != NS_OK)
        return NS_OK; /* ns_config_set reports it */
    if (v < e->rt_min || v > e->rt_max) {
        set_err(err, errlen,
                "%s: %lld is outside %lld..%lld, the range allowed while running (other values "
                "only through the settings file and a restart)",
                key, (long long)v, (long long)e->rt_min, (long long)e->rt_max);
        return NS_EINVAL;
    }
    return NS_OK;
}

bool ns_config_is_mutable(const char *key)
{
    const ns_cfg_entry_t *e = find_entry(key);
    return e != NULL && (e->flags & NS_CFG_MUTABLE);
}

/* Appends the current value of e as text (escaped; strings raw otherwise). */
static int append_value(ns_buf_t *out, const ns_config_t *cfg, const ns_cfg_entry_t *e)
{
    const void *slot = cslot_of(cfg, e);
    switch (e->type) {
    case NS_CFG_INT64:
        return ns_buf_append_i64_dec(out, *(const int64_t *)slot);
    case NS_CFG_BOOL:
        return ns_buf_append_str(out, *(const bool *)slot ? "true" : "false");
    case NS_CFG_STRING:
    case NS_CFG_ENUM:
        break;
    }
    return ns_properties_append_escaped(out, *(char *const *)slot);
}

static int cmp_entry_key(const void *a, const void *b)
{
    const ns_cfg_entry_t *ea = *(const ns_cfg_entry_t *const *)a;
    const ns_cfg_entry_t *eb = *(const ns_cfg_entry_t *const *)b;
    return strcmp(ea->key, eb->key);
}

static int dump(const ns_config_t *cfg, ns_buf_t *out)
{
    const ns_cfg_entry_t *sorted[NS_CONFIG_MAX_ENTRIES];
    for (size_t i = 0; i < ns_config_n_entries; i++)
        sorted[i] = &ns_config_table[i];
    qsort(sorted, ns_config_n_entries, sizeof sorted[0], cmp_entry_key);
    for (size_t i = 0; i < ns_config_n_entries; i++) {
        const ns_cfg_entry_t *e = sorted[i];
        bool is_str = e->type == NS_CFG_STRING || e->type == NS_CFG_ENUM;
        if (is_str && *(char *const *)cslot_of(cfg, e) == NULL)
            continue; /* null-valued: omitted, as Java does */
        if (e->flags & NS_CFG_SECRET)
            continue; /* shown nowhere: only the operator's file holds it */
        if (ns_buf_append_str(out, e->key) != NS_OK || ns_buf_append_u8(out, '=') != NS_OK ||
            append_value(out, cfg, e) != NS_OK || ns_buf_append_u8(out, '\n') != NS_OK)
            return NS_ENOMEM;
    }
    return NS_OK;
}

int ns_config_dump(const ns_config_t *cfg, ns_buf_t *out)
{
    return dump(cfg, out);
}
