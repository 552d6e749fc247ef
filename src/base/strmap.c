/* strmap.c - open addressing with linear probing and backward-shift delete. */
#include "ns/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/hash.h"

static uint64_t hash(const char *s)
{
    return ns_hash_str(s); /* keyed SipHash-1-3 (ns/hash.h) */
}

static size_t find(const ns_strmap_t *m, const char *key)
{
    size_t mask = m->cap - 1, i = (size_t)hash(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

void *ns_strmap_get(const ns_strmap_t *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = find(m, key);
    return m->keys[i] ? m->vals[i] : NULL;
}

static int grow(ns_strmap_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    ns_strmap_t n = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(void *)), cap, 0};
    if (n.keys == NULL || n.vals == NULL) {
        free(n.keys);
        free(n.vals);
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == NULL)
            continue;
        size_t j = find(&n, m->keys[i]);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
        n.len++;
    }
    free(m->keys);
    free(m->vals);
    *m = n;
    return NS_OK;
}

int ns_strmap_put(ns_strmap_t *m, const char *key, void *val)
{
    if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != NS_OK)
        return NS_ENOMEM;
    size_t i = find(m, key);
    if (m->keys[i] == NULL) {
        m->keys[i] = strdup(key);
        if (m->keys[i] == NULL)
            return NS_ENOMEM;
        m->len++;
    }
    m->vals[i] = val;
    return NS_OK;
}

void *ns_strmap_del(ns_strmap_t *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1, i = find(m, key);
    if (m->keys[i] == NULL)
        return NULL;
    void *old = m->vals[i];
    free(m->keys[i]);
    m->keys[i] = NULL;
    m->len--;
    /* Backward shift: re-place the following cluster members. */
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        char *k = m->keys[j];
        void *v = m->vals[j];
        m->keys[j] = NULL;
        size_t t = find(m, k);
        m->keys[t] = k;
        m->vals[t] = v;
    }
    return old;
}

void ns_strmap_each(const ns_strmap_t *m, void (*fn)(const char *key, void *val, void *ctx),
                    void *ctx)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            fn(m->keys[i], m->vals[i], ctx);
}

void ns_strmap_clear(ns_strmap_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
