#!/usr/bin/env bash
# bench.sh - NameServer benchmarks: builds a Release namesrvd + nsbench, runs
# every workload on loopback with the server pinned to one core and the load
# generator to another, and prints ONE table (markdown) of results and targets.
#
#   tools/bench.sh [--quick] [--peers] [--keep] [--out FILE] [--server-cpu N] [--client-cpu N]
#
#   --quick       ~1 minute instead of ~5 (one round of 2 s per depth, 5 commits)
#   --keep        keep the temporary directory (server logs, raw JSON)
#   --out FILE    also write the table to FILE
#   --peers       instead: route lookups against namesrvd, the Java NameServer
#                 (Maven Central, tools/peers/pom.xml) and, with
#                 NS_RUST_NAMESRV=BINARY, rocketmq-rust's, one core each,
#                 alternating, beside the echo server (tools/lib/bench_peers.sh)
#   --server-cpu N / --client-cpu N   cores to pin to (0 and 1)
#
# Workloads (each on a fresh server with a fresh data directory):
#   smoke     100 topics,     10 brokers, 16 connections, depth 1 and 8
#   capacity  20,000 topics, 1,000 brokers, 64 connections, depth 1 and 8
#   large     100,000 topics, 1,000 brokers, 64 connections, depth 1 and 8,
#             then kill -9 and restart-to-first-correct-route
#   mixed     capacity topology + 2 brokers with 10,000 topics each
#             re-registering (compressed) every second, half of them with a new
#             DataVersion, while 16 connections read 20,000 routes/s
#   register  one broker, 10,000 topics, new DataVersion each time, syncMode=full
#   heartbeat 10 brokers: BROKER_HEARTBEAT, then unchanged re-registrations
# Every route workload is also run, with the same client and the same reply
# size, against `nsbench --echo-server` (the ceiling of any request/response
# server on this machine), alternating with the namesrvd runs (3 rounds of 4 s
# per depth, up to 6 while other processes use >20% of the server's core during
# a kept run; best round of each kept); the ratio is namesrvd QPS / echo QPS.
# The share of the server's core used by other processes during each run is
# printed too: on a shared machine, read the numbers with it.
#
# Needs: cmake, a C compiler, jq, taskset, mdb_stat (optional).
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

QUICK=0
KEEP=0
OUT=""
PEERS=0
ns_args "--quick:QUICK --peers:PEERS --keep:KEEP --out=OUT $NS_PIN_OPTS" "$@"

ns_need jq taskset cmake

BUILD=$RELEASE_DIR
NAMESRVD="$BUILD/namesrvd"
NSBENCH="$BUILD/nsbench"

if [ "$QUICK" = 1 ]; then
    ROUNDS=1; MAX_ROUNDS=1; DUR=2; WARM=0.5; MIXED_DUR=5; REG_COUNT=5; HB_DUR=2; HOLD=600
else
    ROUNDS=3; MAX_ROUNDS=6; DUR=4; WARM=1; MIXED_DUR=15; REG_COUNT=30; HB_DUR=6; HOLD=900
fi

WORK=$(mktemp -d /tmp/nsbench.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    if [ "$KEEP" = 1 ]; then
        echo "bench.sh: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[bench $(date +%T)] $*" >&2; }

# the server's sources change while people work: say which ones were measured
SRC_FP=$(cd "$ROOT" && find src store include migrations -type f \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null |
    sort -z | xargs -0 cat | sha256sum | cut -c1-12)
SRC_NEWEST=$(cd "$ROOT" && find src store include migrations -type f \( -name '*.c' -o -name '*.h' \) \
    -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -1 |
    awk '{ cmd = "date -u -d @" int($1) " +%H:%M"; cmd | getline t; close(cmd); print $2 " " t " UTC" }')
log "building Release into $BUILD (sources $SRC_FP, newest $SRC_NEWEST)"
ns_build_release "$ROOT" "$BUILD" namesrvd nsbench

. "$(dirname "$0")/lib/bench.sh"

TABLE="$WORK/table.md"
: >"$TABLE"
row() { # measurement | result | target | met
    printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >>"$TABLE"
}

if [ "$PEERS" = 1 ]; then
    . "$(dirname "$0")/lib/bench_peers.sh"
    peers_run
    exit 0
fi
BUSY=$(background_busy)
log "background CPU busy before the run: ${BUSY}% of all CPUs"
START=$(date +%s)

# ---- route workloads ----

