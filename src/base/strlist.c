/* strlist.c - a growable list of owned strings (include/ns/strlist.h). */
#include <stdlib.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/strlist.h"

int ns_strlist_add(ns_strlist_t *l, const char *s)
{
    char **v = ns_array_grow(l->v, l->n, sizeof *v);
    if (v == NULL)
        return NS_ENOMEM;
    l->v = v;
    if ((l->v[l->n] = strdup(s)) == NULL)
        return NS_ENOMEM;
    l->n++;
    return NS_OK;
}

void ns_strlist_free(ns_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
