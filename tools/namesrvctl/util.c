/* util.c - helpers shared by the namesrvctl subcommands (ctl.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ns/clock.h"
#include "ns/err.h"
#include "ns/fsutil.h"
#include "ns/utf8.h"

/* ---- command line ---- */

static const ctl_opt_t *find_opt(const ctl_opt_t *opts, const char *name, size_t len)
{
    for (const ctl_opt_t *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

int ctl_parse(const char *cmd, int argc, char **argv, const ctl_opt_t *opts, const char **pos,
              int min_pos, int max_pos, int *n_pos)
{
    int n = 0;
    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        if (only_pos || a[0] != '-' || a[1] == 0) { /* "-" alone is stdin/stdout */
            if (n >= max_pos) {
                fprintf(stderr, "namesrvctl %s: unexpected argument '%s' (see namesrvctl help)\n",
                        cmd, a);
                return CTL_USAGE;
            }
            pos[n++] = a;
            continue;
        }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const ctl_opt_t *o = find_opt(opts, a, len);
        if (o == NULL) {
            fprintf(stderr, "namesrvctl %s: unknown option '%.*s' (see namesrvctl help)\n", cmd,
                    (int)len, a);
            return CTL_USAGE;
        }
        if (o->flag) {
            if (eq) {
                fprintf(stderr, "namesrvctl %s: %s takes no value\n", cmd, o->name);
                return CTL_USAGE;
            }
            *o->flag = true;
        } else if (eq) {
            *o->value = eq + 1;
        } else if (i + 1 < argc) {
            *o->value = argv[++i];
        } else {
            fprintf(stderr, "namesrvctl %s: %s needs a value\n", cmd, o->name);
            return CTL_USAGE;
        }
    }
    if (n < min_pos) {
        fprintf(stderr, "namesrvctl %s: missing argument(s) (see namesrvctl help)\n", cmd);
        return CTL_USAGE;
    }
    if (n_pos)
        *n_pos = n;
    return CTL_OK;
}

/* The escaped form of s into the next slot of the ring. */
static const char *txt(const char *s, unsigned flags)
{
    static ns_buf_t ring[CTL_TXT_SLOTS];
    static unsigned next;
    ns_buf_t *b = &ring[next++ % CTL_TXT_SLOTS];
    ns_buf_reset(b);
    if (s == NULL || ns_buf_append_escaped(b, s, strlen(s), flags) != NS_OK || b->data == NULL)
        return "";
    return (const char *)b->data;
}

const char *ctl_txt(const char *s)
{
    return txt(s, NS_ESC_BACKSLASH);
}

const char *ctl_txt_json(const char *s)
{
    return txt(s, 0);
}

void ctl_print_lines(FILE *f, const char *text, size_t n)
{
    const char *p = text, *end = text + n;
    ns_buf_t line = NS_BUF_INIT;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
        ns_buf_reset(&line);
        if (ns_buf_append_escaped(&line, p, k, 0) == NS_OK)
            fprintf(f, "%.*s\n", (int)line.len, line.data ? (const char *)line.data : "");
        p += k + 1;
    }
    ns_buf_free(&line);
}

void ctl_err(const char *fmt, ...)
{
    ns_buf_t msg = NS_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = ns_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "namesrvctl: %s\n", rc == NS_OK ? ctl_txt_json((const char *)msg.data) : fmt);
    ns_buf_free(&msg);
}

int ctl_missing(const char *cmd, const char *opt)
{
    fprintf(stderr, "namesrvctl %s: missing %s (see namesrvctl help)\n", cmd, opt);
    return CTL_USAGE;
}

/* ---- the store ---- */

int ctl_trail_record(ns_txn_t *t, const char *cmd, const char *detail)
{
    ns_buf_t rec = NS_BUF_INIT;
    char peer[96];
    struct passwd *pw = getpwuid(getuid());
    snprintf(peer, sizeof peer, "namesrvctl@local (%s)", pw ? pw->pw_name : "?");
    int rc = ns_buf_printf(&rec, "{\"time\":%lld,\"peer\":", (long long)ctl_now_ms());
    rc = rc ? rc : ns_buf_append_json_str(&rec, peer, strlen(peer), false);
    rc = rc ? rc : ns_buf_append_str(&rec, ",\"code\":-1,\"request\":");
    rc = rc ? rc : ns_buf_append_json_str(&rec, cmd, strlen(cmd), false);
    rc = rc ? rc : ns_buf_printf(&rec, ",\"fields\":{},\"result\":\"ok\",\"responseCode\":0");
    if (rc == NS_OK && detail)
        rc = ns_buf_printf(&rec, ",\"detail\":%s", detail);
    rc = rc ? rc : ns_buf_append_u8(&rec, '}');
    rc = rc ? rc
            : ns_admin_audit_append(t, (const char *)rec.data, rec.len, CTL_TRAIL_RETENTION, NULL);
    ns_buf_free(&rec);
    return rc;
}

