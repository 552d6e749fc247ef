#!/usr/bin/env bash
# tools/bench_restart.sh - restart to the first correct route after kill -9,
# per verifyOnStart mode, as bench.sh's "large" row measures it (nsbench
# --restart-probe: exec namesrvd, poll GET_ROUTEINFO_BY_TOPIC until the
# stored route comes back).
#
#   tools/bench_restart.sh [topics] [brokers] [runs]   (default 100000 1000 3)
#
# One store is built through a real namesrvd (nsbench --mode setup), then
# namesrvd is killed and restarted on it `runs` times in each mode:
#   off         --verifyOnStart=false
#   background  the default: quick check before listening, full walk beside
#   blocking    --verifyOnStartBlocking=true: the full walk before listening
# Prints first_route_ms per run and the check's own cost from the log.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOPICS=${1:-100000}
BROKERS=${2:-1000}
RUNS=${3:-3}
BUILD="${BUILD_DIR:-$ROOT/build-release}"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j2 --target namesrvd nsbench >/dev/null
NAMESRVD="$BUILD/namesrvd"
NSBENCH="$BUILD/nsbench"
WORK=$(mktemp -d /tmp/nsrestart.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

"$NAMESRVD" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$WORK/port" --dataDir="$WORK/data" \
    --syncMode=full --logLevel=warn --configStorePath="$WORK/namesrv.properties" \
    --kvConfigPath="$WORK/kvConfig.json" >>"$WORK/server.log" 2>&1 &
SRV=$!
PIDS+=("$SRV")
for _ in $(seq 500); do [ -s "$WORK/port" ] && break; sleep 0.02; done
PORT=$(cat "$WORK/port")
echo "setting up $BROKERS brokers with $TOPICS topics on port $PORT"
"$NSBENCH" --json --ns "127.0.0.1:$PORT" --mode setup --setup-brokers "$BROKERS" \
    --setup-topics "$TOPICS" --hold 900 --ready-file "$WORK/ready" >"$WORK/setup.json" 2>"$WORK/setup.err" &
CLI=$!
PIDS+=("$CLI")
for _ in $(seq 9000); do [ -e "$WORK/ready" ] && break; kill -0 "$CLI" 2>/dev/null || break; sleep 0.1; done
[ -e "$WORK/ready" ] || { echo "set-up failed" >&2; cat "$WORK/setup.err" >&2; exit 1; }
kill -KILL "$SRV"; wait "$SRV" 2>/dev/null || true
kill -TERM "$CLI" 2>/dev/null || true; wait "$CLI" 2>/dev/null || true
echo "store: $(du -m "$WORK/data/data.mdb" | cut -f1) MiB"
probe_topic=$((TOPICS * 7 / 9))
for mode in off background blocking; do
    case $mode in
    off) extra=(--verifyOnStart=false) ;;
    background) extra=() ;;
    blocking) extra=(--verifyOnStartBlocking=true) ;;
    esac
    for r in $(seq "$RUNS"); do
        : >"$WORK/restart.log"
        "$NSBENCH" --restart-probe --json --ns "127.0.0.1:$PORT" --setup-brokers "$BROKERS" \
            --probe-topic "$probe_topic" --pid-file "$WORK/restart.pid" --probe-timeout-ms 30000 -- \
            "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort="$PORT" --dataDir="$WORK/data" \
            --syncMode=full --logLevel=info --configStorePath="$WORK/namesrv.properties" \
            --kvConfigPath="$WORK/kvConfig.json" "${extra[@]}" >"$WORK/probe.json" 2>>"$WORK/restart.log" || true
        rp=$(cat "$WORK/restart.pid" 2>/dev/null || echo 0)
        # let a background walk finish, so its cost is in the log
        for _ in $(seq 100); do grep -q "checked (verifyOnStart" "$WORK/restart.log" && break
            [ "$mode" = off ] && break; sleep 0.1; done
        [ "$rp" -gt 0 ] && { kill -TERM "$rp" 2>/dev/null || true; for _ in $(seq 100); do kill -0 "$rp" 2>/dev/null || break; sleep 0.05; done; kill -KILL "$rp" 2>/dev/null || true; }
        quick=$(grep -o 'quick check passed[^;]*; [0-9]* records) in [0-9.]* ms' "$WORK/restart.log" | grep -o 'in [0-9.]* ms' || true)
        full=$(grep -o 'value decoded in [0-9]* ms' "$WORK/restart.log" | grep -o '[0-9]* ms' || true)
        printf '%-10s run %d: first route %s ms (connect %s ms); quick check %s; full walk %s\n' "$mode" "$r" \
            "$(jq -r '.first_route_ms' "$WORK/probe.json")" "$(jq -r '.connect_ms' "$WORK/probe.json")" \
            "${quick:--}" "${full:--}"
    done
done
