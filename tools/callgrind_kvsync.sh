#!/usr/bin/env bash
# callgrind_kvsync.sh - instructions per route lookup with kvSync on and
# syncing: tools/callgrind_lookups.sh (smoke topology) with the measured
# namesrvd given --kvSync=true and two peers, both running this tree's
# Release namesrvd with kvSync on and all three in their peers. The peers
# hold the same topology (nsbench --mode setup, the same 10 brokers and 100
# topics the measured server gets), as brokers registering with every
# server make it, so their digests differ only in what KV sync pulls.
#
#   tools/callgrind_kvsync.sh [--count N] [--depth D[,D]] [--interval MS]
#                             [--kv-sync true|false] [--keep]
#
# --interval is peerCheckIntervalMillis on all three (default 1000);
# --kv-sync false keeps the peers and their checks but not the KV sync. While
# the lookups run, one KV entry a second is written to the first peer
# (namesrvctl kv put), so the measured server pulls entries throughout;
# afterwards the script counts its "kvsync: took" log lines (it runs with
# --logLevel=info for that) and prints them under the table. The count is
# callgrind's total over all of the server's threads, so it includes the
# peer checks and the merges of the measured window, not only the lookups.
# With --keep, callgrind_annotate --inclusive=yes on the kept dump
# (ns-smoke.PID.1, the last depth's) separates them: uv_run is the event
# loop's thread, ns_cmd_get_routeinfo_by_topic the lookup's handler.
# Loopback only; the peers are stopped by their pids on exit.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

COUNT=20000
DEPTHS=1,8
INTERVAL=1000
KVSYNC=true
KEEP=0
ns_args "--count=COUNT --depth=DEPTHS --interval=INTERVAL --kv-sync=KVSYNC --keep:KEEP" "$@"
ns_need valgrind callgrind_control jq cmake

BUILD=$RELEASE_DIR
ns_build_release "$ROOT" "$BUILD" namesrvd nsbench namesrvctl
. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nscgkv.XXXXXX callgrind_kvsync.sh
log() { echo "[callgrind-kvsync $(date +%T)] $*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORTS=()
while [ ${#PORTS[@]} -lt 3 ]; do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    port_free "$p" && [[ " ${PORTS[*]} " != *" $p "* ]] && PORTS+=("$p")
done
ALL="127.0.0.1:${PORTS[0]};127.0.0.1:${PORTS[1]};127.0.0.1:${PORTS[2]}"
SYNC="--kvSync=$KVSYNC --peers=$ALL --peerCheckIntervalMillis=$INTERVAL"

for i in 1 2; do
    d="$WORK/peer$i"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    "$BUILD/namesrvd" --bindAddress=127.0.0.1 --listenPort="${PORTS[$i]}" --dataDir="$d/data" \
        --configStorePath="$d/namesrv.properties" --kvConfigPath="$d/kvConfig.json" $SYNC \
        >"$d/log" 2>&1 &
    PIDS+=("$!")
done
for i in 1 2; do
    d="$WORK/peer$i"
    for _ in $(seq 100); do port_free "${PORTS[$i]}" || break; sleep 0.1; done
    "$BUILD/nsbench" --json --ns "127.0.0.1:${PORTS[$i]}" --mode setup --setup-brokers 10 \
        --setup-topics 100 --hold 3600 --ready-file "$d/ready" >"$d/setup.json" 2>"$d/setup.err" &
    PIDS+=("$!")
done
for i in 1 2; do
    for _ in $(seq 600); do [ -e "$WORK/peer$i/ready" ] && break; sleep 0.1; done
    [ -e "$WORK/peer$i/ready" ] || { echo "set-up of peer $i failed" >&2; exit 1; }
done
PEER1="127.0.0.1:${PORTS[1]}"
"$BUILD/namesrvctl" kv put --ns "$PEER1" KVSYNC_BENCH k0 v0 >/dev/null

# one KV write a second on the first peer while the lookups run
(
    n=1
    while :; do
        "$BUILD/namesrvctl" kv put --ns "$PEER1" KVSYNC_BENCH "k$n" "v$n" >/dev/null 2>&1 || true
        n=$((n + 1))
        sleep 1
    done
) &
PIDS+=("$!")

log "peers on ${PORTS[1]} and ${PORTS[2]}; the measured server on ${PORTS[0]}"
"$ROOT/tools/callgrind_lookups.sh" --count "$COUNT" --topology smoke --depth "$DEPTHS" --keep \
    --server-args "--listenPort=${PORTS[0]} $SYNC --logLevel=info" >"$WORK/table.md" 2>"$WORK/cg.err" ||
    { tail -20 "$WORK/cg.err" >&2; exit 1; }
inner=$(sed -n 's/^callgrind_lookups.sh: kept //p' "$WORK/cg.err")
took=$(grep -c "kvsync: took" "$inner/ns-smoke.log" || true)
echo "kvSync=$KVSYNC, two peers, peerCheckIntervalMillis=$INTERVAL:"
cat "$WORK/table.md"
echo "the measured server logged $took merges of entries pulled from its peers"
if [ "$KEEP" = 1 ]; then echo "callgrind_kvsync.sh: the callgrind run kept in $inner" >&2; else rm -rf "$inner"; fi
