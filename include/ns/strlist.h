/* strlist.h - a growable list of owned strings in insertion order (base
 * floor): the topics a store walk collects before it changes them, the
 * names a topic-list reply gathers. */
#ifndef NS_STRLIST_H
#define NS_STRLIST_H

#include <stddef.h>

typedef struct {
    char **v;
    size_t n;
} ns_strlist_t;

#define NS_STRLIST_INIT                                                                            \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/* Appends a heap copy of s. NS_OK, or NS_ENOMEM with l as it was. */
int ns_strlist_add(ns_strlist_t *l, const char *s);
/* Frees every string and the array; l is empty again. */
void ns_strlist_free(ns_strlist_t *l);

#endif
