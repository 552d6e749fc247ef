/* startcheck.c - verifyOnStart: the store is checked in a child process
 * while namesrvd starts, and a damaged store is refused rather than served
 * until it crashes the process.
 *
 * A store whose meta pages are intact but whose data pages are damaged opens
 * fine and then kills the server with SIGSEGV inside liblmdb on the first
 * request that reaches a bad page. ns_store_check_spawn forks a child that
 * reads the store in two parts:
 *   1. quick, waited for before the store is opened here: the meta pages
 *      and schema, every table's root and first and last leaf, and the small
 *      tables the start reads whole (meta, clusters, groups, live, users).
 *      A few ms whatever the number of topics; damage there is refused
 *      before listening, as before.
 *   2. full, while routes are already served: every page of every table,
 *      every value decoded, every invariant. A thread reads the child's
 *      report; damage (or the child crashing) is logged with the table and
 *      how to recover, /readyz and sd_notify say so, and namesrvd stops with
 *      exit status 4, so a damaged store is still refused within the walk's
 *      time (about 1 s at 100,000 topics).
 * verifyOnStartBlocking=true waits for the full walk before listening (the
 * behaviour before: restart-to-first-route then includes the whole walk).
 * Invariant violations (a readable store whose tables disagree) are logged
 * and served: they are what `namesrvctl verify` and the crash tests look
 * for, and a broker's next registration repairs most. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ns/err.h"
#include "ns/log.h"
#include "core/server.h"
#include "ops/service.h"
#include "ops/startcheck.h"

struct ns_startcheck {
    ns_check_proc_t proc;
    ns_check_result_t res;
    ns_buf_t report;
    uint64_t t0;
    int rc;
    pthread_t thread;
    bool thread_started;
    uv_async_t done; /* main loop: the full walk is over */
    bool async_init;
    ns_server_t *srv;
    ns_start_check_done_cb done_cb; /* the owner's (ns_start_check_watch) */
};

static void damaged_message(const ns_config_t *cfg, const ns_check_result_t *res, char *err,
                            size_t errlen)
{
    snprintf(err, errlen,
             "store %s is damaged in table %s (%s); not serving it. To recover: "
             "namesrvctl recover --data-dir %s (moves it aside and restores the newest "
             "good backup of backupDir, else starts an empty store that keeps only the KV "
             "config; brokers re-register within 30 s)",
             cfg->data_dir, res->table, res->detail, cfg->data_dir);
}

static void log_result(const ns_config_t *cfg, struct ns_startcheck *sc, const char *how)
{
    uint64_t ms = (uv_hrtime() - sc->t0) / 1000000;
    if (sc->res.violations > 0)
        NS_LOG_WARN("store %s: %d invariant violation(s), served anyway (see namesrvctl "
                    "verify); the first: %.*s",
                    cfg->data_dir, sc->res.violations, (int)strcspn((char *)sc->report.data, "\n"),
                    (char *)sc->report.data);
    NS_LOG_INFO("store %s checked (verifyOnStart, %s): %llu records, every page read and every "
                "value decoded in %llu ms",
                cfg->data_dir, how, (unsigned long long)sc->res.records, (unsigned long long)ms);
}

static void startcheck_free(struct ns_startcheck *sc)
{
    ns_store_check_abandon(&sc->proc);
    ns_buf_free(&sc->report);
    free(sc);
}

/* A result that is not damage (a newer schema, no store yet...): opening
 * the store says what. */
static int not_damage(const ns_config_t *cfg, struct ns_startcheck *sc, int rc)
{
    NS_LOG_DEBUG("store %s not checked: %s", cfg->data_dir,
                 sc->res.detail[0] ? sc->res.detail : ns_strerror(rc));
    return NS_OK;
}

int ns_start_check(ns_server_t *srv, char *err, size_t errlen)
{
    const ns_config_t *cfg = srv->loop.cfg;
    char path[4200];
    struct stat sb;
    size_t len = strlen(cfg->data_dir);
    while (len > 1 && cfg->data_dir[len - 1] == '/') /* "D/" is D */
        len--;
    snprintf(path, sizeof path, "%.*s" NS_RECOVER_JOURNAL_SUFFIX, (int)len, cfg->data_dir);
    if (stat(path, &sb) == 0) { /* checked whatever verifyOnStart says */
        snprintf(err, errlen,
                 "a namesrvctl recover of %s was interrupted (%s exists): run namesrvctl recover "
                 "--data-dir %s again to complete it, then start namesrvd",
                 cfg->data_dir, path, cfg->data_dir);
        return NS_EINVAL;
    }
    if (!cfg->verify_on_start)
        return NS_OK;
    snprintf(path, sizeof path, "%s/data.mdb", cfg->data_dir);
    if (stat(path, &sb) != 0)
        return NS_OK; /* a new store: nothing to check */
    struct ns_startcheck *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return NS_ENOMEM;
    sc->srv = srv;
    sc->res.report = &sc->report;
    sc->t0 = uv_hrtime();
    int rc = ns_store_check_spawn(cfg->data_dir, &sc->proc, &sc->res);
    bool blocking = cfg->verify_on_start_blocking;
    if (rc == NS_OK)
        rc = ns_store_check_read(&sc->proc, &sc->res, !blocking);
    if (rc == NS_ECORRUPT) {
        damaged_message(cfg, &sc->res, err, errlen);
    } else if (rc != NS_OK) {
        rc = not_damage(cfg, sc, rc);
    } else if (sc->proc.pid < 0) { /* blocking, or the child ended early */
        log_result(cfg, sc, "before serving");
    } else {
        NS_LOG_INFO("store %s: quick check passed (meta, schema, every table's root and edges; "
                    "%llu records) in %.1f ms; the full check goes on while serving",
                    cfg->data_dir, (unsigned long long)sc->res.quick_records,
                    (double)(uv_hrtime() - sc->t0) / 1e6);
        srv->startcheck = sc;
        return NS_OK;
    }
    startcheck_free(sc);
    return rc;
}

