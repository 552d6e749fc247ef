/* nstest.h - shared helpers for the test suite: fixtures, hex, temp dirs. */
#ifndef NS_TEST_H
#define NS_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

/* Reads a whole file; caller frees *out. Returns 0 or -1. */
int nstest_read_file(const char *path, uint8_t **out, size_t *len);
/* Reads NS_FIXTURES_DIR/<rel>; aborts the test (cmocka fail) if missing. */
uint8_t *nstest_fixture(const char *rel, size_t *len);
/* Hex text -> bytes; caller frees. Returns NULL on bad hex. */
uint8_t *nstest_hex_decode(const char *hex, size_t *len);
/* Creates a fresh empty directory under $TMPDIR (or /tmp); caller frees the
 * path and removes it with nstest_rmtree(). */
char *nstest_tmpdir(const char *tag);
void nstest_rmtree(const char *path);


/* ---- a real namesrvd for integration tests ----
 * Starts NS_NAMESRVD_PATH on 127.0.0.1 with an ephemeral port (portFile),
 * a data directory and configStorePath under `dir`, plus extra --key=value
 * arguments (NULL-terminated array, may be NULL). Waits until the port file
 * appears and the port accepts connections (10 s at most). The server's
 * stderr goes to dir/namesrvd.log. */
typedef struct {
    int pid;
    int port;
    char *dir;      /* owned by the caller (nstest_tmpdir) */
    char data[4096];
} nstest_server_t;

int nstest_server_start(nstest_server_t *s, const char *dir, const char *const *extra_args);
/* Sends sig (SIGKILL, SIGTERM) and waits; returns the exit status as from
 * waitpid (use WIFEXITED/WEXITSTATUS), or -1. */
int nstest_server_stop(nstest_server_t *s, int sig);
/* Runs namesrvd with args to completion (no port file wait); returns exit
 * code (or -1) and captures stderr into *err_out (caller frees) if not NULL. */
int nstest_run(const char *path, const char *const *args, char **err_out, int timeout_ms);

/* A connected client to the test server (fails the test on error). */
struct ns_client;
struct ns_client *nstest_connect(const nstest_server_t *s);

/* Fills a JSON-header request (language JAVA, version 479, opaque 0) with
 * ext pairs from kv: "k1","v1","k2","v2",...,NULL (kv may be NULL). The
 * command borrows the strings and `ext`, which must hold 16 entries. */
#include "ns/remoting.h"
void nstest_cmd(ns_cmd_t *cmd, ns_ext_field_t *ext, int code, const char *const *kv);

#endif
