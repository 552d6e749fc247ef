#!/usr/bin/env bash
# growth.sh - how every cost of namesrvd grows with the topology: one table,
# a column per size, for docs/performance.md ("The growth table").
#
#   tools/growth.sh [--sizes T:B,T:B,...] [--dur S] [--callgrind] [--out FILE] [--keep]
#                   [--server-args '...'] [--server-cpu N] [--client-cpu N]
#
#   --sizes      topics:brokers per column (10000:1000,100000:1000,1000000:1000,100000:10000)
#   --dur S      measured seconds per lookup run (3); two rounds alternate
#                namesrvd and the echo server, the better of each is kept
#   --callgrind  also count instructions per lookup (tools/callgrind_lookups.sh
#                --topics T, capacity topology; only for 1,000-broker sizes;
#                about 3 minutes per size, more at 1M topics)
#   --out FILE   also write the table to FILE
#   --server-args '...'  more namesrvd options, at the set-up and the restart
#                (e.g. '--routeIndex=false': one tree with a feature off and on)
#
# For each size, on a fresh Release namesrvd (server on one core, nsbench on
# the other, syncMode=full): the topology is registered once (every broker
# one compressed registration; its time is "set-up"); 64 connections look up
# routes at depth 1 and 8 against namesrvd and the echo server (same reply
# size); GET_ALL_TOPIC_LIST through namesrvctl (time and bytes); the server's
# CPU while idle with every broker connected (the liveness scan and timers);
# RSS and the store's size; then kill -9 and a restart polled for the first
# correct route, with the start check's own times from the log; a broker of
# T/B topics registering into that store (every queue changed, and a new
# DataVersion only); BROKER_HEARTBEAT cost; and dump / restore of the store
# with namesrvctl. Loopback only; every process started is stopped by pid.
#
# Needs: cmake, a C compiler, jq, taskset; valgrind for --callgrind.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"
. "$(dirname "$0")/lib/work.sh"

SIZES=10000:1000,100000:1000,1000000:1000,100000:10000
DUR=3
CG=0
OUT=""
KEEP=0
SERVER_ARGS=""
ns_args "--sizes=SIZES --dur=DUR --callgrind:CG --out=OUT --keep:KEEP --server-args=SERVER_ARGS \
    $NS_PIN_OPTS" "$@"
read -r -a XARGS <<<"$SERVER_ARGS"
ns_need jq taskset cmake
[ "$CG" = 1 ] && ns_need valgrind

ns_work_begin /tmp/nsgrowth.XXXXXX growth.sh 50
. "$(dirname "$0")/lib/bench.sh"
NAMESRVD=$RELEASE_DIR/namesrvd
NSBENCH=$RELEASE_DIR/nsbench
CTL=$RELEASE_DIR/namesrvctl
log() { echo "[growth $(date +%T)] $*" >&2; }

log "building Release into $RELEASE_DIR"
ns_build_release "$ROOT" "$RELEASE_DIR" namesrvd nsbench namesrvctl
BUSY=$(background_busy)
START=$(date +%s)

