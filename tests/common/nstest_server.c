/* nstest_server.c - start, stop and talk to a real namesrvd (nstest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

int nstest_server_start(nstest_server_t *s, const char *dir, const char *const *extra_args)
{
    char portfile[4096], log[4096], a_data[4200], a_port[4200], a_store[4200];
    memset(s, 0, sizeof *s);
    s->pid = -1;
    s->dir = (char *)dir;
    snprintf(s->data, sizeof s->data, "%s/data", dir);
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    snprintf(a_data, sizeof a_data, "--dataDir=%s", s->data);
    snprintf(a_port, sizeof a_port, "--portFile=%s", portfile);
    snprintf(a_store, sizeof a_store, "--configStorePath=%s/namesrv.properties", dir);
    unlink(portfile);
    const char *argv[64] = {
        NS_NAMESRVD_PATH, "--bindAddress=127.0.0.1", "--listenPort=0", a_data, a_port, a_store};
    int argc = 6;
    /* NSTEST_IO_THREADS=N runs every test server with N event loops (the
     * _io3 variants of the integration and crash tests); a test's own args
     * win. */
    char a_io[32];
    const char *io = getenv("NSTEST_IO_THREADS");
    if (io && *io) {
        snprintf(a_io, sizeof a_io, "--ioThreads=%s", io);
        argv[argc++] = a_io;
    }
    for (int i = 0; extra_args && extra_args[i] && argc < 62; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execv(NS_NAMESRVD_PATH, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    /* a bound, not a target: a server that refuses to start exits and is
     * seen at once, but migrations of a large store under ASan on a loaded
     * host took longer than the 10 s this once was */
    int64_t deadline = nstest_mono_ms() + NSTEST_START_MS;
    while (nstest_mono_ms() < deadline) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int port = 0;
            int n = fscanf(f, "%d", &port);
            fclose(f);
            if (n == 1 && port > 0) {
                s->port = port;
                return 0;
            }
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            s->pid = -1;
            return -1;
        }
        nstest_sleep_ms(10);
    }
    /* never ready: not left running behind the failed test */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    s->pid = -1;
    return -1;
}

int nstest_server_start_preloaded(nstest_server_t *s, const char *dir,
                                  const char *const *extra_args, const char *lib,
                                  const char *const *env)
{
    nstest_preload_env_set(lib, env);
    int rc = nstest_server_start(s, dir, extra_args);
    nstest_fault_env_clear(env);
    return rc;
}

int nstest_server_stop(nstest_server_t *s, int sig)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, sig);
    int status = -1;
    for (int i = 0; i < 3000; i++) { /* 30 s */
        pid_t r = waitpid(s->pid, &status, WNOHANG);
        if (r == s->pid)
            break;
        if (i == 2999) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
        nstest_sleep_ms(10);
    }
    s->pid = -1;
    return status;
}

