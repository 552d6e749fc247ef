/* version.h - what a binary reports with --version and in its start-up line
 * (store/version.c). */
#ifndef NS_VERSION_H
#define NS_VERSION_H

#include "ns/buf.h"

/* "0.1.0" (CMake project version) and the git revision it was built from
 * ("3f2a9c1d0e4b", "-dirty" when the tree had changes, "unknown" outside
 * git). Static strings. */
const char *ns_version(void);
const char *ns_git_rev(void);

/* Appends the --version text of prog: first line "prog VERSION (git REV)",
 * then the store schema version this binary writes and the versions of
 * LMDB, cJSON and zlib, one per line, then `extra` as it is (lines of the
 * caller's own libraries, "\n"-terminated; may be NULL). NS_OK or NS_ENOMEM. */
int ns_version_text(ns_buf_t *out, const char *prog, const char *extra);

/* One line for logs: "VERSION (git REV, schema N, LMDB x, cJSON y, zlib z,
 * EXTRA)"; extra may be NULL. */
int ns_version_line(ns_buf_t *out, const char *extra);

#endif
