/* nstest.h - shared test helpers: fixtures, hex, temp dirs, time, namesrvd, namesrvctl. */
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

/* Overwrites the root page of LMDB table `table` in the store file `file`
 * (data.mdb) with garbage shaped like a branch page; meta pages stay intact.
 * Returns 0, or -1 when the table has no root page (empty) or on I/O errors.
 * (nstest_damage.c) */
int nstest_damage_table(const char *file, const char *table);
/* The same for a page below the root: the middle child of the table's root
 * (a branch page of 3 children or more), so that the root and the first and
 * last leaves stay intact. -1 when the table has no such root. */
int nstest_damage_inner_page(const char *file, const char *table);

/* ---- text files (nstest_text.c) ---- */
/* A whole file, NUL-terminated; caller frees. NULL when it cannot be read. */
char *nstest_read_text(const char *path);
/* Writes text as the whole file; fails the test on error. Needs cmocka. */
void nstest_write_text(const char *path, const char *text);
/* Fails the test, printing text, unless it holds every one of needles
 * (NULL-terminated). Needs cmocka. */
void nstest_expect_all(const char *text, const char *const *needles);
/* The value a crash test's put of seq stores under key: a header naming
 * both, a filler whose length (8 .. 6007 bytes: small values and overflow
 * pages) and bytes depend on seq, and a trailer; compared whole, a torn or
 * stale value shows. Caller frees; fails the test when out of memory. */
char *nstest_kv_value(const char *key, uint32_t seq);
/* Occurrences of needle in the file (0 when it cannot be read). */
int nstest_count_in_file(const char *path, const char *needle);
/* A blocking TCP socket connected to 127.0.0.1:port (nstest_sock.c), with
 * SO_RCVBUF rcvbuf when > 0 and send/receive timeouts of timeout_s seconds
 * when > 0; fails the test if it cannot connect. The caller closes it. */
int nstest_raw_connect(int port, int rcvbuf, int timeout_s);
/* The kB value of a /proc/<pid>/status line such as "VmHWM:", or -1. */
long nstest_proc_status_kib(int pid, const char *field);

/* ---- the fault shim (tests/faults/nsfault.c) for the processes the test
 * starts next (nstest.c) ----
 * Sets LD_PRELOAD to the shim, the NULL-terminated "NAME", "value" pairs of
 * env, and verify_asan_link_order=0 in ASAN_OPTIONS (a sanitized binary
 * then accepts a library preloaded ahead of its runtime); the clear call
 * undoes all of it. The test process itself is not affected (the loader
 * reads LD_PRELOAD only at exec). */
void nstest_fault_env_set(const char *const *env);
void nstest_fault_env_clear(const char *const *env);
/* The same with the shared library lib preloaded instead of the fault
 * shim; undone by nstest_fault_env_clear. */
void nstest_preload_env_set(const char *lib, const char *const *env);

/* ---- time (nstest.c) ---- */
/* CLOCK_MONOTONIC in whole milliseconds. */
int64_t nstest_mono_ms(void);
/* Sleeps ms milliseconds (nanosleep; an interruption cuts it short). */
void nstest_sleep_ms(int ms);
/* Waits until the wall clock (CLOCK_REALTIME, whole ms, the server's clock
 * for stored times) has moved past its reading at the call: whatever the
 * server stamps afterwards is later than what it stamped before. */
void nstest_wall_tick(void);

/* ---- a real namesrvd for integration tests ----
 * Starts NS_NAMESRVD_PATH on 127.0.0.1 with an ephemeral port (portFile),
 * a data directory and configStorePath under `dir`, plus extra --key=value
 * arguments (NULL-terminated array, may be NULL). Waits until the port file
 * appears (NSTEST_START_MS at most; a server that exits first is seen at
 * once; one never ready is killed). The server's stderr goes to
 * dir/namesrvd.log. */
typedef struct {
    int pid;
    int port;
    char *dir; /* borrowed: the directory given to nstest_server_start */
    char data[4096];
} nstest_server_t;

