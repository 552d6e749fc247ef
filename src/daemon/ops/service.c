/* service.c - what running under a service manager needs: sd_notify
 * (READY once the store is open and the port listens, WATCHDOG pings,
 * STOPPING), SIGHUP to reopen the log file, and the start-up line.
 *
 * Outside systemd (no $NOTIFY_SOCKET) the notify calls do nothing
 * (sdnotify.c: the protocol, without libsystemd). The watchdog pings at
 * half of WATCHDOG_USEC from the loop thread, so a loop that hangs stops
 * pinging and systemd restarts the service. */
#include <stdio.h>
#include <stdlib.h>

#include "core/server.h"
#include "ns/err.h"
#include "ns/log.h"
#include "ns/version.h"
#include "ops/sdnotify.h"
#include "ops/service.h"

static void notify(const char *state)
{
    int rc = ns_sd_notify(state);
    if (rc < 0)
        NS_LOG_WARN("sd_notify(%s) failed: %d", state, rc);
}

static void watchdog_cb(uv_timer_t *t)
{
    notify("WATCHDOG=1");
}

static void hup_cb(uv_signal_t *s, int signum)
{
    if (ns_log_reopen() == NS_OK)
        NS_LOG_INFO("SIGHUP: log file reopened");
    else
        NS_LOG_ERROR("SIGHUP: cannot reopen the log file; logging to stderr");
}

/* Microseconds systemd wants pings within, or 0 when it does not. */
static uint64_t watchdog_usec(void)
{
    uint64_t usec = 0;
    return ns_sd_watchdog_usec(&usec) > 0 ? usec : 0;
}

void ns_service_started(ns_server_t *srv)
{
    ns_buf_t line = NS_BUF_INIT;
    uv_signal_init(srv->loop.uv, &srv->sig_hup);
    srv->sig_hup.data = srv;
    uv_signal_start(&srv->sig_hup, hup_cb, SIGHUP);
    uint64_t usec = watchdog_usec();
    uv_timer_init(srv->loop.uv, &srv->watchdog_timer);
    srv->watchdog_timer.data = srv;
    if (usec > 0) {
        uint64_t every_ms = usec / 2000 > 0 ? usec / 2000 : 1;
        uv_timer_start(&srv->watchdog_timer, watchdog_cb, every_ms, every_ms);
    }
    char libs[160];
    snprintf(libs, sizeof libs, "libuv %s", uv_version_string());
    ns_version_line(&line, libs);
    NS_LOG_INFO("namesrvd %s: data in %s (syncMode %s, ioThreads %lld%s). "
                "The Name Server boot success. serializeType=JSON, address %s:%d",
                line.data ? (const char *)line.data : "?", srv->loop.cfg->data_dir,
                srv->loop.cfg->sync_mode, (long long)srv->loop.cfg->io_threads,
                usec ? ", systemd watchdog on" : "", srv->loop.cfg->bind_address, srv->bound_port);
    ns_buf_free(&line);
    notify("READY=1\nSTATUS=serving");
}

const char *ns_service_libs(void)
{
    static char text[160];
    snprintf(text, sizeof text, "libuv %s\nsd_notify built in (no libsystemd)\n",
             uv_version_string());
    return text;
}

void ns_service_notify(const char *state)
{
    notify(state);
}

void ns_service_stopping(ns_server_t *srv)
{
    notify("STOPPING=1");
}
