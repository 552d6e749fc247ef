/* regbody_build.c - the builder behind the RegisterBrokerBody decoders
 * (regbody_build.h): growing arrays, an open-addressing name index for
 * duplicate topics and mappings, freeing a decoded body and dropping the
 * records whose names fail the name rules (include/ns/body.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/body.h"
#include "ns/err.h"
#include "ns/hash.h"
#include "ns/names.h"
#include "regbody_build.h"

static uint64_t hash_name(const char *s)
{
    return ns_hash_str(s); /* keyed: a broker cannot aim names at one slot */
}

static const char *topic_key(const ns_regbody_t *b, size_t i)
{
    return b->topics[i].topic_name;
}

static const char *mapping_key(const ns_regbody_t *b, size_t i)
{
    return b->mappings[i].topic;
}

typedef const char *(*key_fn)(const ns_regbody_t *, size_t);

/* Returns the slot for name: either holding its position or empty. */
static size_t *index_slot(const ns_rbuild_index_t *x, const ns_regbody_t *b, key_fn key,
                          const char *name)
{
    size_t mask = x->n_slots - 1;
    for (size_t i = (size_t)hash_name(name) & mask;; i = (i + 1) & mask) {
        size_t *s = &x->slots[i];
        if (*s == 0 || strcmp(key(b, *s - 1), name) == 0)
            return s;
    }
}

/* Makes room in the index, which holds the first `count` records, for
 * want + 1 records (load factor <= 1/2). */
static int index_reserve(ns_rbuild_index_t *x, const ns_regbody_t *b, key_fn key, size_t count,
                         size_t want)
{
    if ((want + 1) * 2 <= x->n_slots)
        return NS_OK;
    size_t n = x->n_slots ? x->n_slots * 2 : 64;
    while ((want + 1) * 2 > n)
        n *= 2;
    ns_rbuild_index_t nx = {calloc(n, sizeof(size_t)), n};
    if (nx.slots == NULL)
        return NS_ENOMEM;
    for (size_t i = 0; i < count; i++)
        *index_slot(&nx, b, key, key(b, i)) = i + 1;
    free(x->slots);
    *x = nx;
    return NS_OK;
}

/* Makes room in the index of count records for one more. */
static int index_grow(ns_rbuild_index_t *x, const ns_regbody_t *b, key_fn key, size_t count)
{
    return index_reserve(x, b, key, count, count);
}

/* Returns arr (of *cap elements of size sz) grown to hold at least need
 * elements, or NULL (arr untouched) when out of memory. */
static void *grow(void *arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return arr;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / sz)
        return NULL;
    void *p = realloc(arr, n * sz);
    if (p != NULL)
        *cap = n;
    return p;
}

/* Adds a topic; takes ownership of t->topic_name in every case. */
int ns_rbuild_add_topic(ns_rbuild_t *bd, ns_topic_config_t *t)
{
    ns_regbody_t *b = bd->b;
    int rc = index_grow(&bd->topic_idx, b, topic_key, b->n_topics);
    ns_topic_config_t *arr = NULL;
    if (rc == NS_OK &&
        (arr = grow(b->topics, &bd->cap_topics, b->n_topics + 1, sizeof *arr)) == NULL)
        rc = NS_ENOMEM;
    if (rc != NS_OK) {
        free(t->topic_name);
        return rc;
    }
    b->topics = arr;
    size_t *slot = index_slot(&bd->topic_idx, b, topic_key, t->topic_name);
    if (*slot != 0) {
        ns_topic_config_t *old = &b->topics[*slot - 1];
        free(t->topic_name);
        t->topic_name = old->topic_name;
        *old = *t;
        return NS_OK;
    }
    b->topics[b->n_topics] = *t;
    *slot = ++b->n_topics;
    return NS_OK;
}

/* Sizes the topic array and its name index for the topicCount a compressed
 * body declares, instead of growing and re-hashing them 14 times for 10,000
 * topics. The count is untrusted: at most PRESIZE_MAX is reserved up front,
 * a larger body grows as usual. */
#define PRESIZE_MAX 65536
int ns_rbuild_presize_topics(ns_rbuild_t *bd, size_t count)
{
    ns_regbody_t *b = bd->b;
    size_t n = count < PRESIZE_MAX ? count : PRESIZE_MAX;
    if (n <= bd->cap_topics)
        return NS_OK;
    ns_topic_config_t *arr = grow(b->topics, &bd->cap_topics, n, sizeof *arr);
    if (arr == NULL)
        return NS_ENOMEM;
    b->topics = arr;
    return index_reserve(&bd->topic_idx, b, topic_key, b->n_topics, n);
}

