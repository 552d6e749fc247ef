/* service.h - what running under a service manager needs (service.c):
 * sd_notify READY/WATCHDOG/STOPPING, SIGHUP reopening the log file, the
 * start-up line, the daemon's library versions. Called by server.c. */
#ifndef NS_SERVICE_H
#define NS_SERVICE_H

#include "net/ioloop.h"

/* After listen: SIGHUP handler, watchdog timer, the start-up line, READY=1. */
void ns_service_started(ns_server_t *srv);
/* Any sd_notify state ("STATUS=..."); nothing outside systemd. */
void ns_service_notify(const char *state);
/* At the start of a shutdown: STOPPING=1. */
void ns_service_stopping(ns_server_t *srv);
/* The daemon's own libraries for --version ("libuv X\nsd_notify ...\n"), static. */
const char *ns_service_libs(void);

#endif
