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
#                          [--huge]
#
# Before the rounds the file is dropped from the page cache and read back
# through the map, one byte a page; --huge asks for transparent huge pages
# first (MADV_HUGEPAGE: each fault reads a 2 MiB folio and maps it with one
# page-table entry where the kernel and file system allow; the map's
# FilePmdMapped is printed).
#
# Needs cmake, taskset. Nanoseconds per lookup; the machine's noise shows
# as the rounds' spread.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

SIZES="100000,1000000"
COUNT=2000000
BATCH=8
CPU=0
HUGE=0
ns_args "--sizes=SIZES --count=COUNT --batch=BATCH --cpu=CPU --huge:HUGE" "$@"
ns_need cmake taskset
ns_build_release "$ROOT" "$RELEASE_DIR" nsdescentbench
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsdescent.XXXXXX bench_descent.sh

for n in ${SIZES//,/ }; do
    mkdir -p "$WORK/$n"
    taskset -c "$CPU" "$RELEASE_DIR/nsdescentbench" "$WORK/$n" "$n" "$COUNT" "$BATCH" "$HUGE"
    rm -rf "${WORK:?}/$n"
done
