/* check.c - the full check of a store, run in a child process
 * (ns_store_check_dir in include/ns/store.h), so that damage is found and
 * survived rather than followed into a crash.
 *
 * LMDB keeps no checksums and trusts its pages: a damaged data page makes it
 * follow a wild pointer, and the process dies of SIGSEGV inside liblmdb. So
 * the walk runs in a child that opens the store read-only by itself (an
 * LMDB environment must not cross fork()), and tells the parent over a pipe
 * which table it is in before it touches it:
 *   "table <name>\n"      about to walk that table
 *   "v <text>\n"          an invariant violation (ns_store_verify)
 *   "damaged <text>\n"    LMDB or a decoder reported damage
 *   "done <records>\n"    the walk finished
 *   "quick <records>\n"   the quick part is over (below), the full walk follows
 * No "done" line means the child died: the store is damaged in the last
 * table it named. Exit status is not used (a sanitizer's SEGV handler exits
 * with 1 instead of dying of the signal).
 *
 * What the child reads: first the quick part, what a start and the first
 * lookups read (the meta pages and schema on opening, each table's root
 * and its first and last leaf, and whole the small tables a start reads:
 * meta, clusters, groups, live, users); then every record of every table (the free list, the
 * main directory and the eleven named tables, keys and values byte by byte
 * so every branch, leaf and overflow page is visited); then every value is
 * decoded (groups, registrations, queue data, routes, mappings, KV
 * namespaces, audit records as JSON) and every invariant I1-I8 checked. */
#define _GNU_SOURCE /* close_range */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "internal.h"
#include "ns/log.h"

typedef struct {
    FILE *out;
    uint64_t records;
    uint64_t sum; /* of every byte: the reads cannot be optimised away */
} walk_t;

static void say(walk_t *w, const char *what, const char *text)
{
    fprintf(w->out, "%s %s\n", what, text);
    fflush(w->out);
}

/* Reads records of dbi byte by byte: every one (whole), or only the first
 * and the last, which reaches the root and the first and last leaf: what
 * any lookup passes through first. records counts the whole walks' ones. */
static int walk_dbi(walk_t *w, MDB_txn *txn, MDB_dbi dbi, bool whole)
{
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0)
        return rc;
    MDB_cursor_op op = MDB_FIRST;
    while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
        const uint8_t *p = k.mv_data, *q = v.mv_data;
        for (size_t i = 0; i < k.mv_size; i++)
            w->sum += p[i];
        for (size_t i = 0; i < v.mv_size; i++)
            w->sum += q[i];
        w->records += whole;
        if (op == MDB_LAST)
            break;
        op = whole ? MDB_NEXT : MDB_LAST;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Walks that only check the records decode (the build has
 * -Wno-unused-parameter). */
static int noop_group(ns_group_rec_t *g, void *ctx)
{
    return 0;
}

static int noop_live(const ns_live_rec_t *r, void *ctx)
{
    return 0;
}

static int noop_name(const char *name, void *ctx)
{
    return 0;
}

static int noop_mapping(const ns_mapping_info_t *m, void *ctx)
{
    return 0;
}

static int audit_json(uint64_t seq, const char *json, size_t len, void *ctx)
{
    walk_t *w = ctx;
    cJSON *doc = cJSON_ParseWithLength(json, len);
    if (doc == NULL) {
        char t[64];
        snprintf(t, sizeof t, "audit record %llu is not JSON", (unsigned long long)seq);
        say(w, "damaged", t);
        return NS_ECORRUPT;
    }
    cJSON_Delete(doc);
    return 0;
}

/* The decoding pass, one table at a time (announced), then the invariants. */
static int decode_all(walk_t *w, ns_txn_t *t)
{
    int rc;
    say(w, "table", "groups");
    if ((rc = ns_group_iter(t, noop_group, NULL)) != NS_OK)
        return rc;
    say(w, "table", "live");
    if ((rc = ns_live_iter(t, noop_live, NULL)) != NS_OK)
        return rc;
    say(w, "table", "kvns");
    if ((rc = ns_kv_ns_iter(t, noop_name, NULL)) != NS_OK)
        return rc;
    if (t->s->have_db[NS_DB_MAPPINGS]) {
        say(w, "table", "mappings");
        if ((rc = ns_mapping_iter(t, noop_mapping, NULL)) != NS_OK)
            return rc;
    }
    if (t->s->have_db[NS_DB_AUDIT]) {
        say(w, "table", "audit");
        if ((rc = ns_audit_iter(t, audit_json, w)) != NS_OK)
            return rc;
    }
    say(w, "table", "(invariants across tables)");
    ns_buf_t report = NS_BUF_INIT;
    rc = ns_store_verify(t, &report);
    if (rc > 0) {
        for (char *line = (char *)report.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            say(w, "v", line);
        }
        rc = NS_OK;
    }
    ns_buf_free(&report);
    return rc;
}

