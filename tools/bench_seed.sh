#!/usr/bin/env bash
# tools/bench_seed.sh - a seeded start's time to first route: server A gets
# `brokers` brokers with `topics` topics from nsbench (--mode setup, the
# brokers' connections held open, so A's brokers are all confirmed and A is
# in sync); then, `runs` times, an empty server B with seedFromPeers=true and
# peers=A is exec'd by nsbench --restart-probe, which polls B's
# GET_ROUTEINFO_BY_TOPIC until A's route of one topic comes back. Nothing
# ever registers with B.
#
#   tools/bench_seed.sh [topics] [brokers] [runs]   (default 100000 1000 3)
#
# Prints first_route_ms per run and the seed's own line from B's log.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOPICS=${1:-100000}
BROKERS=${2:-1000}
RUNS=${3:-3}
BUILD="${BUILD_DIR:-$ROOT/build-release}"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target namesrvd nsbench >/dev/null
NAMESRVD="$BUILD/namesrvd"
NSBENCH="$BUILD/nsbench"
WORK=$(mktemp -d /tmp/nsseed.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

"$NAMESRVD" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$WORK/portA" --dataDir="$WORK/a" \
    --syncMode=full --logLevel=warn --configStorePath="$WORK/a.properties" \
    --kvConfigPath="$WORK/a.kv.json" >>"$WORK/a.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 500); do [ -s "$WORK/portA" ] && break; sleep 0.02; done
PORT_A=$(cat "$WORK/portA")
echo "setting up $BROKERS brokers with $TOPICS topics on A (port $PORT_A)"
"$NSBENCH" --json --ns "127.0.0.1:$PORT_A" --mode setup --setup-brokers "$BROKERS" \
    --setup-topics "$TOPICS" --hold 3600 --ready-file "$WORK/ready" >"$WORK/setup.json" \
    2>"$WORK/setup.err" &
CLI=$!
PIDS+=("$CLI")
for _ in $(seq 9000); do [ -e "$WORK/ready" ] && break; kill -0 "$CLI" 2>/dev/null || break; sleep 0.1; done
[ -e "$WORK/ready" ] || { echo "set-up failed" >&2; cat "$WORK/setup.err" >&2; exit 1; }
sleep 6 # A's liveness scan (5 s) counts its brokers as confirmed
echo "A's store: $(du -m "$WORK/a/data.mdb" | cut -f1) MiB"
# B's port: a free one, found by a throwaway server
"$NAMESRVD" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$WORK/portB" --dataDir="$WORK/tmp" \
    --configStorePath="$WORK/tmp.properties" --kvConfigPath="$WORK/tmp.kv.json" >/dev/null 2>&1 &
TMP=$!
for _ in $(seq 500); do [ -s "$WORK/portB" ] && break; sleep 0.02; done
PORT_B=$(cat "$WORK/portB")
kill -TERM "$TMP"; wait "$TMP" 2>/dev/null || true
probe_topic=$((TOPICS * 7 / 9))
for r in $(seq "$RUNS"); do
    rm -rf "$WORK/b"
    : >"$WORK/b.log"
    "$NSBENCH" --restart-probe --json --ns "127.0.0.1:$PORT_B" --setup-brokers "$BROKERS" \
        --probe-topic "$probe_topic" --pid-file "$WORK/b.pid" --probe-timeout-ms 120000 -- \
        "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort="$PORT_B" --dataDir="$WORK/b" \
        --syncMode=full --logLevel=info --configStorePath="$WORK/b.properties" \
        --kvConfigPath="$WORK/b.kv.json" --seedFromPeers=true --peers="127.0.0.1:$PORT_A" \
        --seedTimeoutMillis=120000 --peerTimeoutMillis=30000 \
        >"$WORK/probe.json" 2>>"$WORK/b.log" || true
    bp=$(cat "$WORK/b.pid" 2>/dev/null || echo 0)
    [ "$bp" -gt 0 ] && { kill -TERM "$bp" 2>/dev/null || true; for _ in $(seq 100); do kill -0 "$bp" 2>/dev/null || break; sleep 0.05; done; kill -KILL "$bp" 2>/dev/null || true; }
    seeded=$(grep -o 'seeded from [^:]*: [^(]*([0-9]* bytes' "$WORK/b.log" || grep -o 'seedFromPeers: [^;]*' "$WORK/b.log" | tail -1)
    printf 'run %d: first route %s ms (connect %s ms); %s)\n' "$r" \
        "$(jq -r '.first_route_ms' "$WORK/probe.json")" "$(jq -r '.connect_ms' "$WORK/probe.json")" \
        "$seeded"
done
