/* registry.h - route mutations (PROTOCOL.md §6), run by the writer thread
 * inside its batch transaction. Every mutation marks the topics whose route
 * it changes; before the batch commits, ns_registry_before_commit re-encodes
 * exactly those routes in the same transaction (store/keys.h invariant I7).
 *
 * Inputs are captured on the loop thread (including the settings that steer
 * the algorithm), so nothing here reads mutable configuration.
 */
#ifndef NS_REGISTRY_H
#define NS_REGISTRY_H

#include "ns/model.h"
#include "ns/store.h"

typedef struct ns_registry ns_registry_t;

/* A registry owns the per-batch dirty-topic set; ns_registry_free(). */
int ns_registry_new(ns_registry_t **out);
void ns_registry_free(ns_registry_t *r);

/* Writer hooks (ctx is the registry). */
int ns_registry_before_commit(void *ctx, ns_txn_t *txn);
void ns_registry_batch_reset(void *ctx);

typedef struct {
    const char *cluster;
    const char *addr;
    const char *broker_name;
    int64_t broker_id;
    const char *ha_addr;
    const char *zone_name;       /* NULL when the header has no __ZONE_NAME */
    int64_t heartbeat_timeout_ms;
    bool enable_acting_master;
    bool old_version;            /* no enableActingMaster header: a 4.x broker */
    bool delete_absent_topics;   /* deleteTopicWithBrokerRegistration */
    int64_t now_ms;              /* wall clock, for the audit history */
    int64_t audit_retention;     /* history records kept in all */
    const ns_regbody_t *body;
} ns_register_args_t;

typedef struct {
    bool failed;        /* §6.2 step 7: answer "register broker failed" */
    bool conflict;      /* §6.2 step 6: stale stateVersion, answered without master */
    bool dv_changed;
    char *master_addr;  /* heap, NULL when none (ns_register_result_free) */
    char *ha_addr;
} ns_register_result_t;

void ns_register_result_free(ns_register_result_t *res);

/* §6.2 registration algorithm. */
int ns_registry_register(ns_registry_t *r, ns_txn_t *t, const ns_register_args_t *a,
                         ns_register_result_t *res);

/* True when registering a would change nothing in the store (read-only
 * check used to answer unchanged re-registrations without the writer). On
 * true, *res holds the reply (master/ha addresses). */
bool ns_registry_unchanged(ns_txn_t *t, const ns_register_args_t *a, ns_register_result_t *res);

/* §6.5 unregistration of (cluster, addr); broker_name may be NULL (then the
 * stored record names it). Unknown brokers are a no-op. broker_id >= 0 fences
 * the removal: if the group now maps addr under another id (a slave promoted
 * to master at the same address since the unregister was decided), the
 * request is stale and nothing is removed (Apache RocketMQ #5374, #11043).
 * *removed tells whether anything was removed. */
int ns_registry_unregister(ns_registry_t *r, ns_txn_t *t, const char *cluster, const char *addr,
                           const char *broker_name, int64_t broker_id, bool *removed);

/* §3.10: wipe (add=false) or add write permission; *count topics touched. */
int ns_registry_write_perm(ns_registry_t *r, ns_txn_t *t, const char *broker_name, bool add,
                           int *count);

/* §3.11: cluster NULL or "" = everywhere. */
int ns_registry_delete_topic(ns_registry_t *r, ns_txn_t *t, const char *topic,
                             const char *cluster);

/* §3.12 REGISTER_TOPIC_IN_NAMESRV. */
int ns_registry_register_topic(ns_registry_t *r, ns_txn_t *t, const char *topic,
                               const ns_queue_data_t *q, size_t n);

/* Marks every stored topic dirty (used after restore and by migrations). */
int ns_registry_mark_all(ns_registry_t *r, ns_txn_t *t);

#endif