/* The tables a start reads whole (ns_store_open, the liveness restore, the
 * users): small whatever the number of topics. */
static bool read_at_start(int i)
{
    return i == NS_DB_META || i == NS_DB_CLUSTERS || i == NS_DB_GROUPS || i == NS_DB_LIVE ||
           i == NS_DB_USERS;
}

/* The quick part: every table's edges, the start's tables whole. */
static int quick_part(walk_t *w, ns_store_t *s, ns_txn_t *t)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < NS_DB_COUNT; i++) {
        if (!s->have_db[i])
            continue;
        say(w, "table", ns_db_names[i]);
        rc = walk_dbi(w, t->txn, s->dbi[i], read_at_start(i));
    }
    return rc;
}

/* The full part: every page of every table, then every value decoded. */
static int full_part(walk_t *w, ns_store_t *s, ns_txn_t *t)
{
    say(w, "table", "(free list)");
    int rc = walk_dbi(w, t->txn, 0 /* FREE_DBI */, true);
    if (rc == 0) {
        MDB_dbi main_dbi;
        say(w, "table", "(main directory)");
        rc = mdb_dbi_open(t->txn, NULL, 0, &main_dbi);
        if (rc == 0)
            rc = walk_dbi(w, t->txn, main_dbi, true);
    }
    for (int i = 0; rc == 0 && i < NS_DB_COUNT; i++) {
        if (!s->have_db[i])
            continue;
        say(w, "table", ns_db_names[i]);
        rc = walk_dbi(w, t->txn, s->dbi[i], true);
    }
    return rc;
}

/* The child: opens dir read-only, walks, reports on out. Never returns. */
static void child_main(const char *dir, FILE *out)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* a crash here is expected, not news */
    walk_t w = {out, 0, 0};
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    char err[512] = "";
    ns_store_opts_t opts = {dir, 0, 0, NS_SYNC_FULL, true, false, 0, 0};
    say(&w, "table", "meta"); /* opening reads the meta pages and the meta table */
    int rc = ns_store_open(&opts, &s, err, sizeof err);
    if (rc != NS_OK) {
        say(&w, rc == NS_ECORRUPT ? "damaged" : "error", err[0] ? err : ns_strerror(rc));
        _exit(0);
    }
    if ((rc = ns_txn_begin(s, false, &t)) != NS_OK) {
        say(&w, "error", ns_strerror(rc));
        _exit(0);
    }
    if ((rc = quick_part(&w, s, t)) == 0) {
        fprintf(out, "quick %llu\n", (unsigned long long)w.records);
        fflush(out);
        w.records = 0;
        rc = full_part(&w, s, t);
    }
    if (rc != 0) {
        say(&w, "damaged", mdb_strerror(rc));
        _exit(0);
    }
    rc = decode_all(&w, t);
    if (rc != NS_OK) {
        say(&w, rc == NS_ECORRUPT || rc == NS_EINVAL ? "damaged" : "error", ns_strerror(rc));
        _exit(0);
    }
    /* the reader slot goes before "done": a running namesrvd's writer may
     * reuse this snapshot's pages as soon as the check is over */
    ns_txn_abort(t);
    ns_store_close(s);
    fprintf(out, "done %llu %llu\n", (unsigned long long)w.records, (unsigned long long)w.sum);
    fflush(out);
    _exit(0);
}

/* Closes every descriptor from lo up, but keep. */
static void close_from_but(int lo, int keep)
{
    if (keep >= lo) {
        if (keep > lo && close_range((unsigned)lo, (unsigned)keep - 1, 0) != 0)
            for (int fd = lo; fd < keep; fd++) /* a kernel before 5.9 */
                close(fd);
        lo = keep + 1;
    }
    if (close_range((unsigned)lo, ~0u, 0) != 0)
        for (int fd = lo; fd < 4096; fd++)
            close(fd);
}

