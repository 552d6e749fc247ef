/* model.h - domain records of the NameServer (docs/protocol.md §4, §6.1).
 *
 * These are plain views: unless a function says otherwise, the strings are
 * borrowed from whoever filled the struct. */
#ifndef NS_MODEL_H
#define NS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ns/buf.h"

/* Permission bits (§9.1) and topic system flags (§9.2). */
#define NS_PERM_PRIORITY 8
#define NS_PERM_READ 4
#define NS_PERM_WRITE 2
#define NS_PERM_INHERIT 1
#define NS_TOPIC_FLAG_UNIT 1
#define NS_TOPIC_FLAG_UNIT_SUB 2

#define NS_MASTER_ID 0
#define NS_DEFAULT_HEARTBEAT_TIMEOUT_MS 120000
#define NS_ORDER_TOPIC_CONFIG_NS "ORDER_TOPIC_CONFIG"

/* A broker's topic-config version; equality compares all three (§4.3.1). */
typedef struct {
    int64_t counter;
    int64_t state_version;
    int64_t timestamp;
} ns_dataversion_t;

static inline bool ns_dataversion_equal(const ns_dataversion_t *a, const ns_dataversion_t *b)
{
    return a->counter == b->counter && a->state_version == b->state_version &&
           a->timestamp == b->timestamp;
}

/* One broker group's view of one topic (§4.3.2). */
typedef struct {
    const char *broker_name;
    int32_t perm;
    int32_t read_queue_nums;
    int32_t write_queue_nums;
    int32_t topic_sys_flag;
} ns_queue_data_t;

typedef struct {
    int64_t id;
    const char *addr;
} ns_broker_addr_t;

/* One broker group (§4.3.3). addrs sorted by id ascending. */
typedef struct {
    const char *cluster;
    const char *broker_name;
    const char *zone_name; /* NULL = omitted */
    bool enable_acting_master;
    const ns_broker_addr_t *addrs;
    size_t n_addrs;
} ns_broker_data_t;

/* filterServerTable entry: broker address -> filter server addresses. */
typedef struct {
    const char *broker_addr;
    const char *const *servers;
    size_t n_servers;
} ns_filter_entry_t;

/* logical queue id -> physical queue id */
typedef struct {
    int32_t logical;
    int32_t physical;
} ns_id_pair_t;

/* TopicQueueMappingInfo (§4.3.11), static topics only. */
typedef struct {
    const char *topic;
    const char *bname;
    const char *scope; /* NULL -> "__global__" */
    int32_t total_queues;
    int64_t epoch;
    bool dirty;
    const ns_id_pair_t *curr_id_map;
    size_t n_curr_id_map;
} ns_mapping_info_t;

/* TopicRouteData (§4.3.4), the body of GET_ROUTEINFO_BY_TOPIC. */
typedef struct {
    const ns_broker_data_t *brokers;
    size_t n_brokers;
    const ns_queue_data_t *queues;
    size_t n_queues;
    const ns_filter_entry_t *filters;
    size_t n_filters;
    const char *order_topic_conf;      /* NULL = omitted */
    const ns_mapping_info_t *mappings; /* keyed by mappings[i].bname */
    size_t n_mappings;
    /* Optional: brokers[i] already encoded (ns_json_broker_data_encode) in
     * the form being written; NULL to encode brokers[] afresh. */
    const ns_slice_t *broker_json;
} ns_route_t;

/* A topic config as the NameServer uses it (§4.3.9). */
typedef struct {
    char *topic_name;
    int32_t read_queue_nums;
    int32_t write_queue_nums;
    int32_t perm;
    int32_t topic_sys_flag;
} ns_topic_config_t;

/* A decoded RegisterBrokerBody (§4.3.12, §5). Owns all its memory: every
 * string and array is heap-allocated and released by ns_regbody_free(). The
 * mapping infos' strings and id maps are owned too (cast away const). */
typedef struct {
    ns_dataversion_t data_version;
    ns_topic_config_t *topics;
    size_t n_topics;
    char **filter_servers;
    size_t n_filter_servers;
    bool has_filter_server_list; /* the list was present (possibly empty) */
    ns_mapping_info_t *mappings;
    size_t n_mappings;
    /* Set by the decoder when the body gave no DataVersion timestamp (no
     * body, no dataVersion or no timestamp in it): timestamp is then 0, and
     * Java's `new DataVersion()` would hold the time of the registration,
     * which the caller fills in. */
    bool dv_timestamp_absent;
} ns_regbody_t;

#endif
