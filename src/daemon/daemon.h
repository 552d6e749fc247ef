/* daemon.h - the namesrvd process (server.c): open the store, restore
 * liveness, start the writer and the loops, listen; stop in reverse. */
#ifndef NS_DAEMON_H
#define NS_DAEMON_H

#include "ioloop.h"

/* Opens the store, restores liveness, starts the writer, the I/O loops and
 * listens. On failure everything opened is closed again and err says why. */
/* verifyOnStart (startcheck.c), before the store is opened: forks the
 * child that checks the store and waits for its quick part (or, with
 * verifyOnStartBlocking, for all of it). NS_ECORRUPT with the table and how
 * to recover in err. When the full walk goes on, srv->startcheck holds it. */
int ns_start_check(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, once its handles exist: a thread reads the rest of the child's
 * report; damage then stops the server with srv->exit_status 4. */
int ns_start_check_watch(ns_server_t *srv);
/* True while the full walk runs. */
bool ns_start_check_running(const ns_server_t *srv);
/* At shutdown: ends a walk still running (kills the child). Idempotent. */
void ns_start_check_stop(ns_server_t *srv);
/* After the loop has ended. */
void ns_start_check_free(ns_server_t *srv);
int ns_server_start(ns_server_t *srv, uv_loop_t *loop, ns_config_t *cfg, char *err, size_t errlen);
/* Stops accepting, lets in-flight writes finish, closes everything. */
void ns_server_stop(ns_server_t *srv);
/* Releases what ns_server_start allocated (after the loop has ended). */
void ns_server_free(ns_server_t *srv);

#endif
