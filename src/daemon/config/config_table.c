/* config_table.c - every NameServer setting as one row (config_table.h):
 * RocketMQ's key where RocketMQ has the setting, type, field, default as
 * text, bounds, enum values, flags, help, and an apply hook where a new
 * value must take effect beyond its field. The code that walks the table is
 * config.c, whose header describes the value syntax.
 */
#include <stddef.h>
#include <stdint.h>

#include "ns/config.h"
#include "ns/err.h"
#include "ns/log.h"
#include "config/config_table.h"

/* offsetof that refuses to compile unless the field has type T. */
#define SLOT(field, T) _Generic(((ns_config_t *)0)->field, T : offsetof(ns_config_t, field))

#define ROW_INT(key, field, def, min, max, flags, help)                                            \
    {                                                                                              \
        key, NS_CFG_INT64, SLOT(field, int64_t), def, min, max, NULL, flags, help, NULL, 0, 0      \
    }
/* A mutable integer with tighter bounds for changes while running. */
#define ROW_INT_RT(key, field, def, min, max, rt_min, rt_max, flags, help)                         \
    {                                                                                              \
        key, NS_CFG_INT64, SLOT(field, int64_t), def, min, max, NULL, flags, help, NULL, rt_min,   \
            rt_max                                                                                 \
    }
#define ROW_BOOL(key, field, def, flags, help)                                                     \
    {                                                                                              \
        key, NS_CFG_BOOL, SLOT(field, bool), def, 0, 0, NULL, flags, help, NULL, 0, 0              \
    }
#define ROW_STR(key, field, def, flags, help)                                                      \
    {                                                                                              \
        key, NS_CFG_STRING, SLOT(field, char *), def, 0, 0, NULL, flags, help, NULL, 0, 0          \
    }
#define ROW_ENUM(key, field, def, values, flags, help)                                             \
    {                                                                                              \
        key, NS_CFG_ENUM, SLOT(field, char *), def, 0, 0, values, flags, help, NULL, 0, 0          \
    }
#define ROW_ENUM_APPLY(key, field, def, values, flags, help, apply)                                \
    {                                                                                              \
        key, NS_CFG_ENUM, SLOT(field, char *), def, 0, 0, values, flags, help, apply, 0, 0         \
    }

static void apply_log_level(const ns_config_t *cfg)
{
    int level = ns_log_level_parse(cfg->log_level);
    if (level >= 0)
        ns_log_set_level((ns_log_level_t)level);
}

#define MiB (INT64_C(1) << 20)
#define GiB (INT64_C(1) << 30)

static const char *const sync_modes[] = {"full", "nometasync", "nosync", NULL};
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const tls_modes[] = {"disabled", "permissive", "enforcing", NULL};
static const char *const tls_auths[] = {"none", "optional", "require", NULL};
static const char *const auth_modes[] = {"off", "writes", "all", NULL};
static const char *const broker_conflicts[] = {"warn", "reject", NULL};

