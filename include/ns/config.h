/* config.h - NameServer settings, driven by one declarative table
 * (src/daemon/config/config_table.c: ns_config_table). The same table feeds the properties file
 * (-c), command-line overrides (--key=value), GET/UPDATE_NAMESRV_CONFIG,
 * -p (print effective config) and --help. Key names are RocketMQ's where
 * RocketMQ has the setting; ours otherwise. */
#ifndef NS_CONFIG_H
#define NS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"
#include "ns/properties.h"
#include "ns/strpairs.h"

typedef struct {
    /* network */
    char *bind_address;             /* bindAddress, default 0.0.0.0 */
    int64_t listen_port;            /* listenPort, 9876; 0 = ephemeral */
    char *port_file;                /* portFile: write the bound port here (ours) */
    char *http_listen;              /* httpListen: HOST:PORT of /metrics etc.; "" = off (ours) */
    char *http_port_file;           /* httpPortFile: write the HTTP port here (ours) */
    int64_t http_max_connections;   /* httpMaxConnections, 64 (ours) */
    int64_t http_max_per_address;   /* httpMaxConnectionsPerAddress, 16 (ours) */
    int64_t http_header_timeout_ms; /* httpHeaderTimeoutMillis, 5000 (ours) */
    int64_t max_frame_bytes;        /* maxFrameBytes, 16 MiB (ours) */
    int64_t idle_timeout_s;         /* serverChannelMaxIdleTimeSeconds, 120 */
    int64_t io_threads;             /* ioThreads, 1: event loops serving connections (ours) */
    int64_t route_memo_slots;       /* routeMemoSlots, 0: each loop's route memo (ours) */
    bool route_index;               /* routeIndex, true: the routes table's hash index (ours) */
    int64_t io_backlog_bytes; /* ioBacklogBytes, 8 MiB: forwarded bytes before reads pause (ours) */
    /* TLS (Java's TlsSystemConfig keys) and the PROXY protocol */
    char *tls_server_mode;             /* tls.server.mode: disabled | permissive | enforcing */
    char *tls_server_cert_path;        /* tls.server.certPath */
    char *tls_server_key_path;         /* tls.server.keyPath */
    char *tls_server_key_password;     /* tls.server.keyPassword (never shown) */
    char *tls_server_need_client_auth; /* tls.server.need.client.auth: none | optional | require */
    char *tls_server_trust_cert_path;  /* tls.server.trustCertPath */
    char *tls_protocols;               /* tls.protocols, "TLSv1.2,TLSv1.3" */
    char *tls_ciphers;                 /* tls.ciphers, "" = OpenSSL's */
    char *tls_config_file;             /* tls.config.file, /etc/rocketmq/tls.properties */
    int64_t tls_handshake_timeout_ms;  /* tlsHandshakeTimeoutMillis, 10000 (ours) */
    bool tls_handshake_offload;        /* tlsHandshakeOffload, true (ours) */
    char *proxy_protocol_trusted;      /* proxyProtocolTrustedAddresses, "" (ours) */
    /* store */
    char *data_dir;                 /* dataDir (ours), default "./data" */
    char *sync_mode;                /* syncMode: full | nometasync | nosync (ours) */
    int64_t map_size_bytes;         /* mapSizeBytes: initial LMDB map (ours) */
    int64_t map_max_bytes;          /* mapMaxBytes: hard limit for growth (ours) */
    int64_t map_grow_percent;       /* mapGrowPercent: grow the map past this use (ours) */
    int64_t writer_batch_max;       /* writerBatchMax: ops per write txn (ours) */
    int64_t writer_batch_max_bytes; /* writerBatchMaxBytes: a batch's writes (ours) */
    int64_t audit_retention; /* auditRetention: audit history records kept in all, oldest dropped
                                first (ours) */
    /* registration */
    int64_t max_inflate_bytes; /* maxInflateBytes: cap on inflated register bodies (ours) */
    /* liveness */
    int64_t scan_not_active_broker_interval_ms; /* scanNotActiveBrokerInterval, 5000 */
    int64_t broker_grace_window_ms;             /* brokerGraceWindowMillis, 120000 (ours) */
    /* RocketMQ NamesrvConfig */
    char *rocketmq_home;                        /* rocketmqHome */
    char *kv_config_path;                       /* kvConfigPath */
    char *config_store_path;                    /* configStorePath */
    int64_t config_store_backups;               /* configStoreBackups, 5 .bak generations (ours) */
    char *product_env_name;                     /* productEnvName, "center" */
    bool cluster_test;                          /* clusterTest */
    bool order_message_enable;                  /* orderMessageEnable */
    bool return_order_topic_config_to_broker;   /* returnOrderTopicConfigToBroker, true */
    bool enable_all_topic_list;                 /* enableAllTopicList, true */
    bool enable_topic_list;                     /* enableTopicList, true */
    bool notify_min_broker_id_changed;          /* notifyMinBrokerIdChanged */
    bool delete_topic_with_broker_registration; /* deleteTopicWithBrokerRegistration */
    bool support_acting_master;                 /* supportActingMaster */
    bool need_wait_for_service;                 /* needWaitForService */
    int64_t wait_seconds_for_service;           /* waitSecondsForService, 45 */
    char *config_black_list;                    /* configBlackList */
    int64_t unregister_broker_queue_capacity;   /* unRegisterBrokerQueueCapacity, 3000 */
    /* memory budgets over all connections, so no peer grows the server without
     * bound (src/daemon/net/budget.h; ours) */
    int64_t max_connections;             /* maxConnections, 4096 */
    int64_t max_connections_per_address; /* maxConnectionsPerAddress, 1024; 0 = no cap */
    int64_t max_pending_handshakes;      /* maxPendingHandshakes, 256 */
    int64_t max_tls_sessions;            /* maxTlsSessions, 4096 */
    int64_t max_unfinished_frame_bytes;  /* maxUnfinishedFrameBytes, 64 MiB */
    int64_t max_unsent_reply_bytes;      /* maxUnsentReplyBytes, 64 MiB */
    int64_t writer_queue_max_bytes;      /* writerQueueMaxBytes, 64 MiB */
    int64_t writer_queue_max_ops;        /* writerQueueMaxOps, 10000 */
    /* a damaged store found before it is followed into a crash, and backups to
     * recover from (ours) */
    bool verify_on_start;          /* verifyOnStart, true: store check at start (startcheck.c) */
    bool verify_on_start_blocking; /* verifyOnStartBlocking, false: all of it before serving */
    int64_t backup_interval_s;     /* backupIntervalSeconds, 3600; 0 = no periodic backups */
    char *backup_dir;              /* backupDir, "" = <dataDir>.backups */
    int64_t backup_keep;           /* backupKeep, 3: newest verified backups kept */
    /* access control */
    char *auth_mode;             /* authMode: off|writes|all (ours) */
    int64_t auth_penalty_max_ms; /* authPenaltyMaxMillis, 5000: late refusals cap (ours) */
    char *auth_key_file;         /* authKeyFile: key sealing secrets at rest (ours) */
    /* logging */
    char *log_level;               /* logLevel: debug|info|warn|error (ours) */
    char *log_file;                /* logFile: empty = stderr/journald (ours) */
    int64_t log_file_max_bytes;    /* logFileMaxBytes, 100 MiB; 0 = no rotation (ours) */
    int64_t log_file_keep;         /* logFileKeep, 10 rotated files (ours) */
    int64_t admin_audit_retention; /* adminAuditRetention, 100000 admin records (ours) */
    char *broker_conflict;         /* brokerConflict: warn | reject (ours) */
    /* the fleet: peers compared by their digests (src/daemon/ops/peers.h; ours) */
    char *peers;                       /* peers: "host:port;host:port", "" = none */
    char *advertised_address;          /* advertisedAddress: this server in address lists */
    int64_t peer_check_interval_ms;    /* peerCheckIntervalMillis, 10000 */
    int64_t peer_divergence_ms;        /* peerDivergenceMillis, 30000 */
    int64_t peer_timeout_ms;           /* peerTimeoutMillis, 3000: per request to a peer */
    bool peer_tls;                     /* peerTls: TLS to the peers */
    char *tls_client_trust_cert_path;  /* tls.client.trustCertPath: CA to check them with */
    char *tls_client_cert_path;        /* tls.client.certPath: our certificate (mutual TLS) */
    char *tls_client_key_path;         /* tls.client.keyPath */
    char *tls_client_key_password;     /* tls.client.keyPassword (never shown) */
    char *peer_access_key;             /* peerAccessKey: sign peer requests (authMode=all) */
    char *peer_secret_key;             /* peerSecretKey (never shown) */
    bool kv_sync;                      /* kvSync: pull differing KV entries from peers */
    int64_t kv_tombstone_retention_ms; /* kvTombstoneRetentionMillis, 7 days */
    bool seed_from_peers;              /* seedFromPeers: an empty store is copied from a peer */
    int64_t seed_timeout_ms;           /* seedTimeoutMillis, 60000: the whole seed at most */
    /* Java settings read from the -c file that have no effect here, as one
     * WARN text (NULL when none); see ns_config_java_ignored. Not a table entry. */
    char *java_warning;
    /* The keys of the -c file whose values lost trailing blanks, as one WARN
     * text (NULL when none). Not a table entry. */
    char *trim_warning;
    /* the file given with -c, if any (not a table entry) */
    char *config_file;
} ns_config_t;

