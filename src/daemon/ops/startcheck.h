/* startcheck.h - verifyOnStart (startcheck.c): the store is checked in a
 * child process while namesrvd starts. Its owner (server.c) hears how the
 * full walk ended through the callback it hands to ns_start_check_watch, so
 * this module never calls up into the server or across into HTTP. */
#ifndef NS_STARTCHECK_H
#define NS_STARTCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "ns/config.h"
#include "ns/store.h"

typedef struct ns_server ns_server_t;

/* How the full walk ended (main loop): state 1 the store passed or the walk
 * could not run, -1 the store is damaged (srv->exit_status is then 4: the
 * owner stops the server). */
typedef void (*ns_start_check_done_cb)(ns_server_t *srv, int state);

/* Before the store is opened: refuses (NS_EINVAL, err says why) while a
 * recover of dataDir was interrupted (include/ns/store.h
 * NS_RECOVER_JOURNAL_SUFFIX); then forks the child that checks the store and
 * waits for its quick part (or, with verifyOnStartBlocking, for all of it).
 * NS_ECORRUPT with the table and how to recover in err. When the full walk
 * goes on, srv->startcheck holds it. */
int ns_start_check(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, once its handles exist: a thread reads the rest of the child's
 * report; on_done then runs on the main loop (never when the server stops
 * first). */
int ns_start_check_watch(ns_server_t *srv, ns_start_check_done_cb on_done);
/* True while the full walk runs. */
bool ns_start_check_running(const ns_server_t *srv);
/* At shutdown: ends a walk still running (kills the child). Idempotent. */
void ns_start_check_stop(ns_server_t *srv);
/* After the loop has ended. */
void ns_start_check_free(ns_server_t *srv);
/* Once the store is open: a WARN when it holds users and authMode=off, so
 * that users nobody enforces are not a silent surprise (a restore onto a
 * fresh host brings the users back without the settings file). */
void ns_start_warn_unenforced_users(ns_store_t *store, const ns_config_t *cfg);

#endif
