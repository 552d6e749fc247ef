/* config_file.c - writing the settings back to their properties file
 * atomically, and loading it (include/ns/config.h). Runs on the writer thread for
 * UPDATE_NAMESRV_CONFIG, so the fsyncs never hold up a loop. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/config.h"
#include "ns/err.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- files ------------------------------------------------------------ */

#define JAVA_KEYS_MAX 64

typedef struct {
    ns_config_t *cfg;
    char msg[512];
    bool set_failed;           /* the error came from ns_config_set, msg says why */
    char *keys[JAVA_KEYS_MAX]; /* Java keys without effect, in file order */
    const char *whys[JAVA_KEYS_MAX];
    size_t n_keys;
    ns_buf_t trimmed; /* "key, key" whose values lost trailing blanks */
} load_ctx_t;

/* Applies one pair. A value that ends in unescaped blanks ("40001 ") is
 * taken without them, as an operator means it (Java keeps them and then
 * fails to parse the number, or opens a path with a space), and the key is
 * named in one warning; a blank that belongs to the value is written "\ ". */
static int load_pair(load_ctx_t *l, const char *key, const char *value)
{
    const char *why = NULL;
    int rc = ns_config_apply(l->cfg, key, value, &why, l->msg, sizeof l->msg);
    if (rc != NS_OK)
        l->set_failed = true;
    if (rc == NS_OK && why && l->n_keys < JAVA_KEYS_MAX) {
        for (size_t i = 0; i < l->n_keys; i++)
            if (strcmp(l->keys[i], key) == 0)
                return NS_OK; /* a key given twice is named once */
        if ((l->keys[l->n_keys] = strdup(key)) == NULL)
            return NS_ENOMEM;
        l->whys[l->n_keys++] = why;
    }
    return rc;
}

static int load_pair_cb(const ns_properties_pair_t *pair, void *ctx)
{
    load_ctx_t *l = ctx;
    if (pair->trimmed_len == pair->value_len)
        return load_pair(l, pair->key, pair->value);
    char *v = strndup(pair->value, pair->trimmed_len);
    if (v == NULL || (l->trimmed.len && ns_buf_append_str(&l->trimmed, ", ") != NS_OK) ||
        ns_buf_append_str(&l->trimmed, pair->key) != NS_OK) {
        free(v);
        return NS_ENOMEM;
    }
    int rc = load_pair(l, pair->key, v);
    free(v);
    return rc;
}

/* Sets cfg->java_warning from the keys collected while loading path. */
static int java_warning_set(ns_config_t *cfg, const load_ctx_t *l, const char *path)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = NS_OK;
    if (l->n_keys == 0)
        return NS_OK;
    if (ns_buf_printf(&text, "%s: Java settings accepted without effect: ", path) != NS_OK ||
        ns_config_java_warning((const char *const *)l->keys, l->whys, l->n_keys, &text) != 0) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    free(cfg->java_warning);
    cfg->java_warning = ns_buf_strdup(&text);
    rc = cfg->java_warning ? NS_OK : NS_ENOMEM;
cleanup:
    ns_buf_free(&text);
    return rc;
}

/* Reads a whole file into out. NS_EIO with errno set on failure. */
static int read_whole_file(const char *path, ns_buf_t *out)
{
    FILE *f = NULL;
    char chunk[8192];
    size_t n = 0;
    int rc = NS_OK;
    f = fopen(path, "rb");
    if (f == NULL) {
        rc = NS_EIO;
        goto cleanup;
    }
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        rc = ns_buf_append(out, chunk, n);
        if (rc != NS_OK)
            goto cleanup;
    }
    if (ferror(f)) {
        rc = NS_EIO;
        goto cleanup;
    }
cleanup:
    if (f != NULL)
        fclose(f);
    return rc;
}

/* tls.config.file: only the server's keys apply; the file is shared with
 * Java clients, whose keys (tls.client.*, tls.enable, ...) are skipped. */
static int load_tls_pair_cb(const ns_properties_pair_t *pair, void *ctx)
{
    const char *key = pair->key;
    bool ours = strncmp(key, "tls.server.", 11) == 0 || strcmp(key, "tls.protocols") == 0 ||
                strcmp(key, "tls.ciphers") == 0;
    if (!ours || strcmp(key, "tls.server.mode") == 0 || !ns_config_has_key(key))
        return NS_OK; /* Java reads tls.server.mode from the command line only */
    return load_pair_cb(pair, ctx);
}

/* Sets cfg->trim_warning from the keys whose values were trimmed in path. */
static int trim_warning_set(ns_config_t *cfg, const load_ctx_t *l, const char *path)
{
    if (l->trimmed.len == 0)
        return NS_OK;
    ns_buf_t text = NS_BUF_INIT;
    int rc = ns_buf_printf(&text,
                           "%s: blanks at the end of the values of %.*s were trimmed (write a "
                           "blank that belongs to the value as '\\ ')",
                           path, (int)l->trimmed.len, (const char *)l->trimmed.data);
    if (rc == NS_OK) {
        free(cfg->trim_warning);
        cfg->trim_warning = ns_buf_strdup(&text);
        rc = cfg->trim_warning ? NS_OK : NS_ENOMEM;
    }
    ns_buf_free(&text);
    return rc;
}