#define NSTEST_START_MS 60000
int nstest_server_start(nstest_server_t *s, const char *dir, const char *const *extra_args);
/* The same with the shared library lib preloaded (LD_PRELOAD: a fault shim
 * of tests/faults) and env pairs "NAME", "value", ..., NULL (may be NULL)
 * set for the server only; a sanitized namesrvd is told to accept the
 * library ahead of its runtime. */
int nstest_server_start_preloaded(nstest_server_t *s, const char *dir,
                                  const char *const *extra_args, const char *lib,
                                  const char *const *env);
/* Sends sig (SIGKILL, SIGTERM) and waits; returns the exit status as from
 * waitpid (use WIFEXITED/WEXITSTATUS), or -1. */
int nstest_server_stop(nstest_server_t *s, int sig);
/* Runs namesrvd with args to completion (no port file wait); returns exit
 * code (or -1) and captures stderr into *err_out (caller frees) if not NULL. */
int nstest_run(const char *path, const char *const *args, char **err_out, int timeout_ms);

/* A temp directory nstest_tmpdir(tag) with a server started in it (args as
 * for nstest_server_start). On success *dir is owned by the caller, who
 * releases both with nstest_server_close(); on failure nothing is left
 * behind, *dir is NULL and -1 is returned. For setup() functions. */
int nstest_server_open(nstest_server_t *s, char **dir, const char *tag,
                       const char *const *extra_args);
/* Kills the server (SIGKILL), removes the directory tree and frees dir.
 * For teardown() functions; the counterpart of nstest_server_open(). */
void nstest_server_close(nstest_server_t *s, char *dir);

/* Occurrences of needle in s->dir/namesrvd.log now (0 when unreadable). */
int nstest_log_count(const nstest_server_t *s, const char *needle);
/* True once the log holds needle (polled up to timeout_ms): waits for what
 * the server said instead of sleeping. */
bool nstest_log_wait(const nstest_server_t *s, const char *needle, int timeout_ms);

/* The usual cmocka fixture: a temp directory with a server in it. */
typedef struct {
    char *dir;
    nstest_server_t srv;
} nstest_fx_t;
/* setup(): *state becomes a new nstest_fx_t (freed by nstest_fx_teardown);
 * returns -1 and leaves nothing behind on failure. */
int nstest_fx_setup(void **state, const char *tag, const char *const *extra_args);
/* The same fixture with the directory only: the test starts the server
 * (nstest_server_start(&fx->srv, fx->dir, ...)); teardown stops it if so. */
int nstest_fx_setup_dir(void **state, const char *tag);
/* The same for a test's own fixture of size bytes whose first member is an
 * nstest_fx_t: zeroed, with the directory and no server; released (the
 * whole fixture) by nstest_fx_teardown. */
int nstest_fx_setup_sized(void **state, size_t size, const char *tag);
int nstest_fx_teardown(void **state);

/* ---- the HTTP endpoint (nstest_http.c) ----
 * Starts like nstest_server_start, with the HTTP endpoint on an ephemeral
 * loopback port as well (--httpListen, --httpPortFile under dir); *http_port
 * gets its port. */
int nstest_server_start_http(nstest_server_t *s, const char *dir, const char *const *extra_args,
                             int *http_port);
/* A fixture whose server has the HTTP endpoint too: setup() makes the
 * nstest_fx_t (first member: nstest_fx_teardown releases the whole) and
 * starts the server with extra_args (may be NULL) and http_port set;
 * returns -1 and leaves nothing started on failure. */
typedef struct {
    nstest_fx_t fx;
    int http_port;
} nstest_fx_http_t;
int nstest_fx_setup_http(void **state, const char *tag, const char *const *extra_args);
/* The value of one series of GET /metrics, e.g.
 * "namesrv_connections_closed_total"; 0 when absent, -1 when /metrics
 * cannot be read. */
double nstest_metric(int http_port, const char *series);
/* GET path of the HTTP endpoint: the status, the body in *out as a C
 * string (caller frees). Fails the test when there is no answer. */
