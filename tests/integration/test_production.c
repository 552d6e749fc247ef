/* test_production.c - what an operator relies on, through the real
 * binaries: --version of both programs; a Java 5.3 namesrv.conf (thread and
 * Netty keys) starts namesrvd with one warning and an unknown key still
 * refuses it; the admin audit trail records a wipe, a KV put and a config
 * change (and a refusal) with the client's address and survives kill -9;
 * INFO lines with the peer; logFile rotation by size and SIGHUP reopening a
 * rotated log; the expiry and restart lines; sd_notify and journal
 * priorities. The offline tools are in test_production_ops.c. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "nstest.h"
#include "nstest_admin.h"
#include "ns/body.h"
#include "ns/client.h"
#include "ns/codes.h"
#include "ns/err.h"

#define ctl(...) nstest_ctl(60000, __VA_ARGS__)

/* ---- --version ---- */

static void test_version(void **state)
{
    (void)state;
    char *err = NULL, *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/version.out", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    const char *args[] = {"--version", NULL};
    /* nstest_run captures stderr; the version goes to stdout: run by hand */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "%s --version > %s.%d", NS_NAMESRVD_PATH, path, (int)getpid());
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s.%d", path, (int)getpid());
    out = nstest_read_text(cmd);
    unlink(cmd);
    assert_non_null(out);
    NSTEST_EXPECT_IN(out, "namesrvd 0.1.0 (git ");
    NSTEST_EXPECT_IN(out, "store schema version 11\n");
    NSTEST_EXPECT_IN(out, "LMDB 0.9");
    NSTEST_EXPECT_IN(out, "libuv 1.");
    NSTEST_EXPECT_IN(out, "cJSON 1.");
    NSTEST_EXPECT_IN(out, "zlib 1.");
    free(out);
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, args, &err, 10000), 0);
    free(err);
    int rc = ctl(&out, "--version", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "namesrvctl 0.1.0 (git ");
    NSTEST_EXPECT_IN(out, "store schema version 11\n");
    free(out);
}

/* ---- a Java namesrv.conf ---- */

static const char JAVA_CONF[] = "# written for the Java NameServer 5.3\n"
                                "rocketmqHome=/opt/rocketmq\n"
                                "listenPort=9876\n"
                                "serverWorkerThreads=16\n"
                                "serverSelectorThreads=3\n"
                                "serverCallbackExecutorThreads=0\n"
                                "serverSocketSndBufSize=65535\n"
                                "serverSocketRcvBufSize=65535\n"
                                "writeBufferHighWaterMark=4194304\n"
                                "writeBufferLowWaterMark=1048576\n"
                                "serverPooledByteBufAllocatorEnable=true\n"
                                "useEpollNativeSelector=true\n"
                                "clientWorkerThreads=4\n"
                                "defaultThreadPoolNums=16\n"
                                "clientRequestThreadPoolNums=8\n"
                                "enableControllerInNamesrv=false\n"
                                "orderMessageEnable=true\n"
                                "scanNotActiveBrokerInterval=5000\n";

