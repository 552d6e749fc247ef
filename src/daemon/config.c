/* config.c - NameServer settings from one declarative table (include/ns/config.h).
 *
 * Every setting is one row of ns_config_table[]: key (RocketMQ's name where
 * RocketMQ has the setting), type, offset of its field in ns_config_t,
 * default as text, bounds, enum values, flags and a one-line help. Defaults,
 * the properties file, --key=value, GET/UPDATE_NAMESRV_CONFIG, -p and --help
 * all walk the table; no code below knows a setting by name. Adding a
 * setting = one field in ns_config_t + one row here.
 *
 * Value syntax (ns_config_set), the same everywhere:
 *   INT64   decimal, optional sign, inside [min, max]
 *   BOOL    "true" or "false", case-insensitive. Java's Boolean.parseBoolean
 *           turns anything else into false; we refuse it instead.
 *   STRING  any text (also empty), stored as a heap copy
 *   ENUM    one of the row's values, case-insensitive, stored canonical
 * Defaults go through the same parser after ${VAR} expansion (environment;
 * ${HOME} falls back to the passwd entry), so a row whose default breaks its
 * own bounds makes ns_config_init fail. A failed set leaves cfg unchanged.
 *
 * Properties text is parsed by ns_properties_parse (src/base/properties.c).
 *
 * Dump escaping (ns_config_dump): only what our parser and Java's need to
 * read the value back unchanged: '\\' -> "\\\\", newline -> "\\n", CR -> "\\r",
 * tab -> "\\t", form feed -> "\\f", and a space as the first character ->
 * "\\ ". Keys are plain identifiers and never escaped; non-ASCII stays raw.
 */
#include "ns/config.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/err.h"
#include "ns/log.h"
#include "auth.h"

typedef enum { CFG_INT64, CFG_BOOL, CFG_STRING, CFG_ENUM } cfg_type_t;

#define CFG_MUTABLE 0x1u /* may change while running (UPDATE_NAMESRV_CONFIG) */
#define CFG_OURS 0x2u    /* our setting; RocketMQ has no such key */
#define CFG_SECRET 0x4u  /* left out of GET_NAMESRV_CONFIG and -p */

typedef struct {
    const char *key;
    cfg_type_t type;
    size_t offset;             /* of the field in ns_config_t */
    const char *def;           /* default as text; ${VAR} expanded at init */
    int64_t min, max;          /* CFG_INT64 only */
    const char *const *values; /* CFG_ENUM only: NULL-terminated */
    unsigned flags;
    const char *help;
    /* Makes a new value take effect beyond the field (NULL: reading the
     * field is enough); run by ns_config_update and ns_config_apply_all. */
    void (*apply)(const ns_config_t *cfg);
    /* CFG_MUTABLE integers: the bounds a change while running must keep
     * (ns_config_check_runtime), tighter than [min, max] where a value set
     * by anyone who can send UPDATE_NAMESRV_CONFIG would disable liveness or
     * the audit history; 0/0 = [min, max]. */
    int64_t rt_min, rt_max;
} cfg_entry_t;

/* offsetof that refuses to compile unless the field has type T. */
#define SLOT(field, T) _Generic(((ns_config_t *)0)->field, T : offsetof(ns_config_t, field))

#define ROW_INT(key, field, def, min, max, flags, help)                                            \
    {                                                                                              \
        key, CFG_INT64, SLOT(field, int64_t), def, min, max, NULL, flags, help, NULL, 0, 0         \
    }
/* A mutable integer with tighter bounds for changes while running. */
#define ROW_INT_RT(key, field, def, min, max, rt_min, rt_max, flags, help)                         \
    {                                                                                              \
        key, CFG_INT64, SLOT(field, int64_t), def, min, max, NULL, flags, help, NULL, rt_min,      \
            rt_max                                                                                 \
    }
#define ROW_BOOL(key, field, def, flags, help)                                                     \
    {                                                                                              \
        key, CFG_BOOL, SLOT(field, bool), def, 0, 0, NULL, flags, help, NULL, 0, 0                 \
    }
#define ROW_STR(key, field, def, flags, help)                                                      \
    {                                                                                              \
        key, CFG_STRING, SLOT(field, char *), def, 0, 0, NULL, flags, help, NULL, 0, 0             \
    }
