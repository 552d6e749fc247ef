/* mhd.c - opens libmicrohttpd on demand (mhd.h). NS_MHD_SONAME, the
 * library's soname, comes from the build (CMakeLists.txt): the one this
 * namesrvd was compiled against. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ns/err.h"
#include "ops/mhd.h"

ns_mhd_t ns_mhd;

static const struct {
    const char *symbol;
    size_t at;
} fns[] = {
    {"MHD_start_daemon", offsetof(ns_mhd_t, start_daemon)},
    {"MHD_stop_daemon", offsetof(ns_mhd_t, stop_daemon)},
    {"MHD_get_daemon_info", offsetof(ns_mhd_t, get_daemon_info)},
    {"MHD_get_connection_info", offsetof(ns_mhd_t, get_connection_info)},
    {"MHD_get_connection_values", offsetof(ns_mhd_t, get_connection_values)},
    {"MHD_lookup_connection_value", offsetof(ns_mhd_t, lookup_connection_value)},
    {"MHD_create_response_from_buffer", offsetof(ns_mhd_t, create_response_from_buffer)},
    {"MHD_add_response_header", offsetof(ns_mhd_t, add_response_header)},
    {"MHD_queue_response", offsetof(ns_mhd_t, queue_response)},
    {"MHD_destroy_response", offsetof(ns_mhd_t, destroy_response)},
};

int ns_mhd_load(char *err, size_t errlen)
{
    static void *lib; /* kept for the life of the process */
    if (lib)
        return NS_OK;
    void *h = dlopen(NS_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(err, errlen, "httpListen needs %s: %s", NS_MHD_SONAME, dlerror());
        return NS_EIO;
    }
    ns_mhd_t api;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        void *p = dlsym(h, fns[i].symbol);
        if (p == NULL) {
            snprintf(err, errlen, "%s has no %s", NS_MHD_SONAME, fns[i].symbol);
            dlclose(h);
            return NS_EIO;
        }
        memcpy((char *)&api + fns[i].at, &p, sizeof p); /* a function's address */
    }
    ns_mhd = api;
    lib = h;
    return NS_OK;
}
