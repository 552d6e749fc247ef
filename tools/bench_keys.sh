#!/usr/bin/env bash
# bench_keys.sh - instructions per route-table lookup in LMDB itself, with
# the keys namesrvd uses (topic names) and with issue 31's lever (8-byte
# hashes of the names under MDB_INTEGERKEY), from 100 to 1M topics: what
# the lever would take off a lookup before anyone builds it (the store's
# migration, the collision rule, listing order) (docs/performance.md); and
# the names found by the lookup path's own descent (store/tree_walk.h, what
# namesrvd's lookups use) instead of mdb_get.
#
#   tools/bench_keys.sh [--sizes 100,10000,100000,1000000] [--count N]
#
# For each size and key shape nskeysbench fills a scratch LMDB with 300-byte
# values in a scattered order, then callgrind counts its measure_lookups()
# over N scattered lookups (default 20000). Output: one markdown table.
# Needs valgrind, cmake.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

SIZES="100,10000,100000,1000000"
COUNT=20000
ns_args "--sizes=SIZES --count=COUNT" "$@"
ns_need valgrind cmake
ns_build_release "$ROOT" "$RELEASE_DIR" nskeysbench
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nskeys.XXXXXX bench_keys.sh

per_lookup() { # dir topics shape -> instructions per lookup
    "$RELEASE_DIR/nskeysbench" "$1" "$2" "$3" 10 >/dev/null # fill, untimed
    valgrind --tool=callgrind --toggle-collect=measure_lookups \
        --callgrind-out-file="$WORK/cg.out" "$RELEASE_DIR/nskeysbench" "$1" "$2" "$3" "$COUNT" \
        2>"$WORK/vg.txt" >"$WORK/shape.txt"
    local ir
    ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$WORK/vg.txt")
    echo $((ir / COUNT))
}

echo "| topics | names, mdb_get: instr/lookup | hashed, mdb_get | saved | names, the descent (walk) | saved | tree (names / hashed) |"
echo "|---|---|---|---|---|---|---|"
for n in ${SIZES//,/ }; do
    row=()
    for shape in names hashed walk; do
        mkdir -p "$WORK/$n-$shape"
        row+=("$(per_lookup "$WORK/$n-$shape" "$n" "$shape")")
        shapes+=("$(sed 's/.*: depth \([0-9]*\), \([0-9]*\) branch + \([0-9]*\) leaf.*/depth \1, \2+\3 pages/' "$WORK/shape.txt")")
        rm -rf "${WORK:?}/$n-$shape"
    done
    echo "| $n | ${row[0]} | ${row[1]} | $((row[0] - row[1])) ($(((row[0] - row[1]) * 100 / row[0])) %) |" \
        "${row[2]} | $((row[0] - row[2])) ($(((row[0] - row[2]) * 100 / row[0])) %) | ${shapes[-3]} / ${shapes[-2]} |"
done