static void test_java_conf_starts(void **state)
{
    (void)state;
    char conf[4200], log[4200];
    char *dir = nstest_tmpdir("prod-java");
    nstest_server_t srv;
    snprintf(conf, sizeof conf, "%s/namesrv.conf", dir);
    nstest_write_text(conf, JAVA_CONF);
    const char *args[] = {"-c", conf, NULL};
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    ns_client_t *c = nstest_connect(&srv);
    /* it serves, with the Java settings we implement applied */
    ns_cmd_msg_t rsp;
    ns_cmd_msg_init(&rsp);
    nstest_call(c, NS_REQ_GET_NAMESRV_CONFIG, NULL, NULL, 0, 479, 10000, &rsp);
    assert_int_equal(rsp.cmd.code, NS_RSP_SUCCESS);
    char *body = strndup((const char *)rsp.cmd.body, rsp.cmd.body_len);
    NSTEST_EXPECT_IN(body, "orderMessageEnable=true\n");
    free(body);
    ns_cmd_msg_free(&rsp);
    /* UPDATE_NAMESRV_CONFIG rewrites the -c file in use, the original kept as
     * .bak: only the changed line differs (comments, order, the other keys and
     * the mode stay), a new key is appended */
    struct stat st;
    assert_int_equal(chmod(conf, 0640), 0);
    assert_int_equal(nstest_config_update(c, "orderMessageEnable=false\nclusterTest=true\n"),
                     NS_RSP_SUCCESS);
    char bak[4300];
    snprintf(bak, sizeof bak, "%s.bak", conf);
    char *now = nstest_read_text(conf), *was = nstest_read_text(bak);
    assert_string_equal(was, JAVA_CONF);
    const char *line = strstr(JAVA_CONF, "orderMessageEnable=true\n");
    char want[sizeof JAVA_CONF + 64];
    snprintf(want, sizeof want, "%.*sorderMessageEnable=false\n%sclusterTest=true\n",
             (int)(line - JAVA_CONF), JAVA_CONF, line + strlen("orderMessageEnable=true\n"));
    assert_string_equal(now, want);
    assert_int_equal(stat(conf, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    free(now);
    free(was);
    ns_client_close(c);
    assert_int_equal(nstest_server_stop(&srv, SIGTERM) >= 0, 1);
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    char *text = nstest_read_text(log);
    NSTEST_EXPECT_IN(text, "Java settings accepted without effect: ");
    NSTEST_EXPECT_IN(text, "serverWorkerThreads, serverSelectorThreads, "
                           "serverCallbackExecutorThreads, defaultThreadPoolNums, "
                           "clientRequestThreadPoolNums (thread pools");
    NSTEST_EXPECT_IN(text, "clientWorkerThreads (NettyClientConfig");
    NSTEST_EXPECT_IN(text, "enableControllerInNamesrv (no embedded");
    NSTEST_EXPECT_IN(text, "serverSocketSndBufSize, serverSocketRcvBufSize, "
                           "writeBufferHighWaterMark");
    /* the boot line names the port really bound (listenPort=0 here: an
     * ephemeral one), not the configured 0 */
    char boot[160];
    snprintf(boot, sizeof boot,
             "The Name Server boot success. serializeType=JSON, address 127.0.0.1:%d\n", srv.port);
    NSTEST_EXPECT_IN(text, boot);
    /* exactly one WARN line names them */
    const char *first = strstr(text, "without effect");
    assert_null(strstr(first + 1, "without effect"));
    free(text);

    /* a key neither Java nor namesrvd knows still refuses to start, with one
     * line that names it and the closest key (not the whole -h text) */
    char bad[4300];
    snprintf(bad, sizeof bad, "%s/bad.conf", dir);
    nstest_write_text(bad, "serverWorkerThreads=16\nserverWorkerThreadz=16\n");
    char *err = NULL;
    const char *bargs[] = {"-c", bad, "-p", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, bargs, &err, 10000), 1);
    NSTEST_EXPECT_IN(err, "unknown key 'serverWorkerThreadz' (did you mean "
                          "'serverWorkerThreads'?)\n");
    assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
    free(err);
    /* Java's TLS keys are known, blanks after a value are trimmed with a WARN */
    nstest_write_text(bad, "tls.test.mode.enable=false\nlistenPort=40001 \n");
    const char *pargs[] = {"-c", bad, "-p", NULL};
    assert_int_equal(nstest_run(NS_NAMESRVD_PATH, pargs, &err, 10000), 0);
    free(err);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- the admin audit trail ---- */

static void test_admin_trail_survives_kill9(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-audit");
    nstest_server_t srv;
    char me[64], log[4200];
    assert_int_equal(nstest_server_start(&srv, dir, NULL), 0);
    ns_client_t *broker = nstest_connect(&srv);
    nstest_register_two_topics(broker, "broker-a", "10.0.0.1:10911");
    ns_client_t *admin = nstest_connect(&srv);
    nstest_local_name(admin, me, sizeof me);

    const char *wipe[] = {"brokerName", "broker-a", NULL};
    assert_int_equal(
        nstest_call_code(admin, NS_REQ_WIPE_WRITE_PERM_OF_BROKER, wipe, NULL, 0, 10000),
        NS_RSP_SUCCESS);
    /* with an ACL signature: never recorded nor logged */
    const char *put[] = {"namespace",  "ORDER_TOPIC_CONFIG", "key",        "T1", "value",
                         "broker-a:4", "Signature",          "s3cr3t-sig", NULL};
    assert_int_equal(nstest_call_code(admin, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_config_update(admin, "orderMessageEnable=true\n"), NS_RSP_SUCCESS);
    /* refusals are recorded too: a black-listed key, an unknown key */
    assert_int_equal(nstest_config_update(admin, "kvConfigPath=/tmp/x\n"), NS_RSP_NO_PERMISSION);
    assert_int_equal(nstest_config_update(admin, "noSuchKey=1\n"), NS_RSP_SYSTEM_ERROR);
    /* a Java key with no effect is accepted */
    assert_int_equal(nstest_config_update(admin, "serverWorkerThreads=64\n"), NS_RSP_SUCCESS);
    /* the refusals' records are writes of their own, queued before this
     * one: the writer commits in order, so its answer means they are in */
    const char *del[] = {"topic", "T2", NULL};
    assert_int_equal(nstest_call_code(admin, NS_REQ_DELETE_TOPIC_IN_NAMESRV, del, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    ns_client_close(admin);
    ns_client_close(broker);
    /* kill -9: whatever was answered is in the store */
    nstest_server_stop(&srv, SIGKILL);

    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    char *text = nstest_read_text(log);
    char want[256];
    snprintf(want, sizeof want,
             "conn %s: WIPE_WRITE_PERM_OF_BROKER brokerName=broker-a: write "
             "permission wiped on 2 topic(s)",
             me);
    NSTEST_EXPECT_IN(text, want);
    snprintf(want, sizeof want, "conn %s: PUT_KV_CONFIG", me);
    NSTEST_EXPECT_IN(text, want);
    snprintf(want, sizeof want, "conn %s: config changed: orderMessageEnable 'false' -> 'true'",
             me);
    NSTEST_EXPECT_IN(text, want);
    NSTEST_EXPECT_IN(text, "refused: Can not update config in black list.");
    NSTEST_EXPECT_IN(text, "topic deleted");
    NSTEST_EXPECT_IN(text, "registered: new");
    assert_null(strstr(text, "s3cr3t-sig"));
    free(text);

    /* read offline, after the kill */
    cJSON *trail = nstest_admin_trail(srv.data);
    cJSON *r = nstest_trail_find(trail, "WIPE_WRITE_PERM_OF_BROKER", "ok");
    assert_non_null(r);
    assert_string_equal(cJSON_GetObjectItem(r, "peer")->valuestring, me);
    assert_string_equal(nstest_trail_field(r, "brokerName"), "broker-a");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r, "time")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r, "seq")));
    assert_int_equal((int)cJSON_GetObjectItem(r, "code")->valuedouble, 205);
    assert_int_equal(
        (int)cJSON_GetObjectItem(cJSON_GetObjectItem(r, "detail"), "count")->valuedouble, 2);
    r = nstest_trail_find(trail, "PUT_KV_CONFIG", "ok");
    assert_non_null(r);
    assert_string_equal(cJSON_GetObjectItem(r, "peer")->valuestring, me);
    assert_string_equal(nstest_trail_field(r, "value"), "broker-a:4");
    assert_string_equal(nstest_trail_field(r, "Signature"), "(redacted)");
    r = nstest_trail_find(trail, "UPDATE_NAMESRV_CONFIG", "ok");
    assert_non_null(r);
    assert_string_equal(cJSON_GetObjectItem(r, "peer")->valuestring, me);
    cJSON *ch = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "detail"), "changed"), "orderMessageEnable");
    assert_string_equal(cJSON_GetObjectItem(ch, "old")->valuestring, "false");
    assert_string_equal(cJSON_GetObjectItem(ch, "new")->valuestring, "true");
    r = nstest_trail_find(trail, "UPDATE_NAMESRV_CONFIG", "refused");
    assert_non_null(r);
    assert_int_equal((int)cJSON_GetObjectItem(r, "responseCode")->valuedouble,
                     NS_RSP_NO_PERMISSION);
    assert_non_null(nstest_trail_find(trail, "DELETE_TOPIC_IN_NAMESRV", "ok"));
    assert_null(nstest_trail_find(trail, "REGISTER_BROKER", "ok")); /* brokers are not admins */
    int n = cJSON_GetArraySize(trail);
    assert_int_equal(n, 7); /* wipe, put, config, 2 refusals, java key, delete */
    cJSON_Delete(trail);

    /* the table view and --since */
    char *out = NULL;
    int rc = ctl(&out, "audit", "--admin", "--data-dir", srv.data, NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "WIPE_WRITE_PERM_OF_BROKER");
    NSTEST_EXPECT_IN(out, me);
    NSTEST_EXPECT_IN(out, "7 of 7 record(s)");
    free(out);
    rc = ctl(&out, "audit", "--admin", "--data-dir", srv.data, "--since", "2999-01-01", NULL);
    NSTEST_EXPECT_RC(rc, 0, out);
    NSTEST_EXPECT_IN(out, "0 of 7 record(s)");
    free(out);

    /* retention: the newest adminAuditRetention records stay */
    const char *keep[] = {"--adminAuditRetention=3", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, keep), 0);
    admin = nstest_connect(&srv);
    assert_int_equal(nstest_call_code(admin, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    ns_client_close(admin);
    nstest_server_stop(&srv, SIGTERM);
    trail = nstest_admin_trail(srv.data);
    assert_int_equal(cJSON_GetArraySize(trail), 3);
    assert_int_equal((int)cJSON_GetObjectItem(cJSON_GetArrayItem(trail, 2), "seq")->valuedouble, 8);
    cJSON_Delete(trail);
    nstest_rmtree(dir);
    free(dir);
}

/* Which requests leave a record is their row's: the record of an update is
 * made at its write (so one that switches the trail on is recorded), a
 * refusal by the handler of such a row gets one (an undecodable
 * REGISTER_TOPIC_IN_NAMESRV body: the reply Java's SYSTEM_ERROR), a refusal
 * for a missing field none. */
static void test_admin_trail_by_row(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-audit-row");
    nstest_server_t srv;
    char remark[128];
    const char *off[] = {"--adminAuditRetention=0", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, off), 0);
    ns_client_t *admin = nstest_connect(&srv);
    assert_int_equal(nstest_config_update(admin, "adminAuditRetention=100\n"), NS_RSP_SUCCESS);
    const char *reg[] = {"topic", "T9", NULL};
    ns_cmd_msg_t rsp =
        nstest_call_msg(admin, NS_REQ_REGISTER_TOPIC_IN_NAMESRV, reg, "{bad", 4, 10000);
    assert_int_equal(rsp.cmd.code, NS_RSP_SYSTEM_ERROR);
    nstest_remark(&rsp, remark, sizeof remark);
    assert_string_equal(remark, "Failed to decode TopicRouteData body");
    ns_cmd_msg_free(&rsp);
    const char *no_key[] = {"namespace", "N", NULL};
    assert_int_equal(nstest_call_code(admin, NS_REQ_PUT_KV_CONFIG, no_key, NULL, 0, 10000),
                     NS_RSP_SYSTEM_ERROR);
    /* the refusal's record is a write of its own, queued before this one */
    const char *del[] = {"topic", "T9", NULL};
    assert_int_equal(nstest_call_code(admin, NS_REQ_DELETE_TOPIC_IN_NAMESRV, del, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    ns_client_close(admin);
    nstest_server_stop(&srv, SIGTERM);

    cJSON *trail = nstest_admin_trail(srv.data);
    assert_non_null(nstest_trail_find(trail, "UPDATE_NAMESRV_CONFIG", "ok"));
    cJSON *r = nstest_trail_find(trail, "REGISTER_TOPIC_IN_NAMESRV", "refused");
    assert_non_null(r);
    assert_int_equal((int)cJSON_GetObjectItem(r, "responseCode")->valuedouble, NS_RSP_SYSTEM_ERROR);
    assert_string_equal(cJSON_GetObjectItem(r, "remark")->valuestring,
                        "Failed to decode TopicRouteData body");
    assert_string_equal(nstest_trail_field(r, "topic"), "T9");
    assert_null(cJSON_GetObjectItem(r, "body")); /* the row's record has no body */
    assert_null(nstest_trail_find(trail, "PUT_KV_CONFIG", "refused"));
    assert_non_null(nstest_trail_find(trail, "DELETE_TOPIC_IN_NAMESRV", "ok"));
    assert_int_equal(cJSON_GetArraySize(trail), 3);
    cJSON_Delete(trail);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- liveness lines ---- */

/* A broker that stops heartbeating expires with a line naming the deadline
 * that ran out; after a restart it re-registers "after restart". */
static void test_expiry_and_restart_lines(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-expiry");
    nstest_server_t srv;
    char log[4200];
    const char *args[] = {"--scanNotActiveBrokerInterval=50", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    ns_client_t *c = nstest_connect(&srv);
    ns_regbody_t body = {0};
    ns_topic_config_t tc[] = {{"T1", 4, 4, 6, 0}, {"T2", 4, 4, 6, 0}};
    body.data_version = (ns_dataversion_t){1, 0, 1700000000000LL};
    body.topics = tc;
    body.n_topics = 2;
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_regbody_encode_json(&b, &body), NS_OK);
    const char *kv[] = {"brokerName",
                        "broker-x",
                        "brokerAddr",
                        "10.0.0.9:10911",
                        "clusterName",
                        "C1",
                        "brokerId",
                        "0",
                        "haServerAddr",
                        "",
                        "enableActingMaster",
                        "false",
                        "heartbeatTimeoutMillis",
                        "200",
                        NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 10000),
                     NS_RSP_SUCCESS);
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    for (int i = 0; i < 300 && nstest_count_in_file(log, "unregistered: heartbeat timeout") == 0;
         i++)
        nstest_sleep_ms(10);
    assert_int_equal(nstest_count_in_file(log, "broker broker-x 10.0.0.9:10911 (C1) expired: no "
                                               "heartbeat for "),
                     1);
    assert_int_equal(nstest_count_in_file(log, ", deadline 20"), 1);
    assert_int_equal(nstest_count_in_file(log, "(timeout 200 ms, registration #1)"), 1);
    assert_int_equal(nstest_count_in_file(log, "unregistered: heartbeat timeout"), 1);
    /* registered again, then the server restarts: the next registration is
     * "re-registered after restart" */
    kv[13] = "60000";
    ns_client_close(c); /* the server closed it when the broker expired */
    c = nstest_connect(&srv);
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 10000),
                     NS_RSP_SUCCESS);
    nstest_server_stop(&srv, SIGKILL);
    ns_client_close(c);
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    c = nstest_connect(&srv);
    assert_int_equal(nstest_call_code(c, NS_REQ_REGISTER_BROKER, kv, b.data, b.len, 10000),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_count_in_file(log, "registered: re-registered after restart"), 1);
    assert_int_equal(nstest_count_in_file(log, "registered: new"), 2);
    ns_client_close(c);
    nstest_server_stop(&srv, SIGTERM);
    ns_buf_free(&b);
    nstest_rmtree(dir);
    free(dir);
}