#define ROW_ENUM(key, field, def, values, flags, help)                                             \
    {                                                                                              \
        key, CFG_ENUM, SLOT(field, char *), def, 0, 0, values, flags, help, NULL, 0, 0             \
    }
#define ROW_ENUM_APPLY(key, field, def, values, flags, help, apply)                                \
    {                                                                                              \
        key, CFG_ENUM, SLOT(field, char *), def, 0, 0, values, flags, help, apply, 0, 0            \
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

/* Every loop reads the mode through ns_auth_mode() (atomic). */
static void apply_auth_mode(const ns_config_t *cfg)
{
    ns_auth_mode_t m;
    if (ns_auth_mode_parse(cfg->auth_mode, &m) == NS_OK)
        ns_auth_set_mode(m);
}

static const cfg_entry_t ns_config_table[] = {
    /* network */
    ROW_STR("bindAddress", bind_address, "0.0.0.0", 0, "address to listen on"),
    ROW_INT("listenPort", listen_port, "9876", 0, 65535, 0,
            "TCP port to listen on; 0 = any free port (see portFile)"),
    ROW_STR("portFile", port_file, "", CFG_OURS,
            "write the bound port to this file; empty = don't"),
    ROW_STR("httpListen", http_listen, "", CFG_OURS,
            "HOST:PORT of the HTTP endpoint (/metrics, /healthz, /readyz, /brokers); "
            "empty = off; port 0 = any free port (see httpPortFile)"),
    ROW_STR("httpPortFile", http_port_file, "", CFG_OURS,
            "write the HTTP endpoint's bound port to this file; empty = don't"),
    ROW_INT("maxFrameBytes", max_frame_bytes, "16777216", 1024, GiB, CFG_OURS,
            "largest remoting frame accepted, bytes"),
    ROW_INT_RT("serverChannelMaxIdleTimeSeconds", idle_timeout_s, "120", 0, INT32_MAX, 60,
               INT32_MAX, CFG_MUTABLE,
               "close connections idle this long, seconds; 0 = never (while running: at least "
               "60, so broker connections are never closed between their 30 s heartbeats)"),
    ROW_INT("ioThreads", io_threads, "1", 1, 64, CFG_OURS,
            "event loops serving connections (route lookups run on all of them; "
            "every other request on the first)"),
    ROW_INT("ioBacklogBytes", io_backlog_bytes, "8388608", 65536, 1 * GiB, CFG_OURS,
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
    ROW_STR("tls.server.keyPassword", tls_server_key_password, "", CFG_SECRET,
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
            CFG_OURS, "close a connection whose TLS handshake or PROXY header is not done by then"),
    ROW_STR("proxyProtocolTrustedAddresses", proxy_protocol_trusted, "", CFG_OURS,
            "peers allowed to send a PROXY protocol v1/v2 header: comma-separated IPs/CIDRs, "
            "* = any (Java), empty = none"),
    /* store */
    ROW_STR("dataDir", data_dir, "./data", CFG_OURS, "directory of the store"),
    ROW_ENUM("syncMode", sync_mode, "full", sync_modes, CFG_OURS,
             "fsync policy: full, nometasync (skip meta page), nosync (never)"),
    ROW_INT("mapSizeBytes", map_size_bytes, "67108864", MiB, INT64_MAX, CFG_OURS,
            "initial store map size, bytes"),
    ROW_INT("mapMaxBytes", map_max_bytes, "17179869184", MiB, INT64_MAX, CFG_OURS,
            "hard limit for store map growth, bytes"),
    ROW_INT("writerBatchMax", writer_batch_max, "64", 1, 1000000, CFG_OURS,
            "most mutations committed in one write transaction"),
    ROW_INT_RT("auditRetention", audit_retention, "1000", 0, INT64_MAX, 100, 100000000,
               CFG_OURS | CFG_MUTABLE,
               "audit history records kept in all (oldest dropped first; while running: "
               "100..100000000, so the history never stops recording)"),
    /* registration */
    ROW_INT("maxInflateBytes", max_inflate_bytes, "67108864", 1024, GiB, CFG_OURS,
            "largest inflated (compressed) register body, bytes (a safety cap: file and restart "
            "only)"),
    /* liveness */
    ROW_INT_RT("scanNotActiveBrokerInterval", scan_not_active_broker_interval_ms, "5000", 10,
               INT32_MAX, 1000, 60000, CFG_MUTABLE,
               "broker liveness scan period, ms (while running: 1000..60000, so expiry is "
               "never switched off)"),
    ROW_INT_RT("brokerGraceWindowMillis", broker_grace_window_ms, "120000", 0, INT64_MAX, 0, 600000,
               CFG_OURS | CFG_MUTABLE,
               "after a restart, a stored broker lives unseen for max(this, its own "
               "heartbeatTimeoutMillis), ms (while running: at most 600000)"),
    /* RocketMQ NamesrvConfig */
    ROW_STR("rocketmqHome", rocketmq_home, "${ROCKETMQ_HOME}", 0, "RocketMQ home directory"),
    ROW_STR("kvConfigPath", kv_config_path, "${HOME}/namesrv/kvConfig.json", 0,
            "KV config file (JSON)"),
    ROW_STR("configStorePath", config_store_path, "${HOME}/namesrv/namesrv.properties", 0,
            "settings file UPDATE_NAMESRV_CONFIG rewrites when started without -c"),
    ROW_STR("productEnvName", product_env_name, "center", CFG_MUTABLE,
            "product environment name (cluster-test mode)"),
    ROW_BOOL("clusterTest", cluster_test, "false", CFG_MUTABLE, "cluster-test mode"),
    ROW_BOOL("orderMessageEnable", order_message_enable, "false", CFG_MUTABLE,
             "add orderTopicConf to routes"),
    ROW_BOOL("returnOrderTopicConfigToBroker", return_order_topic_config_to_broker, "true",
             CFG_MUTABLE, "send ORDER_TOPIC_CONFIG to registering brokers"),
    ROW_BOOL("enableAllTopicList", enable_all_topic_list, "true", CFG_MUTABLE,
             "answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
    ROW_BOOL("enableTopicList", enable_topic_list, "true", CFG_MUTABLE,
             "answer the topic-list requests 224, 311, 312, 313"),
    ROW_BOOL("notifyMinBrokerIdChanged", notify_min_broker_id_changed, "false", CFG_MUTABLE,
             "tell brokers when their group's smallest broker id changes"),
    ROW_BOOL("deleteTopicWithBrokerRegistration", delete_topic_with_broker_registration, "false",
             CFG_MUTABLE, "drop topics a broker no longer registers"),
    ROW_BOOL("supportActingMaster", support_acting_master, "false", CFG_MUTABLE,
             "rewrite routes when a slave acts as master"),
    ROW_BOOL("needWaitForService", need_wait_for_service, "false", CFG_MUTABLE,
             "refuse route queries for waitSecondsForService after start"),
    ROW_INT("waitSecondsForService", wait_seconds_for_service, "45", 0, INT32_MAX, CFG_MUTABLE,
            "see needWaitForService, seconds"),
    ROW_STR("configBlackList", config_black_list, "configBlackList;configStorePath;kvConfigPath", 0,
            "';'-separated keys UPDATE_NAMESRV_CONFIG may not change"),
    ROW_INT("unRegisterBrokerQueueCapacity", unregister_broker_queue_capacity, "3000", 1, INT32_MAX,
            0, "pending UNREGISTER_BROKER queue capacity"),
    /* memory budgets over all connections (src/daemon/budget.h); file and restart only */
    ROW_INT("maxConnections", max_connections, "4096", 1, 1000000, CFG_OURS,
            "most client connections open at once; more are closed at accept"),
    ROW_INT("maxUnfinishedFrameBytes", max_unfinished_frame_bytes, "67108864", MiB, 64 * GiB,
            CFG_OURS,
            "bytes held for frames not fully arrived, all connections together; over it the "
            "connections holding the most are closed"),
    ROW_INT("maxUnsentReplyBytes", max_unsent_reply_bytes, "67108864", MiB, 64 * GiB, CFG_OURS,
            "reply bytes the peers have not read yet, all connections together; over it the "
            "connections holding the most are closed"),
    ROW_INT("writerQueueMaxBytes", writer_queue_max_bytes, "33554432", MiB, 64 * GiB, CFG_OURS,
            "bytes of mutations waiting for the writer; at it, connections stop reading writes"),
    ROW_INT("writerQueueMaxOps", writer_queue_max_ops, "10000", 16, 10000000, CFG_OURS,
            "mutations waiting for the writer; at it, connections stop reading writes"),
    /* damage found and survived (src/daemon/backup.c, store/check.c) */
    ROW_BOOL("verifyOnStart", verify_on_start, "true", CFG_OURS,
             "check the whole store in a child process: its roots and edges before serving, "
             "every page and record while serving; a damaged store is refused with exit 4"),
    ROW_BOOL("verifyOnStartBlocking", verify_on_start_blocking, "false", CFG_OURS,
             "with verifyOnStart: finish the whole check before serving (slower restart)"),
    ROW_INT("backupIntervalSeconds", backup_interval_s, "3600", 0, 365 * 86400, CFG_OURS,
            "seconds between compacted hot backups of the store; 0 = none"),
    ROW_STR("backupDir", backup_dir, "", CFG_OURS,
            "directory of the backups (one subdirectory each); empty = <dataDir>.backups"),
    ROW_INT("backupKeep", backup_keep, "3", 1, 1000, CFG_OURS,
            "verified backups kept (the oldest are removed)"),
    /* access control (src/daemon/auth.h) */
    ROW_ENUM_APPLY("authMode", auth_mode, "off", auth_modes, CFG_OURS | CFG_MUTABLE,
                   "signed requests: off (none), writes (broker and admin requests), all (reads "
                   "too)",
                   apply_auth_mode),
    ROW_INT("authPenaltyMaxMillis", auth_penalty_max_ms, "5000", 0, 60000, CFG_OURS | CFG_MUTABLE,
            "longest delay before answering a refusal to an address that keeps failing, ms; "
            "0 = never delay"),
    ROW_STR("authKeyFile", auth_key_file, "", CFG_OURS,
            "file with the 256-bit key (64 hex digits) users' secrets are sealed with in the "
            "store; keep it outside dataDir; empty = secrets stored as they are"),
    /* logging */
    ROW_ENUM_APPLY("logLevel", log_level, "info", log_levels, CFG_OURS | CFG_MUTABLE,
                   "log threshold", apply_log_level),
    ROW_STR("logFile", log_file, "", CFG_OURS,
            "log to this file (SIGHUP reopens it); empty = stderr (journald under systemd)"),
    ROW_INT("logFileMaxBytes", log_file_max_bytes, "104857600", 0, INT64_MAX, CFG_OURS,
            "rotate logFile when it reaches this size, bytes; 0 = never"),
    ROW_INT("logFileKeep", log_file_keep, "10", 0, 1000, CFG_OURS,
            "rotated log files kept (logFile.1 is the newest)"),
    ROW_INT("adminAuditRetention", admin_audit_retention, "100000", 0, INT64_MAX,
            CFG_OURS | CFG_MUTABLE,
            "admin audit trail records kept (oldest dropped first); 0 = no trail"),
};

#define NS_CONFIG_NENTRIES (sizeof ns_config_table / sizeof ns_config_table[0])

/* ---- helpers ---------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const cfg_entry_t *find_entry(const char *key)
{
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++)
        if (strcmp(ns_config_table[i].key, key) == 0)
            return &ns_config_table[i];
    return NULL;
}

static void *slot_of(ns_config_t *cfg, const cfg_entry_t *e)
{
    return (char *)cfg + e->offset;
}

static const void *cslot_of(const ns_config_t *cfg, const cfg_entry_t *e)
{
    return (const char *)cfg + e->offset;
}

/* True if s is an optional sign followed by one or more digits. */
static bool is_decimal(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == 0)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Appends the row's enum values joined by '|'. */
static int append_enum_values(ns_buf_t *out, const cfg_entry_t *e)
{
    for (size_t i = 0; e->values[i]; i++)
        if ((i && ns_buf_append_u8(out, '|') != NS_OK) ||
            ns_buf_append_str(out, e->values[i]) != NS_OK)
            return NS_ENOMEM;
    return NS_OK;
}

/* Replaces the string in *slot with a copy of s. */
static int replace_str(char **slot, const char *s)
{
    char *copy = strdup(s);
    if (copy == NULL)
        return NS_ENOMEM;
    free(*slot);
    *slot = copy;
    return NS_OK;
}

static int set_int(ns_config_t *cfg, const cfg_entry_t *e, const char *value, char *err,
                   size_t errlen)
{
    int64_t v = 0;
    if (!is_decimal(value)) {
        set_err(err, errlen, "%s: '%s' is not an integer", e->key, value);
        return NS_EINVAL;
    }
    if (ns_parse_i64(value, strlen(value), &v) != NS_OK || v < e->min || v > e->max) {
        set_err(err, errlen, "%s: %s is out of range [%lld, %lld]", e->key, value,
                (long long)e->min, (long long)e->max);
        return NS_EINVAL;
    }
    *(int64_t *)slot_of(cfg, e) = v;
    return NS_OK;
}

static int set_bool(ns_config_t *cfg, const cfg_entry_t *e, const char *value, char *err,
                    size_t errlen)
{
    bool *slot = slot_of(cfg, e);
    if (strcasecmp(value, "true") == 0) {
        *slot = true;
    } else if (strcasecmp(value, "false") == 0) {
        *slot = false;
    } else {
        set_err(err, errlen, "%s: '%s' is not a boolean (true or false)", e->key, value);
        return NS_EINVAL;
    }
    return NS_OK;
}

static int set_enum(ns_config_t *cfg, const cfg_entry_t *e, const char *value, char *err,
                    size_t errlen)
{
    ns_buf_t list = NS_BUF_INIT;
    int rc = NS_OK;
    for (size_t i = 0; e->values[i]; i++)
        if (strcasecmp(value, e->values[i]) == 0)
            return replace_str(slot_of(cfg, e), e->values[i]);
    rc = append_enum_values(&list, e);
    if (rc != NS_OK)
        goto cleanup;
    set_err(err, errlen, "%s: '%s' is not one of %s", e->key, value, (const char *)list.data);
    rc = NS_EINVAL;
cleanup:
    ns_buf_free(&list);
    return rc;
}

static int set_entry(ns_config_t *cfg, const cfg_entry_t *e, const char *value, char *err,
                     size_t errlen)
{
    int rc = NS_EINVAL;
    switch (e->type) {
    case CFG_INT64:
        rc = set_int(cfg, e, value, err, errlen);
        break;
    case CFG_BOOL:
        rc = set_bool(cfg, e, value, err, errlen);
        break;
    case CFG_STRING:
        rc = replace_str(slot_of(cfg, e), value);
        break;
    case CFG_ENUM:
        rc = set_enum(cfg, e, value, err, errlen);
        break;
    }
    if (rc == NS_ENOMEM)
        set_err(err, errlen, "%s: out of memory", e->key);
    return rc;
}

/* Value of ${name} in a default: the environment; HOME falls back to the
 * passwd entry (Java's user.home). Borrowed; never NULL. */
static const char *default_var(const char *name)
{
    const char *v = getenv(name);
    if ((v == NULL || *v == 0) && strcmp(name, "HOME") == 0) {
        struct passwd *pw = getpwuid(getuid());
        v = pw ? pw->pw_dir : NULL;
    }
    return v ? v : "";
}

/* Expands ${NAME} in a default into out (NUL-terminated). An unterminated
 * "${" is copied as it is. */
static int expand_default(const char *def, ns_buf_t *out)
{
    char name[64];
    ns_buf_reset(out);
    if (ns_buf_reserve(out, strlen(def)) != NS_OK)
        return NS_ENOMEM;
    out->data[0] = 0;
    for (const char *p = def; *p;) {
        const char *end = strncmp(p, "${", 2) == 0 ? strchr(p + 2, '}') : NULL;
        size_t n = end ? (size_t)(end - p - 2) : 0;
        if (end == NULL || n >= sizeof name) {
            if (ns_buf_append_u8(out, (uint8_t)*p++) != NS_OK)
                return NS_ENOMEM;
            continue;
        }
        memcpy(name, p + 2, n);
        name[n] = 0;
        if (ns_buf_append_str(out, default_var(name)) != NS_OK)
            return NS_ENOMEM;
        p = end + 1;
    }
    return NS_OK;
}

/* ---- settings --------------------------------------------------------- */

int ns_config_init(ns_config_t *cfg)
{
    ns_buf_t text = NS_BUF_INIT;
    int rc = NS_OK;
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        const cfg_entry_t *e = &ns_config_table[i];
        rc = expand_default(e->def, &text);
        if (rc != NS_OK)
            goto cleanup;
        rc = set_entry(cfg, e, (const char *)text.data, NULL, 0);
        if (rc != NS_OK)
            goto cleanup;
    }
cleanup:
    ns_buf_free(&text);
    if (rc != NS_OK)
        ns_config_free(cfg);
    return rc;
}

void ns_config_free(ns_config_t *cfg)
{
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        const cfg_entry_t *e = &ns_config_table[i];
        if (e->type == CFG_STRING || e->type == CFG_ENUM) {
            char **slot = slot_of(cfg, e);
            free(*slot);
            *slot = NULL;
        }
    }
    free(cfg->config_file);
    cfg->config_file = NULL;
    free(cfg->java_warning);
    cfg->java_warning = NULL;
}

void ns_config_copy_scalars(ns_config_t *dst, const ns_config_t *src)
{
    *dst = *src;
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        const cfg_entry_t *e = &ns_config_table[i];
        if (e->type == CFG_STRING || e->type == CFG_ENUM)
            *(char **)slot_of(dst, e) = NULL;
    }
    dst->config_file = NULL;
    dst->java_warning = NULL;
}

