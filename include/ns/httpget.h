/* httpget.h - one blocking HTTP/1.0 GET over TCP, for namesrvctl top and the
 * tests that scrape namesrvd's /metrics. Not a general HTTP client: no
 * redirects, no chunked bodies (HTTP/1.0 servers send neither), no TLS. */
#ifndef NS_HTTPGET_H
#define NS_HTTPGET_H

#include "ns/buf.h"

/* GETs http://host:port/path within timeout_ms. On NS_OK *status is the
 * HTTP status and body holds the body (appended; caller frees). Errors:
 * NS_ECONN (cannot connect / closed early), NS_ETIMEDOUT, NS_EINVAL (not an
 * HTTP response), NS_ETOOBIG (over 64 MiB), NS_ENOMEM. */
int ns_http_get(const char *host, int port, const char *path, int timeout_ms, int *status,
                ns_buf_t *body);
/* The same with "host:port". */
int ns_http_get_addr(const char *addr, const char *path, int timeout_ms, int *status,
                     ns_buf_t *body);

#endif
