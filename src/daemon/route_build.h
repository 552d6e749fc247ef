/* route_build.h - assembling a TopicRouteData from the store tables
 * (PROTOCOL.md §6.8) and materialising its encoded forms. */
#ifndef NS_ROUTE_BUILD_H
#define NS_ROUTE_BUILD_H

#include "ns/model.h"
#include "ns/store.h"
#include "src/base/strmap.h"

/* Groups (and their members' filter servers) looked up once per
 * transaction. Valid only for the transaction it was filled in. */
typedef struct {
    ns_strmap_t groups; /* broker name -> struct cached_group * */
} ns_route_cache_t;

void ns_route_cache_init(ns_route_cache_t *c);
void ns_route_cache_free(ns_route_cache_t *c);

struct cached_group;

/* An assembled route: `route` views the arrays below, which the parts own. */
typedef struct {
    ns_route_t route;
    ns_queue_data_t *queues;
    ns_broker_data_t *brokers;
    struct cached_group **groups; /* the cache entry of each of brokers[] */
    ns_filter_entry_t *filters;
    ns_mapping_info_t *mappings;
    size_t n_queues, n_brokers, n_filters, n_mappings;
    char **owned; /* strings and arrays the parts allocated */
    size_t n_owned;
} ns_route_parts_t;

/* Builds the route of topic from txn (§6.8 steps 1-4: queue data, copies of
 * the groups, filter servers, static mappings). NS_ENOTFOUND when the topic
 * has no route (no queue data, or none of its groups exist). On success the
 * caller frees out with ns_route_parts_free(); strings borrow from cache. */
int ns_route_assemble(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                      ns_route_parts_t *out);
void ns_route_parts_free(ns_route_parts_t *p);
/* Hands mem to the parts (freed with them); NS_ENOMEM frees mem at once. */
int ns_route_parts_own(ns_route_parts_t *p, void *mem);

/* Buffers ns_route_materialise reuses from topic to topic. */
typedef struct {
    ns_buf_t std, legacy, derived;
} ns_route_scratch_t;

void ns_route_scratch_free(ns_route_scratch_t *s);

/* Re-encodes the topic's route in both forms and stores it (the legacy form
 * only when it cannot be derived from the standard one), or deletes the
 * stored route when the topic has none. */
int ns_route_materialise(ns_txn_t *txn, ns_route_cache_t *cache, const char *topic,
                         ns_route_scratch_t *s);

#endif
