/* version.c - versions for --version and the start-up line (ns/version.h). */
#include "ns/version.h"

#include <cJSON.h>
#include <uv.h>
#include <zlib.h>

#include "ns/err.h"
#include "ns/store.h"
#include "ns_gitrev.h" /* generated at build time: NS_GIT_REV */

#ifndef NS_VERSION_STRING
#define NS_VERSION_STRING "0.0.0"
#endif
#ifdef NS_HAVE_SYSTEMD
#define SYSTEMD_TEXT "libsystemd " NS_SYSTEMD_VERSION " (sd_notify)"
#else
#define SYSTEMD_TEXT "libsystemd not linked (no sd_notify)"
#endif

const char *ns_version(void)
{
    return NS_VERSION_STRING;
}

const char *ns_git_rev(void)
{
    return NS_GIT_REV;
}

int ns_version_text(ns_buf_t *out, const char *prog)
{
    return ns_buf_printf(out,
                         "%s %s (git %s)\n"
                         "store schema version %u\n"
                         "%s\n"
                         "libuv %s\n"
                         "cJSON %s\n"
                         "zlib %s\n"
                         "%s\n",
                         prog, ns_version(), ns_git_rev(), ns_store_latest_schema(),
                         ns_store_lmdb_version(), uv_version_string(), cJSON_Version(),
                         zlibVersion(), SYSTEMD_TEXT) == NS_OK
               ? NS_OK
               : NS_ENOMEM;
}

int ns_version_line(ns_buf_t *out)
{
    return ns_buf_printf(out, "%s (git %s, schema %u, %s, libuv %s, cJSON %s, zlib %s)",
                         ns_version(), ns_git_rev(), ns_store_latest_schema(),
                         ns_store_lmdb_version(), uv_version_string(), cJSON_Version(),
                         zlibVersion()) == NS_OK
               ? NS_OK
               : NS_ENOMEM;
}
