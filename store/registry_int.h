/* registry_int.h - what the registry's files share inside store/ (the
 * public API is in include/ns/store.h). */
#ifndef NS_REGISTRY_INT_H
#define NS_REGISTRY_INT_H

#include "ns/store.h"

/* Topics whose route must be re-encoded, in marking order and possibly
 * repeated: NUL-terminated names back to back in `names`, found by offset
 * (the arena moves as it grows). Sorted and deduplicated at flush time;
 * cheaper than a hash set when one registration marks 10,000 topics. */
typedef struct {
    ns_buf_t names;
    size_t *offs;
    size_t n;
} dirty_t;

struct ns_registry {
    dirty_t dirty;
    ns_route_scratch_t scratch;
};

/* Adds topic to the batch's dirty set (its route is re-encoded before the
 * commit). NS_OK or NS_ENOMEM. */
int ns_registry_mark(ns_registry_t *r, const char *topic);
/* Marks every topic that has queue data for broker_name. */
int ns_registry_mark_broker(ns_registry_t *r, ns_txn_t *t, const char *broker_name);
bool ns_queue_data_eq(const ns_queue_data_t *a, const ns_queue_data_t *b);
/* The 905 for group g whose smallest id is now g->addrs[0]: offline and ha
 * as the header carries them (NULL = absent); recipients every member but
 * the smallest one, or all when skip_min is false. *out is heap or NULL. */
int ns_registry_minid_change(const ns_group_rec_t *g, const char *offline, const char *ha,
                             bool skip_min, ns_minid_change_t **out);

/* A registration's topic changes, as JSON lists for the audit record. */
typedef struct {
    ns_buf_t added, changed, removed;
    size_t n_added, n_changed, n_removed;
} audit_diff_t;

/* Appends {topic, queue numbers, old} to list (at most AUDIT_MAX_LISTED
 * are written; *n counts them all). */
int ns_audit_list_add(ns_buf_t *list, size_t *n, const char *topic, const ns_topic_config_t *tc,
                      const ns_queue_data_t *old);
void ns_audit_diff_free(audit_diff_t *d);
/* Writes the history record of registration a (old: the previous
 * DataVersion, NULL for a first registration) and trims the history. */
int ns_audit_write(ns_txn_t *t, const ns_register_args_t *a, const ns_dataversion_t *old,
                   audit_diff_t *d);

#endif
