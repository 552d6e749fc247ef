#!/usr/bin/env bash
# callgrind_lookups.sh - user-space instructions per route lookup, counted by
# callgrind (stable on a noisy machine, unlike wall-clock figures).
#
#   tools/callgrind_lookups.sh [--count N] [--topology smoke|capacity|both] [--depth D[,D]]
#                              [--topics N] [--server-args '...'] [--client-args '...'] [--keep]
#
# For each topology and depth: namesrvd starts under callgrind with
# collection off; one nsbench client registers the topology and holds it;
# collection is switched on, a reader client sends exactly N lookups, the
# counters are dumped and divided by N. The same readers then run against
# `nsbench --echo-server` (also under callgrind, answering with the same body
# size): the floor of any request/response server on this machine. Output:
# one markdown table, instructions per lookup for both and their ratio.
#
# Topologies as in tools/bench.sh: smoke = 10 brokers, 100 topics, 16
# connections; capacity = 1,000 brokers, 20,000 topics, 64 connections;
# --topics N gives the capacity topology N topics instead (e.g. 100000: the
# B-tree one level deeper).
# --client-args go to the reader clients of namesrvd (e.g. '--tls-ca FILE'
# with --server-args naming a certificate: the cost of a lookup over TLS).
# Needs valgrind (callgrind_control), jq, cmake. Loopback only; every process
# started here is stopped by its pid on exit.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

COUNT=100000
TOPOS="smoke capacity"
DEPTHS="1 8"
SERVER_ARGS=""
CLIENT_ARGS=""
KEEP=0
CAP_TOPICS=20000
ns_args "--count=COUNT --topology=TOPOS --depth=DEPTHS --server-args=SERVER_ARGS \
    --client-args=CLIENT_ARGS --topics=CAP_TOPICS --keep:KEEP" "$@"
