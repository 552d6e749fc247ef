/* strmap.h - a small open-addressing hash map from strings to pointers.
 * Hand-written because none of the project's Debian libraries (libuv, LMDB,
 * cJSON, zlib) offers one. Keys are copied; values are the caller's. */
#ifndef NS_STRMAP_H
#define NS_STRMAP_H

#include <stddef.h>

typedef struct {
    char **keys;
    void **vals;
    size_t cap; /* power of two or 0 */
    size_t len;
} ns_strmap_t;

#define NS_STRMAP_INIT                                                                             \
    {                                                                                              \
        NULL, NULL, 0, 0                                                                           \
    }

/* Value for key or NULL. */
void *ns_strmap_get(const ns_strmap_t *m, const char *key);
/* Inserts or replaces; returns NS_OK or NS_ENOMEM. */
int ns_strmap_put(ns_strmap_t *m, const char *key, void *val);
/* Removes key (values are not freed); returns the old value or NULL. */
void *ns_strmap_del(ns_strmap_t *m, const char *key);
/* Calls fn on every entry (order unspecified). */
void ns_strmap_each(const ns_strmap_t *m, void (*fn)(const char *key, void *val, void *ctx),
                    void *ctx);
/* Frees the keys and the table (not the values); m becomes empty. */
void ns_strmap_clear(ns_strmap_t *m);

#endif