/* Fills cfg with the defaults (${HOME} and ${ROCKETMQ_HOME} in the defaults
 * are taken from the environment). Strings are heap copies owned by cfg:
 * ns_config_free(). NS_OK or NS_ENOMEM (cfg is then freed). */
int ns_config_init(ns_config_t *cfg);
/* Frees the strings (config_file too) and NULLs them; safe to call twice. */
void ns_config_free(ns_config_t *cfg);

/* Copies every setting but the strings into dst, whose string fields are
 * NULL: a copy another thread may read while src changes. Owns nothing. */
void ns_config_copy_scalars(ns_config_t *dst, const ns_config_t *src);

/* Sets one key from text. Unknown key or bad value (not a number, out of
 * bounds, not a boolean, bad enum) -> NS_EINVAL with a message naming the
 * key in err (err may be NULL), e.g. "listenPort: 'abc' is not an integer",
 * "unknown key 'foo'". Keys are case-sensitive. Integers: decimal, optional
 * sign, no blanks. Booleans: "true"/"false", case-insensitive, nothing else.
 * Enums: case-insensitive, stored in canonical lower case. On failure cfg is
 * unchanged. The value is copied. */
int ns_config_set(ns_config_t *cfg, const char *key, const char *value, char *err, size_t errlen);

/* ns_config_set, then whatever the row needs for the value to take effect
 * (its apply hooks: the log threshold for logLevel, ns_config_set_hook). */
