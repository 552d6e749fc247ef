/* regbody_build.h - building a decoded RegisterBrokerBody (ns_regbody_t),
 * shared by the decoders in regbody.c and implemented in regbody_build.c.
 * Private to the protocol floor (src/proto/).
 *
 * A builder grows the body's arrays and keeps a name index over topics and
 * mappings, so that a later record with the same name replaces the earlier
 * one, as in the Java map. Start with a zeroed ns_rbuild_t whose b points at
 * a zeroed ns_regbody_t; end with ns_rbuild_done() (the body itself stays
 * the caller's, freed with ns_regbody_free()).
 */
#ifndef NS_REGBODY_BUILD_H
#define NS_REGBODY_BUILD_H

#include <stddef.h>

#include "ns/body.h"

/* Open-addressing index from a name to its position in an array of records
 * (topics or mappings), so duplicates are found in O(1): a later record with
 * the same name replaces the earlier one, as in the Java map. */
typedef struct {
    size_t *slots;  /* position + 1; 0 = empty */
    size_t n_slots; /* power of two */
} ns_rbuild_index_t;

/* The decoded body being built, with the capacities of its arrays. */
typedef struct {
    ns_regbody_t *b;
    size_t cap_topics;
    size_t cap_mappings;
    size_t cap_servers;
    ns_rbuild_index_t topic_idx;
    ns_rbuild_index_t mapping_idx;
} ns_rbuild_t;

/* Adds a topic; takes ownership of t->topic_name in every case. */
int ns_rbuild_add_topic(ns_rbuild_t *bd, ns_topic_config_t *t);
/* Reserves room for the topicCount a compressed body declares (untrusted:
 * bounded, a larger body grows as usual). */
int ns_rbuild_presize_topics(ns_rbuild_t *bd, size_t count);
/* Adds a mapping keyed by m->topic; takes ownership of m's memory. */
int ns_rbuild_add_mapping(ns_rbuild_t *bd, ns_mapping_info_t *m);
/* Adds a filter server; takes ownership of s. */
int ns_rbuild_add_server(ns_rbuild_t *bd, char *s);
/* Frees the builder's indexes (not the body). */
void ns_rbuild_done(ns_rbuild_t *bd);
/* Frees the heap members of one mapping and zeroes it. */
void ns_rbuild_mapping_free(ns_mapping_info_t *m);

#endif