int ns_config_set(ns_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    const cfg_entry_t *e = find_entry(key);
    if (e == NULL) {
        set_err(err, errlen, "unknown key '%s'", key);
        return NS_EINVAL;
    }
    return set_entry(cfg, e, value, err, errlen);
}

int ns_config_update(ns_config_t *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    int rc = ns_config_set(cfg, key, value, err, errlen);
    const cfg_entry_t *e = rc == NS_OK ? find_entry(key) : NULL;
    if (e && e->apply)
        e->apply(cfg);
    return rc;
}

void ns_config_apply_all(const ns_config_t *cfg)
{
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++)
        if (ns_config_table[i].apply)
            ns_config_table[i].apply(cfg);
}

static int append_value(ns_buf_t *out, const ns_config_t *cfg, const cfg_entry_t *e);

int ns_config_apply(ns_config_t *cfg, const char *key, const char *value, const char **why,
                    char *err, size_t errlen)
{
    *why = NULL;
    if (find_entry(key) == NULL && (*why = ns_config_java_ignored(key)) != NULL)
        return NS_OK;
    int rc = ns_config_set(cfg, key, value, err, errlen);
    if (rc == NS_OK)
        *why = ns_config_noeffect(key);
    return rc;
}

int ns_config_get_text(const ns_config_t *cfg, const char *key, ns_buf_t *out)
{
    const cfg_entry_t *e = find_entry(key);
    if (e == NULL)
        return NS_ENOTFOUND;
    if ((e->type == CFG_STRING || e->type == CFG_ENUM) && *(char *const *)cslot_of(cfg, e) == NULL)
        return NS_OK;
    if (e->type == CFG_STRING || e->type == CFG_ENUM)
        return ns_buf_append_str(out, *(char *const *)cslot_of(cfg, e));
    return append_value(out, cfg, e);
}

