/* sdnotify.h - the service manager's notification protocol (sdnotify.c):
 * one datagram of "KEY=value" lines to the AF_UNIX socket $NOTIFY_SOCKET
 * names, and the watchdog interval $WATCHDOG_USEC asks for. */
#ifndef NS_SDNOTIFY_H
#define NS_SDNOTIFY_H

#include <stdint.h>

/* Sends state ("READY=1", "WATCHDOG=1", ...) to $NOTIFY_SOCKET: 1 when
 * sent, 0 when there is no socket to send to (not under a service manager),
 * a negative errno when the socket is named but the send failed. */
int ns_sd_notify(const char *state);
/* 1 with *usec set when $WATCHDOG_USEC asks this process (and
 * $WATCHDOG_PID, when set, names it) for pings, else 0. */
int ns_sd_watchdog_usec(uint64_t *usec);

#endif
