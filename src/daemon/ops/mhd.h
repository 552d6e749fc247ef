/* mhd.h - libmicrohttpd, loaded when the HTTP endpoint starts (mhd.c).
 *
 * Linked, libmicrohttpd brings GnuTLS and the eight libraries GnuTLS needs
 * (p11-kit, nettle, hogweed, gmp, tasn1, idn2, unistring, ffi) into every
 * namesrvd, and GnuTLS's constructor runs at start: 2.4 MiB resident
 * (pmap, an idle server), for HTTPS that namesrvd never serves, in
 * servers that mostly run without httpListen. So the library is opened
 * with dlopen when httpListen is set, and its functions called through
 * ns_mhd; a server without the endpoint never maps it. Its header still
 * gives every type and constant. */
#ifndef NS_OPS_MHD_H
#define NS_OPS_MHD_H

#include <microhttpd.h>
#include <stddef.h>

typedef struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
} ns_mhd_t;

/* Filled by ns_mhd_load; read-only after it. */
extern ns_mhd_t ns_mhd;

/* Opens the library and finds its functions, once per process (later
 * calls return at once). NS_OK, or NS_EIO with err naming what is missing.
 * Called from the main thread before the HTTP thread starts. */
int ns_mhd_load(char *err, size_t errlen);

#endif