bool ns_config_has_key(const char *key)
{
    return find_entry(key) != NULL;
}

int ns_config_check_runtime(const char *key, const char *value, char *err, size_t errlen)
{
    const cfg_entry_t *e = find_entry(key);
    if (e == NULL || !(e->flags & CFG_MUTABLE)) {
        set_err(err, errlen, "%s cannot change while the server runs", key);
        return NS_EINVAL;
    }
    if (e->type != CFG_INT64 || (e->rt_min == 0 && e->rt_max == 0))
        return NS_OK;
    int64_t v = 0;
    if (ns_parse_i64(value, strlen(value), &v) != NS_OK)
        return NS_OK; /* ns_config_set reports it */
    if (v < e->rt_min || v > e->rt_max) {
        set_err(err, errlen,
                "%s: %lld is outside %lld..%lld, the range allowed while running (other values "
                "only through the settings file and a restart)",
                key, (long long)v, (long long)e->rt_min, (long long)e->rt_max);
        return NS_EINVAL;
    }
    return NS_OK;
}

bool ns_config_is_mutable(const char *key)
{
    const cfg_entry_t *e = find_entry(key);
    return e != NULL && (e->flags & CFG_MUTABLE);
}

/* Appends s escaped for a properties value (rules at the top of the file). */
static int append_escaped(ns_buf_t *out, const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        const char *esc = NULL;
        switch (s[i]) {
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\f':
            esc = "\\f";
            break;
        case ' ':
            esc = i == 0 ? "\\ " : NULL;
            break;
        default:
            break;
        }
        int rc = esc ? ns_buf_append_str(out, esc) : ns_buf_append_u8(out, (uint8_t)s[i]);
        if (rc != NS_OK)
            return rc;
    }
    return NS_OK;
}

