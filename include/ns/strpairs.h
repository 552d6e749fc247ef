/* strpairs.h - a growable list of owned string pairs in insertion order
 * (base floor): the keys and values of a KV namespace, the (cluster, broker
 * name) pairs of a cluster table. a[i] and b[i] are the i-th pair. */
#ifndef NS_STRPAIRS_H
#define NS_STRPAIRS_H

#include <stddef.h>

typedef struct {
    char **a, **b;
    size_t n;
} ns_strpairs_t;

#define NS_STRPAIRS_INIT                                                                           \
    {                                                                                              \
        NULL, NULL, 0                                                                              \
    }

/* Appends heap copies of a and of the first b_len bytes of b. NS_ENOMEM
 * when out of memory; the list then may hold a last pair with NULL members,
 * which ns_strpairs_free() still frees. */
int ns_strpairs_add(ns_strpairs_t *l, const char *a, const char *b, size_t b_len);
/* Frees every string and both arrays; l is empty again. */
void ns_strpairs_free(ns_strpairs_t *l);

#endif