static void *reader_main(void *arg)
{
    struct ns_startcheck *sc = arg;
    sc->rc = ns_store_check_read(&sc->proc, &sc->res, false);
    uv_async_send(&sc->done);
    return NULL;
}

static void done_cb(uv_async_t *a)
{
    struct ns_startcheck *sc = a->data;
    ns_server_t *srv = sc->srv;
    if (!sc->thread_started)
        return;
    pthread_join(sc->thread, NULL);
    sc->thread_started = false;
    if (srv->loop.stopping)
        return; /* abandoned: a shutdown killed it */
    if (sc->rc == NS_ECORRUPT) {
        char msg[1024];
        damaged_message(srv->loop.cfg, &sc->res, msg, sizeof msg);
        NS_LOG_ERROR("namesrvd stops: %s", msg);
        srv->exit_status = 4;
        char status[200];
        snprintf(status, sizeof status, "STATUS=store damaged in table %.63s; exiting (4)",
                 sc->res.table);
        ns_service_notify(status);
        sc->done_cb(srv, -1);
        return;
    }
    if (sc->rc == NS_OK)
        log_result(srv->loop.cfg, sc, "while serving");
    else
        NS_LOG_WARN("store %s: the full check could not run: %s", srv->loop.cfg->data_dir,
                    sc->res.detail[0] ? sc->res.detail : ns_strerror(sc->rc));
    sc->done_cb(srv, 1);
}

int ns_start_check_watch(ns_server_t *srv, ns_start_check_done_cb on_done)
{
    struct ns_startcheck *sc = srv->startcheck;
    if (sc == NULL)
        return NS_OK;
    sc->done_cb = on_done;
    uv_async_init(srv->loop.uv, &sc->done, done_cb);
    sc->done.data = sc;
    sc->async_init = true;
    if (pthread_create(&sc->thread, NULL, reader_main, sc) != 0) {
        NS_LOG_ERROR("cannot start the thread of the store check");
        return NS_ENOMEM;
    }
    sc->thread_started = true;
    return NS_OK;
}

bool ns_start_check_running(const ns_server_t *srv)
{
    return srv->startcheck != NULL && srv->startcheck->thread_started;
}

void ns_start_check_stop(ns_server_t *srv)
{
    struct ns_startcheck *sc = srv->startcheck;
    if (sc == NULL)
        return;
    if (sc->thread_started) {
        /* the reader thread owns proc while it runs: end the child, the
         * thread sees its pipe close and reaps it */
        ns_store_check_kill(&sc->proc);
        pthread_join(sc->thread, NULL);
        sc->thread_started = false;
    }
    if (sc->async_init && !uv_is_closing((uv_handle_t *)&sc->done))
        uv_close((uv_handle_t *)&sc->done, NULL);
}

void ns_start_check_free(ns_server_t *srv)
{
    if (srv->startcheck)
        startcheck_free(srv->startcheck);
    srv->startcheck = NULL;
}

/* ---- users the settings do not enforce ---- */

static int count_user(const ns_user_rec_t *u, void *ctx)
{
    (void)u;
    (*(size_t *)ctx)++;
    return 0;
}

void ns_start_warn_unenforced_users(ns_store_t *store, const ns_config_t *cfg)
{
    ns_txn_t *t = NULL;
    size_t n = 0;
    if (strcmp(cfg->auth_mode, "off") != 0 || ns_txn_begin(store, false, &t) != NS_OK)
        return;
    ns_user_iter(t, count_user, &n);
    ns_txn_abort(t);
    if (n > 0)
        NS_LOG_WARN("store %s holds %zu user(s) but authMode=off: no request is checked against "
                    "them (a restored store brings users back, not the settings they were "
                    "written under); set authMode=writes or authMode=all to enforce them",
                    cfg->data_dir, n);
}
