/* iothreads.h - ioThreads > 1: the extra I/O loops.
 *
 * The main loop starts ioThreads - 1 I/O loops and hands every accepted
 * socket to the next loop in turn (itself included). A connection then
 * lives on that loop for its whole life (conn.h). Requests only the main
 * loop may run (every row but route lookups, dispatch.h) travel to it as
 * decoded commands; their encoded replies travel back to the connection's
 * loop; so do close requests (main -> I/O loop) and close notices (I/O loop
 * -> main, so that the main loop unregisters the brokers of a closed
 * connection). */
#ifndef NS_IOTHREADS_H
#define NS_IOTHREADS_H

#include "core/server.h"

/* Starts cfg->io_threads - 1 extra loops and the main loop's mailbox;
 * nothing with ioThreads=1. */
int ns_io_start(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, on a newly accepted socket fd: hands it to the next I/O loop
 * in turn (the main loop takes its turn too); false = serve it here. The
 * fd is the loop's (or closed) once true is returned. */
bool ns_io_take_fd(ns_server_t *srv, int fd);
/* Main loop, at shutdown after the writer stopped: every I/O loop writes
 * what it holds, closes its connections and ends. */
void ns_io_stop(ns_server_t *srv);
/* Frees the main loop's mailbox (after its loop has ended). */
void ns_io_free(ns_server_t *srv);
/* An extra loop's state (its metrics, for the HTTP endpoint). */
ns_loop_t *ns_io_loop(ns_io_t *io);

#endif