int ns_config_load_tls_file(ns_config_t *cfg, bool *loaded, char *err, size_t errlen)
{
    ns_buf_t text = NS_BUF_INIT;
    load_ctx_t ctx = {.cfg = cfg};
    const char *path = cfg->tls_config_file;
    struct stat st;
    *loaded = false;
    if (path == NULL || *path == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return NS_OK; /* as Java: "Tls config file doesn't exist, skip it" */
    int rc = read_whole_file(path, &text);
    if (rc != NS_OK) {
        set_err(err, errlen, "%s: %s", path, rc == NS_EIO ? strerror(errno) : ns_strerror(rc));
        goto cleanup;
    }
    rc = ns_properties_scan((const char *)text.data, text.len, load_tls_pair_cb, &ctx);
    if (rc != NS_OK)
        set_err(err, errlen, "%s: %s", path,
                ctx.set_failed ? ctx.msg : "malformed escape or NUL byte");
    else
        *loaded = true;
cleanup:
    ns_buf_free(&ctx.trimmed);
    ns_buf_free(&text);
    return rc;
}

int ns_config_load_file(ns_config_t *cfg, const char *path, char *err, size_t errlen)
{
    ns_buf_t text = NS_BUF_INIT;
    load_ctx_t ctx = {.cfg = cfg};
    char *path_copy = NULL;
    int rc = read_whole_file(path, &text);
    if (rc != NS_OK) {
        set_err(err, errlen, "%s: %s", path, rc == NS_EIO ? strerror(errno) : ns_strerror(rc));
        goto cleanup;
    }
    rc = ns_properties_scan((const char *)text.data, text.len, load_pair_cb, &ctx);
    if (rc != NS_OK) {
        if (ctx.set_failed)
            set_err(err, errlen, "%s: %s", path, ctx.msg);
        else if (rc == NS_EINVAL)
            set_err(err, errlen, "%s: malformed escape or NUL byte", path);
        else
            set_err(err, errlen, "%s: %s", path, ns_strerror(rc));
        goto cleanup;
    }
    path_copy = realpath(path, NULL);
    if (path_copy == NULL)
        path_copy = strdup(path);
    /* as Java's -c: the file in use is the configStorePath */
    if (path_copy == NULL || java_warning_set(cfg, &ctx, path_copy) != NS_OK ||
        trim_warning_set(cfg, &ctx, path_copy) != NS_OK ||
        ns_config_set(cfg, "configStorePath", path_copy, NULL, 0) != NS_OK) {
        rc = NS_ENOMEM;
        set_err(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }
    free(cfg->config_file);
    cfg->config_file = path_copy;
    path_copy = NULL;
cleanup:
    for (size_t i = 0; i < ctx.n_keys; i++)
        free(ctx.keys[i]);
    ns_buf_free(&ctx.trimmed);
    free(path_copy);
    ns_buf_free(&text);
    return rc;
}

/* path + suffix as a new heap string, or NULL. */
static char *path_with(const char *path, const char *suffix)
{
    size_t a = strlen(path), b = strlen(suffix);
    char *s = malloc(a + b + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, path, a);
    memcpy(s + a, suffix, b + 1);
    return s;
}

/* Creates the directories leading to the file at path (mkdir -p dirname). */
static int make_parent_dirs(const char *path)
{
    char *dir = strdup(path);
    int rc = NS_OK;
    if (dir == NULL)
        return NS_ENOMEM;
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        goto cleanup;
    *slash = 0;
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != 0)
            continue;
        char saved = *p;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            rc = NS_EIO;
            goto cleanup;
        }
        *p = saved;
        if (saved == 0)
            break;
    }
cleanup:
    free(dir);
    return rc;
}

/* Writes n bytes to a new file at path (truncating, created with mode) and
 * fsyncs it. */
static int write_synced_mode(const char *path, const void *data, size_t n, mode_t mode)
{
    const uint8_t *p = data;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    int rc = NS_OK;
    if (fd < 0)
        return NS_EIO;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = NS_EIO;
            goto cleanup;
        }
        p += w;
        n -= (size_t)w;
    }
    if (fsync(fd) != 0)
        rc = NS_EIO;
cleanup:
    if (close(fd) != 0 && rc == NS_OK)
        rc = NS_EIO;
    return rc;
}