int ctl_exit_for(int ns_err)
{
    switch (ns_err) {
    case NS_OK:
        return CTL_OK;
    case NS_ELOCKED:
        return CTL_LOCKED;
    case NS_ECORRUPT: /* what verify says of a damaged store */
        return CTL_INVALID;
    default:
        return CTL_IO;
    }
}

void ctl_report_damage(const char *label, const char *dir, const char *table, const char *detail)
{
    ctl_err("%s %s: store damaged in table %s: %s", label, dir, table, detail);
    ctl_err("to recover: stop namesrvd, then namesrvctl recover --data-dir %s "
            "[--backup-dir DIR]",
            dir);
}

/* The open's error: damage is reported as verify reports it (ns_store_open
 * ran the same file check verify's child runs first, so the words match). */
static int open_failed(const char *dir, int rc, const char *err)
{
    if (rc == NS_ECORRUPT)
        ctl_report_damage("store", dir, "meta", err[0] ? err : ns_strerror(rc));
    else
        ctl_err("%s", err[0] ? err : ns_strerror(rc));
    return ctl_exit_for(rc);
}

const char *ctl_default_data_dir(void)
{
    const char *env = getenv("NAMESRV_DATA_DIR");
    struct stat sb;
    if (env && *env)
        return env;
    return stat("/var/lib/namesrv/data.mdb", &sb) == 0 ? "/var/lib/namesrv" : NULL;
}

/* The quick part of verify's check (ns_store_check_spawn: the meta pages,
 * every table's root and first and last leaf, the small tables whole) in a
 * child process, before this one maps the store: damage there, which
 * would crash the command inside liblmdb (SIGSEGV, SIGBUS), is reported as
 * verify reports it, exit 4. A few ms whatever the store's size; damage
 * deeper in a table is what verify's full walk is for. When the child
 * cannot run or reports no damage, the open goes on (and says the rest). */
static int quick_check(const char *dir)
{
    ns_check_proc_t p;
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    if (ns_store_check_spawn(dir, &p, &res) != NS_OK)
        return CTL_OK;
    int rc = ns_store_check_read(&p, &res, true);
    ns_store_check_abandon(&p);
    if (rc != NS_ECORRUPT)
        return CTL_OK;
    ctl_report_damage("store", dir, res.table, res.detail);
    return CTL_INVALID;
}

int ctl_store_open_ro(const char *dir, ns_store_t **out)
{
    char err[512] = "", file[4200];
    struct stat sb;
    ns_store_opts_t o = {0};
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    if (stat(file, &sb) != 0) {
        ctl_err("%s holds no store (no data.mdb: %s); nothing was created", dir, strerror(errno));
        *out = NULL;
        return CTL_IO;
    }
    if (S_ISREG(sb.st_mode) && quick_check(dir) != CTL_OK) {
        *out = NULL;
        return CTL_INVALID;
    }
    o.dir = dir;
    o.read_only = true;
    int rc = ns_store_open(&o, out, err, sizeof err);
    return rc == NS_OK ? CTL_OK : open_failed(dir, rc, err);
}

int ctl_store_open_rw(const char *dir, size_t map_size_bytes, ns_store_t **out)
{
    char err[512] = "", file[4200];
    ns_store_opts_t o = {0};
    struct stat sb;
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    *out = NULL;
    if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && quick_check(dir) != CTL_OK)
        return CTL_INVALID;
    o.dir = dir;
    o.lock = true;
    o.map_size_bytes = map_size_bytes;
    int rc = ns_store_open(&o, out, err, sizeof err);
    if (rc == NS_ELOCKED) {
        long pid = ns_store_lock_holder(dir);
        if (pid > 0)
            ctl_err("data directory %s is held by process %ld (a running namesrvd?); stop it "
                    "first",
                    dir, pid);
        else
            ctl_err("%s", err);
        return ctl_exit_for(rc);
    }
    return rc == NS_OK ? CTL_OK : open_failed(dir, rc, err);
}

/* ---- files ---- */

