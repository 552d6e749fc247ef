/* startcheck.c - verifyOnStart: the whole store is read and checked before
 * namesrvd serves it (issue 14).
 *
 * A store whose meta pages are intact but whose data pages are damaged opens
 * fine and then kills the server with SIGSEGV inside liblmdb on the first
 * request that reaches a bad page. ns_store_check_dir reads every page in a
 * child process first; a damaged store is refused (exit 4) with the table
 * and how to recover. Invariant violations (a readable store whose tables
 * disagree) are logged and served: they are what `namesrvctl verify` and the
 * crash tests look for, and a broker's next registration repairs most. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ns/err.h"
#include "ns/log.h"
#include "daemon.h"
#include "ioloop.h"

int ns_start_check(const ns_config_t *cfg, char *err, size_t errlen)
{
    char path[4200];
    struct stat sb;
    if (!cfg->verify_on_start)
        return NS_OK;
    snprintf(path, sizeof path, "%s/data.mdb", cfg->data_dir);
    if (stat(path, &sb) != 0)
        return NS_OK; /* a new store: nothing to check */
    ns_buf_t report = NS_BUF_INIT;
    ns_check_result_t res;
    memset(&res, 0, sizeof res);
    res.report = &report;
    uint64_t t0 = uv_hrtime();
    int rc = ns_store_check_dir(cfg->data_dir, &res);
    uint64_t ms = (uv_hrtime() - t0) / 1000000;
    if (rc == NS_ECORRUPT) {
        snprintf(err, errlen,
                 "store %s is damaged in table %s (%s); not serving it. To recover: "
                 "namesrvctl recover --data-dir %s (moves it aside and restores the newest "
                 "good backup of backupDir, else starts an empty store that keeps only the KV "
                 "config; brokers re-register within 30 s)",
                 cfg->data_dir, res.table, res.detail, cfg->data_dir);
    } else if (rc != NS_OK) {
        /* not damage (a newer schema, no store yet...): opening it says what */
        NS_LOG_DEBUG("store %s not checked: %s", cfg->data_dir,
                     res.detail[0] ? res.detail : ns_strerror(rc));
        rc = NS_OK;
    } else {
        if (res.violations > 0)
            NS_LOG_WARN("store %s: %d invariant violation(s), served anyway (see namesrvctl "
                        "verify); the first: %.*s",
                        cfg->data_dir, res.violations, (int)strcspn((char *)report.data, "\n"),
                        (char *)report.data);
        NS_LOG_INFO("store %s checked (verifyOnStart): %llu records, every page read and every "
                    "value decoded in %llu ms",
                    cfg->data_dir, (unsigned long long)res.records, (unsigned long long)ms);
    }
    ns_buf_free(&report);
    return rc;
}
