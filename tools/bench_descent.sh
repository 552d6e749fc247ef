#!/usr/bin/env bash
# bench_descent.sh - wall clock of the route lookup's own descent
# (store/tree_walk.h) one key at a time, against batches of keys descended
# level by level with each level's pages of the batch fetched from memory
# together: what overlapping the lookups of one read would take off, before
# namesrvd is built to do it (docs/performance.md, "The lookup's own
# descent"). Outside the server: a scratch LMDB of TOPICS 250-400-byte
# routes, nsdescentbench pinned to one core, three rounds of each way.
#
#   tools/bench_descent.sh [--sizes 100000,1000000] [--count N] [--batch B] [--cpu C]
#
# Needs cmake, taskset. Nanoseconds per lookup; the machine's noise shows
# as the rounds' spread.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

SIZES="100000,1000000"
COUNT=2000000
BATCH=8
CPU=0
ns_args "--sizes=SIZES --count=COUNT --batch=BATCH --cpu=CPU" "$@"
ns_need cmake taskset
ns_build_release "$ROOT" "$RELEASE_DIR" nsdescentbench
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsdescent.XXXXXX bench_descent.sh

for n in ${SIZES//,/ }; do
    mkdir -p "$WORK/$n"
    taskset -c "$CPU" "$RELEASE_DIR/nsdescentbench" "$WORK/$n" "$n" "$COUNT" "$BATCH"
    rm -rf "${WORK:?}/$n"
done