int nstest_run(const char *path, const char *const *args, char **err_out, int timeout_ms)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    const char *argv[64] = {path};
    int argc = 1;
    for (int i = 0; args && args[i] && argc < 62; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        dup2(pfd[1], 1);
        close(pfd[0]);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    ns_buf_t out = NS_BUF_INIT;
    char tmp[4096];
    int waited = 0;
    for (;;) {
        struct pollfd p = {pfd[0], POLLIN, 0};
        int r = poll(&p, 1, 100);
        if (r > 0) {
            ssize_t n = read(pfd[0], tmp, sizeof tmp);
            if (n <= 0)
                break;
            ns_buf_append(&out, tmp, (size_t)n);
        } else if ((waited += 100) > timeout_ms) {
            kill(pid, SIGKILL);
            break;
        }
    }
    close(pfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (err_out)
        *err_out = out.data ? ns_buf_strdup(&out) : strdup("");
    ns_buf_free(&out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int nstest_server_open(nstest_server_t *s, char **dir, const char *tag,
                       const char *const *extra_args)
{
    *dir = nstest_tmpdir(tag);
    if (*dir == NULL || nstest_server_start(s, *dir, extra_args) != 0) {
        free(*dir);
        *dir = NULL;
        return -1;
    }
    return 0;
}

int nstest_log_count(const nstest_server_t *s, const char *needle)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/namesrvd.log", s->dir);
    return nstest_count_in_file(path, needle);
}

bool nstest_log_wait(const nstest_server_t *s, const char *needle, int timeout_ms)
{
    int64_t end = nstest_mono_ms() + timeout_ms;
    for (;;) {
        if (nstest_log_count(s, needle) > 0)
            return true;
        if (nstest_mono_ms() > end)
            return false;
        nstest_sleep_ms(20);
    }
}

void nstest_server_close(nstest_server_t *s, char *dir)
{
    nstest_server_stop(s, SIGKILL);
    nstest_rmtree(dir);
    free(dir);
}

/* Runs namesrvctl with the NULL-terminated string arguments of ap (at
 * most 62) for timeout_ms at most; its exit code, its output in *out
 * (caller frees). */
static int ctl_v(int timeout_ms, char **out, va_list ap)
{
    const char *args[64];
    int n = 0;
    for (const char *a = va_arg(ap, const char *); a && n < 62; a = va_arg(ap, const char *))
        args[n++] = a;
    args[n] = NULL;
    return nstest_run(NS_NAMESRVCTL_PATH, args, out, timeout_ms);
}

int nstest_ctl(int timeout_ms, char **out, ...)
{
    char *tmp = NULL;
    va_list ap;
    va_start(ap, out);
    int rc = ctl_v(timeout_ms, &tmp, ap);
    va_end(ap);
    if (out)
        *out = tmp;
    else
        free(tmp);
    return rc;
}

void nstest_ctl_expect(int want, const char *needle, ...)
{
    char *out = NULL;
    va_list ap;
    va_start(ap, needle);
    int rc = ctl_v(60000, &out, ap);
    va_end(ap);
    NSTEST_EXPECT_RC(rc, want, out);
    if (needle)
        NSTEST_EXPECT_IN(out, needle);
    free(out);
}

struct ns_client *nstest_connect(const nstest_server_t *s)
{
    ns_client_t *c = NULL;
    int rc = ns_client_connect("127.0.0.1", s->port, 5000, &c);
    if (rc != NS_OK)
        fail_msg("cannot connect to namesrvd on port %d: %s", s->port, ns_strerror(rc));
    return c;
}

void nstest_cmd(ns_cmd_t *cmd, ns_ext_field_t *ext, int code, const char *const *kv)
{
    size_t n = 0;
    for (size_t i = 0; kv && kv[i] && kv[i + 1] && n < 16; i += 2, n++)
        ext[n] = ns_ext_field(kv[i], kv[i + 1]);
    ns_cmd_request_init(cmd, code, kv ? ext : NULL, n);
}

/* One request (version, body as given); the client's rc. */
static int call_rc(struct ns_client *c, int code, const char *const *kv, const void *body, size_t n,
                   int version, int timeout_ms, ns_cmd_msg_t *rsp)
{
    ns_cmd_t cmd;
    ns_ext_field_t ext[16];
    nstest_cmd(&cmd, ext, code, kv);
    cmd.version = version;
    cmd.body = body;
    cmd.body_len = n;
    return ns_client_call(c, &cmd, timeout_ms, rsp);
}

void nstest_call(struct ns_client *c, int code, const char *const *kv, const void *body, size_t n,
                 int version, int timeout_ms, ns_cmd_msg_t *rsp)
{
    int rc = call_rc(c, code, kv, body, n, version, timeout_ms, rsp);
    if (rc != NS_OK)
        fail_msg("request %d: %s", code, ns_strerror(rc));
}

int nstest_try_call(struct ns_client *c, int code, const char *const *kv, int timeout_ms,
                    ns_cmd_msg_t *rsp)
{
    ns_cmd_msg_init(rsp);
    return call_rc(c, code, kv, NULL, 0, NS_VERSION_V5_3_3, timeout_ms, rsp);
}

void nstest_remark(const ns_cmd_msg_t *rsp, char *out, size_t n)
{
    snprintf(out, n, "%.*s", rsp->cmd.remark ? (int)rsp->cmd.remark_len : 0,
             rsp->cmd.remark ? rsp->cmd.remark : "");
}

int nstest_cluster_info(struct ns_client *c)
{
    ns_cmd_msg_t rsp;
    int rc = nstest_try_call(c, NS_REQ_GET_BROKER_CLUSTER_INFO, NULL, 3000, &rsp);
    if (rc == NS_OK)
        assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    ns_cmd_msg_free(&rsp);
    return rc;
}

ns_cmd_msg_t nstest_call_msg(struct ns_client *c, int code, const char *const *kv, const void *body,
                             size_t n, int timeout_ms)
{
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, code, kv, body, n, NS_VERSION_V5_3_3, timeout_ms, &rsp);
    return rsp;
}

int nstest_call_code(struct ns_client *c, int code, const char *const *kv, const void *body,
                     size_t n, int timeout_ms)
{
    ns_cmd_msg_t rsp = nstest_call_msg(c, code, kv, body, n, timeout_ms);
    int rcode = rsp.cmd.code;
    ns_cmd_msg_free(&rsp);
    return rcode;
}

int nstest_fx_setup(void **state, const char *tag, const char *const *extra_args)
{
    nstest_fx_t *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    if (nstest_server_open(&fx->srv, &fx->dir, tag, extra_args) != 0) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

int nstest_fx_setup_dir(void **state, const char *tag)
{
    return nstest_fx_setup_sized(state, sizeof(nstest_fx_t), tag);
}

int nstest_fx_setup_sized(void **state, size_t size, const char *tag)
{
    nstest_fx_t *fx = calloc(1, size < sizeof *fx ? sizeof *fx : size);
    if (fx == NULL)
        return -1;
    fx->srv.pid = -1;
    if ((fx->dir = nstest_tmpdir(tag)) == NULL) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

int nstest_fx_teardown(void **state)
{
    nstest_fx_t *fx = *state;
    nstest_server_close(&fx->srv, fx->dir);
    free(fx);
    return 0;
}
