/* test_config.c - settings table, value parsing, Java .properties parsing,
 * dump/round-trip, file load/write and --help (src/daemon/config*.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ns/config.h"
#include "ns/err.h"
#include "nstest.h"

/* Number of table rows = fields of ns_config_t except config_file. */
#define NKEYS 92
#define NDUMPED (NKEYS - 3) /* the key passwords and peerSecretKey are never dumped */

static const char *const all_keys[NKEYS] = {
    "bindAddress",
    "listenPort",
    "portFile",
    "httpListen",
    "httpPortFile",
    "httpMaxConnections",
    "httpMaxConnectionsPerAddress",
    "httpHeaderTimeoutMillis",
    "maxFrameBytes",
    "serverChannelMaxIdleTimeSeconds",
    "ioThreads",
    "ioBacklogBytes",
    "routeMemoSlots",
    "routeIndex",
    "dataDir",
    "syncMode",
    "mapSizeBytes",
    "mapMaxBytes",
    "mapGrowPercent",
    "writerBatchMax",
    "writerBatchMaxBytes",
    "auditRetention",
    "maxInflateBytes",
    "scanNotActiveBrokerInterval",
    "brokerGraceWindowMillis",
    "rocketmqHome",
    "kvConfigPath",
    "configStorePath",
    "configStoreBackups",
    "logFile",
    "logFileMaxBytes",
    "logFileKeep",
    "adminAuditRetention",
    "productEnvName",
    "clusterTest",
    "orderMessageEnable",
    "returnOrderTopicConfigToBroker",
    "enableAllTopicList",
    "enableTopicList",
    "notifyMinBrokerIdChanged",
    "deleteTopicWithBrokerRegistration",
    "supportActingMaster",
    "needWaitForService",
    "waitSecondsForService",
    "configBlackList",
    "unRegisterBrokerQueueCapacity",
    "authMode",
    "authPenaltyMaxMillis",
    "authKeyFile",
    "logLevel",
    "tls.server.mode",
    "tls.server.certPath",
    "tls.server.keyPath",
    "tls.server.keyPassword",
    "tls.server.need.client.auth",
    "tls.server.trustCertPath",
    "tls.protocols",
    "tls.ciphers",
    "tls.config.file",
    "tlsHandshakeTimeoutMillis",
    "tlsHandshakeOffload",
    "proxyProtocolTrustedAddresses",
    /* memory budgets, damage check and backups */
    "maxConnections",
    "maxConnectionsPerAddress",
    "maxPendingHandshakes",
    "maxTlsSessions",
    "maxUnfinishedFrameBytes",
    "maxUnsentReplyBytes",
    "writerQueueMaxBytes",
    "writerQueueMaxOps",
    "verifyOnStart",
    "verifyOnStartBlocking",
    "backupIntervalSeconds",
    "backupDir",
    "backupKeep",
    "brokerConflict",
    /* the fleet */
    "peers",
    "advertisedAddress",
    "peerCheckIntervalMillis",
    "peerDivergenceMillis",
    "peerTimeoutMillis",
    "peerTls",
    "tls.client.trustCertPath",
    "tls.client.certPath",
    "tls.client.keyPath",
    "tls.client.keyPassword",
    "peerAccessKey",
    "peerSecretKey",
    "kvSync",
    "kvTombstoneRetentionMillis",
    "seedFromPeers",
    "seedTimeoutMillis",
};

/* ---- helpers ---------------------------------------------------------- */

static int setup_env(void **state)
{
    (void)state;
    setenv("HOME", "/home/tester", 1);
    unsetenv("ROCKETMQ_HOME");
    return 0;
}

/* Collects pairs as "key=value\n" (raw, unescaped) for comparison. */
static int collect_cb(const char *key, const char *value, void *ctx)
{
    ns_buf_t *b = ctx;
    return ns_buf_printf(b, "%s=%s\n", key, value);
}

/* Parses text; returns the collected pairs (caller frees) or NULL on error,
 * with the parse result in *rc. */
static char *parse(const char *text, int *rc)
{
    ns_buf_t b = NS_BUF_INIT;
    char *s = NULL;
    *rc = ns_properties_parse(text, strlen(text), collect_cb, &b);
    if (*rc == NS_OK)
        s = ns_buf_strdup(&b);
    ns_buf_free(&b);
    return s;
}

