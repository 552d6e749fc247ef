/* doc.h - reading and validating the JSON documents namesrvctl writes into
 * a store: a dump document (restore) and a Java kvConfig.json
 * (import-kvconfig). Validation covers the WHOLE input before anything is
 * written: JSON syntax (line and column), types, required members,
 * duplicates, and every cross reference the store's invariants need
 * (store/keys.h I2-I5, I8). The first problem is reported in err as
 * "<JSON path>: <what>", e.g. "$.topics.T[0].brokerName: unknown broker 'x'".
 */
#ifndef NS_CTL_DOC_H
#define NS_CTL_DOC_H

#include <stddef.h>

#include <cJSON.h>

#include "ns/strmap.h"
#include "ns/model.h"
#include "ns/store.h"

/* The validated document. Strings are borrowed from the cJSON tree (root),
 * which outlives the records; the arrays are ours. Zero-initialise, then
 * ctl_doc_load() or ctl_kvconfig_load(); free with ctl_doc_free() in every
 * case. */
typedef struct {
    const char *cluster, *broker;
    size_t idx; /* position in $.clusters.<cluster> */
} ctl_member_t;

typedef struct {
    const char *topic;
    ns_queue_data_t q;
} ctl_queue_t;

typedef struct {
    cJSON *root;
    ctl_member_t *members;
    size_t n_members;
    ns_group_rec_t *groups;
    size_t n_groups;
    ns_live_rec_t *regs;
    size_t n_regs;
    ctl_queue_t *queues;
    size_t n_queues, n_topics;
    ns_mapping_info_t *maps;
    size_t n_maps;
    cJSON *kv, *audit; /* validated sections, written as they are */
    cJSON *users;      /* validated $.users (doc_users.c), or NULL */
    size_t n_users;
    size_t n_kv_ns, n_kv_keys;
    ns_strmap_t group_idx; /* broker name -> index + 1 */
    ns_strmap_t member_set, reg_set;
    char err[1024];
} ctl_doc_t;

/* Parses and validates a dump document (text NUL-terminated, len bytes).
 * CTL_OK, or CTL_INVALID with the first problem in d->err. */
int ctl_doc_load(ctl_doc_t *d, const char *text, size_t len);
/* Parses and validates a kvConfig.json ({"configTable":{ns:{key:value}}},
 * docs/protocol.md §7.2; null values are counted in *n_null and skipped).
 * *table borrows from d->root. CTL_OK or CTL_INVALID (d->err). */
int ctl_kvconfig_load(ctl_doc_t *d, const char *text, size_t len, const cJSON **table, size_t *n_ns,
                      size_t *n_keys, size_t *n_null);
void ctl_doc_free(ctl_doc_t *d);

/* ---- the users section (doc_users.c) ---- */
/* Appends every user of the store, secret included, to arr; counts in *n. */
int ctl_dump_users(ns_txn_t *t, cJSON *arr, size_t *n);
/* Validates $.users (optional) into d->users. CTL_OK or CTL_INVALID (d->err). */
int ctl_doc_users_load(ctl_doc_t *d);
/* Writes the validated users in t. NS_* code. */
int ctl_doc_users_put(ns_txn_t *t, ctl_doc_t *d);

#endif