/* fsyncs the directory holding path, so a rename in it is durable. */
static int sync_parent_dir(const char *path)
{
    char *dir = strdup(path);
    int fd = -1, rc = NS_OK;
    if (dir == NULL)
        return NS_ENOMEM;
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        strcpy(dir, ".");
    else if (slash == dir)
        slash[1] = 0;
    else
        *slash = 0;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = NS_EIO;
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

/* ---- rewriting the operator's file ------------------------------------ */

typedef struct {
    const ns_strpairs_t *changes;
    const char *text;
    ns_buf_t *out;
    size_t copied; /* text before this offset is in out already */
    bool *written; /* per change: a line of the file set it */
} rewrite_ctx_t;

static int append_pair_line(ns_buf_t *out, const char *key, const char *value)
{
    if (ns_buf_append_str(out, key) != NS_OK || ns_buf_append_u8(out, '=') != NS_OK ||
        ns_properties_append_escaped(out, value) != NS_OK)
        return NS_ENOMEM;
    return NS_OK;
}

static int rewrite_pair_cb(const ns_properties_pair_t *pair, void *ctx)
{
    rewrite_ctx_t *r = ctx;
    for (size_t i = 0; i < r->changes->n; i++) {
        if (strcmp(r->changes->a[i], pair->key) != 0)
            continue;
        if (ns_buf_append(r->out, r->text + r->copied, pair->start - r->copied) != NS_OK ||
            append_pair_line(r->out, pair->key, r->changes->b[i]) != NS_OK)
            return NS_ENOMEM;
        r->copied = pair->end;
        r->written[i] = true;
        break;
    }
    return NS_OK;
}

/* The new text: old with the changed keys' lines replaced, the rest appended. */
static int rewrite_text(const ns_buf_t *old, const ns_strpairs_t *changes, ns_buf_t *out)
{
    bool *written = calloc(changes->n ? changes->n : 1, sizeof *written);
    rewrite_ctx_t r = {changes, (const char *)old->data, out, 0, written};
    int rc = written ? NS_OK : NS_ENOMEM;
    if (rc == NS_OK)
        rc = ns_properties_scan(r.text, old->len, rewrite_pair_cb, &r);
    if (rc == NS_OK)
        rc = ns_buf_append(out, r.text + r.copied, old->len - r.copied);
    for (size_t i = 0; rc == NS_OK && i < changes->n; i++) {
        if (written[i])
            continue;
        if (out->len && out->data[out->len - 1] != '\n' && ns_buf_append_u8(out, '\n') != NS_OK)
            rc = NS_ENOMEM;
        if (rc == NS_OK && (append_pair_line(out, changes->a[i], changes->b[i]) != NS_OK ||
                            ns_buf_append_u8(out, '\n') != NS_OK))
            rc = NS_ENOMEM;
        written[i] = true;
    }
    free(written);
    return rc;
}

/* path.bak (k == 0) or path.bak.k, as a new heap string. */
static char *bak_name(const char *path, int64_t k)
{
    char suffix[32];
    if (k == 0)
        snprintf(suffix, sizeof suffix, ".bak");
    else
        snprintf(suffix, sizeof suffix, ".bak.%lld", (long long)k);
    return path_with(path, suffix);
}

/* Moves the generations down one (the oldest, path.bak.<backups-1>, goes)
 * and writes old as path.bak with mode. */
static int rotate_backups(const char *path, const ns_buf_t *old, int64_t backups, mode_t mode)
{
    int rc = NS_OK;
    for (int64_t k = backups - 1; k >= 1 && rc == NS_OK; k--) {
        char *from = bak_name(path, k - 1), *to = bak_name(path, k);
        if (from == NULL || to == NULL)
            rc = NS_ENOMEM;
        else if (rename(from, to) != 0 && errno != ENOENT)
            rc = NS_EIO;
        free(from);
        free(to);
    }
    char *bak = rc == NS_OK ? bak_name(path, 0) : NULL;
    if (rc == NS_OK && bak == NULL)
        rc = NS_ENOMEM;
    if (rc == NS_OK)
        rc = write_synced_mode(bak, old->data, old->len, mode);
    if (rc == NS_OK)
        chmod(bak, mode); /* an existing .bak keeps the mode it was created with */
    free(bak);
    return rc;
}

int ns_config_rewrite_file(const char *path, const ns_strpairs_t *changes, int64_t backups)
{
    ns_buf_t old = NS_BUF_INIT, text = NS_BUF_INIT;
    char *tmp = NULL;
    bool tmp_written = false, existed = true;
    mode_t mode = 0640;
    struct stat st;
    int rc = read_whole_file(path, &old);
    if (rc == NS_EIO && errno == ENOENT) {
        existed = false;
        rc = NS_OK;
    }
    if (rc != NS_OK)
        goto cleanup;
    if (existed && stat(path, &st) == 0)
        mode = st.st_mode & 07777;
    rc = rewrite_text(&old, changes, &text);
    if (rc != NS_OK)
        goto cleanup;
    tmp = path_with(path, ".tmp");
    if (tmp == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    rc = make_parent_dirs(path);
    if (rc != NS_OK)
        goto cleanup;
    tmp_written = true;
    rc = write_synced_mode(tmp, text.data, text.len, mode);
    if (rc == NS_OK)
        chmod(tmp, mode); /* the umask may have narrowed it */
    if (rc == NS_OK && existed && backups > 0)
        rc = rotate_backups(path, &old, backups, mode);
    if (rc != NS_OK)
        goto cleanup;
    if (rename(tmp, path) != 0) {
        rc = NS_EIO;
        goto cleanup;
    }
    tmp_written = false;
    rc = sync_parent_dir(path);
cleanup:
    if (tmp_written)
        unlink(tmp);
    free(tmp);
    ns_buf_free(&old);
    ns_buf_free(&text);
    return rc;
}
