/* health.c - `namesrvctl health`: is a namesrvd alive (or ready), asked of
 * its HTTP endpoint, for container health checks and load balancers.
 *
 *   namesrvctl health [--http HOST:PORT] [--ready] [--timeout MS]
 *
 * GETs /healthz (with --ready: /readyz) from HOST:PORT (default
 * $NAMESRV_HTTP_ADDR, else 127.0.0.1:9877) and prints the answer's first
 * line. The HTTP endpoint needs neither a signature nor TLS, so this works in
 * every authMode and TLS mode of the remoting port, where a remoting request
 * (`config get`) would be refused. Exit 0 on 200, 1 on any other status,
 * 5 when nothing answers at that address (is httpListen set?). */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ns/buf.h"
#include "ns/err.h"
#include "ns/httpget.h"

int ctl_cmd_health(int argc, char **argv)
{
    const char *addr = getenv("NAMESRV_HTTP_ADDR"), *timeout_s = NULL;
    bool ready = false;
    ctl_opt_t opts[] = {{"--http", &addr, NULL},
                        {"--ready", NULL, &ready},
                        {"--timeout", &timeout_s, NULL},
                        {NULL, NULL, NULL}};
    int rc = ctl_parse("health", argc, argv, opts, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    if (addr == NULL || *addr == 0)
        addr = "127.0.0.1:9877";
    long timeout = timeout_s ? strtol(timeout_s, NULL, 10) : 5000;
    if (timeout < 1 || timeout > 600000) {
        ctl_err("health: --timeout is 1 to 600000 (ms)");
        return CTL_USAGE;
    }
    const char *path = ready ? "/readyz" : "/healthz";
    ns_buf_t body = NS_BUF_INIT;
    int status = 0;
    rc = ns_http_get_addr(addr, path, (int)timeout, &status, &body);
    if (rc != NS_OK) {
        ctl_err("health: no answer from http://%s%s (%s): is httpListen set to that address?", addr,
                path, ns_strerror(rc));
        ns_buf_free(&body);
        return CTL_IO;
    }
    const char *text = (const char *)body.data;
    size_t len = body.len;
    const char *nl = len ? memchr(text, '\n', len) : NULL;
    if (nl)
        len = (size_t)(nl - text);
    printf("%d %.*s\n", status, (int)len, len ? text : "");
    ns_buf_free(&body);
    return status == 200 ? CTL_OK : CTL_FAILED;
}
