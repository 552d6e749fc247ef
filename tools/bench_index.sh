#!/usr/bin/env bash
# bench_index.sh - route lookups through the routes index as the store
# answers them (store/probe/index_bench.c), one core, no server: one by one
# and in batches of eight (ns_route_warm first), on a scratch store far
# larger than the caches, so a change of the lookup's read path shows in
# nanoseconds a lookup without the network's noise. For one build or
# several side by side, rounds alternating; each run fills its own store.
#
#   tools/bench_index.sh [--topics N] [--lookups N] [--rounds N] [--builds DIR,DIR...]
#                        [--cpu C]
#
# Default: 1,000,000 topics, 2,000,000 lookups, 3 rounds, one build,
# ROOT/build-release (built here). Each build directory needs nsindexbench
# (cmake --build DIR --target nsindexbench). Output: each run's line, then
# the median a lookup per build, each way (docs/performance.md).
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

TOPICS=1000000
LOOKUPS=2000000
ROUNDS=3
BUILDS=""
CPU=0
ns_args "--topics=TOPICS --lookups=LOOKUPS --rounds=ROUNDS --builds=BUILDS --cpu=CPU" "$@"
ns_need taskset
if [ -z "$BUILDS" ]; then
    ns_build_release "$ROOT" "$RELEASE_DIR" nsindexbench
    BUILDS=$RELEASE_DIR
fi
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsindex.XXXXXX bench_index.sh

one_run() { # build round: one process, its store filled, two rounds of lookups (the first warms the index's pages)
    local d="$WORK/store"
    rm -rf "$d"
    taskset -c "$CPU" "$1/nsindexbench" "$d" "$TOPICS" "$LOOKUPS" 2 2>/dev/null | tail -1 |
        sed "s|^|$1 run $2: |"
    rm -rf "$d"
}

ns_rounds "$ROUNDS" "$BUILDS" one_run
awk '/ run / { k = $1
        match($0, /one by one [0-9.]+/); one[k] = one[k] " " substr($0, RSTART + 11, RLENGTH - 11)
        match($0, /batches of 8 [0-9.]+/); bat[k] = bat[k] " " substr($0, RSTART + 13, RLENGTH - 13) }
    function median(s,   a, n, i, j, t) { n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { for (k in one) printf "%s: median %.1f ns a lookup one by one, %.1f in batches of 8\n", k, median(one[k]), median(bat[k]) }' \
    "$WORK/all.txt"
