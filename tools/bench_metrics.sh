#!/usr/bin/env bash
# bench_metrics.sh - what the metrics cost route lookups, in one session,
# alternating, with callgrind instruction counts per lookup as a second,
# noise-free measure. Three servers:
#   base  namesrvd built from --base REV (default main): no counters at all
#   off   this tree's namesrvd without httpListen (the counters still count)
#   on    this tree's namesrvd with httpListen, /metrics and /brokers
#         scraped every second
#
#   tools/bench_metrics.sh [--base REV] [--rounds N] [--dur S] [--no-callgrind]
#
# Smoke topology (10 brokers x 100 topics), 16 connections, depth 8, server
# pinned to CPU 0 and nsbench to CPU 1 (SRV_CPU / CLI_CPU). Each round runs
# the three on fresh servers, in an order that rotates from round to round.
# It prints every round, then the medians and the medians of the per-round
# ratios on/base and on/off. Callgrind: the server under valgrind serves COUNT_A then
# COUNT_B lookups (separate runs); instructions per lookup is the difference
# of the two totals over COUNT_B - COUNT_A, so the set-up cancels out.
# Environment: BUILD_DIR (default build-release), SRV_CPU (0), CLI_CPU (1).
set -euo pipefail

ROUNDS=7
DUR=4
CALLGRIND=1
BASE=main
while [ $# -gt 0 ]; do
    case "$1" in
    --base) BASE="$2"; shift ;;
    --rounds) ROUNDS="$2"; shift ;;
    --dur) DUR="$2"; shift ;;
    --no-callgrind) CALLGRIND=0 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_metrics.sh: unknown argument $1" >&2; exit 1 ;;
    esac
    shift
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="${BUILD_DIR:-$ROOT/build-release}"
SRV_CPU="${SRV_CPU:-0}"
CLI_CPU="${CLI_CPU:-1}"
COUNT_A=20000
COUNT_B=120000
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j2 --target namesrvd nsbench >/dev/null
WORK=$(mktemp -d /tmp/nsmetrics.XXXXXX)
mkdir -p "$WORK/base-src"
git -C "$ROOT" archive "$BASE" | tar -x -C "$WORK/base-src"
cmake -S "$WORK/base-src" -B "$WORK/base-build" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF >/dev/null
cmake --build "$WORK/base-build" -j2 --target namesrvd >/dev/null
SPID=""
SCRAPER=""
cleanup() {
    [ -n "$SCRAPER" ] && kill "$SCRAPER" 2>/dev/null || true
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server base|on|off [wrapper...]: sets SPID, PORT, HPORT
start_server() {
    local mode=$1 dir="$WORK/s" bin="$BUILD/namesrvd"
    shift
    rm -rf "$dir"; mkdir -p "$dir"
    local http=()
    [ "$mode" = on ] && http=(--httpListen=127.0.0.1:0 --httpPortFile="$dir/hport")
    [ "$mode" = base ] && bin="$WORK/base-build/namesrvd"
    "$@" "$bin" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$dir/port" \
        --dataDir="$dir/data" --logLevel=warn --configStorePath="$dir/p" \
        --kvConfigPath="$dir/kv" "${http[@]}" 2>"$dir/log" &
    SPID=$!
    for _ in $(seq 600); do [ -s "$dir/port" ] && break; sleep 0.05; done
    PORT=$(cat "$dir/port")
    HPORT=""
    if [ "$mode" = on ]; then
        for _ in $(seq 600); do [ -s "$dir/hport" ] && break; sleep 0.05; done
        HPORT=$(cat "$dir/hport")
    fi
}

stop_server() {
    [ -n "$SCRAPER" ] && { kill "$SCRAPER" 2>/dev/null || true; wait "$SCRAPER" 2>/dev/null || true; }
    SCRAPER=""
    kill -TERM "$SPID"; wait "$SPID" 2>/dev/null || true
    SPID=""
}

# A Prometheus-like scraper, every second (Prometheus' default is 15 s).
start_scraper() {
    (while :; do
        curl -s "http://127.0.0.1:$HPORT/metrics" >/dev/null
        curl -s "http://127.0.0.1:$HPORT/brokers" >/dev/null
        sleep 1
    done) &
    SCRAPER=$!
}

# run base|on|off -> "qps cpu_us_per_req"
run() {
    start_server "$1" taskset -c "$SRV_CPU"
    [ "$1" = on ] && start_scraper
    taskset -c "$CLI_CPU" "$BUILD/nsbench" --ns "127.0.0.1:$PORT" --mode route \
        --setup-brokers 10 --setup-topics 100 --conns 16 --depth 8 --duration "$DUR" \
        --warmup 1 --server-pid "$SPID" --json >"$WORK/r.json" 2>/dev/null
    stop_server
    jq -r '.runs[-1] | "\(.qps|floor) \(.server.cpu_us_per_req_stat*1000|floor/1000)"' "$WORK/r.json"
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.4f\n", m}'; }

echo "route lookups, 16 connections, depth 8, 100 topics; server CPU $SRV_CPU, client CPU $CLI_CPU;"
echo "$ROUNDS rotating rounds of ${DUR}s; base = $BASE ($(git -C "$ROOT" rev-parse --short "$BASE")),"
echo "off = this tree without httpListen, on = with httpListen and /metrics + /brokers scraped every 1 s"
echo
echo "| round | base QPS | off QPS | on QPS | on/base | on/off | CPU µs/req base / off / on |"
echo "|---|---|---|---|---|---|---|"
: >"$WORK/rb"; : >"$WORK/ro"; : >"$WORK/base"; : >"$WORK/off"; : >"$WORK/on"
ORDERS=("base off on" "on base off" "off on base")
for r in $(seq "$ROUNDS"); do
    declare -A q=() c=()
    for m in ${ORDERS[$(((r - 1) % 3))]}; do
        read -r "q[$m]" "c[$m]" <<<"$(run "$m")"
    done
    rb=$(awk -v a="${q[on]}" -v b="${q[base]}" 'BEGIN {printf "%.4f", a / b}')
    ro=$(awk -v a="${q[on]}" -v b="${q[off]}" 'BEGIN {printf "%.4f", a / b}')
    echo "$rb" >>"$WORK/rb"; echo "$ro" >>"$WORK/ro"
    for m in base off on; do echo "${q[$m]}" >>"$WORK/$m"; done
    echo "| $r | ${q[base]} | ${q[off]} | ${q[on]} | $rb | $ro | ${c[base]} / ${c[off]} / ${c[on]} |"
    unset q c
done
echo
echo "median QPS base $(median <"$WORK/base"), off $(median <"$WORK/off"), on $(median <"$WORK/on");"
echo "median per-round ratio on/base $(median <"$WORK/rb"), on/off $(median <"$WORK/ro")"

[ "$CALLGRIND" = 1 ] || exit 0
command -v valgrind >/dev/null || { echo "(valgrind not found: no instruction counts)"; exit 0; }
# ir base|on|off count -> total instructions of the server process (no
# scraper: the lookup path only; the cost of a scrape is measured below)
ir() {
    local out="$WORK/cg.out"
    start_server "$1" valgrind --tool=callgrind --callgrind-out-file="$out"
    "$BUILD/nsbench" --ns "127.0.0.1:$PORT" --mode route --setup-brokers 10 --setup-topics 100 \
        --conns 16 --depth 8 --count "$2" --warmup 0 >/dev/null 2>&1
    stop_server
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
}
# scrapes K -> total instructions of an "on" server with the topology
# registered, K scrapes of /metrics and /brokers, and 5 s of wall time
scrapes() {
    local out="$WORK/cg.out"
    start_server on valgrind --tool=callgrind --callgrind-out-file="$out"
    "$BUILD/nsbench" --ns "127.0.0.1:$PORT" --mode route --setup-brokers 10 --setup-topics 100 \
        --conns 1 --depth 1 --count 1 --warmup 0 >/dev/null 2>&1
    local t0=$SECONDS
    for _ in $(seq "$1"); do
        curl -s "http://127.0.0.1:$HPORT/metrics" >/dev/null
        curl -s "http://127.0.0.1:$HPORT/brokers" >/dev/null
    done
    while [ $((SECONDS - t0)) -lt 5 ]; do sleep 0.2; done
    stop_server
    awk '/^(summary|totals):/ {print $2; exit}' "$out"
}
echo
echo "| callgrind | instructions, $COUNT_A lookups | $COUNT_B lookups | per lookup |"
echo "|---|---|---|---|"
for m in base off on; do
    a=$(ir "$m" "$COUNT_A"); b=$(ir "$m" "$COUNT_B")
    echo "| $m | $a | $b | $(awk -v a="$a" -v b="$b" -v n=$((COUNT_B - COUNT_A)) 'BEGIN {printf "%.1f", (b - a) / n}') |"
done
a=$(scrapes 0); b=$(scrapes 20)
echo
echo "one scrape of /metrics + /brokers (10 brokers, 100 topics): $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.0f", (b - a) / 20}') instructions"
