#!/usr/bin/env bash
# bench_auth.sh - what authMode=all costs route lookups: the same runs
# against namesrvd with authMode=off (unsigned client), off with a signing
# client (the client's HMAC only; the server ignores signatures) and all
# (every lookup verified: user lookup in the store + HMAC-SHA1 + compare),
# alternating in one session, best of ROUNDS kept; one markdown table.
#
#   tools/bench_auth.sh [--server-cpu N] [--client-cpu N] [--callgrind]
# Environment: BUILD_DIR (default build-release, built if missing), DUR
# seconds per run (4), ROUNDS per setting (3), IO_THREADS (1: namesrvd's
# ioThreads; with more, a lookup's instructions include its check on an I/O
# loop, or its trip to the main loop and back). Smoke topology (10 brokers x
# 100 topics), 16 connections, depth 1 and 8, loopback only.
# --callgrind: instead, the server's user-space instructions per lookup
# (namesrvd under callgrind, collection on only while COUNT lookups at depth
# 8 run; stable on a noisy machine), for the same three settings and `all`
# with the secrets sealed (authKeyFile).
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/callgrind.sh"

CG=0
ns_args "$NS_PIN_OPTS --callgrind:CG" "$@"
ns_need jq taskset cmake

BUILD=$RELEASE_DIR
DUR="${DUR:-4}"
ROUNDS="${ROUNDS:-3}"
if [ ! -x "$BUILD/namesrvd" ] || [ ! -x "$BUILD/nsbench" ] || [ ! -x "$BUILD/namesrvctl" ]; then
    ns_build_release "$ROOT" "$BUILD" namesrvd nsbench namesrvctl
fi
WORK=$(mktemp -d /tmp/nsauth.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# One run: authMode signed(0|1) depth -> "qps p50_us p99_us cpu_us_per_req errors"
run() {
    local mode=$1 signed=$2 depth=$3 dir="$WORK/s"
    rm -rf "$dir"; mkdir -p "$dir"
    "$BUILD/namesrvctl" user add bench --role admin --secret bench-secret-1 \
        --data-dir "$dir/data" >/dev/null
    taskset -c "$SRV_CPU" "$BUILD/namesrvd" --listenPort=0 --bindAddress=127.0.0.1 \
        --portFile="$dir/port" --dataDir="$dir/data" --logLevel=warn --authMode="$mode" \
        --configStorePath="$dir/p" --kvConfigPath="$dir/kv" 2>"$dir/log" &
    local pid=$! creds=()
    [ "$signed" = 1 ] && creds=(--access-key bench --secret-key bench-secret-1)
    for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
    taskset -c "$CLI_CPU" "$BUILD/nsbench" --ns "127.0.0.1:$(cat "$dir/port")" --mode route \
        --setup-brokers 10 --setup-topics 100 --conns 16 --depth "$depth" --duration "$DUR" \
        --warmup 1 --server-pid "$pid" --json "${creds[@]}" >"$dir/r.json" 2>/dev/null
    kill "$pid"; wait "$pid" 2>/dev/null || true
    jq -r '.runs[-1] | "\(.qps|floor) \(.latency_us[.kind].p50) \(.latency_us[.kind].p99) \(.server.cpu_us_per_req_stat*100|floor/100) \(.errors)"' "$dir/r.json"
}

# Instructions per lookup: authMode signed(0|1) sealed(0|1) -> Ir / COUNT
cg_run() {
    local mode=$1 signed=$2 sealed=${3:-0} dir="$WORK/cg" n=${COUNT:-20000} creds=() ir
    local keyargs=() srvkey=()
    rm -rf "$dir"; mkdir -p "$dir"
    if [ "$sealed" = 1 ]; then
        openssl rand -hex 32 >"$WORK/key"
        keyargs=(--key-file "$WORK/key")
        srvkey=(--authKeyFile="$WORK/key")
    fi
    "$BUILD/namesrvctl" user add bench --role admin --secret bench-secret-1 \
        --data-dir "$dir/data" "${keyargs[@]}" >/dev/null
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/cg.%p" \
        "$BUILD/namesrvd" --listenPort=0 --bindAddress=127.0.0.1 --portFile="$dir/port" \
        --dataDir="$dir/data" --logLevel=warn --authMode="$mode" --configStorePath="$dir/p" \
        --kvConfigPath="$dir/kv" --ioThreads="${IO_THREADS:-1}" "${srvkey[@]}" >"$dir/vg.log" 2>&1 &
    local pid=$!
    [ "$signed" = 1 ] && creds=(--access-key bench --secret-key bench-secret-1)
    for _ in $(seq 600); do [ -s "$dir/port" ] && break; sleep 0.1; done
    local ns="127.0.0.1:$(cat "$dir/port")"
    "$BUILD/nsbench" --ns "$ns" --mode setup --setup-brokers 10 --setup-topics 100 --hold 3600 \
        --ready-file "$dir/ready" "${creds[@]}" >/dev/null 2>&1 &
    local hold=$!
    for _ in $(seq 1200); do [ -e "$dir/ready" ] && break; sleep 0.1; done
    ns_cg_begin "$pid"
    "$BUILD/nsbench" --ns "$ns" --no-setup --setup-brokers 10 --setup-topics 100 --conns 16 \
        --depth 8 --count "$n" --warmup 0 --drain-timeout-ms 60000 --json "${creds[@]}" \
        >"$dir/r.json" 2>/dev/null
    ir=$(ns_cg_total "$dir" "$pid")
    kill "$hold" "$pid" 2>/dev/null || true
    wait "$hold" "$pid" 2>/dev/null || true
    awk -v ir="$ir" -v n="$n" -v e="$(jq -r '.runs[-1].errors' "$dir/r.json")" \
        'BEGIN { printf "%.0f %s", ir / n, e }'
}

if [ "$CG" = 1 ]; then
    command -v callgrind_control >/dev/null || { echo "bench_auth.sh: valgrind needed" >&2; exit 1; }
    echo "server instructions per route lookup (callgrind), ${COUNT:-20000} lookups at depth 8, ioThreads ${IO_THREADS:-1}"
    echo
    echo "| authMode | client signs | secrets | namesrvd instr/lookup | errors |"
    echo "|---|---|---|---|---|"
    for s in "off 0 0" "off 1 0" "all 1 0" "all 1 1"; do
        read -r ir e <<<"$(cg_run $s)"
        set -- $s
        echo "| $1 | $([ "$2" = 1 ] && echo yes || echo no) | $([ "$3" = 1 ] && echo sealed || echo plain) | $ir | $e |"
    done
    exit 0
fi

echo "server CPU $SRV_CPU, client CPU $CLI_CPU, $ROUNDS rounds of ${DUR}s, best kept"
echo
echo "| depth | authMode | client signs | QPS | p50 µs | p99 µs | server CPU µs/req | errors |"
echo "|---|---|---|---|---|---|---|---|"
for depth in 1 8; do
    declare -A best=()
    for _ in $(seq "$ROUNDS"); do
        for s in "off 0" "off 1" "all 1"; do
            r=$(run $s "$depth")
            q=${r%% *}
            if [ -z "${best[$s]:-}" ] || [ "$q" -gt "${best[$s]%% *}" ]; then best[$s]="$r"; fi
        done
    done
    for s in "off 0" "off 1" "all 1"; do
        read -r q p50 p99 c e <<<"${best[$s]}"
        set -- $s
        echo "| $depth | $1 | $([ "$2" = 1 ] && echo yes || echo no) | $q | $p50 | $p99 | $c | $e |"
    done
    unset best
done
