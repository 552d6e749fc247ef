/* route_memo.h - a memo of the routes one reusable read transaction looked
 * up in its current snapshot (issue 31).
 *
 * A lookup of the routes table is a B-tree descent (tree_walk.h): 600
 * instructions at 100 topics, 1,400 at a million (900 and 2,000 through
 * mdb_get), most of what a lookup costs beyond the frame and the reply.
 * Within one snapshot a topic's route does not change, and the value LMDB
 * returned stays where it is in the map until the transaction is reset, so
 * a lookup of a topic seen before in the same snapshot can take the value
 * from here: the same bytes, still read inside the LMDB read transaction,
 * lock-free. The loops reset their transaction
 * at the end of every iteration and renew it for the next; when the renewed
 * one has the same transaction id (no write committed meanwhile) and the map
 * was not resized (it may move then), it is the same snapshot on the same pages:
 * no writer touches the pages of the last committed snapshot, it writes
 * only pages free in it. Any other renew forgets every entry (a new
 * generation), so nothing outlives the snapshot it came from.
 *
 * Direct-mapped, one cache line per slot holding the topic (up to
 * NS_ROUTE_MEMO_KEY_MAX bytes; longer ones are not kept), the value's place
 * and length, and the generation it was stored in. The slot index is an
 * unkeyed mix of the name's first and last 8 bytes and its length: names
 * crafted to share a slot only make their lookups miss, and a memo that
 * misses is switched off (below), so a peer can cost it nothing but the
 * tree descent it would have paid anyway.
 *
 * Judged every NS_ROUTE_MEMO_WINDOW lookups: under one hit in 4 (topics
 * looked up evenly among many more than the slots) the memo is bypassed for
 * the next NS_ROUTE_MEMO_SKIP lookups, then judged again. In instructions a
 * miss (~60) is paid back from one hit in 16, but each miss also writes a
 * slot's cache line among the route pages the lookups need in cache: at
 * 100k topics looked up evenly (16 % hits in 16,384 slots) the memo left on
 * cost ~15 % of server CPU per lookup in tools/bench.sh. */
#ifndef NS_ROUTE_MEMO_H
#define NS_ROUTE_MEMO_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

#define NS_ROUTE_MEMO_KEY_MAX 47
#define NS_ROUTE_MEMO_WINDOW 4096u
#define NS_ROUTE_MEMO_SKIP (15u * NS_ROUTE_MEMO_WINDOW)

typedef struct {
    const void *val; /* in the map, valid while the snapshot of gen is */
    uint32_t vlen;
    uint32_t gen; /* 0: empty */
    uint8_t klen;
    char key[NS_ROUTE_MEMO_KEY_MAX];
} ns_route_memo_slot_t;

struct ns_route_memo {
    ns_route_memo_slot_t *slots;
    size_t mask;
    uint32_t gen;        /* the current snapshot's */
    uint64_t txnid;      /* the snapshot's LMDB transaction id */
    uint64_t map_moves;  /* the store's resizes when it was taken */
    uint32_t seen, hits; /* in the current window */
    uint32_t skip;       /* lookups left to bypass */
};

/* A memo of slots entries (rounded down to a power of two; at least 1), or
 * NULL when out of memory. Freed with ns_route_memo_free. */
ns_route_memo_t *ns_route_memo_new(size_t slots);
void ns_route_memo_free(ns_route_memo_t *m);
/* A renewed transaction's snapshot: its id and how often the store's map
 * was resized (each may move it). The entries stay when both are the same
 * as the last snapshot's; otherwise every entry is forgotten. */
void ns_route_memo_renewed(ns_route_memo_t *m, uint64_t txnid, uint64_t map_moves);
/* The end of a window: keep going, or bypass for a while. */
void ns_route_memo_judge(ns_route_memo_t *m);

static inline size_t ns_route_memo_index(const ns_route_memo_t *m, const char *k, size_t n)
{
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, k, 8);
        memcpy(&b, k + n - 8, 8);
    } else {
        memcpy(&a, k, n);
    }
    /* names often differ only in their last bytes, the top of b: folded
     * down before and after the multiply */
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b ^ n;
    h ^= h >> 32;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return (size_t)h & m->mask;
}

/* True with *v set when key is in the memo. Otherwise *fill is the slot to
 * give the value once it is found (ns_route_memo_fill), or NULL when the
 * memo is bypassed or the key too long to keep. */
static inline bool ns_route_memo_find(ns_route_memo_t *m, const MDB_val *key, MDB_val *v,
                                      ns_route_memo_slot_t **fill)
{
    *fill = NULL;
    if (m->skip) {
        m->skip--;
        return false;
    }
    if (key->mv_size > NS_ROUTE_MEMO_KEY_MAX)
        return false;
    ns_route_memo_slot_t *s = &m->slots[ns_route_memo_index(m, key->mv_data, key->mv_size)];
    if (++m->seen == NS_ROUTE_MEMO_WINDOW)
        ns_route_memo_judge(m);
    if (s->gen == m->gen && s->klen == key->mv_size &&
        memcmp(s->key, key->mv_data, key->mv_size) == 0) {
        m->hits++;
        v->mv_data = (void *)s->val;
        v->mv_size = s->vlen;
        return true;
    }
    *fill = s;
    return false;
}

static inline void ns_route_memo_fill(ns_route_memo_t *m, ns_route_memo_slot_t *s,
                                      const MDB_val *key, const MDB_val *v)
{
    if (v->mv_size > UINT32_MAX)
        return;
    s->val = v->mv_data;
    s->vlen = (uint32_t)v->mv_size;
    s->gen = m->gen;
    s->klen = (uint8_t)key->mv_size;
    memcpy(s->key, key->mv_data, key->mv_size);
}

#endif