/* Appends the current value of e as text (escaped; strings raw otherwise). */
static int append_value(ns_buf_t *out, const ns_config_t *cfg, const cfg_entry_t *e)
{
    const void *slot = cslot_of(cfg, e);
    switch (e->type) {
    case CFG_INT64:
        return ns_buf_append_i64_dec(out, *(const int64_t *)slot);
    case CFG_BOOL:
        return ns_buf_append_str(out, *(const bool *)slot ? "true" : "false");
    case CFG_STRING:
    case CFG_ENUM:
        break;
    }
    return append_escaped(out, *(char *const *)slot);
}

static int cmp_entry_key(const void *a, const void *b)
{
    const cfg_entry_t *ea = *(const cfg_entry_t *const *)a;
    const cfg_entry_t *eb = *(const cfg_entry_t *const *)b;
    return strcmp(ea->key, eb->key);
}

static int dump(const ns_config_t *cfg, ns_buf_t *out, bool secrets)
{
    const cfg_entry_t *sorted[NS_CONFIG_NENTRIES];
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++)
        sorted[i] = &ns_config_table[i];
    qsort(sorted, NS_CONFIG_NENTRIES, sizeof sorted[0], cmp_entry_key);
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        const cfg_entry_t *e = sorted[i];
        bool is_str = e->type == CFG_STRING || e->type == CFG_ENUM;
        if (is_str && *(char *const *)cslot_of(cfg, e) == NULL)
            continue; /* null-valued: omitted, as Java does */
        if ((e->flags & CFG_SECRET) && (!secrets || **(char *const *)cslot_of(cfg, e) == 0))
            continue; /* shown nowhere; written to the file only when set */
        if (ns_buf_append_str(out, e->key) != NS_OK || ns_buf_append_u8(out, '=') != NS_OK ||
            append_value(out, cfg, e) != NS_OK || ns_buf_append_u8(out, '\n') != NS_OK)
            return NS_ENOMEM;
    }
    return NS_OK;
}