/* ---- logs ---- */

static void test_log_rotation_and_sighup(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-log");
    nstest_server_t srv;
    char log[4200], a_log[4300], moved[4300], p1[4300], p2[4300], p3[4300];
    struct stat st;
    snprintf(log, sizeof log, "%s/ns.log", dir);
    snprintf(a_log, sizeof a_log, "--logFile=%s", log);
    const char *args[] = {a_log, "--logFileMaxBytes=4096", "--logFileKeep=2", NULL};
    assert_int_equal(nstest_server_start(&srv, dir, args), 0);
    assert_int_equal(stat(log, &st), 0);
    assert_true(nstest_count_in_file(log, "boot success") == 1);

    /* logrotate moves the file away; SIGHUP makes the server write a new one */
    snprintf(moved, sizeof moved, "%s/ns.log.moved", dir);
    assert_int_equal(rename(log, moved), 0);
    kill(srv.pid, SIGHUP);
    for (int i = 0; i < 200 && stat(log, &st) != 0; i++)
        nstest_sleep_ms(10);
    assert_int_equal(stat(log, &st), 0);
    ns_client_t *c = nstest_connect(&srv);
    const char *put[] = {"namespace", "NS", "key", "after-hup", "value", "1", NULL};
    assert_int_equal(nstest_call_code(c, NS_REQ_PUT_KV_CONFIG, put, NULL, 0, 10000),
                     NS_RSP_SUCCESS);
    assert_int_equal(nstest_count_in_file(log, "SIGHUP: log file reopened"), 1);
    assert_int_equal(nstest_count_in_file(log, "key=after-hup"), 1);
    assert_int_equal(nstest_count_in_file(moved, "key=after-hup"), 0);

    /* size rotation: ns.log -> ns.log.1 -> ns.log.2, no ns.log.3 */
    nstest_put_keys(c, "NS", "k", 3, 120, "some value");
    ns_client_close(c);
    snprintf(p1, sizeof p1, "%s.1", log);
    snprintf(p2, sizeof p2, "%s.2", log);
    snprintf(p3, sizeof p3, "%s.3", log);
    assert_int_equal(stat(p1, &st), 0);
    assert_true(st.st_size >= 4096 && st.st_size < 4096 + 2048);
    assert_int_equal(stat(p2, &st), 0);
    assert_int_not_equal(stat(p3, &st), 0);
    assert_int_equal(stat(log, &st), 0);
    assert_true(st.st_size < 4096);
    /* the newest put is in the current file, none is lost between files */
    assert_int_equal(nstest_count_in_file(log, "key=k119") + nstest_count_in_file(p1, "key=k119"),
                     1);
    nstest_server_stop(&srv, SIGTERM);
    nstest_rmtree(dir);
    free(dir);
}

