#!/usr/bin/env bash
# bench_iothreads.sh - what ioThreads buys on this machine: the same route and
# heartbeat runs against namesrvd with ioThreads=1 and with each N given,
# alternating, and prints one markdown table (QPS, p99, server CPU per
# request, and how the server's CPU time was shared among its threads).
#
#   tools/bench_iothreads.sh [--server-cpus LIST] [--client-cpus LIST] [--auth] [N ...]
#
#   --server-cpus / --client-cpus   taskset CPU lists (default 0 / 1); give
#                 both the same list (e.g. 0,1) to let them share every core
#   --auth        authMode=all: every request signed by an admin user (made
#                 offline with namesrvctl; the set-up registers brokers with
#                 it too) and verified
#   N ...         ioThreads values to compare with 1 (default: 2 4)
# Environment: BUILD_DIR (default build-release, built by tools/bench.sh),
# DUR seconds per run (4), ROUNDS per setting (2, best kept).
# Smoke topology (10 brokers x 100 topics), 16 connections, depth 1 and 8.
set -euo pipefail

SRV_CPUS=0
CLI_CPUS=1
NS=()
AUTH=0
while [ $# -gt 0 ]; do
    case "$1" in
    --server-cpus) SRV_CPUS="$2"; shift ;;
    --client-cpus) CLI_CPUS="$2"; shift ;;
    --auth) AUTH=1 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) NS+=("$1") ;;
    esac
    shift
done
[ ${#NS[@]} -gt 0 ] || NS=(2 4)

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="${BUILD_DIR:-$ROOT/build-release}"
DUR="${DUR:-4}"
ROUNDS="${ROUNDS:-2}"
if [ ! -x "$BUILD/namesrvd" ] || [ ! -x "$BUILD/nsbench" ] || [ ! -x "$BUILD/namesrvctl" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" --target namesrvd nsbench namesrvctl >/dev/null
fi
SRV_AUTH=()
CLI_AUTH=()
if [ "$AUTH" = 1 ]; then
    SRV_AUTH=(--authMode=all)
    CLI_AUTH=(--access-key benchadm --secret-key benchadmsecret)
fi
WORK=$(mktemp -d /tmp/nsiothreads.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# One run: ioThreads mode depth -> "qps p99_us cpu_us_per_req thread_cpu_split"
run() {
    local io=$1 mode=$2 depth=$3 dir="$WORK/s$io"
    rm -rf "$dir"; mkdir -p "$dir"
    if [ "$AUTH" = 1 ]; then
        "$BUILD/namesrvctl" user add benchadm --role admin --secret benchadmsecret --data-dir "$dir/data" >/dev/null
    fi
    taskset -c "$SRV_CPUS" "$BUILD/namesrvd" --listenPort=0 --portFile="$dir/port" \
        --ioThreads="$io" --dataDir="$dir/data" --logLevel=warn \
        --configStorePath="$dir/p" --kvConfigPath="$dir/kv" "${SRV_AUTH[@]}" 2>"$dir/log" &
    local pid=$!
    for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
    taskset -c "$CLI_CPUS" "$BUILD/nsbench" --ns "127.0.0.1:$(cat "$dir/port")" --mode "$mode" \
        --setup-brokers 10 --setup-topics 100 --conns 16 --depth "$depth" --duration "$DUR" \
        --warmup 1 --server-pid "$pid" "${CLI_AUTH[@]}" --json >"$dir/r.json" 2>/dev/null
    # per-thread CPU ticks of the server (main, writer, I/O loops), before it stops
    local split
    split=$(for t in /proc/"$pid"/task/*; do awk '{print $14+$15}' "$t/stat"; done |
        sort -rn | awk '{a[NR]=$1; s+=$1} END {for (i=1;i<=NR;i++) if (a[i]*50>=s) printf "%s%d%%", (i>1?"/":""), a[i]*100/s}')
    kill "$pid"; wait "$pid" 2>/dev/null || true
    jq -r --arg split "$split" '.runs[-1] | "\(.qps|floor) \(.latency_us[.kind].p99) \(.server.cpu_us_per_req_stat*100|floor/100) \($split) \(.errors)"' "$dir/r.json"
}

echo "server CPUs $SRV_CPUS, client CPUs $CLI_CPUS, $ROUNDS rounds of ${DUR}s, best kept$([ "$AUTH" = 1 ] && echo ", authMode=all, every request signed")"
echo
echo "| workload | ioThreads | QPS | p99 µs | server CPU µs/req | busiest threads' share of server CPU | errors |"
echo "|---|---|---|---|---|---|---|"
WORKLOADS=("route 1" "route 8" "heartbeat 1")
[ "$AUTH" = 0 ] || WORKLOADS=("route 1" "route 8") # heartbeats need a broker user: not measured
for w in "${WORKLOADS[@]}"; do
    set -- $w
    declare -A best=()
    for _ in $(seq "$ROUNDS"); do
        for io in 1 "${NS[@]}"; do
            r=$(run "$io" "$1" "$2")
            q=${r%% *}
            if [ -z "${best[$io]:-}" ] || [ "$q" -gt "${best[$io]%% *}" ]; then best[$io]="$r"; fi
        done
    done
    for io in 1 "${NS[@]}"; do
        read -r q p c s e <<<"${best[$io]}"
        echo "| $1, depth $2 | $io | $q | $p | $c | $s | $e |"
    done
    unset best
done
