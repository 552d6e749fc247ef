#!/usr/bin/env bash
# bench_group_removal.sh - how long the writer takes to remove a broker
# group with many topics (its last address unregistered: every queue data,
# index row, route and digest entry of its topics goes in one transaction),
# for one build or several side by side, rounds alternating: the server
# (pinned) gets one broker with --topics topics from nsbench, which then
# closes its connection; the time is from namesrvd's own log, from "N
# broker(s) to unregister" to "unregistered: its registration connection
# closed" (the commit is done).
#
#   tools/bench_group_removal.sh [--topics N] [--rounds R] [--builds DIR,DIR...]
#
# Default: 200,000 topics, 3 rounds, one build, ROOT/build-release (built
# here). Output: one line per round and build, then the median per build in
# ms (docs/performance.md, "A broker with 200,000 topics").
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

TOPICS=200000
ROUNDS=3
BUILDS=""
ns_args "--topics=TOPICS --rounds=ROUNDS --builds=BUILDS $NS_PIN_OPTS" "$@"
ns_need taskset
ns_builds_default
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsgroup.XXXXXX bench_group_removal.sh

ms_of() { # "2026-12-03T16:26:29.998Z ..." -> ms since midnight
    awk '{ split(substr($1, 12, 12), t, /[:.]/); print ((t[1] * 60 + t[2]) * 60 + t[3]) * 1000 + t[4] }'
}

one_run() { # build round
    local b=$1 d="$WORK/run$2" port pid t0 t1
    mkdir -p "$d"
    taskset -c "$SRV_CPU" "$b/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 \
        --portFile="$d/port" --dataDir="$d/data" --kvConfigPath="$d/kv.json" \
        --configStorePath="$d/ns.properties" >"$d/log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    ns_wait_file "$d/port" 300
    port=$(cat "$d/port")
    taskset -c "$CLI_CPU" "$b/nsbench" --ns "127.0.0.1:$port" --mode setup --setup-brokers 1 \
        --setup-topics "$TOPICS" --conns 1 --hold 1 >"$d/setup.log" 2>&1
    for _ in $(seq 600); do
        grep -q "unregistered: its registration connection closed" "$d/log" && break
        sleep 0.1
    done
    t0=$(grep -m1 "broker(s) to unregister" "$d/log" | ms_of)
    t1=$(grep -m1 "unregistered: its registration connection closed" "$d/log" | ms_of)
    [ -n "$t0" ] && [ -n "$t1" ] || { echo "bench_group_removal.sh: no removal in $d/log" >&2; exit 1; }
    printf '%s round %s: %s topics removed in %d ms\n' "$b" "$2" "$TOPICS" "$((t1 - t0))"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$d"
}

ns_rounds "$ROUNDS" "$BUILDS" one_run
for b in "${NS_DIRS[@]}"; do
    awk -v b="$b" '$1 == b { print $(NF - 1) }' "$WORK/all.txt" | sort -n |
        awk -v b="$b" '{ v[NR] = $1 } END { printf "%s: median %d ms of %d\n", b, v[int((NR + 1) / 2)], NR }'
done
