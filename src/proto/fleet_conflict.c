/* fleet_conflict.c - broker identity conflicts between servers, read from
 * the broker differences of a fleet diff (ns_fleet_conflicts in
 * include/ns/fleet.h).
 *
 * brokerConflict finds, within one server, a brokerName in two clusters,
 * an address under two broker names, and two addresses for one
 * brokerName/brokerId. Across servers each can hold one side only: server
 * a has broker-a in cluster C1, server b has it in C2. Each rule is a key
 * and the choices each server holds for it (rule brokerName: key the
 * brokerName, choices its clusters), from the differing leaves: a choice
 * found on every server is not among the differences and cannot make a
 * conflict. A key is in conflict when two servers each hold a choice the
 * other does not (neither view contains the other); a server that only
 * lacks a registration the other has (a partial registration) is a
 * difference, not a conflict. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/buf.h"
#include "ns/err.h"
#include "ns/fleet.h"

enum { R_CLUSTER, R_NAME, R_ADDR, RULES };
/* The conflict's leaf: what differs for the key. */
static const char *const rule_leaf[RULES] = {"clusterName", "brokerName", "brokerAddr"};

typedef struct {
    int rule;
    char *key;     /* the conflict's item (heap) */
    char *choice;  /* (heap) */
    uint64_t mask; /* the servers holding it */
} fact_t;

typedef struct {
    fact_t *v;
    size_t n;
} facts_t;

static int fact_add(facts_t *f, int rule, char *key, char *choice, uint64_t mask)
{
    fact_t *g = key && choice ? ns_array_grow(f->v, f->n, sizeof *f->v) : NULL;
    if (g == NULL) {
        free(key);
        free(choice);
        return NS_ENOMEM;
    }
    f->v = g;
    f->v[f->n++] = (fact_t){rule, key, choice, mask};
    return NS_OK;
}

/* "prefix" + [s, s+n) as a heap string; NULL on ENOMEM. */
static char *join(const char *prefix, const char *s, size_t n)
{
    size_t p = strlen(prefix);
    char *out = malloc(p + n + 1);
    if (out) {
        memcpy(out, prefix, p);
        memcpy(out + p, s, n);
        out[p + n] = 0;
    }
    return out;
}

/* The brokerId in an "addr" leaf's value; false when it has none. */
static bool broker_id(const char *json, long long *id)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "brokerId");
    bool ok = cJSON_IsNumber(v);
    if (ok)
        *id = (long long)v->valuedouble;
    cJSON_Delete(j);
    return ok;
}

/* The facts of one broker difference. */
static int facts_of(facts_t *f, const ns_fleet_diff_t *d, size_t n_servers)
{
    uint64_t mask = 0;
    for (size_t s = 0; s < n_servers; s++)
        mask |= (uint64_t)(d->values[s] != NULL) << s;
    const char *name = d->item + d->cluster_len + 1;
    if (strcmp(d->leaf, "member") == 0)
        return fact_add(f, R_CLUSTER, join("brokerName ", name, strlen(name)),
                        join("", d->item, d->cluster_len), mask);
    if (strncmp(d->leaf, "addr ", 5) != 0)
        return NS_OK;
    const char *addr = d->leaf + 5;
    int rc = fact_add(f, R_NAME, join("brokerAddr ", addr, strlen(addr)),
                      join("", name, strlen(name)), mask);
    for (size_t s = 0; rc == NS_OK && s < n_servers; s++) {
        long long id;
        char idkey[64];
        if (!broker_id(d->values[s], &id))
            continue;
        snprintf(idkey, sizeof idkey, " brokerId %lld", id);
        char *key = join(d->item, idkey, strlen(idkey));
        rc = fact_add(f, R_ADDR, key, join("", addr, strlen(addr)), (uint64_t)1 << s);
    }
    return rc;
}

static int cmp_fact(const void *a, const void *b)
{
    const fact_t *x = a, *y = b;
    if (x->rule != y->rule)
        return x->rule - y->rule;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->choice, y->choice);
}

/* Whether two of the choices v[0..n) of one key are each held by a server
 * that does not hold the other. */
static bool in_conflict(const fact_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if ((v[i].mask & ~v[j].mask) && (v[j].mask & ~v[i].mask))
                return true;
    return false;
}

/* The first fact after i of another key (f sorted). */
static size_t key_end(const facts_t *f, size_t i)
{
    size_t j = i + 1;
    while (j < f->n && f->v[j].rule == f->v[i].rule && strcmp(f->v[j].key, f->v[i].key) == 0)
        j++;
    return j;
}

/* Appends the conflict of key v[0].key with choices v[0..n) to r. */
static int add_conflict(ns_fleet_report_t *r, const fact_t *v, size_t n)
{
    ns_fleet_diff_t *x = ns_fleet_report_append(r, NS_FLEET_CONFLICT);
    if (x == NULL)
        return NS_ENOMEM;
    x->item = strdup(v[0].key);
    x->leaf = strdup(rule_leaf[v[0].rule]);
    x->values = calloc(r->n_servers, sizeof *x->values);
    int rc = x->item && x->leaf && x->values ? NS_OK : NS_ENOMEM;
    for (size_t s = 0; rc == NS_OK && s < r->n_servers; s++) {
        ns_buf_t b = NS_BUF_INIT;
        for (size_t i = 0; rc == NS_OK && i < n; i++) {
            if (!(v[i].mask >> s & 1))
                continue;
            rc = ns_buf_append_str(&b, b.len ? "," : "[");
            rc = rc ? rc : ns_buf_append_json_str(&b, v[i].choice, strlen(v[i].choice), true);
        }
        rc = rc || b.len == 0 ? rc : ns_buf_append_str(&b, "]");
        if (rc == NS_OK && b.len && (x->values[s] = ns_buf_strdup(&b)) == NULL)
            rc = NS_ENOMEM;
        ns_buf_free(&b);
    }
    r->items[NS_FLEET_CONFLICT]++;
    return rc;
}

int ns_fleet_conflicts(ns_fleet_report_t *r)
{
    facts_t f = {NULL, 0};
    size_t n_diffs = r->n;
    int rc = NS_OK;
    for (size_t i = 0; rc == NS_OK && i < n_diffs; i++)
        if (r->d[i].kind == NS_FLEET_BROKER)
            rc = facts_of(&f, &r->d[i], r->n_servers);
    if (rc == NS_OK && f.n > 1)
        qsort(f.v, f.n, sizeof *f.v, cmp_fact);
    size_t w = 0; /* the same choice of a key, once, its servers together */
    for (size_t i = 0; rc == NS_OK && i < f.n; i++) {
        if (w > 0 && cmp_fact(&f.v[w - 1], &f.v[i]) == 0) {
            f.v[w - 1].mask |= f.v[i].mask;
            free(f.v[i].key);
            free(f.v[i].choice);
        } else {
            f.v[w++] = f.v[i];
        }
    }
    if (rc == NS_OK)
        f.n = w;
    for (size_t i = 0, j; rc == NS_OK && i < f.n; i = j) {
        j = key_end(&f, i);
        if (in_conflict(&f.v[i], j - i))
            rc = add_conflict(r, &f.v[i], j - i);
    }
    for (size_t i = 0; i < f.n; i++) {
        free(f.v[i].key);
        free(f.v[i].choice);
    }
    free(f.v);
    return rc;
}
