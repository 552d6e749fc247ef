/* broker_life.h - how brokers leave the liveness table (broker_life.c).
 * Main loop only. */
#ifndef NS_BROKER_LIFE_H
#define NS_BROKER_LIFE_H

#include "core/liveness.h"
#include "core/request.h"

/* Brokers registered over a closed connection (the main loop's on_closed
 * hook) and expired brokers are unregistered through the writer, fenced by
 * the generation they were decided for; at shutdown a closed connection is
 * only forgotten. */
void ns_broker_conn_closed(ns_loop_t *loop, ns_conn_t *conn);
void ns_broker_scan(ns_server_t *srv);
/* Seeds the liveness table from the store, each entry on grace. */
int ns_broker_restore(ns_server_t *srv);
/* Counts the liveness entries restored (from the store, or a seed) that
 * have not registered since, into srv->unconfirmed (what NS_SEED_PAGE
 * tells a peer about to seed from this server). O(entries). */
void ns_broker_count_unconfirmed(ns_server_t *srv);
/* Marks e evicting and queues its unregistration (nobody to answer); why is a
 * static string for the log, evict an NS_M_EVICT_* counter. On failure the
 * entry is put back for the next scan. */
void ns_broker_unregister(ns_server_t *srv, ns_live_entry_t *e, const char *why, int evict);
/* The write that unregisters (cluster, addr, broker_name, broker_id), for
 * the caller to submit (ns_wreq_submit, or ns_req_submit for a request);
 * why (static) and evict as above, evict -1 for UNREGISTER_BROKER. NULL
 * when out of memory (logged). */
ns_wreq_t *ns_broker_unregister_new(const char *cluster, const char *addr, const char *broker_name,
                                    int64_t broker_id, const char *why, int evict);
/* The notifier's member check (notify.h): whether the store's group
 * `group` maps some id to addr now. ctx is the main loop's server. */
bool ns_broker_is_member(void *ctx, const char *group, const char *addr);
/* Hands a change of a group's smallest broker id to the notifier when
 * notifyMinBrokerIdChanged is on (Java reads the setting at the same point:
 * after the tables changed); *change is taken either way and set to NULL. */
void ns_broker_notify_minid(ns_server_t *srv, ns_minid_change_t **change);

#endif