# best_rounds NAME: the best round per target and depth (noise only ever slows
# a run down) -> NAME.ns.json, NAME.echo.json
best_rounds() {
    local t
    for t in ns echo; do
        jq -s '{runs: [ (map(.runs[0]) | map(select(. != null)) | max_by(.qps)),
                        (map(.runs[1]) | map(select(. != null)) | max_by(.qps)) ]}' \
            "$WORK/$1.$t".r*.json >"$WORK/$1.$t.json" 2>/dev/null || echo '{"runs":[]}' >"$WORK/$1.$t.json"
    done
}
declare -A ROUNDS_DONE

# route_workload NAME BROKERS TOPICS CONNS [restart]
# One client registers the topology and keeps it (--mode setup --hold); the
# readers then run ROUNDS times against namesrvd and against the echo server,
# alternately, so that both see the same background; the best round of each
# is reported. With restart=1 the server is finally killed with SIGKILL and
# restarted on the same data directory.
route_workload() {
    local name=$1 brokers=$2 topics=$3 conns=$4 restart=${5:-0}
    local topo=(--setup-brokers "$brokers" --setup-topics "$topics")
    local reads=(--no-setup --conns "$conns" --depth 1,8 --duration "$DUR" --warmup "$WARM" --seed 1)
    log "$name: namesrvd, registering $brokers brokers with $topics topics"
    start_server "$name"
    # in the background, by its own pid (taskset execs nsbench), so that it can be waited for and stopped
    taskset -c "$CLI_CPU" "$NSBENCH" --json --ns "127.0.0.1:$SRV_PORT" --mode setup "${topo[@]}" \
        --hold "$HOLD" --ready-file "$SRV_DIR/ready" >"$WORK/$name.setup.json" 2>>"$WORK/$name.setup.json.err" &
    local cpid=$!
    PIDS+=("$cpid")
    wait_file "$SRV_DIR/ready" 900 "$cpid" || {
        echo "bench.sh: $name set-up did not finish" >&2
        cat "$WORK/$name.setup.json.err" >&2
        exit 1
    }
    local r=0 body=0
    while :; do
        r=$((r + 1))
        log "$name: round $r: $conns readers against namesrvd, depth 1 and 8"
        client "$WORK/$name.ns.r$r.json" --ns "127.0.0.1:$SRV_PORT" "${topo[@]}" "${reads[@]}" \
            --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
        if [ "$r" = 1 ]; then
            body=$(j "$WORK/$name.ns.r1.json" '.runs[0].avg_body_bytes // 0' | awk '{printf "%d", $1 + 0.5}')
            [ "$body" -gt 0 ] 2>/dev/null || body=400
            start_echo "$name" "$body"
        fi
        log "$name: round $r: same readers against the echo server ($body-byte bodies)"
        client "$WORK/$name.echo.r$r.json" --ns "127.0.0.1:$ECHO_PORT" "${topo[@]}" "${reads[@]}" \
            --no-verify --server-pid "$ECHO_PID"
        best_rounds "$name"
        [ "$r" -ge "$ROUNDS" ] || continue
        [ "$r" -lt "$MAX_ROUNDS" ] || break
        # another round while a kept run had other processes on the server core
        local noisy
        noisy=$(jq -s '[.[].runs[] | (.server_core_other_load // 0)] | max > 0.2' \
            "$WORK/$name.ns.json" "$WORK/$name.echo.json" 2>/dev/null || echo false)
        [ "$noisy" = true ] || break
        log "$name: the machine was busy with other work during the kept runs; one more round"
    done
    ROUNDS_DONE[$name]=$r
    stop_pid "$ECHO_PID"
    # the brokers are still connected: measure the store
    lmdb_used "$SRV_DIR/data" >"$WORK/$name.lmdb_used"
    if [ "$restart" = 1 ]; then
        log "$name: kill -9 namesrvd (pid $SRV_PID) with $brokers brokers registered"
        kill -KILL "$SRV_PID"
        wait "$SRV_PID" 2>/dev/null || true
        wait "$cpid" 2>/dev/null || true
        log "$name: restart, polling for the first correct route"
        local probe_topic=$((topics * 7 / 9))
        taskset -c "$CLI_CPU" "$NSBENCH" --restart-probe --json --ns "127.0.0.1:$SRV_PORT" \
            --setup-brokers "$brokers" --probe-topic "$probe_topic" --exec-cpu "$SRV_CPU" \
            --pid-file "$SRV_DIR/restart.pid" --probe-timeout-ms 30000 -- \
            "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort="$SRV_PORT" --dataDir="$SRV_DIR/data" \
            --syncMode=full --logLevel=warn --configStorePath="$SRV_DIR/namesrv.properties" \
            --kvConfigPath="$SRV_DIR/kvConfig.json" >"$WORK/$name.restart.json" \
            2>>"$SRV_DIR/server.log" || true
        if [ -s "$SRV_DIR/restart.pid" ]; then
            local rp
            rp=$(cat "$SRV_DIR/restart.pid")
            PIDS+=("$rp")
            # the restored store, before any broker came back
            awk '/VmHWM/{print $2}' "/proc/$rp/status" >"$WORK/$name.restart_hwm_kb" 2>/dev/null || true
            stop_pid "$rp"
        fi
    else
        stop_pid "$SRV_PID" # the set-up client sees its brokers' connections close and exits
        wait "$cpid" 2>/dev/null || true
    fi
}