[ "$TOPOS" = both ] && TOPOS="smoke capacity"
DEPTHS=${DEPTHS//,/ }
ns_need valgrind callgrind_control jq cmake

BUILD=$RELEASE_DIR
ns_build_release "$ROOT" "$BUILD" namesrvd nsbench
NAMESRVD="$BUILD/namesrvd"
NSBENCH="$BUILD/nsbench"

. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nscg.XXXXXX callgrind_lookups.sh
log() { echo "[callgrind $(date +%T)] $*" >&2; }

wait_file() { # file timeout_s pid
    local i
    for i in $(seq $(($2 * 10))); do
        [ -s "$1" ] && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# callgrind_run OUTPREFIX CMD... -> CG_PID (instrumentation off until switched on)
callgrind_run() {
    local out=$1; shift
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out.%p" "$@" \
        >>"$out.log" 2>&1 &
    CG_PID=$!
    PIDS+=("$CG_PID")
}

# instructions PID: switch collection off, dump, print the Ir total of the dumps
instructions() {
    callgrind_control -i off "$1" >/dev/null
    callgrind_control -d "$1" >/dev/null
    sleep 0.5
    local f total=0 v
    for f in "$WORK"/*."$1"*; do
        case "$f" in *.log) continue ;; esac
        v=$(awk '/^totals:/ {print $2; exit}' "$f")
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

measure() { # PID PORT NAME TOPO_ARGS... -> instructions per lookup
    local pid=$1 port=$2 name=$3 f; shift 3
    for f in "$WORK"/*."$pid"*; do # earlier dumps of this process
        case "$f" in *.log) ;; *) rm -f "$f" ;; esac
    done
    callgrind_control -z "$pid" >/dev/null
    callgrind_control -i on "$pid" >/dev/null
    "$NSBENCH" --json --ns "127.0.0.1:$port" "$@" --count "$COUNT" --warmup 0 --seed 1 \
        --drain-timeout-ms 60000 >"$WORK/$name.json" 2>>"$WORK/$name.err"
    local ir
    ir=$(instructions "$pid")
    awk -v ir="$ir" -v n="$COUNT" 'BEGIN { printf "%.0f", ir / n }'
}

declare -a rows_ns
printf '| topology | depth | namesrvd instr/lookup | echo instr/request | ratio |\n|---|---|---|---|---|\n' >"$WORK/table.md"
for topo in $TOPOS; do
    case "$topo" in
    smoke) T=(--setup-brokers 10 --setup-topics 100); CONNS=16 ;;
    capacity) T=(--setup-brokers 1000 --setup-topics "$CAP_TOPICS"); CONNS=64 ;;
    *) echo "unknown topology $topo" >&2; exit 2 ;;
    esac
    dir="$WORK/$topo"
    mkdir -p "$dir"
    log "$topo: namesrvd under callgrind, registering ${T[*]}"
    # shellcheck disable=SC2086
    callgrind_run "$WORK/ns-$topo" "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort=0 \
        --portFile="$dir/port" --dataDir="$dir/data" --logLevel=info \
        --configStorePath="$dir/namesrv.properties" $SERVER_ARGS
    NS_PID=$CG_PID
    wait_file "$dir/port" 120 "$NS_PID" || { echo "namesrvd did not start" >&2; cat "$WORK/ns-$topo.log" >&2; exit 1; }
    port=$(cat "$dir/port")
    "$NSBENCH" --json --ns "127.0.0.1:$port" --mode setup "${T[@]}" --hold 3600 \
        --ready-file "$dir/ready" >"$dir/setup.json" 2>"$dir/setup.err" &
    SETUP_PID=$!
    PIDS+=("$SETUP_PID")
    wait_file "$dir/ready" 900 "$SETUP_PID" || { echo "set-up failed" >&2; cat "$dir/setup.err" >&2; exit 1; }
    # the routes index is rebuilt once the writer idles after the set-up's
    # burst (store/route_index.h): the lookups are counted with it
    for _ in $(seq 1200); do
        grep -q -- "--routeIndex=false" <<<" $SERVER_ARGS " && break
        [ "$(grep -o 'routes index b[a-z]*' "$WORK/ns-$topo.log" | tail -1)" = "routes index built" ] &&
            break
        sleep 0.1
    done
    body=""
    for d in $DEPTHS; do
        log "$topo: $COUNT lookups at depth $d against namesrvd"
        # shellcheck disable=SC2086
        ns=$(measure "$NS_PID" "$port" "ns-$topo-$d" "${T[@]}" --no-setup --conns "$CONNS" --depth "$d" $CLIENT_ARGS)
        [ -n "$body" ] || body=$(jq -r '.runs[0].avg_body_bytes // 400' "$WORK/ns-$topo-$d.json" | awk '{printf "%d", $1 + 0.5}')
        echo "$topo $d ns $ns" >>"$WORK/raw.txt"
        rows_ns[$d]=$ns
    done
    log "$topo: echo server under callgrind ($body-byte bodies)"
    callgrind_run "$WORK/echo-$topo" "$NSBENCH" --echo-server --bind 127.0.0.1 --port 0 \
        --port-file "$dir/echo.port" --response-bytes "$body"
    ECHO_PID=$CG_PID
    wait_file "$dir/echo.port" 120 "$ECHO_PID" || { echo "echo server did not start" >&2; exit 1; }
    eport=$(cat "$dir/echo.port")
    for d in $DEPTHS; do
        log "$topo: $COUNT requests at depth $d against the echo server"
        echo_ir=$(measure "$ECHO_PID" "$eport" "echo-$topo-$d" "${T[@]}" --no-setup --no-verify \
            --conns "$CONNS" --depth "$d")
        ratio=$(awk -v a="${rows_ns[$d]}" -v b="$echo_ir" 'BEGIN { printf "%.2f", a / b }')
        label=$topo
        [ "$topo" != capacity ] || [ "$CAP_TOPICS" = 20000 ] || label="capacity ($CAP_TOPICS topics)"
        printf '| %s | %s | %s | %s | %s× |\n' "$label" "$d" "${rows_ns[$d]}" "$echo_ir" "$ratio" >>"$WORK/table.md"
    done
    kill -TERM "$SETUP_PID" "$NS_PID" "$ECHO_PID" 2>/dev/null || true
    for p in "$SETUP_PID" "$NS_PID" "$ECHO_PID"; do wait "$p" 2>/dev/null || true; done
done
echo "instructions per lookup, callgrind, $COUNT lookups per row, $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
cat "$WORK/table.md"
