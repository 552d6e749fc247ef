/* daemon.h - the namesrvd process (server.c): open the store, restore
 * liveness, start the writer and the loops, listen; stop in reverse. */
#ifndef NS_DAEMON_H
#define NS_DAEMON_H

#include "core/server.h"

/* Opens the store, restores liveness, starts the writer, the I/O loops and
 * listens. On failure everything opened is closed again and err says why. */
int ns_server_start(ns_server_t *srv, uv_loop_t *loop, ns_config_t *cfg, char *err, size_t errlen);
/* Stops accepting, lets in-flight writes finish, closes everything. */
void ns_server_stop(ns_server_t *srv);
/* Releases what ns_server_start allocated (after the loop has ended). */
void ns_server_free(ns_server_t *srv);

#endif
