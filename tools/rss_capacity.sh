#!/usr/bin/env bash
# rss_capacity.sh - namesrvd's peak RSS at the capacity topology (issue 31's
# memory figure), for one build or several side by side, rounds alternating:
# the server (syncMode full, pinned) is set up with 1,000 brokers and 20,000
# topics by one nsbench (timed until every registration is answered), then
# serves 3 s of lookups (64 connections, depth 8) from another; VmHWM,
# RssAnon and RssFile come from /proc/PID/status, the store's size and free
# pages from mdb_stat, the resident size of each mapping from pmap (the LMDB
# map, the heap, the shared libraries).
#
#   tools/rss_capacity.sh [--rounds N] [--builds DIR,DIR...] [--detail]
#                         [--server-args '...']
#
# Default: one build, ROOT/build-release (built here), 3 rounds. --detail
# adds each table's pages (mdb_stat -a) and the mappings over 100 KiB of
# the last round; --server-args are added to every namesrvd's arguments
# (e.g. '--writerBatchMax=16'). Output: one line per round and build, then the mean per
# build in MiB (docs/performance.md, "Memory"). Needs mdb_stat, pmap.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

ROUNDS=3
BUILDS=""
DETAIL=0
SERVER_ARGS=""
ns_args "--rounds=ROUNDS --builds=BUILDS --detail:DETAIL --server-args=SERVER_ARGS $NS_PIN_OPTS" "$@"
ns_need mdb_stat pmap
ns_builds_default
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsrss.XXXXXX rss_capacity.sh

status() { # pid -> "VmHWM RssAnon RssFile" in kB
    awk '/^(VmHWM|RssAnon|RssFile):/ { v = v sep $2; sep = " " } END { print v }' "/proc/$1/status"
}

one_run() { # build round
    local b=$1 d="$WORK/run$2" port pid setup
    mkdir -p "$d"
    taskset -c "$SRV_CPU" "$b/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 \
        --portFile="$d/port" --dataDir="$d/data" --syncMode=full $SERVER_ARGS >"$d/log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    ns_wait_file "$d/port" 300
    port=$(cat "$d/port")
    taskset -c "$CLI_CPU" "$b/nsbench" --ns "127.0.0.1:$port" --mode setup --setup-brokers 1000 \
        --setup-topics 20000 --hold 120 --ready-file "$d/ready" >"$d/setup.log" 2>&1 &
    setup=$!
    PIDS+=("$setup")
    local t0 t1
    t0=$(date +%s%N)
    for _ in $(seq 6000); do [ -e "$d/ready" ] && break; sleep 0.02; done
    [ -e "$d/ready" ] || { echo "rss_capacity.sh: set-up not done" >&2; exit 1; }
    t1=$(date +%s%N)
    taskset -c "$CLI_CPU" "$b/nsbench" --ns "127.0.0.1:$port" --no-setup --setup-brokers 1000 \
        --setup-topics 20000 --conns 64 --depth 8 --duration 3 >"$d/lookups.log" 2>&1
    local s free used
    s=$(status "$pid")
    used=$(mdb_stat -e "$d/data" | awk '/Number of pages used/ { print $5 }')
    free=$(mdb_stat -ef "$d/data" | awk '/Free pages:/ { print $3 }')
    printf '%s round %s: VmHWM/RssAnon/RssFile kB %s data.mdb %s B, pages used %s, free %s, set-up %s ms\n' \
        "$b" "$2" "$s" "$(stat -c %s "$d/data/data.mdb")" "$used" "$free" "$(((t1 - t0) / 1000000))"
    if [ "$DETAIL" = 1 ]; then
        mdb_stat -a "$d/data" | awk '/^Status of/ { t = $3 } /Leaf pages|Overflow pages/ {
            p[t] += $3 } END { for (t in p) if (p[t]) printf "  table %s: %d pages\n", t, p[t] }'
        pmap -x "$pid" | awk '$1 ~ /^0000/ { m = $NF == "]" ? "[anon]" : $NF; r[m] += $3 } END { for (m in r) if (r[m] > 100)
            printf "  mapping %s: %d kB resident\n", m, r[m] }' | sort -t: -k2 -n -r
    fi
    kill "$setup" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$d"
}

ns_rounds "$ROUNDS" "$BUILDS" one_run
awk '/round/ { s[$1] += $6; t[$1] += $(NF - 1); n[$1]++ } END {
    for (b in s) printf "%s: peak RSS %.1f MiB, set-up %d ms (means of %d)\n", b,
        s[b] / n[b] / 1024, t[b] / n[b], n[b] }' \
    "$WORK/all.txt"