int nstest_http_get(int http_port, const char *path, char **out);
/* GET /metrics, which must answer 200; with check_dir, the scrape is
 * written to check_dir/scrape.txt and promtool's `check metrics` must pass
 * (its output fails the test). Returns the text; caller frees. */
char *nstest_scrape(int http_port, const char *check_dir);
/* The value of the sample whose line in a scrape is `series value`;
 * absent when there is none. */
double nstest_series(const char *text, const char *series, double absent);
/* Polls a series until it is at least want, timeout_ms at most: waits for
 * what the server counted (a close, a refusal) instead of sleeping. */
bool nstest_metric_wait_ge(int http_port, const char *series, double want, int timeout_ms);

/* Runs NS_NAMESRVCTL_PATH with NULL-terminated string arguments (at most
 * 62) for timeout_ms at most; returns its exit code (or -1). *out gets its
 * output (caller frees); out may be NULL. */
int nstest_ctl(int timeout_ms, char **out, ...);
/* Runs namesrvctl with NULL-terminated arguments (60 s at most) and fails
 * the test, printing the output, unless it exits with want and its output
 * holds needle (NULL: any output). Needs <cmocka.h>. */
void nstest_ctl_expect(int want, const char *needle, ...);

/* Fails the test when a namesrvctl exit code or output (from nstest_ctl) is
 * not what is wanted, printing the output. Need <cmocka.h>. */
#define NSTEST_EXPECT_RC(rc, want, out)                                                            \
    do {                                                                                           \
        if ((rc) != (want))                                                                        \
            fail_msg("namesrvctl exited %d, expected %d; output:\n%s", (rc), (want),               \
                     (out) ? (out) : "");                                                          \
    } while (0)

#define NSTEST_EXPECT_IN(out, needle)                                                              \
    do {                                                                                           \
        if ((out) == NULL || strstr((out), (needle)) == NULL)                                      \
            fail_msg("expected '%s' in output:\n%s", (needle), (out) ? (out) : "(null)");          \
    } while (0)

/* A connected client to the test server (fails the test on error). */
struct ns_client;
struct ns_client *nstest_connect(const nstest_server_t *s);

/* Fills a JSON-header request (language JAVA, version 479, opaque 0) with
 * ext pairs from kv: "k1","v1","k2","v2",...,NULL (kv may be NULL). The
 * command borrows the strings and `ext`, which must hold 16 entries. */
#include "ns/remoting.h"
void nstest_cmd(ns_cmd_t *cmd, ns_ext_field_t *ext, int code, const char *const *kv);

/* Sends request `code` at the given request version (ext pairs kv as for
 * nstest_cmd, body of n bytes, may be NULL) on c and waits timeout_ms at
 * most for the reply, into rsp (initialised by the caller); fails the test,
 * naming the code, if the call itself fails. */
void nstest_call(struct ns_client *c, int code, const char *const *kv, const void *body, size_t n,
                 int version, int timeout_ms, ns_cmd_msg_t *rsp);
/* The same at version 5.3.3 without body or failing: returns the
 * client's rc (NS_OK when rsp holds a reply), for a test that expects the
 * call itself may fail (a server going away). */
int nstest_try_call(struct ns_client *c, int code, const char *const *kv, int timeout_ms,
                    ns_cmd_msg_t *rsp);
/* The reply's remark as a C string in out (n bytes, "" when none). */
void nstest_remark(const ns_cmd_msg_t *rsp, char *out, size_t n);

/* One GET_BROKER_CLUSTER_INFO (3 s at most): the call's rc, and a reply
 * other than SUCCESS fails the test. For "is this connection served". */
int nstest_cluster_info(struct ns_client *c);

/* The same at version 5.3.3, returning the reply (caller frees with
 * ns_cmd_msg_free). */
ns_cmd_msg_t nstest_call_msg(struct ns_client *c, int code, const char *const *kv, const void *body,
                             size_t n, int timeout_ms);
/* The same at version 5.3.3, returning only the reply's code. */
int nstest_call_code(struct ns_client *c, int code, const char *const *kv, const void *body,
                     size_t n, int timeout_ms);

#endif