/* In the child: it dies with the thread that forked it (SIGKILL), and keeps
 * of the parent's descriptors only standard input, output and error, the
 * log's (ns_log_fd) and pipe_fd, moved to the first free one above them. A
 * namesrvd killed while a check walks a large store must not leave the
 * walk behind holding what a restart needs: the data directory's LOCK (a
 * flock lasts while any copy of its descriptor is open), the listening
 * sockets, a reader of the store that a power cut would have stopped. The
 * callers fork from a thread that waits for the child (ns_store_check_dir)
 * or lives as long as the process (the start check, namesrvctl). The pipe's
 * new descriptor, or -1 when the parent is already gone. */
static int child_detach(pid_t parent, int pipe_fd)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        return -1;
    int log_fd = ns_log_fd();
    int out = log_fd == 3 ? 4 : 3;
    if (pipe_fd != out && (dup2(pipe_fd, out) != out || close(pipe_fd) != 0))
        return -1;
    close_from_but(out + 1, log_fd);
    return out;
}

/* Forks a child that runs fn(dir, out), out the write end of a pipe, and
 * exits; *in is the read end (not inherited by later execs; NULL when it
 * could not be opened). The child's pid, or -1 with errno and nothing
 * left open. */
static pid_t spawn_child(void (*fn)(const char *, FILE *), const char *dir, FILE **in)
{
    int fds[2];
    *in = NULL;
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        int wfd = child_detach(parent, fds[1]);
        FILE *out = wfd < 0 ? NULL : fdopen(wfd, "w");
        if (out != NULL)
            fn(dir, out);
        _exit(0);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    *in = fdopen(fds[0], "r");
    if (*in == NULL)
        close(fds[0]);
    return pid;
}

int ns_store_check_spawn(const char *dir, ns_check_proc_t *p, ns_check_result_t *res)
{
    ns_buf_t *report = res->report;
    memset(res, 0, sizeof *res);
    memset(p, 0, sizeof *p);
    p->pid = -1;
    pthread_mutex_init(&p->mu, NULL);
    p->mu_init = true;
    res->report = report;
    snprintf(res->table, sizeof res->table, "(none)");
    p->pid = spawn_child(child_main, dir, &p->in);
    if (p->pid < 0) {
        snprintf(res->detail, sizeof res->detail, "pipe or fork: %s", strerror(errno));
        return NS_EIO;
    }
    return NS_OK;
}

/* One line of the child's report into res and p. */
static void take_line(ns_check_proc_t *p, ns_check_result_t *res, char *line)
{
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, "table ", 6) == 0) {
        snprintf(res->table, sizeof res->table, "%.63s", line + 6);
    } else if (strncmp(line, "v ", 2) == 0) {
        res->violations++;
        if (res->report)
            ns_buf_printf(res->report, "%s\n", line + 2);
    } else if (strncmp(line, "damaged ", 8) == 0) {
        res->damaged = true;
        snprintf(res->detail, sizeof res->detail, "%.255s", line + 8);
    } else if (strncmp(line, "error ", 6) == 0) {
        p->error = true;
        snprintf(res->detail, sizeof res->detail, "%.255s", line + 6);
    } else if (strncmp(line, "quick ", 6) == 0) {
        p->quick = true;
        res->quick_records = strtoull(line + 6, NULL, 10);
    } else if (strncmp(line, "done ", 5) == 0) {
        p->done = true;
        res->records = strtoull(line + 5, NULL, 10);
    }
}