int ns_config_dump(const ns_config_t *cfg, ns_buf_t *out)
{
    return dump(cfg, out, false);
}

int ns_config_dump_secrets(const ns_config_t *cfg, ns_buf_t *out)
{
    return dump(cfg, out, true);
}

/* ---- --help ----------------------------------------------------------- */

/* Appends "--key=META" for e. */
static int append_flag(ns_buf_t *out, const cfg_entry_t *e)
{
    static const char *const meta[] = {
        [CFG_INT64] = "INT", [CFG_BOOL] = "BOOL", [CFG_STRING] = "STRING", [CFG_ENUM] = NULL};
    if (ns_buf_printf(out, "--%s=", e->key) != NS_OK)
        return NS_ENOMEM;
    return e->type == CFG_ENUM ? append_enum_values(out, e) : ns_buf_append_str(out, meta[e->type]);
}

int ns_config_help(ns_buf_t *out)
{
    ns_buf_t flag = NS_BUF_INIT;
    size_t width = 0;
    int rc = NS_OK;
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        ns_buf_reset(&flag);
        rc = append_flag(&flag, &ns_config_table[i]);
        if (rc != NS_OK)
            goto cleanup;
        if (flag.len > width)
            width = flag.len;
    }
    for (size_t i = 0; i < NS_CONFIG_NENTRIES; i++) {
        const cfg_entry_t *e = &ns_config_table[i];
        ns_buf_reset(&flag);
        rc = append_flag(&flag, e);
        if (rc != NS_OK)
            goto cleanup;
        rc = ns_buf_printf(out, "  %-*s  %s (default: %s", (int)width, (const char *)flag.data,
                           e->help, *e->def ? e->def : "empty");
        if (rc == NS_OK && e->type == CFG_INT64 && e->max == INT64_MAX)
            rc = ns_buf_printf(out, "; min %lld", (long long)e->min);
        else if (rc == NS_OK && e->type == CFG_INT64)
            rc = ns_buf_printf(out, "; %lld..%lld", (long long)e->min, (long long)e->max);
        if (rc == NS_OK)
            rc = ns_buf_append_str(out, ")\n");
        if (rc != NS_OK)
            goto cleanup;
    }
cleanup:
    ns_buf_free(&flag);
    return rc;
}
