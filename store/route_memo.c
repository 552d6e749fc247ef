/* route_memo.c - the memo's life: made, kept or forgotten at each renew, judged
 * (route_memo.h). */
#include <stdlib.h>

#include "route_memo.h"

ns_route_memo_t *ns_route_memo_new(size_t slots)
{
    size_t n = 1;
    while (n <= slots / 2)
        n *= 2;
    ns_route_memo_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->slots = calloc(n, sizeof *m->slots); /* gen 0: empty */
    if (m->slots == NULL) {
        free(m);
        return NULL;
    }
    m->mask = n - 1;
    m->gen = 1;
    return m;
}

void ns_route_memo_free(ns_route_memo_t *m)
{
    if (m == NULL)
        return;
    free(m->slots);
    free(m);
}

void ns_route_memo_renewed(ns_route_memo_t *m, uint64_t txnid, uint64_t map_moves)
{
    if (txnid == m->txnid && map_moves == m->map_moves && m->gen > 1)
        return;
    m->txnid = txnid;
    m->map_moves = map_moves;
    if (++m->gen == 0) { /* after 4 billion snapshots: empty them for real */
        memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
        m->gen = 1;
    }
}

void ns_route_memo_judge(ns_route_memo_t *m)
{
    if (m->hits < m->seen / 4)
        m->skip = NS_ROUTE_MEMO_SKIP;
    m->seen = 0;
    m->hits = 0;
}