declare -A V # V[row|column] = cell
ROWS=()
put() { # row column value
    [ -n "${V["$1|__seen"]:-}" ] || { ROWS+=("$1"); V["$1|__seen"]=1; }
    V["$1|$2"]=$3
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# lookups NAME COL CONNS: two rounds against namesrvd and the echo server
lookups() {
    local name=$1 col=$2 topo=(--setup-brokers "$3" --setup-topics "$4") r i body=0
    local reads=(--no-setup --conns 64 --depth 1,8 --duration "$DUR" --warmup 0.5 --seed 1)
    for r in 1 2; do
        client "$WORK/$name.ns.r$r.json" --ns "127.0.0.1:$SRV_PORT" "${topo[@]}" "${reads[@]}" \
            --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
        if [ "$r" = 1 ]; then
            body=$(j "$WORK/$name.ns.r1.json" '.runs[0].avg_body_bytes // 0' | awk '{printf "%d", $1 + 0.5}')
            [ "$body" -gt 0 ] 2>/dev/null || body=400
            start_echo "$name" "$body"
        fi
        client "$WORK/$name.echo.r$r.json" --ns "127.0.0.1:$ECHO_PORT" "${topo[@]}" "${reads[@]}" \
            --no-verify --server-pid "$ECHO_PID"
    done
    stop_pid "$ECHO_PID"
    for i in 0 1; do
        local q e p99 d
        q=$(jq -s "map(.runs[$i].qps // 0) | max" "$WORK/$name".ns.r*.json)
        e=$(jq -s "map(.runs[$i].qps // 0) | max" "$WORK/$name".echo.r*.json)
        p99=$(jq -s "map(.runs[$i].latency_us.route.p99 // 1e12) | min" "$WORK/$name".ns.r*.json)
        d=$(j "$WORK/$name.ns.r1.json" ".runs[$i].depth")
        put "lookups, depth $d: ratio to the echo server (namesrvd qps)" "$col" \
            "$(awk -v a="$q" -v b="$e" 'BEGIN{ if (b > 0) printf "%.2f× (%.0fk)", a/b, a/1000; else print "?" }')"
        put "lookups, depth $d: p99" "$col" "$(fmt "$p99") µs"
    done
    put "lookups: server CPU per lookup, depth 8 (echo)" "$col" \
        "$(fmt "$(j "$WORK/$name.ns.r2.json" '.runs[1].server.cpu_us_per_req_sched')") µs ($(fmt "$(j "$WORK/$name.echo.r2.json" '.runs[1].server.cpu_us_per_req_sched')"))"
}

# one_size T B: every measurement of one column
one_size() {
    local t=$1 b=$2 col name cpid t0 c0
    col="$(printf "%'d" "$t") topics, $(printf "%'d" "$b") brokers"
    name=g$t.$b
    log "$col: registering the topology"
    start_server "$name" --maxConnections=$((b + 1000)) --maxConnectionsPerAddress=0 --logLevel=info \
        ${XARGS[@]+"${XARGS[@]}"}
    taskset -c "$CLI_CPU" "$NSBENCH" --json --ns "127.0.0.1:$SRV_PORT" --mode setup \
        --setup-brokers "$b" --setup-topics "$t" --hold 3600 --ready-file "$SRV_DIR/ready" \
        --setup-timeout-ms 1800000 >"$WORK/$name.setup.json" 2>>"$WORK/$name.setup.err" &
    cpid=$!
    PIDS+=("$cpid")
    wait_file "$SRV_DIR/ready" 1800 "$cpid" || { cat "$WORK/$name.setup.err" >&2; exit 1; }
    put "set-up: every broker registers once" "$col" "$(fmt0 "$(j "$WORK/$name.setup.json" '.setup_ms')") ms"
    # the routes index is rebuilt once the writer idles after the burst
    # (store/route_index.h): the lookups are measured with it
    for _ in $(seq 600); do
        grep -q -- "--routeIndex=false" <<<" $SERVER_ARGS " && break
        [ "$(grep -o 'routes index b[a-z]*' "$SRV_DIR/server.log" | tail -1)" = "routes index built" ] &&
            break
        sleep 0.1
    done

    log "$col: lookups"
    lookups "$name" "$col" "$b" "$t"

    log "$col: GET_ALL_TOPIC_LIST"
    t0=$(date +%s%N)
    local got
    if "$CTL" topics --ns "127.0.0.1:$SRV_PORT" --timeout 120000 --json >"$WORK/$name.topics" 2>&1; then
        got="$(mib "$(stat -c %s "$WORK/$name.topics")") MiB"
    else # over maxFrameBytes: refused (docs/protocol.md)
        got="refused: $(grep -o 'reply too large: [0-9]* bytes' "$WORK/$name.topics" | head -1)"
    fi
    put "GET_ALL_TOPIC_LIST via namesrvctl topics: time, bytes" "$col" "$(ms_since "$t0") ms, $got"

    log "$col: idle CPU with $b brokers connected"
    c0=$(cpu_ticks "$SRV_PID")
    sleep 5
    put "idle server CPU, every broker connected (liveness scan, timers)" "$col" \
        "$(awk -v d="$(($(cpu_ticks "$SRV_PID") - c0))" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f ms/s", d * 1000 / hz / 5}')"
    put "peak RSS (VmHWM) after the set-up and the lookups (now: anonymous + the map's pages)" "$col" \
        "$(mib_kb "$(awk '/VmHWM/{print $2}' "/proc/$SRV_PID/status")") MiB ($(mib_kb "$(awk '/RssAnon/{print $2}' "/proc/$SRV_PID/status")") + $(mib_kb "$(awk '/RssFile/{print $2}' "/proc/$SRV_PID/status")"))"
    put "store: data.mdb / in use" "$col" \
        "$(mib "$(stat -c %s "$SRV_DIR/data/data.mdb")") / $(mib "$(lmdb_used "$SRV_DIR/data")") MiB"

    log "$col: kill -9, restart to the first correct route"
    kill -KILL "$SRV_PID"
    wait "$SRV_PID" 2>/dev/null || true
    kill -TERM "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
    : >"$SRV_DIR/restart.log"
    taskset -c "$CLI_CPU" "$NSBENCH" --restart-probe --json --ns "127.0.0.1:$SRV_PORT" \
        --setup-brokers "$b" --probe-topic $((t * 7 / 9)) --exec-cpu "$SRV_CPU" \
        --pid-file "$SRV_DIR/restart.pid" --probe-timeout-ms 120000 -- \
        "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort="$SRV_PORT" --dataDir="$SRV_DIR/data" \
        --syncMode=full --logLevel=info --configStorePath="$SRV_DIR/namesrv.properties" \
        --kvConfigPath="$SRV_DIR/kvConfig.json" --maxConnections=$((b + 1000)) \
        --maxConnectionsPerAddress=0 ${XARGS[@]+"${XARGS[@]}"} >"$WORK/$name.restart.json" \
        2>>"$SRV_DIR/restart.log" || true
    SRV_PID=$(cat "$SRV_DIR/restart.pid")
    PIDS+=("$SRV_PID")
    put "restart after kill -9 to the first correct route" "$col" \
        "$(fmt "$(j "$WORK/$name.restart.json" '.first_route_ms')") ms"
    for _ in $(seq 1200); do grep -q "checked (verifyOnStart" "$SRV_DIR/restart.log" && break; sleep 0.1; done
    put "verifyOnStart: quick check before listening / full walk beside" "$col" \
        "$(grep -o 'quick check passed[^;]*; [0-9]* records) in [0-9.]* ms' "$SRV_DIR/restart.log" | grep -o '[0-9.]* ms' | tail -1 || echo '?') / $(grep -o 'value decoded in [0-9]* ms' "$SRV_DIR/restart.log" | grep -o '[0-9]* ms' || echo '?')"

    log "$col: a broker of $((t / b)) topics registers into this store"
    client "$WORK/$name.reg.json" --ns "127.0.0.1:$SRV_PORT" --mode register --no-setup \
        --reg-brokers 1 --reg-topics $((t / b)) --count 10 --warmup 0 --server-pid "$SRV_PID"
    client "$WORK/$name.regdv.json" --ns "127.0.0.1:$SRV_PORT" --mode register --no-setup \
        --reg-brokers 1 --reg-topics $((t / b)) --count 10 --warmup 0 --reg-mutate 0 --server-pid "$SRV_PID"
    put "registration commit of one more broker of T/B topics, p50: every queue changed / new DataVersion only" "$col" \
        "$((t / b)) topics: $(fmt "$(j "$WORK/$name.reg.json" '.runs[0].latency_us.register_changed.p50 / 1000')") / $(fmt "$(j "$WORK/$name.regdv.json" '.runs[0].latency_us.register_changed.p50 / 1000')") ms"
    client "$WORK/$name.hb.json" --ns "127.0.0.1:$SRV_PORT" --mode heartbeat --hb-kind heartbeat \
        --no-setup --setup-brokers 100 --setup-topics 100 --depth 8 --duration "$DUR" --warmup 0.5 \
        --server-pid "$SRV_PID"
    put "BROKER_HEARTBEAT: server CPU each" "$col" \
        "$(fmt "$(j "$WORK/$name.hb.json" '.runs[0].server.cpu_us_per_req_stat')") µs"
    stop_pid "$SRV_PID"

    log "$col: dump and restore"
    t0=$(date +%s%N)
    "$CTL" dump --data-dir "$SRV_DIR/data" -o "$WORK/$name.dump.json" --compact >/dev/null 2>&1
    local dump_ms
    dump_ms=$(ms_since "$t0")
    t0=$(date +%s%N)
    "$CTL" restore --data-dir "$SRV_DIR/restored" -i "$WORK/$name.dump.json" >/dev/null 2>&1
    put "namesrvctl dump / restore (dump size)" "$col" \
        "$dump_ms / $(ms_since "$t0") ms ($(mib "$(stat -c %s "$WORK/$name.dump.json")") MiB)"
    rm -rf "$SRV_DIR/data" "$SRV_DIR/restored" "$WORK/$name.dump.json"

    if [ "$CG" = 1 ] && [ "$b" = 1000 ]; then
        log "$col: callgrind instructions per lookup"
        BUILD_DIR=$RELEASE_DIR "$ROOT/tools/callgrind_lookups.sh" --count 20000 --topology capacity \
            --topics "$t" --server-args "$SERVER_ARGS" >"$WORK/$name.cg.md" 2>"$WORK/$name.cg.err" || true
        put "instructions per lookup, depth 1 / 8 (ratio to echo), callgrind" "$col" \
            "$(awk -F'|' '/^\| capacity/ {gsub(/ /,"",$4); gsub(/ /,"",$6); printf "%s%s (%s)", sep, $4, $6; sep=" / "}' "$WORK/$name.cg.md")"
    fi
}

COLS=()
IFS=, read -ra SZ <<<"$SIZES"
for s in "${SZ[@]}"; do
    one_size "${s%%:*}" "${s##*:}"
    COLS+=("$(printf "%'d" "${s%%:*}") topics, $(printf "%'d" "${s##*:}") brokers")
done

{
    echo
    echo "growth.sh — $(date -u '+%Y-%m-%d %H:%M UTC'), $(($(date +%s) - START)) s; $(nproc) CPUs," \
        "server on CPU $SRV_CPU, client on CPU $CLI_CPU; other processes kept ${BUSY}% of all CPUs" \
        "busy before the run; sources $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
        "${SERVER_ARGS:+"; namesrvd $SERVER_ARGS"}"
    echo
    printf '| measurement |'; printf ' %s |' "${COLS[@]}"; echo
    printf '|---|'; printf -- '---|%.0s' "${COLS[@]}"; echo
    for r in "${ROWS[@]}"; do
        printf '| %s |' "$r"
        for c in "${COLS[@]}"; do printf ' %s |' "${V["$r|$c"]:-"-"}"; done
        echo
    done
} >"$WORK/growth.md"
cat "$WORK/growth.md"
[ -z "$OUT" ] || cp "$WORK/growth.md" "$OUT"