static void assert_parses(const char *text, const char *want)
{
    int rc = NS_OK;
    char *got = parse(text, &rc);
    assert_int_equal(rc, NS_OK);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void assert_parse_fails(const char *text)
{
    int rc = NS_OK;
    char *got = parse(text, &rc);
    assert_int_equal(rc, NS_EINVAL);
    assert_null(got);
}

/* ns_config_set must fail with NS_EINVAL and exactly this message. */
static void assert_set_fails(ns_config_t *cfg, const char *key, const char *value, const char *msg)
{
    char err[256] = "";
    assert_int_equal(ns_config_set(cfg, key, value, err, sizeof err), NS_EINVAL);
    assert_string_equal(err, msg);
}

static void assert_set_ok(ns_config_t *cfg, const char *key, const char *value)
{
    char err[256] = "";
    int rc = ns_config_set(cfg, key, value, err, sizeof err);
    if (rc != NS_OK)
        fail_msg("set %s=%s: %s", key, value, err);
}

static char *dump_str(const ns_config_t *cfg)
{
    ns_buf_t b = NS_BUF_INIT;
    assert_int_equal(ns_config_dump(cfg, &b), NS_OK);
    char *s = ns_buf_strdup(&b);
    ns_buf_free(&b);
    assert_non_null(s);
    return s;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- defaults and keys ------------------------------------------------ */

static void test_defaults(void **state)
{
    ns_config_t cfg;
    (void)state;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_string_equal(cfg.bind_address, "0.0.0.0");
    assert_int_equal(cfg.listen_port, 9876);
    assert_string_equal(cfg.port_file, "");
    assert_int_equal(cfg.max_frame_bytes, 16777216);
    assert_int_equal(cfg.idle_timeout_s, 120);
    assert_int_equal(cfg.io_threads, 1);
    assert_string_equal(cfg.data_dir, "./data");
    assert_string_equal(cfg.sync_mode, "full");
    assert_int_equal(cfg.map_size_bytes, 64 * 1024 * 1024);
    assert_true(cfg.map_max_bytes == INT64_C(16) * 1024 * 1024 * 1024);
    assert_int_equal(cfg.writer_batch_max, 64);
    assert_int_equal(cfg.audit_retention, 1000);
    assert_int_equal(cfg.max_inflate_bytes, 64 * 1024 * 1024);
    assert_int_equal(cfg.max_connections, 4096);
    assert_int_equal(cfg.max_unfinished_frame_bytes, 64 * 1024 * 1024);
    assert_int_equal(cfg.max_unsent_reply_bytes, 64 * 1024 * 1024);
    assert_int_equal(cfg.writer_queue_max_bytes, 32 * 1024 * 1024);
    assert_int_equal(cfg.writer_queue_max_ops, 10000);
    assert_int_equal(cfg.scan_not_active_broker_interval_ms, 5000);
    assert_int_equal(cfg.broker_grace_window_ms, 120000);
    assert_string_equal(cfg.rocketmq_home, "");
    assert_string_equal(cfg.kv_config_path, "/home/tester/namesrv/kvConfig.json");
    assert_string_equal(cfg.config_store_path, "/home/tester/namesrv/namesrv.properties");
    assert_string_equal(cfg.product_env_name, "center");
    assert_false(cfg.cluster_test);
    assert_false(cfg.order_message_enable);
    assert_true(cfg.return_order_topic_config_to_broker);
    assert_true(cfg.enable_all_topic_list);
    assert_true(cfg.enable_topic_list);
    assert_false(cfg.notify_min_broker_id_changed);
    assert_false(cfg.delete_topic_with_broker_registration);
    assert_false(cfg.support_acting_master);
    assert_false(cfg.need_wait_for_service);
    assert_int_equal(cfg.wait_seconds_for_service, 45);
    assert_string_equal(cfg.config_black_list, "configBlackList;configStorePath;kvConfigPath");
    assert_int_equal(cfg.unregister_broker_queue_capacity, 3000);
    assert_string_equal(cfg.log_level, "info");
    assert_null(cfg.config_file);
    ns_config_free(&cfg);
    assert_null(cfg.bind_address);
    ns_config_free(&cfg); /* twice is harmless */
}

static void test_defaults_from_env(void **state)
{
    ns_config_t cfg;
    (void)state;
    setenv("ROCKETMQ_HOME", "/opt/rocketmq", 1);
    setenv("HOME", "/srv/ns", 1);
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_string_equal(cfg.rocketmq_home, "/opt/rocketmq");
    assert_string_equal(cfg.kv_config_path, "/srv/ns/namesrv/kvConfig.json");
    ns_config_free(&cfg);
    /* HOME unset: falls back to the passwd entry, still ends in the path. */
    unsetenv("HOME");
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    size_t n = strlen(cfg.config_store_path), tail = strlen("/namesrv/namesrv.properties");
    assert_true(n >= tail);
    assert_string_equal(cfg.config_store_path + n - tail, "/namesrv/namesrv.properties");
    ns_config_free(&cfg);
    setup_env(NULL);
}

static void test_keys_and_mutability(void **state)
{
    (void)state;
    for (size_t i = 0; i < NKEYS; i++)
        assert_true(ns_config_has_key(all_keys[i]));
    assert_false(ns_config_has_key("foo"));
    assert_false(ns_config_has_key("listenport")); /* case-sensitive, like Java */
    assert_false(ns_config_has_key(""));
    assert_false(ns_config_has_key("config_file"));

    static const char *const mutable_keys[] = {"orderMessageEnable",
                                               "enableAllTopicList",
                                               "enableTopicList",
                                               "returnOrderTopicConfigToBroker",
                                               "deleteTopicWithBrokerRegistration",
                                               "supportActingMaster",
                                               "productEnvName",
                                               "clusterTest",
                                               "notifyMinBrokerIdChanged",
                                               "needWaitForService",
                                               "waitSecondsForService",
                                               "scanNotActiveBrokerInterval",
                                               "logLevel",
                                               "serverChannelMaxIdleTimeSeconds",
                                               "brokerGraceWindowMillis",
                                               "auditRetention",
                                               "adminAuditRetention",
                                               "authMode",
                                               "authPenaltyMaxMillis",
                                               "configStoreBackups",
                                               "peers",
                                               "brokerConflict",
                                               "kvSync",
                                               "kvTombstoneRetentionMillis"};
    static const char *const fixed_keys[] = {
        "listenPort", "bindAddress", "dataDir", "syncMode", "mapSizeBytes", "mapMaxBytes",
        "mapGrowPercent", "ioThreads", "ioBacklogBytes", "routeMemoSlots", "routeIndex", "portFile",
        "httpListen", "httpPortFile", "maxFrameBytes", "writerBatchMax", "writerBatchMaxBytes",
        "rocketmqHome", "kvConfigPath", "configStorePath", "configBlackList",
        "unRegisterBrokerQueueCapacity", "logFile", "logFileMaxBytes", "logFileKeep",
        "tls.server.mode", "tls.server.certPath", "tls.server.keyPath", "tls.server.keyPassword",
        "tls.server.need.client.auth", "tls.server.trustCertPath", "tls.protocols", "tls.ciphers",
        "tls.config.file", "tlsHandshakeTimeoutMillis", "tlsHandshakeOffload",
        "proxyProtocolTrustedAddresses",
        /* safety caps and budgets change only by file and restart: whoever may
         * send UPDATE_NAMESRV_CONFIG must not lift what bounds the server */
        "maxInflateBytes", "maxConnections", "maxConnectionsPerAddress", "maxPendingHandshakes",
        "maxTlsSessions", "maxUnfinishedFrameBytes", "maxUnsentReplyBytes", "writerQueueMaxBytes",
        "writerQueueMaxOps", "verifyOnStart", "verifyOnStartBlocking", "backupIntervalSeconds",
        "backupDir", "backupKeep", "authKeyFile", "httpMaxConnections",
        "httpMaxConnectionsPerAddress", "httpHeaderTimeoutMillis",
        /* the fleet: only the list changes while running */
        "advertisedAddress", "peerCheckIntervalMillis", "peerDivergenceMillis", "peerTimeoutMillis",
        "peerTls", "tls.client.trustCertPath", "tls.client.certPath", "tls.client.keyPath",
        "tls.client.keyPassword", "peerAccessKey", "peerSecretKey",
        /* seeding happens at start only */
        "seedFromPeers", "seedTimeoutMillis"};
    for (size_t i = 0; i < sizeof mutable_keys / sizeof mutable_keys[0]; i++)
        assert_true(ns_config_is_mutable(mutable_keys[i]));
    for (size_t i = 0; i < sizeof fixed_keys / sizeof fixed_keys[0]; i++)
        assert_false(ns_config_is_mutable(fixed_keys[i]));
    assert_int_equal(sizeof mutable_keys / sizeof mutable_keys[0] +
                         sizeof fixed_keys / sizeof fixed_keys[0],
                     NKEYS);
    assert_false(ns_config_is_mutable("foo"));
}

/* Values anyone who may send UPDATE_NAMESRV_CONFIG picks cannot disable
 * liveness or the audit history: that caller is trusted less than whoever
 * writes the file, which still may. */
static void test_runtime_bounds(void **state)
{
    (void)state;
    char err[256];
    static const char *const refused[][2] = {{"serverChannelMaxIdleTimeSeconds", "1"},
                                             {"serverChannelMaxIdleTimeSeconds", "0"},
                                             {"scanNotActiveBrokerInterval", "2147483647"},
                                             {"scanNotActiveBrokerInterval", "10"},
                                             {"auditRetention", "0"},
                                             {"brokerGraceWindowMillis", "9223372036854775807"},
                                             {"maxInflateBytes", "1073741824"},
                                             {"maxConnections", "10"},
                                             {"listenPort", "1"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        err[0] = 0;
        assert_int_equal(ns_config_check_runtime(refused[i][0], refused[i][1], err, sizeof err),
                         NS_EINVAL);
        assert_non_null(strstr(err, refused[i][0]));
    }
    static const char *const allowed[][2] = {{"serverChannelMaxIdleTimeSeconds", "60"},
                                             {"scanNotActiveBrokerInterval", "1000"},
                                             {"auditRetention", "100"},
                                             {"brokerGraceWindowMillis", "0"},
                                             {"orderMessageEnable", "true"},
                                             {"logLevel", "debug"}};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        assert_int_equal(ns_config_check_runtime(allowed[i][0], allowed[i][1], err, sizeof err),
                         NS_OK);
    /* the file and the command line keep the wide bounds */
    ns_config_t cfg;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_int_equal(ns_config_set(&cfg, "serverChannelMaxIdleTimeSeconds", "1", err, sizeof err),
                     NS_OK);
    assert_int_equal(ns_config_set(&cfg, "auditRetention", "0", err, sizeof err), NS_OK);
    assert_int_equal(ns_config_set(&cfg, "maxInflateBytes", "2147483648", err, sizeof err),
                     NS_EINVAL); /* over its 1 GiB ceiling */
    ns_config_free(&cfg);
}

/* ---- ns_config_set ---------------------------------------------------- */

static void test_set_int(void **state)
{
    ns_config_t cfg;
    (void)state;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_set_ok(&cfg, "listenPort", "0");
    assert_int_equal(cfg.listen_port, 0);
    assert_set_ok(&cfg, "listenPort", "65535");
    assert_int_equal(cfg.listen_port, 65535);
    assert_set_ok(&cfg, "listenPort", "+10911");
    assert_int_equal(cfg.listen_port, 10911);
    assert_set_ok(&cfg, "listenPort", "007");
    assert_int_equal(cfg.listen_port, 7);

    assert_set_fails(&cfg, "listenPort", "abc", "listenPort: 'abc' is not an integer");
    assert_set_fails(&cfg, "listenPort", "", "listenPort: '' is not an integer");
    assert_set_fails(&cfg, "listenPort", "-", "listenPort: '-' is not an integer");
    assert_set_fails(&cfg, "listenPort", " 80", "listenPort: ' 80' is not an integer");
    assert_set_fails(&cfg, "listenPort", "80 ", "listenPort: '80 ' is not an integer");
    assert_set_fails(&cfg, "listenPort", "0x50", "listenPort: '0x50' is not an integer");
    assert_set_fails(&cfg, "listenPort", "1e3", "listenPort: '1e3' is not an integer");
    assert_set_fails(&cfg, "listenPort", "65536", "listenPort: 65536 is out of range [0, 65535]");
    assert_set_fails(&cfg, "listenPort", "-1", "listenPort: -1 is out of range [0, 65535]");
    assert_set_fails(&cfg, "listenPort", "99999999999999999999",
                     "listenPort: 99999999999999999999 is out of range [0, 65535]");
    assert_int_equal(cfg.listen_port, 7); /* failed sets changed nothing */

    assert_set_fails(&cfg, "ioThreads", "0", "ioThreads: 0 is out of range [1, 64]");
    assert_set_fails(&cfg, "ioThreads", "65", "ioThreads: 65 is out of range [1, 64]");
    assert_set_ok(&cfg, "ioThreads", "4");
    assert_int_equal(cfg.io_threads, 4);

    assert_set_fails(&cfg, "maxFrameBytes", "1023",
                     "maxFrameBytes: 1023 is out of range [1024, 1073741824]");
    assert_set_ok(&cfg, "maxFrameBytes", "1073741824");
    assert_set_fails(&cfg, "maxFrameBytes", "1073741825",
                     "maxFrameBytes: 1073741825 is out of range [1024, 1073741824]");
    assert_set_fails(&cfg, "mapSizeBytes", "1048575",
                     "mapSizeBytes: 1048575 is out of range [1048576, 9223372036854775807]");
    assert_set_ok(&cfg, "mapMaxBytes", "9223372036854775807");
    assert_true(cfg.map_max_bytes == INT64_MAX);
    assert_set_fails(&cfg, "writerBatchMax", "1000001",
                     "writerBatchMax: 1000001 is out of range [1, 1000000]");
    assert_set_ok(&cfg, "auditRetention", "0");
    assert_int_equal(cfg.audit_retention, 0);
    assert_set_fails(&cfg, "scanNotActiveBrokerInterval", "9",
                     "scanNotActiveBrokerInterval: 9 is out of range [10, 2147483647]");
    assert_set_ok(&cfg, "serverChannelMaxIdleTimeSeconds", "0");
    assert_set_ok(&cfg, "brokerGraceWindowMillis", "0");
    assert_set_fails(&cfg, "brokerGraceWindowMillis", "-5",
                     "brokerGraceWindowMillis: -5 is out of range [0, 9223372036854775807]");
    assert_set_ok(&cfg, "waitSecondsForService", "3");
    assert_int_equal(cfg.wait_seconds_for_service, 3);
    assert_set_ok(&cfg, "unRegisterBrokerQueueCapacity", "1");
    assert_int_equal(cfg.unregister_broker_queue_capacity, 1);

    assert_int_equal(ns_config_set(&cfg, "listenPort", "x", NULL, 0), NS_EINVAL); /* err NULL */
    char tiny[8];
    assert_int_equal(ns_config_set(&cfg, "listenPort", "x", tiny, sizeof tiny), NS_EINVAL);
    assert_string_equal(tiny, "listenP"); /* truncated, still terminated */
    ns_config_free(&cfg);
}

static void test_set_bool(void **state)
{
    ns_config_t cfg;
    (void)state;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_set_ok(&cfg, "clusterTest", "true");
    assert_true(cfg.cluster_test);
    assert_set_ok(&cfg, "clusterTest", "FALSE");
    assert_false(cfg.cluster_test);
    assert_set_ok(&cfg, "enableTopicList", "False");
    assert_false(cfg.enable_topic_list);
    assert_set_ok(&cfg, "enableTopicList", "TrUe");
    assert_true(cfg.enable_topic_list);
    assert_set_fails(&cfg, "enableTopicList", "yes",
                     "enableTopicList: 'yes' is not a boolean (true or false)");
    assert_set_fails(&cfg, "enableTopicList", "1",
                     "enableTopicList: '1' is not a boolean (true or false)");
    assert_set_fails(&cfg, "enableTopicList", "",
                     "enableTopicList: '' is not a boolean (true or false)");
    assert_set_fails(&cfg, "enableTopicList", "true ",
                     "enableTopicList: 'true ' is not a boolean (true or false)");
    assert_true(cfg.enable_topic_list);
    for (size_t i = 0; i < NKEYS; i++) {
        /* every boolean row accepts both words */
        char err[128] = "";
        if (ns_config_set(&cfg, all_keys[i], "true", err, sizeof err) != NS_OK)
            continue;
        if (ns_config_set(&cfg, all_keys[i], "false", err, sizeof err) != NS_OK)
            fail_msg("%s accepts true but not false: %s", all_keys[i], err);
    }
    ns_config_free(&cfg);
}

static void test_set_string_and_enum(void **state)
{
    ns_config_t cfg;
    (void)state;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_set_ok(&cfg, "bindAddress", "127.0.0.1");
    assert_string_equal(cfg.bind_address, "127.0.0.1");
    assert_set_ok(&cfg, "bindAddress", "::1");
    assert_string_equal(cfg.bind_address, "::1");
    assert_set_ok(&cfg, "portFile", "");
    assert_string_equal(cfg.port_file, "");
    assert_set_ok(&cfg, "productEnvName", "caf\xc3\xa9 =:#! x");
    assert_string_equal(cfg.product_env_name, "caf\xc3\xa9 =:#! x");

    assert_set_ok(&cfg, "syncMode", "nosync");
    assert_string_equal(cfg.sync_mode, "nosync");
    assert_set_ok(&cfg, "syncMode", "NoMetaSync");
    assert_string_equal(cfg.sync_mode, "nometasync"); /* stored canonical */
    assert_set_fails(&cfg, "syncMode", "fast",
                     "syncMode: 'fast' is not one of full|nometasync|nosync");
    assert_set_fails(&cfg, "syncMode", "", "syncMode: '' is not one of full|nometasync|nosync");
    assert_string_equal(cfg.sync_mode, "nometasync");
    assert_set_ok(&cfg, "logLevel", "debug");
    assert_string_equal(cfg.log_level, "debug");
    assert_set_fails(&cfg, "logLevel", "trace",
                     "logLevel: 'trace' is not one of debug|info|warn|error");

    assert_set_fails(&cfg, "foo", "1", "unknown key 'foo'");
    assert_set_fails(&cfg, "ListenPort", "1",
                     "unknown key 'ListenPort' (did you mean 'listenPort'?)");
    assert_set_fails(&cfg, "", "1", "unknown key ''");
    ns_config_free(&cfg);
}

/* ---- ns_properties_parse ---------------------------------------------- */

static void test_props_separators(void **state)
{
    (void)state;
    assert_parses("", "");
    assert_parses("a=1", "a=1\n");
    assert_parses("a=1\nb:2\nc 3\nd\t4\ne\f5\n", "a=1\nb=2\nc=3\nd=4\ne=5\n");
    assert_parses("a = 1\nb  :  2\nc   3\n", "a=1\nb=2\nc=3\n");
    assert_parses("a==1\nb::2\nc:=3\nd = = 4\ne 5=6\n", "a==1\nb=:2\nc==3\nd== 4\ne=5=6\n");
    assert_parses("a=1 2 3  \n", "a=1 2 3  \n"); /* trailing blanks kept */
    assert_parses("   a=1\n\t\fb=2\n", "a=1\nb=2\n");
    assert_parses("url=http://x:80/a?b=c\n", "url=http://x:80/a?b=c\n");
}

static void test_props_comments_and_blanks(void **state)
{
    (void)state;
    assert_parses("# comment\n! also\n  # indented\na=1\n\n\n   \nb=2\n#last", "a=1\nb=2\n");
    assert_parses("a=1 # not a comment\n", "a=1 # not a comment\n");
    assert_parses("a=#1\n", "a=#1\n");
    /* A comment's trailing backslash does not continue it. */
    assert_parses("# comment \\\na=1\n", "a=1\n");
    assert_parses("#\\\n\\\na=1\n", "a=1\n");
}

static void test_props_empty_values(void **state)
{
    (void)state;
    assert_parses("a=\nb:\nc\nd   \ne =  \n", "a=\nb=\nc=\nd=\ne=\n");
    assert_parses("=v\n:w\n", "=v\n=w\n"); /* empty key */
    assert_parses("lonely", "lonely=\n");
}

static void test_props_line_endings(void **state)
{
    (void)state;
    assert_parses("a=1\r\nb=2\r\n", "a=1\nb=2\n");
    assert_parses("a=1\rb=2\r", "a=1\nb=2\n");
    assert_parses("a=1\r\n\r\n\rb=2\n\rc=3", "a=1\nb=2\nc=3\n");
}

static void test_props_escapes(void **state)
{
    (void)state;
    assert_parses("a=x\\ty\\nz\\rw\\fv\\\\u\n", "a=x\ty\nz\rw\fv\\u\n");
    assert_parses("a=\\q\\=\\:\\#\\!\\ \n", "a=q=:#! \n"); /* other \x -> x */
    assert_parses("k\\=ey=v\nk\\:2:v\nk\\ 3 v\n", "k=ey=v\nk:2=v\nk 3=v\n");
    assert_parses("k\\\\=v\n", "k\\=v\n"); /* escaped backslash, then a real '=' */
    assert_parses("a=\\ \\ lead\n", "a=  lead\n");
    assert_parses("a=\\u0041\\u00e9\\u20AC\n", "a=A\xc3\xa9\xe2\x82\xac\n");
    assert_parses("a=\\ud83d\\ude00!\n", "a=\xf0\x9f\x98\x80!\n"); /* surrogate pair */
    assert_parses("a=\\ud83dx\\ude00\n", "a=?x?\n");               /* lone surrogates */
    assert_parses("\\u006b=v\n", "k=v\n");                         /* in keys too */
    assert_parses("a=caf\xc3\xa9\n", "a=caf\xc3\xa9\n");           /* raw UTF-8 kept */
}

static void test_props_malformed(void **state)
{
    (void)state;
    assert_parse_fails("a=\\u12\n");
    assert_parse_fails("a=\\u12G4\n");
    assert_parse_fails("a=\\u\n");
    assert_parse_fails("a=\\u004");
    assert_parse_fails("\\uzzzz=1\n");
    assert_parse_fails("a=\\u0000\n");
    int rc = NS_OK;
    char *got = NULL;
    const char nul[] = "a=x\0y\n";
    ns_buf_t b = NS_BUF_INIT;
    rc = ns_properties_parse(nul, sizeof nul - 1, collect_cb, &b);
    assert_int_equal(rc, NS_EINVAL);
    ns_buf_free(&b);
    /* Pairs before the bad line were delivered: parsing stops at the error. */
    b = (ns_buf_t)NS_BUF_INIT;
    const char *text = "a=1\nb=\\u12\nc=3\n";
    rc = ns_properties_parse(text, strlen(text), collect_cb, &b);
    assert_int_equal(rc, NS_EINVAL);
    got = ns_buf_strdup(&b);
    assert_string_equal(got, "a=1\n");
    free(got);
    ns_buf_free(&b);
}

static void test_props_continuations(void **state)
{
    (void)state;
    assert_parses("a=one\\\n    two\nb=3\n", "a=onetwo\nb=3\n");
    assert_parses("a=one\\\r\n  two\r\n", "a=onetwo\n");
    assert_parses("a=one\\\r  two\r", "a=onetwo\n");
    assert_parses("a=1\\\n\\\n2\n", "a=12\n");
    assert_parses("ke\\\n  y=v\n", "key=v\n"); /* inside the key */
    assert_parses("a=1\\\n  # not a comment\n", "a=1# not a comment\n");
    assert_parses("a=x\\\\\nb=2\n", "a=x\\\nb=2\n"); /* even: no continuation */
    assert_parses("a=x\\\\\\\ny\n", "a=x\\y\n");     /* odd: continuation */
    assert_parses("a=1\\\n\nb=2\n", "a=1\nb=2\n");   /* empty continuation ends it */
    assert_parses("a=v\\", "a=v\n");                 /* at end of text */
    assert_parses("a=v\\\n", "a=v\n");
    assert_parses("a\\\n=\\\n v\n", "a=v\n");
}

static int stop_cb(const char *key, const char *value, void *ctx)
{
    int *calls = ctx;
    (void)value;
    (*calls)++;
    return strcmp(key, "stop") == 0 ? 42 : 0;
}

static void test_props_callback_stops(void **state)
{
    int calls = 0;
    const char *text = "a=1\nstop=2\nc=3\n";
    (void)state;
    assert_int_equal(ns_properties_parse(text, strlen(text), stop_cb, &calls), 42);
    assert_int_equal(calls, 2);
}

/* ---- dump, load, write ------------------------------------------------ */

static int set_cb(const char *key, const char *value, void *ctx)
{
    char err[256];
    int rc = ns_config_set(ctx, key, value, err, sizeof err);
    if (rc != NS_OK)
        fail_msg("set %s: %s", key, err);
    return rc;
}

static void test_dump_sorted(void **state)
{
    ns_config_t cfg;
    (void)state;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    char *d = dump_str(&cfg);
    assert_int_equal(count_lines(d), NDUMPED);
    assert_non_null(strstr(d, "\nlistenPort=9876\n"));
    assert_non_null(strstr(d, "\nclusterTest=false\n"));
    assert_non_null(strstr(d, "\nenableTopicList=true\n"));
    assert_non_null(strstr(d, "\nsyncMode=full\n"));
    assert_non_null(strstr(d, "\nportFile=\n"));
    assert_non_null(strstr(d, "\nmapMaxBytes=17179869184\n"));
    static const char head[] =
        "adminAuditRetention=100000\nadvertisedAddress=\nauditRetention=1000\n";
    assert_int_equal(strncmp(d, head, sizeof head - 1), 0);
    /* every key once, lines in strictly ascending ASCII order */
    char prev[128] = "";
    for (const char *p = d; *p;) {
        const char *eq = strchr(p, '=');
        const char *nl = strchr(p, '\n');
        assert_non_null(eq);
        assert_non_null(nl);
        assert_true(eq < nl);
        char key[128];
        size_t n = (size_t)(eq - p);
        assert_true(n < sizeof key);
        memcpy(key, p, n);
        key[n] = 0;
        assert_true(ns_config_has_key(key));
        assert_true(strcmp(prev, key) < 0);
        strcpy(prev, key);
        p = nl + 1;
    }
    for (size_t i = 0; i < NKEYS; i++) {
        char want[160];
        snprintf(want, sizeof want, "%s=", all_keys[i]);
        if (strcmp(all_keys[i], "tls.server.keyPassword") == 0 ||
            strcmp(all_keys[i], "tls.client.keyPassword") == 0 ||
            strcmp(all_keys[i], "peerSecretKey") == 0)
            assert_null(strstr(d, want));
        else
            assert_true(strncmp(d, want, strlen(want)) == 0 || strstr(d, want) != NULL);
    }
    free(d);
    ns_config_free(&cfg);
}

static void test_dump_round_trip(void **state)
{
    ns_config_t a, b;
    (void)state;
    assert_int_equal(ns_config_init(&a), NS_OK);
    assert_int_equal(ns_config_init(&b), NS_OK);
    assert_set_ok(&a, "listenPort", "10000");
    assert_set_ok(&a, "clusterTest", "true");
    assert_set_ok(&a, "enableAllTopicList", "false");
    assert_set_ok(&a, "syncMode", "nosync");
    assert_set_ok(&a, "logLevel", "warn");
    assert_set_ok(&a, "mapMaxBytes", "9223372036854775807");
    assert_set_ok(&a, "productEnvName", "  two leading spaces");
    assert_set_ok(&a, "portFile", "C:\\ports\\ns.port");
    assert_set_ok(&a, "dataDir", "multi\nline\r\nvalue\twith\ftabs");
    assert_set_ok(&a, "bindAddress", "=:#! caf\xc3\xa9 trailing  ");
    assert_set_ok(&a, "rocketmqHome", "\\");
    assert_set_ok(&a, "configBlackList", "#a;!b");
    char *da = dump_str(&a);
    assert_non_null(strstr(da, "\nproductEnvName=\\  two leading spaces\n"));
    assert_non_null(strstr(da, "\nportFile=C:\\\\ports\\\\ns.port\n"));
    assert_non_null(strstr(da, "\ndataDir=multi\\nline\\r\\nvalue\\twith\\ftabs\n"));
    assert_int_equal(count_lines(da), NDUMPED);

    assert_int_equal(ns_properties_parse(da, strlen(da), set_cb, &b), NS_OK);
    char *db = dump_str(&b);
    assert_string_equal(da, db);
    assert_string_equal(b.product_env_name, "  two leading spaces");
    assert_string_equal(b.data_dir, "multi\nline\r\nvalue\twith\ftabs");
    assert_string_equal(b.bind_address, "=:#! caf\xc3\xa9 trailing  ");
    assert_string_equal(b.rocketmq_home, "\\");
    assert_true(b.cluster_test);
    assert_int_equal(b.listen_port, 10000);
    free(da);
    free(db);
    ns_config_free(&a);
    ns_config_free(&b);
}

/* A temp directory for the tests that read and write files. */
static int setup_dir(void **state)
{
    return nstest_fx_setup_dir(state, "config");
}

static void test_load_file(void **state)
{
    ns_config_t cfg;
    char err[512] = "";
    char path[4096];
    const char *dir = ((nstest_fx_t *)*state)->dir;
    assert_int_equal(ns_config_init(&cfg), NS_OK);

    snprintf(path, sizeof path, "%s/ns.properties", dir);
    nstest_write_text(path, "# startup settings\r\nlistenPort = 10911\r\nclusterTest:TRUE\r\n"
                            "dataDir /var/lib/ns\r\nkvConfigPath=/tmp/kv\\\r\n    .json\r\n");
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);
    assert_int_equal(cfg.listen_port, 10911);
    assert_true(cfg.cluster_test);
    assert_string_equal(cfg.data_dir, "/var/lib/ns");
    assert_string_equal(cfg.kv_config_path, "/tmp/kv.json");
    assert_non_null(cfg.config_file);
    assert_string_equal(cfg.config_file, path);

    /* Loading again replaces config_file without leaking it. */
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);

    char want[5000];
    snprintf(path, sizeof path, "%s/unknown.properties", dir);
    nstest_write_text(path, "listenPort=1\nfoo=bar\n");
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_EINVAL);
    snprintf(want, sizeof want, "%s: unknown key 'foo'", path);
    assert_string_equal(err, want);

    snprintf(path, sizeof path, "%s/bad.properties", dir);
    nstest_write_text(path, "listenPort=abc\n");
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_EINVAL);
    snprintf(want, sizeof want, "%s: listenPort: 'abc' is not an integer", path);
    assert_string_equal(err, want);

    snprintf(path, sizeof path, "%s/escape.properties", dir);
    nstest_write_text(path, "dataDir=\\u12\n");
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_EINVAL);
    assert_non_null(strstr(err, "escape.properties: malformed"));

    snprintf(path, sizeof path, "%s/empty.properties", dir);
    nstest_write_text(path, "");
    assert_int_equal(ns_config_load_file(&cfg, path, NULL, 0), NS_OK);
    assert_string_equal(cfg.config_file, path);

    snprintf(path, sizeof path, "%s/missing.properties", dir);
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_EIO);
    assert_non_null(strstr(err, "missing.properties: "));

    ns_config_free(&cfg);
}

