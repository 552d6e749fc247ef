/* http_guard.h - a header deadline and connection caps for the HTTP
 * endpoint (http_guard.c): slow clients cannot hold it. */
#ifndef NS_OPS_HTTP_GUARD_H
#define NS_OPS_HTTP_GUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ns_http_guard ns_http_guard_t;

/* Starts the guard's thread: a connection that has not sent a whole request
 * header within header_timeout_ms of connecting or of its last request's
 * end is shut down. *out is the caller's, released with
 * ns_http_guard_stop. NS_OK or NS_ENOMEM. */
int ns_http_guard_start(uint64_t header_timeout_ms, ns_http_guard_t **out);
/* After MHD_stop_daemon (no more callbacks): stops the thread and frees g
 * (NULL is fine). */
void ns_http_guard_stop(ns_http_guard_t *g);

/* MHD_OPTION_NOTIFY_CONNECTION with the guard as its closure. */
void ns_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);
/* MHD_OPTION_NOTIFY_COMPLETED with the guard as its closure. */
void ns_http_guard_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                             enum MHD_RequestTerminationCode toe);
/* From the request handler's first call (the header is whole). */
void ns_http_guard_request(ns_http_guard_t *g, struct MHD_Connection *conn);
/* Connections shut down for their header deadline since the start. */
uint64_t ns_http_guard_cut_total(ns_http_guard_t *g);

#endif
