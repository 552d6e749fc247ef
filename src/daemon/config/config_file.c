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
} load_ctx_t;

static int load_pair_cb(const char *key, const char *value, void *ctx)
{
    load_ctx_t *l = ctx;
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
static int load_tls_pair_cb(const char *key, const char *value, void *ctx)
{
    bool ours = strncmp(key, "tls.server.", 11) == 0 || strcmp(key, "tls.protocols") == 0 ||
                strcmp(key, "tls.ciphers") == 0;
    if (!ours || strcmp(key, "tls.server.mode") == 0 || !ns_config_has_key(key))
        return NS_OK; /* Java reads tls.server.mode from the command line only */
    return load_pair_cb(key, value, ctx);
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
    rc = ns_properties_parse((const char *)text.data, text.len, load_tls_pair_cb, &ctx);
    if (rc != NS_OK)
        set_err(err, errlen, "%s: %s", path,
                ctx.set_failed ? ctx.msg : "malformed escape or NUL byte");
    else
        *loaded = true;
cleanup:
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
    rc = ns_properties_parse((const char *)text.data, text.len, load_pair_cb, &ctx);
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

/* Writes n bytes to a new file at path (truncating) and fsyncs it. */
static int write_synced(const char *path, const void *data, size_t n)
{
    const uint8_t *p = data;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

/* Copies the file at src to dst (fsynced). A missing src is not an error. */
static int backup_file(const char *src, const char *dst)
{
    ns_buf_t old = NS_BUF_INIT;
    int rc = read_whole_file(src, &old);
    if (rc == NS_EIO && errno == ENOENT) {
        rc = NS_OK;
        goto cleanup;
    }
    if (rc != NS_OK)
        goto cleanup;
    rc = write_synced(dst, old.data, old.len);
cleanup:
    ns_buf_free(&old);
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

int ns_config_write_text(const ns_buf_t *text, const char *path)
{
    char *tmp = NULL, *bak = NULL;
    bool tmp_written = false;
    int rc = NS_OK;
    tmp = path_with(path, ".tmp");
    bak = path_with(path, ".bak");
    if (tmp == NULL || bak == NULL) {
        rc = NS_ENOMEM;
        goto cleanup;
    }
    rc = make_parent_dirs(path);
    if (rc != NS_OK)
        goto cleanup;
    tmp_written = true;
    rc = write_synced(tmp, text->data, text->len);
    if (rc != NS_OK)
        goto cleanup;
    rc = backup_file(path, bak);
    if (rc != NS_OK)
        goto cleanup;
    struct stat old_st; /* the new file keeps the old one's permissions (0640 in /etc) */
    if (stat(path, &old_st) == 0)
        chmod(tmp, old_st.st_mode & 07777);
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
    free(bak);
    return rc;
}

int ns_config_write_file(const ns_config_t *cfg, const char *path)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = ns_config_dump_secrets(cfg, &text); /* the file keeps the key password */
    if (rc == NS_OK)
        rc = ns_config_write_text(&text, path);
    ns_buf_free(&text);
    return rc;
}