/* A Java 5.3 namesrv.conf: its thread and Netty keys are accepted, named in
 * one warning grouped by reason, and change nothing; a key neither Java nor
 * we know is still refused. */
static void test_load_java_conf(void **state)
{
    ns_config_t cfg, defaults;
    char err[512] = "";
    char path[4096];
    const char *dir = ((nstest_fx_t *)*state)->dir;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_int_equal(ns_config_init(&defaults), NS_OK);
    snprintf(path, sizeof path, "%s/namesrv.conf", dir);
    nstest_write_text(path, "listenPort=9877\nserverWorkerThreads=16\nserverSelectorThreads=3\n"
                            "clientWorkerThreads=4\nwriteBufferHighWaterMark=4194304\n"
                            "defaultThreadPoolNums=32\nenableControllerInNamesrv=false\n"
                            "serverWorkerThreads=8\n");
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);
    assert_int_equal(cfg.listen_port, 9877);
    assert_non_null(cfg.java_warning);
    assert_non_null(strstr(cfg.java_warning, "serverWorkerThreads, serverSelectorThreads, "
                                             "defaultThreadPoolNums (thread pools"));
    assert_non_null(strstr(cfg.java_warning, "writeBufferHighWaterMark (Netty"));
    assert_non_null(strstr(cfg.java_warning, "clientWorkerThreads (NettyClientConfig"));
    assert_non_null(strstr(cfg.java_warning, "enableControllerInNamesrv (no embedded"));
    /* named once although given twice */
    const char *first = strstr(cfg.java_warning, "serverWorkerThreads");
    assert_null(strstr(first + 1, "serverWorkerThreads"));
    /* nothing else changed */
    assert_int_equal(cfg.io_threads, defaults.io_threads);

    const char *why = NULL;
    assert_int_equal(ns_config_apply(&cfg, "serverSocketBacklog", "1024", &why, err, sizeof err),
                     NS_OK);
    assert_non_null(why);
    /* kvConfigPath is acted on (imported at first start): no warning */
    assert_int_equal(ns_config_apply(&cfg, "kvConfigPath", "/x.json", &why, err, sizeof err),
                     NS_OK);
    assert_null(why);
    assert_string_equal(cfg.kv_config_path, "/x.json");
    assert_int_equal(ns_config_apply(&cfg, "listenPort", "1", &why, err, sizeof err), NS_OK);
    assert_null(why);
    assert_int_equal(ns_config_apply(&cfg, "serverWorkerThreadz", "1", &why, err, sizeof err),
                     NS_EINVAL);
    /* a slip names the closest key, ours or Java's */
    assert_string_equal(err, "unknown key 'serverWorkerThreadz' (did you mean "
                             "'serverWorkerThreads'?)");
    assert_int_equal(ns_config_apply(&cfg, "listenprt", "1", &why, err, sizeof err), NS_EINVAL);
    assert_string_equal(err, "unknown key 'listenprt' (did you mean 'listenPort'?)");
    /* Java's TLS keys without a row of ours are accepted with their reason */
    assert_int_equal(ns_config_apply(&cfg, "tls.test.mode.enable", "false", &why, err, sizeof err),
                     NS_OK);
    assert_non_null(why);
    /* tls.client.keyPath is a setting here (the peers' TLS), not ignored */
    assert_int_equal(ns_config_apply(&cfg, "tls.client.keyPath", "/k", &why, err, sizeof err),
                     NS_OK);
    assert_null(why);

    /* a plain file of ours warns about nothing */
    snprintf(path, sizeof path, "%s/ours.properties", dir);
    nstest_write_text(path, "listenPort=9878\n");
    ns_config_free(&cfg);
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);
    assert_null(cfg.java_warning);
    ns_config_free(&cfg);
    ns_config_free(&defaults);
}