route_rows() { # NAME LABEL TARGETS(0/1)
    local name=$1 label=$2 targets=$3 i
    local ns="$WORK/$name.ns.json" echo="$WORK/$name.echo.json"
    for i in 0 1; do
        local d qps p50 p99 eq ep99 ratio cpu ecpu cratio err noise
        d=$(j "$ns" ".runs[$i].depth")
        qps=$(j "$ns" ".runs[$i].qps")
        p50=$(j "$ns" ".runs[$i].latency_us.route.p50")
        p99=$(j "$ns" ".runs[$i].latency_us.route.p99")
        eq=$(j "$echo" ".runs[$i].qps")
        ep99=$(j "$echo" ".runs[$i].latency_us.route.p99")
        cpu=$(j "$ns" ".runs[$i].server.cpu_us_per_req_sched")
        ecpu=$(j "$echo" ".runs[$i].server.cpu_us_per_req_sched")
        err=$(j "$ns" ".runs[$i].errors + .runs[$i].mismatches + .runs[$i].lost")
        noise=$(j "$ns" "(.runs[$i].server_core_other_load // 0) * 100")
        ratio=$(awk -v a="$qps" -v b="$eq" 'BEGIN{ if (b+0 > 0 && a != "?" && a != "null") printf "%.2f", a/b; else print "?" }')
        cratio=$(awk -v a="$cpu" -v b="$ecpu" 'BEGIN{ if (a+0 > 0 && b != "?" && b != "null") printf "%.2f", b/a; else print "?" }')
        local res="$(fmt0 "$qps") qps, p50 $(fmt "$p50") µs, p99 $(fmt "$p99") µs · echo $(fmt0 "$eq") qps, p99 $(fmt "$ep99") µs → **${ratio}×** · server CPU $(fmt "$cpu") µs/req vs echo $(fmt "$ecpu") (${cratio}×) · other load on server core $(fmt0 "$noise")%"
        [ "$err" != "0" ] && res="$res · errors+mismatches+lost: $err"
        local target="-" met="-"
        if [ "$targets" = 1 ] && [ "$d" = 1 ] && [ "$name" = smoke ]; then
            target="≥ 0.8× echo; p99 ≤ 300 µs"
            met=$(verdict "$ratio >= 0.8 && $p99 <= 300")
        elif [ "$targets" = 1 ]; then
            # with 64 closed-loop connections p99 >= 64 / QPS: 300 µs would take
            # more than 213k qps at depth 1, which the echo server does not reach
            target="≥ 0.8× echo"
            met=$(verdict "$ratio >= 0.8")
        fi
        [ "$targets" = 1 ] && [ "$err" != "0" ] && met="**NO** (errors)"
        row "route $label, depth $d (best of ${ROUNDS_DONE[$name]:-?} rounds)" "$res" "$target" "$met"
    done
}

route_workload smoke 10 100 16
route_workload capacity 1000 20000 64
route_workload large 1000 100000 64 1

# ---- mixed: reads during 10k-topic compressed registrations ----
log "mixed: capacity topology + 2 x 10,000-topic brokers re-registering every 1 s, reads at 20,000/s"
start_server mixed
client "$WORK/mixed.json" --ns "127.0.0.1:$SRV_PORT" --mode mixed --setup-brokers 1000 \
    --setup-topics 20000 --conns 16 --depth 1 --rate 20000 --duration "$MIXED_DUR" --warmup "$WARM" \
    --reg-brokers 2 --reg-topics 10000 --reg-interval-ms 1000 --reg-change-fraction 0.5 \
    --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
MIXED_HWM=$(j "$WORK/mixed.json" '.runs[0].server.vm_hwm_kb')
stop_pid "$SRV_PID"

# ---- register: commit latency of 10k-topic registrations with fsync ----
log "register: one broker, 10,000 topics, new DataVersion each time, syncMode=full"
start_server register
client "$WORK/register.json" --ns "127.0.0.1:$SRV_PORT" --mode register --setup-brokers 10 \
    --setup-topics 100 --reg-brokers 1 --reg-topics 10000 --count "$REG_COUNT" --warmup 0 \
    --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