int ctl_read_file(const char *path, char **out, size_t *len)
{
    bool std_in = strcmp(path, "-") == 0;
    FILE *f = std_in ? stdin : fopen(path, "rb");
    ns_buf_t b = NS_BUF_INIT;
    char tmp[65536];
    size_t n;
    int rc = CTL_OK;
    *out = NULL;
    if (f == NULL) {
        ctl_err("cannot open %s: %s", path, strerror(errno));
        return CTL_IO;
    }
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) {
        if (ns_buf_append(&b, tmp, n) != NS_OK) {
            ctl_err("%s: out of memory", path);
            rc = CTL_IO;
            goto out;
        }
    }
    if (ferror(f)) {
        ctl_err("cannot read %s: %s", path, strerror(errno));
        rc = CTL_IO;
        goto out;
    }
    if (ns_buf_append_u8(&b, 0) != NS_OK) {
        rc = CTL_IO;
        goto out;
    }
    *len = b.len - 1;
    *out = (char *)ns_buf_steal(&b, &n);
out:
    if (!std_in)
        fclose(f);
    ns_buf_free(&b);
    return rc;
}

int ctl_write_file(const char *path, const void *data, size_t len)
{
    if (path == NULL || strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
            ctl_err("cannot write to stdout: %s", strerror(errno));
            return CTL_IO;
        }
        return CTL_OK;
    }
    /* 0600: a dump holds the users' secrets (doc_users.c) */
    if (ns_fs_write_atomic(path, data, len, 0600) != NS_OK) {
        ctl_err("cannot write %s: %s", path, strerror(errno));
        return CTL_IO;
    }
    return CTL_OK;
}

/* ---- time ---- */

int64_t ctl_now_ms(void)
{
    return ns_clock_wall_ms();
}

int64_t ctl_mono_ms(void)
{
    return ns_clock_mono_ms();
}

void ctl_format_time(int64_t ms, char *buf, size_t n)
{
    int64_t sec = ms / 1000, rem = ms % 1000;
    if (rem < 0) { /* floor division for times before 1970 */
        rem += 1000;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) {
        snprintf(buf, n, "%lld", (long long)ms);
        return;
    }
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%03dZ", date, (int)rem);
}

/* Reads exactly `digits` decimal digits at *p. */
static bool read_num(const char **p, int digits, int *out)
{
    int v = 0;
    for (int i = 0; i < digits; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += digits;
    *out = v;
    return true;
}

int ctl_parse_time(const char *s, int64_t *ms)
{
    size_t n = strlen(s);
    if (n > 0 && strspn(s, "0123456789") == n)
        return ns_parse_i64(s, n, ms);
    struct tm tm = {0};
    int y, mo, d, h = 0, mi = 0, sec = 0, milli = 0;
    const char *p = s;
    if (!read_num(&p, 4, &y) || *p++ != '-' || !read_num(&p, 2, &mo) || *p++ != '-' ||
        !read_num(&p, 2, &d))
        return NS_EINVAL;
    if (*p == 'T' || *p == ' ') {
        p++;
        if (!read_num(&p, 2, &h) || *p++ != ':' || !read_num(&p, 2, &mi))
            return NS_EINVAL;
        if (*p == ':') {
            p++;
            if (!read_num(&p, 2, &sec))
                return NS_EINVAL;
            if (*p == '.') {
                p++;
                if (!read_num(&p, 3, &milli))
                    return NS_EINVAL;
            }
        }
    }
    if (*p == 'Z')
        p++;
    if (*p != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return NS_EINVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *ms = (int64_t)t * 1000 + milli;
    return NS_OK;
}

/* ---- progress ---- */

void ctl_progress_init(ctl_progress_t *p, const char *what, size_t total)
{
    p->on = isatty(2) == 1;
    p->what = what;
    p->total = total;
    p->done = 0;
    p->last_ms = 0;
}

void ctl_progress_step(ctl_progress_t *p, size_t n)
{
    p->done += n;
    if (!p->on)
        return;
    int64_t now = ctl_mono_ms();
    if (now - p->last_ms < 200)
        return;
    p->last_ms = now;
    if (p->total)
        fprintf(stderr, "\r%s: %zu/%zu (%zu%%)", p->what, p->done, p->total,
                p->done * 100 / p->total);
    else
        fprintf(stderr, "\r%s: %zu", p->what, p->done);
}

void ctl_progress_done(ctl_progress_t *p)
{
    if (p->on && p->last_ms != 0)
        fprintf(stderr, "\r%s: %zu done%20s\n", p->what, p->done, "");
    p->on = false;
}
