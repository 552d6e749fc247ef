/* codes.h - RocketMQ request, response and language codes, each from one
 * X-macro list so that numbers, names and tables never drift apart. */
#ifndef NS_CODES_H
#define NS_CODES_H

#include <stddef.h>

/* Request codes the NameServer serves (docs/protocol.md §3.1). X(name, value)
 * 9700..9703 are ours (user management, src/daemon/cmd/cmd_users.c), and
 * 9710 (the fleet digest, include/ns/fleet.h), 9711 (kvSync, include/ns/kvsync.h)
 * and 9712 (seedFromPeers, include/ns/seed.h): a range no RocketMQ
 * RequestCode uses (its highest are 3xxx and 2000xx). */
#define NS_REQUEST_CODE_MAP(X)                                                                     \
    X(PUT_KV_CONFIG, 100)                                                                          \
    X(GET_KV_CONFIG, 101)                                                                          \
    X(DELETE_KV_CONFIG, 102)                                                                       \
    X(REGISTER_BROKER, 103)                                                                        \
    X(UNREGISTER_BROKER, 104)                                                                      \
    X(GET_ROUTEINFO_BY_TOPIC, 105)                                                                 \
    X(GET_BROKER_CLUSTER_INFO, 106)                                                                \
    X(WIPE_WRITE_PERM_OF_BROKER, 205)                                                              \
    X(GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206)                                                     \
    X(DELETE_TOPIC_IN_NAMESRV, 216)                                                                \
    X(REGISTER_TOPIC_IN_NAMESRV, 217)                                                              \
    X(GET_KVLIST_BY_NAMESPACE, 219)                                                                \
    X(GET_TOPICS_BY_CLUSTER, 224)                                                                  \
    X(GET_SYSTEM_TOPIC_LIST_FROM_NS, 304)                                                          \
    X(GET_UNIT_TOPIC_LIST, 311)                                                                    \
    X(GET_HAS_UNIT_SUB_TOPIC_LIST, 312)                                                            \
    X(GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, 313)                                                     \
    X(UPDATE_NAMESRV_CONFIG, 318)                                                                  \
    X(GET_NAMESRV_CONFIG, 319)                                                                     \
    X(QUERY_DATA_VERSION, 322)                                                                     \
    X(ADD_WRITE_PERM_OF_BROKER, 327)                                                               \
    X(GET_BROKER_MEMBER_GROUP, 901)                                                                \
    X(BROKER_HEARTBEAT, 904)                                                                       \
    X(NOTIFY_MIN_BROKER_ID_CHANGE, 905)                                                            \
    X(NS_USER_ADD, 9700)                                                                           \
    X(NS_USER_UPDATE, 9701)                                                                        \
    X(NS_USER_DELETE, 9702)                                                                        \
    X(NS_USER_LIST, 9703)                                                                          \
    X(NS_FLEET_DIGEST, 9710)                                                                       \
    X(NS_KV_SYNC_GET, 9711)                                                                        \
    X(NS_SEED_PAGE, 9712)

enum {
#define NS_REQ_ENUM(name, value) NS_REQ_##name = value,
    NS_REQUEST_CODE_MAP(NS_REQ_ENUM)
#undef NS_REQ_ENUM
};

/* Response codes (docs/protocol.md §2). X(name, value) */
#define NS_RESPONSE_CODE_MAP(X)                                                                    \
    X(SUCCESS, 0)                                                                                  \
    X(SYSTEM_ERROR, 1)                                                                             \
    X(SYSTEM_BUSY, 2)                                                                              \
    X(REQUEST_CODE_NOT_SUPPORTED, 3)                                                               \
    X(NO_PERMISSION, 16)                                                                           \
    X(TOPIC_NOT_EXIST, 17)                                                                         \
    X(QUERY_NOT_FOUND, 22)                                                                         \
    X(INVALID_PARAMETER, 29)                                                                       \
    X(GO_AWAY, 1500)

enum {
#define NS_RSP_ENUM(name, value) NS_RSP_##name = value,
    NS_RESPONSE_CODE_MAP(NS_RSP_ENUM)
#undef NS_RSP_ENUM
};

/* Language codes (docs/protocol.md §1.7). X(name, byte) */
#define NS_LANGUAGE_MAP(X)                                                                         \
    X(JAVA, 0)                                                                                     \
    X(CPP, 1)                                                                                      \
    X(DOTNET, 2)                                                                                   \
    X(PYTHON, 3)                                                                                   \
    X(DELPHI, 4)                                                                                   \
    X(ERLANG, 5)                                                                                   \
    X(RUBY, 6)                                                                                     \
    X(OTHER, 7)                                                                                    \
    X(HTTP, 8)                                                                                     \
    X(GO, 9)                                                                                       \
    X(PHP, 10)                                                                                     \
    X(OMS, 11)                                                                                     \
    X(RUST, 12)                                                                                    \
    X(NODE_JS, 13)

enum {
#define NS_LANG_ENUM(name, value) NS_LANG_##name = value,
    NS_LANGUAGE_MAP(NS_LANG_ENUM)
#undef NS_LANG_ENUM
};

/* Version ordinals used by the NameServer (docs/protocol.md §1.8). */
#define NS_VERSION_V3_0_11 37
#define NS_VERSION_V4_9_4 401
#define NS_VERSION_V5_0_0 413
#define NS_VERSION_V5_3_3 479

/* Name of a request code, or NULL if the NameServer does not serve it. */
const char *ns_request_code_name(int code);
/* Name of a response code, or NULL. */
const char *ns_response_code_name(int code);
/* Language name for a byte ("JAVA"), or NULL when unknown. */
const char *ns_language_name(int code);
/* Language byte for a name; OTHER (7) when unknown. */
int ns_language_code(const char *name, size_t len);

#endif