client "$WORK/register_dvonly.json" --ns "127.0.0.1:$SRV_PORT" --mode register --setup-brokers 10 \
    --setup-topics 100 --reg-brokers 1 --reg-topics 10000 --count "$REG_COUNT" --warmup 0 \
    --reg-mutate 0 --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
stop_pid "$SRV_PID"

# ---- heartbeat: CPU per heartbeat, disk writes ----
log "heartbeat: 10 brokers, BROKER_HEARTBEAT then unchanged re-registrations"
start_server heartbeat
client "$WORK/hb.json" --ns "127.0.0.1:$SRV_PORT" --mode heartbeat --hb-kind heartbeat \
    --setup-brokers 10 --setup-topics 100 --depth 8 --duration "$HB_DUR" --warmup "$WARM" \
    --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
client "$WORK/rereg.json" --ns "127.0.0.1:$SRV_PORT" --mode heartbeat --hb-kind reregister \
    --setup-brokers 10 --setup-topics 100 --depth 8 --duration "$HB_DUR" --warmup "$WARM" \
    --server-pid "$SRV_PID" --data-dir "$SRV_DIR/data"
stop_pid "$SRV_PID"

ELAPSED=$(($(date +%s) - START))

# ---- the table ----
route_rows smoke "smoke (100 topics, 10 brokers, 16 conns)" 1
route_rows capacity "capacity (20k topics, 1k brokers, 64 conns)" 1
route_rows large "large (100k topics, 1k brokers, 64 conns)" 0

M="$WORK/mixed.json"
mp99=$(j "$M" '.runs[0].latency_us.route_during_registration.p99')
mn=$(j "$M" '.runs[0].latency_us.route_during_registration.n')
ap99=$(j "$M" '.runs[0].latency_us.route.p99')
op99=$(j "$M" '.runs[0].latency_us.route_outside_registration.p99')
amax=$(j "$M" '.runs[0].latency_us.route.max')
rc50=$(j "$M" '.runs[0].latency_us.register_changed.p50 / 1000')
rc99=$(j "$M" '.runs[0].latency_us.register_changed.p99 / 1000')
rcn=$(j "$M" '.runs[0].latency_us.register_changed.n')
ru50=$(j "$M" '.runs[0].latency_us.register_unchanged.p50 / 1000')
row "read p99 during 10k-topic compressed registrations (capacity + 2 brokers × 10k topics every 1 s, half with a new DataVersion; reads: 16 conns, 20,000/s)" \
    "p99 $(fmt "$mp99") µs over $(fmt0 "$mn") reads issued while a registration was in flight (reads with none in flight: p99 $(fmt "$op99") µs; all: p99 $(fmt "$ap99") µs, max $(fmt "$amax") µs; $(fmt0 "$(j "$M" '.runs[0].qps')") qps)" \
    "≤ 1 ms" "$(verdict "$mp99 <= 1000")"
row "… their commit latency under that read load" \
    "changed: p50 $(fmt "$rc50") ms, p99 $(fmt "$rc99") ms (n=$(fmt0 "$rcn")); unchanged: p50 $(fmt "$ru50") ms" \
    "≤ 30 ms" "$(verdict "$rc99 <= 30")"

R="$WORK/register.json"
row "registration commit, 10k topics, compressed, syncMode=full (every topic's queues change)" \
    "p50 $(fmt "$(j "$R" '.runs[0].latency_us.register_changed.p50 / 1000')") ms, p99 $(fmt "$(j "$R" '.runs[0].latency_us.register_changed.p99 / 1000')") ms (n=$(j "$R" '.runs[0].latency_us.register_changed.n')); $(mib "$(j "$R" '.runs[0].disk.write_bytes / .runs[0].requests')") MiB written/commit; data.mdb $(mib "$(j "$R" '.runs[0].disk.db_size_after')") MiB after" \
    "≤ 30 ms" "$(verdict "$(j "$R" '.runs[0].latency_us.register_changed.p99 / 1000') <= 30")"
R="$WORK/register_dvonly.json"
row "registration commit, 10k topics, new DataVersion only (queues unchanged)" \
    "p50 $(fmt "$(j "$R" '.runs[0].latency_us.register_changed.p50 / 1000')") ms, p99 $(fmt "$(j "$R" '.runs[0].latency_us.register_changed.p99 / 1000')") ms (n=$(j "$R" '.runs[0].latency_us.register_changed.n')); $(mib "$(j "$R" '.runs[0].disk.write_bytes / .runs[0].requests')") MiB written/commit" \
    "≤ 30 ms" "$(verdict "$(j "$R" '.runs[0].latency_us.register_changed.p99 / 1000') <= 30")"