/* UPDATE_NAMESRV_CONFIG rewrites only the lines of the keys it changed:
 * comments, order, unchanged keys and secrets stay; new keys are appended;
 * a key set twice is changed on both lines (the last one wins on reading);
 * the mode stays; each rewrite keeps a generation more, up to the limit. */
static void test_rewrite_file(void **state)
{
    char path[4096], name[4200];
    char err[512] = "";
    struct stat st;
    const char *dir = ((nstest_fx_t *)*state)->dir;
    snprintf(path, sizeof path, "%s/namesrv.properties", dir);
    const char *first = "# the operator's notes\n"
                        "listenPort=9876\n"
                        "\n"
                        "! a Java-style comment\n"
                        "tls.server.keyPassword=s3cret\n"
                        "productEnvName = old\n"
                        "logLevel=info\n"
                        "productEnvName:older\n";
    nstest_write_text(path, first);
    assert_int_equal(chmod(path, 0640), 0);
    ns_strpairs_t ch = NS_STRPAIRS_INIT;
    assert_int_equal(ns_strpairs_add(&ch, "productEnvName", " new value ", 11), NS_OK);
    assert_int_equal(ns_strpairs_add(&ch, "clusterTest", "true", 4), NS_OK);
    assert_int_equal(ns_config_rewrite_file(path, &ch, 2), NS_OK);
    char *text = nstest_read_text(path);
    assert_string_equal(text, "# the operator's notes\n"
                              "listenPort=9876\n"
                              "\n"
                              "! a Java-style comment\n"
                              "tls.server.keyPassword=s3cret\n"
                              "productEnvName=\\ new value\\ \n"
                              "logLevel=info\n"
                              "productEnvName=\\ new value\\ \n"
                              "clusterTest=true\n");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    snprintf(name, sizeof name, "%s.bak", path);
    char *bak = nstest_read_text(name);
    assert_string_equal(bak, first);
    assert_int_equal(stat(name, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640); /* a .bak may hold the secret too */

    /* it loads back to the values written, blanks that belong to them kept */
    ns_config_t cfg;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);
    assert_string_equal(cfg.product_env_name, " new value ");
    assert_true(cfg.cluster_test);
    assert_string_equal(cfg.tls_server_key_password, "s3cret");
    assert_null(cfg.trim_warning);
    ns_config_free(&cfg);

    /* two more rewrites with 2 generations: .bak and .bak.1, no .bak.2 */
    ns_strpairs_free(&ch);
    assert_int_equal(ns_strpairs_add(&ch, "logLevel", "warn", 4), NS_OK);
    assert_int_equal(ns_config_rewrite_file(path, &ch, 2), NS_OK);
    char *second = nstest_read_text(path);
    assert_int_equal(ns_config_rewrite_file(path, &ch, 2), NS_OK);
    snprintf(name, sizeof name, "%s.bak.1", path);
    char *bak1 = nstest_read_text(name);
    assert_string_equal(bak1, text); /* the generation before the last */
    snprintf(name, sizeof name, "%s.bak", path);
    char *bak0 = nstest_read_text(name);
    assert_string_equal(bak0, second);
    snprintf(name, sizeof name, "%s.bak.2", path);
    assert_int_not_equal(stat(name, &st), 0);

    /* an unwritable place fails cleanly, the file untouched */
    snprintf(name, sizeof name, "%s/x", path); /* under a regular file */
    assert_int_equal(ns_config_rewrite_file(name, &ch, 2), NS_EIO);

    /* no file yet: its directories and the file are created, 0640, with the
     * changed keys alone */
    snprintf(name, sizeof name, "%s/new/sub/namesrv.properties", dir);
    assert_int_equal(ns_config_rewrite_file(name, &ch, 2), NS_OK);
    char *fresh = nstest_read_text(name);
    assert_string_equal(fresh, "logLevel=warn\n");
    assert_int_equal(stat(name, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    ns_strpairs_free(&ch);
    free(text);
    free(bak);
    free(second);
    free(bak1);
    free(bak0);
    free(fresh);
}

/* Unescaped blanks that end a value in the file are trimmed and named in
 * one warning: "listenPort=40001 " starts the server on 40001. */
static void test_load_trims_values(void **state)
{
    char path[4096], err[512] = "";
    const char *dir = ((nstest_fx_t *)*state)->dir;
    snprintf(path, sizeof path, "%s/trim.properties", dir);
    nstest_write_text(path, "listenPort=40001 \nlogLevel = warn\t\nproductEnvName=keep\\ \n");
    ns_config_t cfg;
    assert_int_equal(ns_config_init(&cfg), NS_OK);
    assert_int_equal(ns_config_load_file(&cfg, path, err, sizeof err), NS_OK);
    assert_int_equal(cfg.listen_port, 40001);
    assert_string_equal(cfg.log_level, "warn");
    assert_string_equal(cfg.product_env_name, "keep "); /* an escaped blank is the value's */
    assert_non_null(cfg.trim_warning);
    assert_non_null(strstr(cfg.trim_warning, "listenPort, logLevel were trimmed"));
    ns_config_free(&cfg);
}

static void test_help(void **state)
{
    ns_buf_t b = NS_BUF_INIT;
    (void)state;
    assert_int_equal(ns_config_help(&b), NS_OK);
    char *h = ns_buf_strdup(&b);
    assert_non_null(h);
    assert_int_equal(count_lines(h), NKEYS);
    for (size_t i = 0; i < NKEYS; i++) {
        char want[160];
        snprintf(want, sizeof want, "  --%s=", all_keys[i]);
        if (strstr(h, want) == NULL)
            fail_msg("help lacks %s", want);
    }
    assert_non_null(strstr(h, "(default: 9876; 0..65535)\n"));
    assert_non_null(strstr(h, "--syncMode=full|nometasync|nosync "));
    assert_non_null(strstr(h, "--clusterTest=BOOL "));
    assert_non_null(strstr(h, "(default: ${HOME}/namesrv/kvConfig.json)\n"));
    assert_non_null(strstr(h, "(default: empty)\n"));
    assert_non_null(strstr(h, "(default: 1000; min 0)\n"));
    for (const char *p = h; *p; p = strchr(p, '\n') + 1)
        assert_int_equal(strncmp(p, "  --", 4), 0);
    free(h);
    ns_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_defaults_from_env),
        cmocka_unit_test(test_keys_and_mutability),
        cmocka_unit_test(test_runtime_bounds),
        cmocka_unit_test(test_set_int),
        cmocka_unit_test(test_set_bool),
        cmocka_unit_test(test_set_string_and_enum),
        cmocka_unit_test(test_props_separators),
        cmocka_unit_test(test_props_comments_and_blanks),
        cmocka_unit_test(test_props_empty_values),
        cmocka_unit_test(test_props_line_endings),
        cmocka_unit_test(test_props_escapes),
        cmocka_unit_test(test_props_malformed),
        cmocka_unit_test(test_props_continuations),
        cmocka_unit_test(test_props_callback_stops),
        cmocka_unit_test(test_dump_sorted),
        cmocka_unit_test(test_dump_round_trip),
        cmocka_unit_test_setup_teardown(test_load_file, setup_dir, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_load_java_conf, setup_dir, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_file, setup_dir, nstest_fx_teardown),
        cmocka_unit_test_setup_teardown(test_load_trims_values, setup_dir, nstest_fx_teardown),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, setup_env, NULL);
}