int ns_config_update(ns_config_t *cfg, const char *key, const char *value, char *err,
                     size_t errlen);
/* Runs every row's apply hook (at startup, once the settings are read). */
void ns_config_apply_all(const ns_config_t *cfg);
/* What a new value of key does beyond its field, for the layers above the
 * settings code (authMode: the mode every loop reads). Run after the row's
 * own hook by ns_config_update and ns_config_apply_all; one per key, fn NULL
 * removes it. Install before any loop runs. NS_ENOTFOUND for an unknown key. */
typedef void (*ns_config_apply_fn)(const ns_config_t *cfg);
int ns_config_set_hook(const char *key, ns_config_apply_fn fn);
/* True if key is a table entry. */
bool ns_config_has_key(const char *key);
/* Checks a change of key to value while the server runs: the key must be
 * mutable and, for the keys that have them, inside the tighter run-time
 * bounds (a value anyone who may send UPDATE_NAMESRV_CONFIG picks must not
 * disable liveness, the audit history or a safety cap). NS_OK or NS_EINVAL
 * with a message naming the key and the range in err. The value's syntax
 * is ns_config_set's to check. */
int ns_config_check_runtime(const char *key, const char *value, char *err, size_t errlen);
/* Appends the current value of key as text (unescaped). NS_ENOTFOUND for
 * a key that is not a table entry, NS_ENOMEM. */
int ns_config_get_text(const ns_config_t *cfg, const char *key, ns_buf_t *out);
/* Like ns_config_set, but also takes the Java NameServer's keys that have
 * no effect here: *why (static) is then their reason and nothing changes;
 * *why is also set for our keys that Java acts on and we do not
 * (kvConfigPath, ...), which are set normally. NULL otherwise. */