for kind in hb rereg; do
    F="$WORK/$kind.json"
    if [ "$kind" = hb ]; then what="BROKER_HEARTBEAT (10 brokers, depth 8)"; k=heartbeat; else
        what="unchanged re-registration (10 brokers × ~15 topics, depth 8)"; k=reregister_unchanged; fi
    cpu_stat=$(j "$F" '.runs[0].server.cpu_us_per_req_stat')
    cpu_sched=$(j "$F" '.runs[0].server.cpu_us_per_req_sched')
    wb=$(j "$F" '.runs[0].disk.write_bytes')
    dbc=$(j "$F" '.runs[0].disk.db_changed')
    wrote="no disk write"
    { [ "$wb" != "0" ] || [ "$dbc" != "false" ]; } && wrote="WROTE: write_bytes +$wb, data.mdb changed=$dbc"
    row "$what: server CPU each" \
        "$(fmt "$cpu_stat") µs (utime+stime), $(fmt "$cpu_sched") µs (schedstat); $(fmt0 "$(j "$F" '.runs[0].qps')")/s, p99 $(fmt "$(j "$F" ".runs[0].latency_us.$k.p99")") µs; $wrote" \
        "≤ 5 µs, no disk write" "$(verdict "$cpu_stat <= 5 && \"$wrote\" == \"no disk write\"")"
done

row "topology set-up: registering every broker once (compressed bodies, syncMode=full)" \
    "smoke $(fmt "$(j "$WORK/smoke.setup.json" '.setup_ms')") ms · capacity $(fmt "$(j "$WORK/capacity.setup.json" '.setup_ms')") ms · large $(fmt "$(j "$WORK/large.setup.json" '.setup_ms')") ms" "-" "-"

RS="$WORK/large.restart.json"
rms=$(j "$RS" '.first_route_ms')
row "restart to first correct route, 100k topics, after kill -9" \
    "$(fmt "$rms") ms (first connect $(fmt "$(j "$RS" '.connect_ms')") ms)" "≤ 50 ms" "$(verdict "$rms <= 50 && $rms > 0")"

C="$WORK/capacity.ns.r${ROUNDS_DONE[capacity]:-1}.json"
hwm=$(j "$C" '.runs[-1].server.vm_hwm_kb')
row "peak RSS (VmHWM), capacity: 20k topics / 1k brokers / 64 conns, after the route runs" \
    "$(mib_kb "$hwm") MiB (now: anon $(mib_kb "$(j "$C" '.runs[-1].server.rss_anon_kb')") MiB + file-backed $(mib_kb "$(j "$C" '.runs[-1].server.rss_file_kb')") MiB); mixed run: $(mib_kb "$MIXED_HWM") MiB; large: $(mib_kb "$(j "$WORK/large.ns.r${ROUNDS_DONE[large]:-1}.json" '.runs[-1].server.vm_hwm_kb')") MiB; large right after its restart: $(mib_kb "$(cat "$WORK/large.restart_hwm_kb" 2>/dev/null || echo '?')") MiB" \
    "≤ 32 MiB" "$(verdict "$hwm <= 32768")"
for w in capacity large; do
    F="$WORK/$w.ns.r${ROUNDS_DONE[$w]:-1}.json"
    row "LMDB, $w: mapped / file / used" \
        "$(mib "$(j "$F" '.runs[-1].server.db_map_bytes')") MiB mapped / $(mib "$(j "$F" '.runs[-1].disk.db_size_after')") MiB data.mdb / $(mib "$(cat "$WORK/$w.lmdb_used" 2>/dev/null || echo '?')") MiB in use" \
        "-" "-"
done

{
    echo
    echo "nsbench results — $(date -u '+%Y-%m-%d %H:%M UTC'), $([ "$QUICK" = 1 ] && echo quick || echo full) run, ${ELAPSED}s;" \
        "$(nproc) CPUs ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)), server on CPU $SRV_CPU, client on CPU $CLI_CPU;" \
        "other processes kept ${BUSY}% of all CPUs busy just before the run;" \
        "server sources $SRC_FP (newest file: $SRC_NEWEST)"
    echo
    echo "| Measurement | Result | Target | Met |"
    echo "|---|---|---|---|"
    cat "$TABLE"
} >"$WORK/final.md"
cat "$WORK/final.md"
[ -n "$OUT" ] && cp "$WORK/final.md" "$OUT"
exit 0
