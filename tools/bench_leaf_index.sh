#!/usr/bin/env bash
# bench_leaf_index.sh - the route lookup's own descent (store/tree_walk.h)
# against an index of the routes table's leaves (each leaf's first key as
# one 8-byte window, searched with integer compares, then the one leaf by
# the library's step): what such an index would take off a lookup, in
# instructions (callgrind on each lookup loop) and wall clock, before
# namesrvd is built to keep one (docs/performance.md, "The lookup's own
# descent"). Outside the server: nsleafidxbench, a scratch LMDB of TOPICS
# 250-400-byte routes, pinned to one core.
#
#   tools/bench_leaf_index.sh [--sizes 100000,1000000] [--count N] [--cpu C]
#
# Needs cmake, taskset, valgrind (callgrind_annotate).
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

SIZES="100000,1000000"
COUNT=100000
CPU=0
ns_args "--sizes=SIZES --count=COUNT --cpu=CPU" "$@"
ns_need cmake taskset valgrind callgrind_annotate
ns_build_release "$ROOT" "$RELEASE_DIR" nsleafidxbench
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsleafidx.XXXXXX bench_leaf_index.sh

for n in ${SIZES//,/ }; do
    mkdir -p "$WORK/$n"
    taskset -c "$CPU" "$RELEASE_DIR/nsleafidxbench" "$WORK/$n" "$n" $((COUNT * 10))
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.$n" \
        "$RELEASE_DIR/nsleafidxbench" "$WORK/$n" "$n" "$COUNT" >/dev/null 2>&1
    callgrind_annotate --inclusive=yes "$WORK/cg.$n" 2>/dev/null |
        awk -v n="$n" -v q="$COUNT" '/run_tree|run_index/ { gsub(",", "", $1);
            f = $(NF - 1); sub(/.*:/, "", f);
            printf "topics %s: %s %.0f instructions a lookup\n", n, f, $1 / q }'
    rm -rf "${WORK:?}/$n"
done
