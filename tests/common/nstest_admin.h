/* nstest_admin.h - what the admin-side integration tests share: the admin
 * trail read back with namesrvctl, UPDATE_NAMESRV_CONFIG, plain broker
 * registrations that fill a store, and the name the server gives a client's
 * peer.
 * Need <cmocka.h> (they fail the test on error). */
#ifndef NS_TEST_ADMIN_H
#define NS_TEST_ADMIN_H

#include <stddef.h>

#include <cJSON.h>

#include "nstest.h"
#include "ns/client.h"
#include "ns/model.h"

/* The admin trail of the store under data_dir ("namesrvctl audit --admin
 * --json"), one record per array item; caller deletes with cJSON_Delete. */
cJSON *nstest_admin_trail(const char *data_dir);
/* The first record of request with result ("ok", "refused"...), borrowed
 * from trail; NULL when there is none. */
cJSON *nstest_trail_find(cJSON *trail, const char *request, const char *result);
/* A string of the record's "fields" ("" when absent), borrowed. */
const char *nstest_trail_field(cJSON *rec, const char *key);
/* UPDATE_NAMESRV_CONFIG with props as its body; returns the reply's code. */
int nstest_config_update(ns_client_t *c, const char *props);
/* REGISTER_BROKER of name/addr (cluster C1, id 0) with topics T1 (4/4) and
 * T2 (8/8), DataVersion {1, 0, 1700000000000}; fails unless SUCCESS. */
void nstest_register_two_topics(ns_client_t *c, const char *name, const char *addr);
/* REGISTER_BROKER of broker id 0 with a JSON body holding topics (n of
 * them), DataVersion {1, 0, 1700000000000} and an empty filter-server
 * list; haServerAddr ha. Fails the test unless SUCCESS. */
void nstest_register_topics(ns_client_t *c, const char *cluster, const char *name, const char *addr,
                            const char *ha, ns_topic_config_t *topics, size_t n);
/* PUT_KV_CONFIG of n keys, prefix then the index 0..n-1 zero-padded to
 * width digits (0: as is), in namespace ns, each with value; fails unless
 * each is SUCCESS. */
void nstest_put_keys(ns_client_t *c, const char *ns, const char *prefix, int width, int n,
                     const char *value);
/* The JSON RegisterBrokerBody of topics (n of them) with DataVersion
 * {1, 0, 1700000000000} and an empty filter-server list, into out (reset
 * first); fails the test on error. */
void nstest_regbody_json(ns_buf_t *out, ns_topic_config_t *topics, size_t n);
/* The same with DataVersion {counter, 0, timestamp}. */
void nstest_regbody_version(ns_buf_t *out, ns_topic_config_t *topics, size_t n, int64_t counter,
                            int64_t timestamp);
/* The same for topics named names, each with 4/4 queues and perm 6. */
void nstest_regbody_names(ns_buf_t *out, const char *const *names, size_t n);
/* GET_ROUTEINFO_BY_TOPIC of topic on a new connection to srv: the reply's
 * code. */
int nstest_route_code(const nstest_server_t *srv, const char *topic);
/* "127.0.0.1:PORT" of the client's end, as the server names its peer. */
void nstest_local_name(ns_client_t *c, char *out, size_t n);

#endif
