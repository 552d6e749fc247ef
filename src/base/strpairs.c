/* strpairs.c - a growable list of owned string pairs (include/ns/strpairs.h). */
#include <stdlib.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/strpairs.h"

int ns_strpairs_add(ns_strpairs_t *l, const char *a, const char *b, size_t b_len)
{
    char **na = ns_array_grow(l->a, l->n, sizeof *na);
    if (na)
        l->a = na;
    char **nb = ns_array_grow(l->b, l->n, sizeof *nb);
    if (nb)
        l->b = nb;
    if (!na || !nb)
        return NS_ENOMEM;
    l->a[l->n] = strdup(a);
    l->b[l->n] = strndup(b, b_len);
    l->n++;
    return l->a[l->n - 1] && l->b[l->n - 1] ? NS_OK : NS_ENOMEM;
}

void ns_strpairs_free(ns_strpairs_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->a[i]);
        free(l->b[i]);
    }
    free(l->a);
    free(l->b);
    l->a = l->b = NULL;
    l->n = 0;
}