void ns_rbuild_mapping_free(ns_mapping_info_t *m)
{
    free((char *)m->topic);
    free((char *)m->bname);
    free((char *)m->scope);
    free((ns_id_pair_t *)m->curr_id_map);
    memset(m, 0, sizeof *m);
}

/* Adds a mapping keyed by m->topic; takes ownership of m's memory. */
int ns_rbuild_add_mapping(ns_rbuild_t *bd, ns_mapping_info_t *m)
{
    ns_regbody_t *b = bd->b;
    int rc = index_grow(&bd->mapping_idx, b, mapping_key, b->n_mappings);
    ns_mapping_info_t *arr = NULL;
    if (rc == NS_OK &&
        (arr = grow(b->mappings, &bd->cap_mappings, b->n_mappings + 1, sizeof *arr)) == NULL)
        rc = NS_ENOMEM;
    if (rc != NS_OK) {
        ns_rbuild_mapping_free(m);
        return rc;
    }
    b->mappings = arr;
    size_t *slot = index_slot(&bd->mapping_idx, b, mapping_key, m->topic);
    if (*slot != 0) {
        ns_mapping_info_t *old = &b->mappings[*slot - 1];
        const char *topic = old->topic;
        old->topic = NULL;
        ns_rbuild_mapping_free(old);
        free((char *)m->topic);
        m->topic = topic;
        *old = *m;
        return NS_OK;
    }
    b->mappings[b->n_mappings] = *m;
    *slot = ++b->n_mappings;
    return NS_OK;
}

/* Adds a filter server; takes ownership of s. */
int ns_rbuild_add_server(ns_rbuild_t *bd, char *s)
{
    ns_regbody_t *b = bd->b;
    char **arr = grow(b->filter_servers, &bd->cap_servers, b->n_filter_servers + 1, sizeof *arr);
    if (arr == NULL) {
        free(s);
        return NS_ENOMEM;
    }
    b->filter_servers = arr;
    b->filter_servers[b->n_filter_servers++] = s;
    return NS_OK;
}

void ns_rbuild_done(ns_rbuild_t *bd)
{
    free(bd->topic_idx.slots);
    free(bd->mapping_idx.slots);
    bd->topic_idx.slots = NULL;
    bd->mapping_idx.slots = NULL;
}

void ns_regbody_free(ns_regbody_t *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n_topics; i++)
        free(b->topics[i].topic_name);
    free(b->topics);
    for (size_t i = 0; i < b->n_filter_servers; i++)
        free(b->filter_servers[i]);
    free(b->filter_servers);
    for (size_t i = 0; i < b->n_mappings; i++)
        ns_rbuild_mapping_free(&b->mappings[i]);
    free(b->mappings);
    memset(b, 0, sizeof *b);
}

size_t ns_regbody_drop_bad_names(ns_regbody_t *b, char *first, size_t first_size)
{
    size_t dropped = 0, kept = 0;
    if (first_size)
        first[0] = 0;
    for (size_t i = 0; i < b->n_topics; i++) {
        ns_topic_config_t *t = &b->topics[i];
        const char *why = ns_name_problem(t->topic_name, strlen(t->topic_name));
        if (why == NULL) {
            b->topics[kept++] = *t;
            continue;
        }
        if (dropped++ == 0 && first_size) {
            char shown[48];
            snprintf(first, first_size, "topic \"%s\" %s (%zu bytes)",
                     ns_escape(t->topic_name, strlen(t->topic_name),
                               NS_ESC_BACKSLASH | NS_ESC_QUOTE, shown, sizeof shown),
                     why, strlen(t->topic_name));
        }
        free(t->topic_name);
    }
    b->n_topics = kept;
    kept = 0;
    for (size_t i = 0; i < b->n_mappings; i++) {
        ns_mapping_info_t *m = &b->mappings[i];
        if (ns_name_problem(m->topic, strlen(m->topic)) == NULL &&
            ns_name_problem(m->bname, strlen(m->bname)) == NULL &&
            (m->scope == NULL || ns_utf8_valid(m->scope, strlen(m->scope)))) {
            b->mappings[kept++] = *m;
            continue;
        }
        if (dropped++ == 0 && first_size)
            snprintf(first, first_size,
                     "a static-topic mapping with an invalid topic, bname or scope");
        ns_rbuild_mapping_free(m);
    }
    b->n_mappings = kept;
    return dropped;
}
