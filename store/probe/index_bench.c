/* nsindexbench - a route lookup through the routes index (route_index.h)
 * as the store answers it, without the server around it: what one lookup
 * and a read's batch of eight (ns_route_warm, then each ns_route_get) cost
 * when the routes are far larger than the caches, memory stalls and all,
 * no syscalls. A scratch store of TOPICS routes of 250-400 bytes (named as
 * nsbench names them, put in a scattered order through ns_route_put, the
 * index built as namesrvd's writer builds it), then ROUNDS rounds, each of
 * LOOKUPS names drawn evenly, looked up one by one and then in batches of
 * eight; every value is copied out as a reply would copy it, and every
 * lookup must find its route. Built in two trees and run in turn
 * (tools/bench_index.sh), it compares a change of the lookup's read path
 * paired, on the wall clock of one core.
 *
 *   nsindexbench DIR TOPICS LOOKUPS [ROUNDS]
 *
 * Prints ns a lookup each way per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns/err.h"
#include "ns/store.h"
#include "store/probe/bench_routes.h"

#define BATCH 8

static int fill_store(ns_store_t *s, long n)
{
    static uint8_t body[400];
    ns_txn_t *w;
    int rc = ns_txn_begin(s, true, &w);
    for (long i = 0; rc == NS_OK && i < n; i++) {
        char name[NAME_BYTES];
        long t = (i * 7919) % n; /* scattered (n must not be a multiple of 7919) */
        topic_name(name, t);
        size_t len = 250 + (size_t)(t * 7) % 150;
        ns_buf_t std = {body, len, len};
        rc = ns_route_put(w, name, &std, 0, NULL, 0);
        if (rc == NS_OK && (i + 1) % COMMIT_EVERY == 0 && (rc = ns_txn_commit(w)) == NS_OK)
            rc = ns_txn_begin(s, true, &w);
    }
    return rc == NS_OK ? ns_txn_commit(w) : rc;
}

/* The route of keys[i] copied out as a reply would; false when not found. */
static bool look_up(ns_txn_t *txn, const char *key, uint8_t *reply, unsigned *sink)
{
    ns_slice_t out;
    size_t ins;
    bool derive;
    if (ns_route_get(txn, key, true, &out, &ins, &derive) != NS_OK || out.len > 512)
        return false;
    memcpy(reply, out.ptr, out.len);
    *sink ^= reply[out.len - 1];
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nsindexbench DIR TOPICS LOOKUPS [ROUNDS]\n");
        return 2;
    }
    long n = atol(argv[2]), q = atol(argv[3]);
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    if (n < 1 || q < BATCH || rounds < 1 || n % 7919 == 0)
        return 2;
    size_t map = (size_t)n * 1024 + (64u << 20);
    ns_store_opts_t o = {argv[1], map, 2 * map, NS_SYNC_NOSYNC, false, true, 0, 0};
    char err[256];
    ns_store_t *s;
    ns_txn_t *txn;
    char(*keys)[NAME_BYTES];
    size_t *kl;
    if (ns_store_open(&o, &s, err, sizeof err) != NS_OK) {
        fprintf(stderr, "nsindexbench: %s\n", err);
        return 1;
    }
    if (fill_store(s, n) != NS_OK || ns_store_route_index_start(s) != NS_OK ||
        !draw_names(n, q, &keys, &kl)) {
        fprintf(stderr, "nsindexbench: could not fill the store\n");
        return 1;
    }
    ns_store_route_index_refresh(s);
    if (ns_txn_begin(s, false, &txn) != NS_OK)
        return 1;
    static uint8_t reply[512];
    for (int r = 0; r < rounds; r++) {
        long found[2] = {0, 0};
        unsigned sink = 0;
        double t0 = now_s();
        for (long i = 0; i < q; i++)
            found[0] += look_up(txn, keys[i], reply, &sink);
        double t1 = now_s();
        for (long i = 0; i + BATCH <= q; i += BATCH) {
            ns_slice_t batch[BATCH];
            for (int j = 0; j < BATCH; j++)
                batch[j] = (ns_slice_t){(const uint8_t *)keys[i + j], kl[i + j]};
            ns_route_warm(txn, batch, BATCH);
            for (int j = 0; j < BATCH; j++)
                found[1] += look_up(txn, keys[i + j], reply, &sink);
        }
        double t2 = now_s();
        long qb = q - q % BATCH;
        printf("topics %ld round %d: one by one %.1f ns a lookup, batches of %d %.1f ns "
               "(found %ld/%ld, %ld/%ld; %u)\n",
               n, r + 1, (t1 - t0) / (double)q * 1e9, BATCH, (t2 - t1) / (double)qb * 1e9, found[0],
               q, found[1], qb, sink);
        if (found[0] != q || found[1] != qb)
            return 1;
    }
    ns_txn_abort(txn);
    ns_store_route_index_let_go(s);
    ns_store_close(s);
    free(keys);
    free(kl);
    return 0;
}