const ns_cfg_entry_t ns_config_table[] = {
    /* network */
    ROW_STR("bindAddress", bind_address, "0.0.0.0", 0, "address to listen on"),
    ROW_INT("listenPort", listen_port, "9876", 0, 65535, 0,
            "TCP port to listen on; 0 = any free port (see portFile)"),
    ROW_STR("portFile", port_file, "", NS_CFG_OURS,
            "write the bound port to this file; empty = don't"),
    ROW_STR("httpListen", http_listen, "", NS_CFG_OURS,
            "HOST:PORT of the HTTP endpoint (/metrics, /healthz, /readyz, /brokers); "
            "empty = off; port 0 = any free port (see httpPortFile)"),
    ROW_STR("httpPortFile", http_port_file, "", NS_CFG_OURS,
            "write the HTTP endpoint's bound port to this file; empty = don't"),
    ROW_INT("httpMaxConnections", http_max_connections, "64", 1, 4096, NS_CFG_OURS,
            "connections the HTTP endpoint holds at once; more are closed at once"),
    ROW_INT("httpMaxConnectionsPerAddress", http_max_per_address, "16", 1, 4096, NS_CFG_OURS,
            "HTTP connections one client address may hold at once"),
    ROW_INT("httpHeaderTimeoutMillis", http_header_timeout_ms, "5000", 100, 600000, NS_CFG_OURS,
            "an HTTP connection must send a request's whole header within this long of "
            "connecting or of its last reply, however slowly bytes come, or it is closed"),
    ROW_INT("maxFrameBytes", max_frame_bytes, "16777216", 1024, GiB, NS_CFG_OURS,
            "largest remoting frame accepted, bytes"),
    ROW_INT_RT("serverChannelMaxIdleTimeSeconds", idle_timeout_s, "120", 0, INT32_MAX, 60,
               INT32_MAX, NS_CFG_MUTABLE,
               "close connections idle this long, seconds; 0 = never (while running: at least "
               "60, so broker connections are never closed between their 30 s heartbeats)"),
    ROW_INT("ioThreads", io_threads, "1", 1, 64, NS_CFG_OURS,
            "event loops serving connections (route lookups run on all of them; "
            "every other request on the first)"),
    ROW_BOOL("routeIndex", route_index, "true", NS_CFG_OURS,
             "keep a hash index of the routes table for the lookups (16-32 bytes a topic; "
             "false = every lookup not in the memo descends the table's B-tree)"),
    ROW_INT("routeMemoSlots", route_memo_slots, "0", 0, 1 << 20, NS_CFG_OURS,
            "routes each event loop remembers from its read snapshot until the next write "
            "(a power of two, or rounded down to one; 0 = none: with routeIndex on, a memo "
            "only costs memory and cache)"),
    ROW_INT("ioBacklogBytes", io_backlog_bytes, "8388608", 65536, 1 * GiB, NS_CFG_OURS,
            "with ioThreads > 1: request bytes a loop may forward to the first one before "
            "its connections pause reading"),
    /* TLS: Java's TlsSystemConfig names; set here, in tls.config.file or with --key=value */
    ROW_ENUM("tls.server.mode", tls_server_mode, "permissive", tls_modes, 0,
             "disabled: plain only; permissive: TLS (first byte 0x16) and plain on one port, "
             "TLS only once certPath/keyPath are set; enforcing: TLS only"),
    ROW_STR("tls.server.certPath", tls_server_cert_path, "", 0,
            "PEM certificate chain; reloaded when it changes and on SIGHUP"),
    ROW_STR("tls.server.keyPath", tls_server_key_path, "", 0,
            "PEM private key (PKCS#8 or traditional, may be encrypted)"),
    ROW_STR("tls.server.keyPassword", tls_server_key_password, "", NS_CFG_SECRET,
            "password of an encrypted keyPath (never shown)"),
    ROW_ENUM("tls.server.need.client.auth", tls_server_need_client_auth, "none", tls_auths, 0,
             "client certificates: none, optional (verified if sent), require"),
    ROW_STR("tls.server.trustCertPath", tls_server_trust_cert_path, "", 0,
            "PEM CA bundle client certificates are verified with"),
    ROW_STR("tls.protocols", tls_protocols, "TLSv1.2,TLSv1.3", 0,
            "TLS versions accepted (lowest..highest named)"),
    ROW_STR("tls.ciphers", tls_ciphers, "", 0,
            "cipher list, OpenSSL names; TLS_* names are TLS 1.3 suites; empty = OpenSSL's"),
    ROW_STR("tls.config.file", tls_config_file, "/etc/rocketmq/tls.properties", 0,
            "properties file whose tls.server.* keys override these (read if it exists)"),
    ROW_INT("tlsHandshakeTimeoutMillis", tls_handshake_timeout_ms, "10000", 100, INT32_MAX,
            NS_CFG_OURS,
            "close a connection whose TLS handshake or PROXY header is not done by then"),
    ROW_BOOL("tlsHandshakeOffload", tls_handshake_offload, "true", NS_CFG_OURS,
             "run TLS handshake steps (the server's key operation) on worker threads, not "
             "on the event loop that serves lookups"),
    ROW_STR("proxyProtocolTrustedAddresses", proxy_protocol_trusted, "", NS_CFG_OURS,
            "peers allowed to send a PROXY protocol v1/v2 header: comma-separated IPs/CIDRs, "
            "* = any (Java), empty = none"),
    /* store */
    ROW_STR("dataDir", data_dir, "./data", NS_CFG_OURS, "directory of the store"),
    ROW_ENUM("syncMode", sync_mode, "full", sync_modes, NS_CFG_OURS,
             "fsync policy: full, nometasync (skip meta page), nosync (never)"),
    ROW_INT("mapSizeBytes", map_size_bytes, "67108864", MiB, INT64_MAX, NS_CFG_OURS,
            "initial store map size, bytes"),
    ROW_INT("mapMaxBytes", map_max_bytes, "17179869184", MiB, INT64_MAX, NS_CFG_OURS,
            "hard limit for store map growth, bytes"),
    ROW_INT("mapGrowPercent", map_grow_percent, "80", 50, 95, NS_CFG_OURS,
            "after a commit that leaves more than this percent of the store map used, the map "
            "is doubled (up to mapMaxBytes) before it fills; logged"),
    ROW_INT("writerBatchMax", writer_batch_max, "64", 1, 1000000, NS_CFG_OURS,
            "most mutations committed in one write transaction"),
    ROW_INT("writerBatchMaxBytes", writer_batch_max_bytes, "8388608", 64 * 1024, 64 * GiB,
            NS_CFG_OURS,
            "a write transaction takes no further mutation once it has written this many key and "
            "value bytes (the pages LMDB holds until the commit; one mutation is never split)"),
    ROW_INT_RT("auditRetention", audit_retention, "1000", 0, INT64_MAX, 100, 100000000,
               NS_CFG_OURS | NS_CFG_MUTABLE,
               "audit history records kept in all (oldest dropped first; while running: "
               "100..100000000, so the history never stops recording)"),
    /* registration */
    ROW_INT("maxInflateBytes", max_inflate_bytes, "67108864", 1024, GiB, NS_CFG_OURS,
            "largest inflated (compressed) register body, bytes (a safety cap: file and restart "
            "only)"),
    /* liveness */
    ROW_INT_RT("scanNotActiveBrokerInterval", scan_not_active_broker_interval_ms, "5000", 10,
               INT32_MAX, 1000, 60000, NS_CFG_MUTABLE,
               "broker liveness scan period, ms (while running: 1000..60000, so expiry is "
               "never switched off)"),
    ROW_INT_RT("brokerGraceWindowMillis", broker_grace_window_ms, "120000", 0, INT64_MAX, 0, 600000,
               NS_CFG_OURS | NS_CFG_MUTABLE,
               "after a restart, a stored broker lives unseen for max(this, its own "
               "heartbeatTimeoutMillis), ms (while running: at most 600000)"),
    /* RocketMQ NamesrvConfig */
    ROW_STR("rocketmqHome", rocketmq_home, "${ROCKETMQ_HOME}", 0, "RocketMQ home directory"),
    ROW_STR("kvConfigPath", kv_config_path, "${HOME}/namesrv/kvConfig.json", 0,
            "Java's kvConfig.json: imported into a store with no KV config at its first "
            "start, never again (the store keeps KV config from then on)"),
    ROW_STR("configStorePath", config_store_path, "${HOME}/namesrv/namesrv.properties", 0,
            "settings file UPDATE_NAMESRV_CONFIG rewrites when started without -c"),
    ROW_INT("configStoreBackups", config_store_backups, "5", 0, 100, NS_CFG_OURS | NS_CFG_MUTABLE,
            "generations of the settings file an UPDATE_NAMESRV_CONFIG keeps beside it "
            "(FILE.bak newest, then FILE.bak.1, ...); 0 = none"),
    ROW_STR("productEnvName", product_env_name, "center", NS_CFG_MUTABLE,
            "product environment name (cluster-test mode)"),
    ROW_BOOL("clusterTest", cluster_test, "false", NS_CFG_MUTABLE, "cluster-test mode"),
    ROW_BOOL("orderMessageEnable", order_message_enable, "false", NS_CFG_MUTABLE,
             "add orderTopicConf to routes"),
    ROW_BOOL("returnOrderTopicConfigToBroker", return_order_topic_config_to_broker, "true",
             NS_CFG_MUTABLE, "send ORDER_TOPIC_CONFIG to registering brokers"),
    ROW_BOOL("enableAllTopicList", enable_all_topic_list, "true", NS_CFG_MUTABLE,
             "answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
    ROW_BOOL("enableTopicList", enable_topic_list, "true", NS_CFG_MUTABLE,
             "answer the topic-list requests 224, 311, 312, 313"),
    ROW_BOOL("notifyMinBrokerIdChanged", notify_min_broker_id_changed, "false", NS_CFG_MUTABLE,
             "tell brokers when their group's smallest broker id changes"),
    ROW_BOOL("deleteTopicWithBrokerRegistration", delete_topic_with_broker_registration, "false",
             NS_CFG_MUTABLE, "drop topics a broker no longer registers"),
    ROW_BOOL("supportActingMaster", support_acting_master, "false", NS_CFG_MUTABLE,
             "rewrite routes when a slave acts as master"),
    ROW_BOOL("needWaitForService", need_wait_for_service, "false", NS_CFG_MUTABLE,
             "refuse route queries for waitSecondsForService after start"),
    ROW_INT("waitSecondsForService", wait_seconds_for_service, "45", 0, INT32_MAX, NS_CFG_MUTABLE,
            "see needWaitForService, seconds"),
    ROW_STR("configBlackList", config_black_list, "configBlackList;configStorePath;kvConfigPath", 0,
            "';'-separated keys UPDATE_NAMESRV_CONFIG may not change"),
    ROW_INT("unRegisterBrokerQueueCapacity", unregister_broker_queue_capacity, "3000", 1, INT32_MAX,
            0, "pending UNREGISTER_BROKER queue capacity"),
    /* memory budgets over all connections (src/daemon/net/budget.h); file and restart only */
    ROW_INT("maxConnections", max_connections, "4096", 1, 1000000, NS_CFG_OURS,
            "most client connections open at once; more are closed at accept"),
    ROW_INT("maxConnectionsPerAddress", max_connections_per_address, "1024", 0, 1000000,
            NS_CFG_OURS,
            "most connections open at once from one client address (brokers and clients "
            "behind one NAT or proxy share one); 0 = no cap"),
    ROW_INT("maxPendingHandshakes", max_pending_handshakes, "256", 1, 1000000, NS_CFG_OURS,
            "most TLS handshakes begun and not finished at once (each holds ~48 KiB); the "
            "next ClientHello closes its connection"),
    ROW_INT("maxTlsSessions", max_tls_sessions, "4096", 1, 1000000, NS_CFG_OURS,
            "most TLS connections open at once, handshaking or established (each established "
            "one holds ~21 KiB of OpenSSL state); the next ClientHello closes its connection"),
    ROW_INT("maxUnfinishedFrameBytes", max_unfinished_frame_bytes, "67108864", MiB, 64 * GiB,
            NS_CFG_OURS,
            "bytes held for frames not fully arrived, all connections together; over it the "
            "connections holding the most are closed"),
    ROW_INT("maxUnsentReplyBytes", max_unsent_reply_bytes, "67108864", MiB, 64 * GiB, NS_CFG_OURS,
            "reply bytes the peers have not read yet, all connections together; over it the "
            "connections holding the most are closed"),
    ROW_INT("writerQueueMaxBytes", writer_queue_max_bytes, "33554432", MiB, 64 * GiB, NS_CFG_OURS,
            "bytes of mutations waiting for the writer; at it, connections stop reading writes"),
    ROW_INT("writerQueueMaxOps", writer_queue_max_ops, "10000", 16, 10000000, NS_CFG_OURS,
            "mutations waiting for the writer; at it, connections stop reading writes"),
    /* damage found and survived (src/daemon/ops/backup.c, store/check.c) */
    ROW_BOOL("verifyOnStart", verify_on_start, "true", NS_CFG_OURS,
             "check the whole store in a child process: its roots and edges before serving, "
             "every page and record while serving; a damaged store is refused with exit 4"),
    ROW_BOOL("verifyOnStartBlocking", verify_on_start_blocking, "false", NS_CFG_OURS,
             "with verifyOnStart: finish the whole check before serving (slower restart)"),
    ROW_INT("backupIntervalSeconds", backup_interval_s, "3600", 0, 365 * 86400, NS_CFG_OURS,
            "seconds between compacted hot backups of the store; 0 = none"),
    ROW_STR("backupDir", backup_dir, "", NS_CFG_OURS,
            "directory of the backups (one subdirectory each); empty = <dataDir>.backups"),
    ROW_INT("backupKeep", backup_keep, "3", 1, 1000, NS_CFG_OURS,
            "verified backups kept (the oldest are removed)"),
    /* access control (src/daemon/core/auth.h); its apply hook is the
     * server's (ns_config_set_hook) */
    ROW_ENUM("authMode", auth_mode, "off", auth_modes, NS_CFG_OURS | NS_CFG_MUTABLE,
             "signed requests: off (none), writes (broker and admin requests), all (reads too)"),
    ROW_INT("authPenaltyMaxMillis", auth_penalty_max_ms, "5000", 0, 60000,
            NS_CFG_OURS | NS_CFG_MUTABLE,
            "longest delay before answering a refusal to an address that keeps failing, ms; "
            "0 = never delay"),
    ROW_STR("authKeyFile", auth_key_file, "", NS_CFG_OURS,
            "file with the 256-bit key (64 hex digits) users' secrets are sealed with in the "
            "store; keep it outside dataDir; empty = secrets stored as they are"),
    /* logging */
    ROW_ENUM_APPLY("logLevel", log_level, "info", log_levels, NS_CFG_OURS | NS_CFG_MUTABLE,
                   "log threshold", apply_log_level),
    ROW_STR("logFile", log_file, "", NS_CFG_OURS,
            "log to this file (SIGHUP reopens it); empty = stderr (journald under systemd)"),
    ROW_INT("logFileMaxBytes", log_file_max_bytes, "104857600", 0, INT64_MAX, NS_CFG_OURS,
            "rotate logFile when it reaches this size, bytes; 0 = never"),
    ROW_INT("logFileKeep", log_file_keep, "10", 0, 1000, NS_CFG_OURS,
            "rotated log files kept (logFile.1 is the newest)"),
    ROW_INT("adminAuditRetention", admin_audit_retention, "100000", 0, INT64_MAX,
            NS_CFG_OURS | NS_CFG_MUTABLE,
            "admin audit trail records kept (oldest dropped first); 0 = no trail"),
    ROW_ENUM("brokerConflict", broker_conflict, "warn", broker_conflicts,
             NS_CFG_OURS | NS_CFG_MUTABLE,
             "a registration whose brokerName is in another cluster, whose address is under "
             "another brokerName, or whose brokerName/brokerId another address holds: warn "
             "(log, count, admin trail; registered as Java would) or reject (refused)"),
    /* the fleet (src/daemon/ops/peers.h); peers' apply hook is the server's */
    ROW_STR("peers", peers, "", NS_CFG_OURS | NS_CFG_MUTABLE,
            "the other NameServers, host:port;host:port (a namesrvAddr list: this server is "
            "recognised and skipped); each is compared with this one by digest; empty = none"),
    ROW_STR("advertisedAddress", advertised_address, "", NS_CFG_OURS,
            "host:port brokers and clients reach this server at, as the address server "
            "(GET /rocketmq/<subgroup> on httpListen) lists it; empty = bindAddress:listenPort, "
            "or with bindAddress 0.0.0.0 the first non-loopback IPv4 address of the machine"),
    ROW_INT("peerCheckIntervalMillis", peer_check_interval_ms, "10000", 100, 86400000, NS_CFG_OURS,
            "how often each peer's digest is compared with this server's, ms"),
    ROW_INT("peerDivergenceMillis", peer_divergence_ms, "30000", 0, 86400000, NS_CFG_OURS,
            "a difference with a peer is divergent (alert) once seen by two checks in a row, "
            "the first at least this long ago, ms (30 s: a broker's registration period)"),
    ROW_INT("peerTimeoutMillis", peer_timeout_ms, "3000", 100, 600000, NS_CFG_OURS,
            "connect and answer time allowed to a peer per request, ms"),
    ROW_BOOL("peerTls", peer_tls, "false", NS_CFG_OURS,
             "reach the peers over TLS (tls.client.* below)"),
    ROW_STR("tls.client.trustCertPath", tls_client_trust_cert_path, "", 0,
            "CA bundle the peers' certificates are checked with; empty = not checked (Java's "
            "default)"),
    ROW_STR("tls.client.certPath", tls_client_cert_path, "", 0,
            "certificate chain shown to peers that ask for one (mutual TLS)"),
    ROW_STR("tls.client.keyPath", tls_client_key_path, "", 0, "its private key"),
    ROW_STR("tls.client.keyPassword", tls_client_key_password, "", NS_CFG_SECRET,
            "password of an encrypted tls.client.keyPath"),
    ROW_STR("peerAccessKey", peer_access_key, "", NS_CFG_OURS,
            "AccessKey the peer requests are signed with (a client user of the peers, for their "
            "authMode=all); empty = unsigned"),
    ROW_STR("peerSecretKey", peer_secret_key, "", NS_CFG_OURS | NS_CFG_SECRET, "its secret"),
    /* KV anti-entropy (src/daemon/ops/kvsync.h); kvSync's apply hook is the server's */
    ROW_BOOL("kvSync", kv_sync, "false", NS_CFG_OURS | NS_CFG_MUTABLE,
             "pull the KV entries that differ from a peer at each peer check; the later "
             "version wins on every server (docs/operations.md, KV anti-entropy)"),
    ROW_INT("kvTombstoneRetentionMillis", kv_tombstone_retention_ms, "604800000", 60000,
            INT64_MAX / 2, NS_CFG_OURS | NS_CFG_MUTABLE,
            "how long a deleted KV entry's tombstone is kept, ms (7 days); longer than any "
            "outage a server should catch up from"),
    /* seeding an empty store from a peer at start (src/daemon/ops/seed.h) */
    ROW_BOOL("seedFromPeers", seed_from_peers, "false", NS_CFG_OURS,
             "a server that starts with no topology and no KV config copies both from the first "
             "peer that is in sync before it listens (docs/operations.md, Seeding from a peer)"),
    ROW_INT("seedTimeoutMillis", seed_timeout_ms, "60000", 1000, 3600000, NS_CFG_OURS,
            "the longest a seed may take, every peer tried included, ms; then the server starts "
            "empty"),
};

#define N_ENTRIES (sizeof ns_config_table / sizeof ns_config_table[0])
_Static_assert(N_ENTRIES <= NS_CONFIG_MAX_ENTRIES, "raise NS_CONFIG_MAX_ENTRIES");
const size_t ns_config_n_entries = N_ENTRIES;