/* The child has ended (its pipe closed): reaps it and says what it found. */
static int finish(ns_check_proc_t *p, ns_check_result_t *res)
{
    if (p->in)
        fclose(p->in);
    p->in = NULL;
    /* wait without reaping, then reap under the lock: ns_store_check_kill
     * never signals a pid that is no longer this child */
    siginfo_t info;
    while (waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    int status = 0;
    pthread_mutex_lock(&p->mu);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    p->pid = -1;
    pthread_mutex_unlock(&p->mu);
    if (!p->done && !res->damaged && !p->error) {
        res->damaged = true;
        if (WIFSIGNALED(status))
            snprintf(res->detail, sizeof res->detail, "reading it crashed the check (signal %d)",
                     WTERMSIG(status));
        else
            snprintf(res->detail, sizeof res->detail,
                     "reading it crashed the check (exit status %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (res->damaged)
        return NS_ECORRUPT;
    if (p->error)
        return NS_EIO;
    return NS_OK;
}

int ns_store_check_read(ns_check_proc_t *p, ns_check_result_t *res, bool until_quick)
{
    char line[1024];
    while (p->in && fgets(line, sizeof line, p->in)) {
        take_line(p, res, line);
        if (until_quick && p->quick)
            return NS_OK;
    }
    return finish(p, res);
}

void ns_store_check_kill(ns_check_proc_t *p)
{
    pthread_mutex_lock(&p->mu);
    if (p->pid > 0)
        kill(p->pid, SIGKILL);
    pthread_mutex_unlock(&p->mu);
}

void ns_store_check_abandon(ns_check_proc_t *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        if (p->in)
            fclose(p->in);
        p->in = NULL;
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        p->pid = -1;
    }
    if (p->mu_init)
        pthread_mutex_destroy(&p->mu);
    p->mu_init = false;
}

int ns_store_check_dir(const char *dir, ns_check_result_t *res)
{
    ns_check_proc_t p;
    int rc = ns_store_check_spawn(dir, &p, res);
    if (rc == NS_OK)
        rc = ns_store_check_read(&p, res, false);
    ns_store_check_abandon(&p); /* the lock */
    return rc;
}

/* ---- KV salvage ---- */

typedef struct {
    FILE *out;
    const char *ns;
} salvage_t;

static void put_field(FILE *out, const char *p, size_t n)
{
    uint32_t len = (uint32_t)n;
    fwrite(&len, sizeof len, 1, out);
    fwrite(p, 1, n, out);
}

static int salvage_key(const char *key, const char *val, size_t val_len, void *ctx)
{
    salvage_t *s = ctx;
    put_field(s->out, s->ns, strlen(s->ns));
    put_field(s->out, key, strlen(key));
    put_field(s->out, val, val_len);
    fflush(s->out); /* what was read gets out before a crash */
    return 0;
}

/* The namespaces first (kvns), then each one's keys: two passes, since a
 * name's storage is borrowed only during its callback. */
typedef struct {
    char **names;
    size_t n, cap;
} names_t;

static int collect_ns(const char *name, void *ctx)
{
    names_t *v = ctx;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        char **p = realloc(v->names, v->cap * sizeof *p);
        if (p == NULL)
            return NS_ENOMEM;
        v->names = p;
    }
    return (v->names[v->n++] = strdup(name)) != NULL ? 0 : NS_ENOMEM;
}

static void salvage_child(const char *dir, FILE *out)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    ns_store_t *s = NULL;
    ns_txn_t *t = NULL;
    char err[256];
    ns_store_opts_t opts = {dir, 0, 0, NS_SYNC_FULL, true, false, 0, 0};
    names_t v = {NULL, 0, 0};
    /* without the file check: what can be read of a file cut short is
     * read, up to the crash */
    if (ns_store_open_unchecked(&opts, &s, err, sizeof err) != NS_OK ||
        ns_txn_begin(s, false, &t) != NS_OK)
        _exit(0);
    salvage_t sv = {out, NULL};
    if (ns_kv_ns_iter(t, collect_ns, &v) == NS_OK)
        for (size_t i = 0; i < v.n; i++) {
            sv.ns = v.names[i];
            ns_kv_iter(t, v.names[i], salvage_key, &sv);
        }
    fflush(out);
    _exit(0);
}

static bool get_field(FILE *in, char **out, size_t *n)
{
    uint32_t len;
    if (fread(&len, sizeof len, 1, in) != 1 || len > (64u << 20))
        return false;
    *out = malloc((size_t)len + 1);
    if (*out == NULL)
        return false;
    if (fread(*out, 1, len, in) != len) {
        free(*out);
        return false;
    }
    (*out)[len] = 0;
    *n = len;
    return true;
}

int ns_store_salvage_kv(const char *dir, ns_salvage_cb cb, void *ctx, size_t *n_out)
{
    FILE *in = NULL;
    *n_out = 0;
    pid_t pid = spawn_child(salvage_child, dir, &in);
    if (pid < 0)
        return NS_EIO;
    int rc = NS_OK;
    char *ns = NULL, *key = NULL, *val = NULL;
    size_t nn, kn, vn;
    while (in && rc == NS_OK && get_field(in, &ns, &nn)) {
        if (get_field(in, &key, &kn)) {
            if (get_field(in, &val, &vn)) {
                rc = cb(ns, key, val, ctx);
                (*n_out)++;
                free(val);
            }
            free(key);
        }
        free(ns);
    }
    if (in)
        fclose(in);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return rc;
}
