/* secure.h - TLS and the PROXY protocol on the remoting port, the server's
 * side (secure.c): settings, the certificate watcher; the bytes themselves
 * go through each connection's filter (conn_wire.c, wire.c). */
#ifndef NS_SECURE_H
#define NS_SECURE_H

#include <stddef.h>

#include "net/ioloop.h"

/* Main loop, before the I/O loops start: reads tls.config.file, parses the
 * TLS mode and proxyProtocolTrustedAddresses, loads the certificate and
 * starts watching it (and SIGHUP). Sets loop->wire_cfg, which owns the
 * watcher handles too and which the I/O loops borrow, and on_accepted.
 * err says why on failure. */
int ns_secure_start(ns_loop_t *loop, char *err, size_t errlen);
/* Stops the watcher handles (at shutdown). */
void ns_secure_stop(ns_loop_t *loop);
/* Frees what ns_secure_start allocated (after every loop ended). */
void ns_secure_free(ns_loop_t *loop);

#endif
