/* accept.h - the listening socket of namesrvd (accept.c): accepting by
 * hand, so that running out of file descriptors never stalls a loop. */
#ifndef NS_ACCEPT_H
#define NS_ACCEPT_H

#include "net/ioloop.h"

/* Main loop: binds bindAddress:listenPort, listens and starts accepting
 * (srv->bound_port set). On failure err says why. */
int ns_accept_listen(ns_server_t *srv, char *err, size_t errlen);
/* Main loop, at shutdown: stops accepting and closes the socket. Idempotent. */
void ns_accept_stop(ns_server_t *srv);

#endif