/* sd_notify through a fake $NOTIFY_SOCKET: READY=1 once the port listens
 * (the port accepts a connection the moment READY arrives), WATCHDOG=1 at
 * half of WATCHDOG_USEC, STOPPING=1 on SIGTERM. */
static int recv_state(int fd, char *buf, size_t n, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t r = recv(fd, buf, n - 1, 0);
    if (r < 0)
        return -1;
    buf[r] = 0;
    return (int)r;
}

static void test_sd_notify(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-notify");
    nstest_server_t srv;
    struct sockaddr_un sa = {0};
    char buf[512];
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/notify", dir);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    setenv("NOTIFY_SOCKET", sa.sun_path, 1);
    setenv("WATCHDOG_USEC", "200000", 1);
    int rc = nstest_server_start(&srv, dir, NULL);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    assert_int_equal(rc, 0);
    bool ready = false;
    int pings = 0;
    int64_t t0 = nstest_mono_ms();
    while (nstest_mono_ms() - t0 < 3000 && (!ready || pings < 3)) {
        if (recv_state(fd, buf, sizeof buf, 1000) < 0)
            continue;
        if (strstr(buf, "READY=1")) {
            assert_false(ready);
            ready = true;
            ns_client_t *c = nstest_connect(&srv); /* it listens already */
            ns_client_close(c);
        }
        if (strstr(buf, "WATCHDOG=1")) {
            assert_true(ready); /* pings come from the running loop */
            pings++;
        }
    }
    assert_true(ready);
    assert_true(pings >= 3);
    kill(srv.pid, SIGTERM);
    bool stopping = false;
    while (!stopping && recv_state(fd, buf, sizeof buf, 3000) > 0)
        stopping = strstr(buf, "STOPPING=1") != NULL;
    assert_true(stopping);
    int st = nstest_server_stop(&srv, SIGTERM);
    close(fd);
    char log[4200];
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { /* say how it ended, and what it logged */
        char *text = nstest_read_text(log);
        fail_msg("namesrvd after SIGTERM: %s %d; its log:\n%s",
                 WIFEXITED(st) ? "exit status" : "signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), text ? text : "(none)");
    }
    assert_int_equal(nstest_count_in_file(log, "systemd watchdog on"), 1);
    nstest_rmtree(dir);
    free(dir);
}

/* Under systemd (stderr is the stream $JOURNAL_STREAM names) lines carry
 * their syslog priority instead of a timestamp. */
static void test_journal_priorities(void **state)
{
    (void)state;
    char *dir = nstest_tmpdir("prod-journal");
    nstest_server_t srv;
    char log[4200], js[64];
    struct stat st;
    snprintf(log, sizeof log, "%s/namesrvd.log", dir);
    nstest_write_text(log, "");
    assert_int_equal(stat(log, &st), 0);
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", js, 1);
    int rc = nstest_server_start(&srv, dir, NULL);
    unsetenv("JOURNAL_STREAM");
    assert_int_equal(rc, 0);
    ns_client_t *c = nstest_connect(&srv);
    assert_int_equal(nstest_config_update(c, "noSuchKey=1\n"), NS_RSP_SYSTEM_ERROR);
    ns_client_close(c);
    nstest_server_stop(&srv, SIGTERM);
    assert_true(nstest_count_in_file(log, "<6>INFO  service.c") == 1);
    assert_true(nstest_count_in_file(log, "boot success") == 1);
    assert_true(nstest_count_in_file(log, "\n20") == 0); /* no timestamps */
    nstest_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_java_conf_starts),
        cmocka_unit_test(test_admin_trail_survives_kill9),
        cmocka_unit_test(test_admin_trail_by_row),
        cmocka_unit_test(test_expiry_and_restart_lines),
        cmocka_unit_test(test_log_rotation_and_sighup),
        cmocka_unit_test(test_journal_priorities),
        cmocka_unit_test(test_sd_notify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