int ns_config_apply(ns_config_t *cfg, const char *key, const char *value, const char **why,
                    char *err, size_t errlen);
/* The reason a Java key has no effect here, or NULL if it is not one
 * (src/daemon/config/config_java.c). */
const char *ns_config_java_ignored(const char *key);
const char *ns_config_noeffect(const char *key);
/* The i-th Java key accepted without effect, NULL past the last. */
const char *ns_config_java_key(size_t i);
/* The key of ours or of Java's closest to key (a typing slip: a few
 * letters off, case ignored), or NULL when none is close. Static. */
const char *ns_config_closest_key(const char *key);
/* "k1, k2 (why); k3 (why)" grouped by reason (whys compared by pointer). */
int ns_config_java_warning(const char *const *keys, const char *const *whys, size_t n,
                           ns_buf_t *out);
/* Appends "  key: why" for every accepted-without-effect key. */
int ns_config_java_list(ns_buf_t *out);
/* True if the setting may change while the server runs (UPDATE_NAMESRV_CONFIG). */
bool ns_config_is_mutable(const char *key);

/* Loads a properties file into cfg (strict: unknown keys are an error naming
 * the key). On success sets cfg->config_file to a copy of path. Errors, with
 * "<path>: <why>" in err (may be NULL): NS_EIO (cannot read), NS_EINVAL (bad
 * key, value or escape), NS_ENOMEM. Settings before the bad line stay
 * applied; callers treat a failure as fatal. */
int ns_config_load_file(ns_config_t *cfg, const char *path, char *err, size_t errlen);

/* Appends all settings as "key=value\n" lines sorted by key (what
 * GET_NAMESRV_CONFIG returns and -p prints). Secrets (tls.server.keyPassword)
 * are left out. Booleans true/false, integers
 * decimal; in strings '\\', newline, CR, tab and form feed are escaped
 * (\\, \n, \r, \t, \f) and so is a leading space ("\ "), so the text
 * parses back to the same values. NULL strings are omitted. NS_ENOMEM. */
int ns_config_dump(const ns_config_t *cfg, ns_buf_t *out);

/* Rewrites the settings file at path for the changed pairs, keeping the
 * operator's file: each line that sets a changed key gets the new value in
 * place (every such line, since the last one wins on reading), keys the
 * file lacks are appended, every other line (comments, blank lines, order,
 * unchanged keys, secrets) stays byte for byte. Atomic and durable as
 * ns_config_write_text, and the new file keeps the old one's mode (0640 for
 * a new file: it may hold tls.server.keyPassword); the old content becomes
 * path.bak after the generations before it move down (path.bak ->
 * path.bak.1 ... path.bak.<backups-1>, the oldest dropped), each with the
 * file's mode; backups = 0 keeps none. Values are written escaped
 * (ns_properties_append_escaped). Any thread (touches no ns_config_t).
 * NS_EIO (errno set), NS_EINVAL (the file does not parse), NS_ENOMEM; on
 * failure path is untouched. */
int ns_config_rewrite_file(const char *path, const ns_strpairs_t *changes, int64_t backups);

/* Appends --help text generated from the table, in table order, one line
 * per key: "  --key=META  help (default: X; min..max)". NS_ENOMEM. */
int ns_config_help(ns_buf_t *out);
/* The same table as man(7) paragraphs, one ".TP" per key, with whether it
 * changes while running and whether it is Java's key (the settings section
 * of namesrvd.8, generated at build time). NS_ENOMEM. */
int ns_config_help_roff(ns_buf_t *out);

/* Java's tls.config.file: when cfg->tls_config_file names a readable file,
 * its tls.server.* / tls.protocols / tls.ciphers keys override cfg (as
 * TlsHelper.extractTlsConfigFromFile does); other keys in it (the client's,
 * tls.test.mode.enable) are ignored. A missing file is not an error (NS_OK,
 * *loaded false). NS_EINVAL / NS_EIO with "<path>: <why>" in err. */
int ns_config_load_tls_file(ns_config_t *cfg, bool *loaded, char *err, size_t errlen);

#endif
