/* version.c - versions for --version and the start-up line (ns/version.h):
 * the project version, the git revision it was built from, the store
 * schema, and the libraries of the store's floor and below (LMDB, cJSON,
 * zlib). The daemon adds its own (libuv, libsystemd) as extra lines. */
#include "ns/version.h"

#include <cJSON.h>
#include <lmdb.h>
#include <zlib.h>

#include "ns/err.h"
#include "ns/store.h"
#include "ns_gitrev.h" /* generated at build time: NS_GIT_REV */

#ifndef NS_VERSION_STRING
#define NS_VERSION_STRING "0.0.0"
#endif

const char *ns_version(void)
{
    return NS_VERSION_STRING;
}

const char *ns_git_rev(void)
{
    return NS_GIT_REV;
}

int ns_version_text(ns_buf_t *out, const char *prog, const char *extra)
{
    return ns_buf_printf(out,
                         "%s %s (git %s)\n"
                         "store schema version %u\n"
                         "%s\n"
                         "cJSON %s\n"
                         "zlib %s\n"
                         "%s",
                         prog, ns_version(), ns_git_rev(), ns_store_latest_schema(),
                         mdb_version(NULL, NULL, NULL), cJSON_Version(), zlibVersion(),
                         extra ? extra : "") == NS_OK
               ? NS_OK
               : NS_ENOMEM;
}

int ns_version_line(ns_buf_t *out, const char *extra)
{
    return ns_buf_printf(out, "%s (git %s, schema %u, %s, cJSON %s, zlib %s%s%s)", ns_version(),
                         ns_git_rev(), ns_store_latest_schema(), mdb_version(NULL, NULL, NULL),
                         cJSON_Version(), zlibVersion(), extra ? ", " : "",
                         extra ? extra : "") == NS_OK
               ? NS_OK
               : NS_ENOMEM;
}
