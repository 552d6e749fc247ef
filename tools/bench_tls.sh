#!/usr/bin/env bash
# bench_tls.sh - what TLS costs on the remoting port, and that plain
# connections cost what they did before it: builds a Release namesrvd +
# nsbench from this tree and from a base ref (default main, via git archive),
# makes a CA and a server certificate with the openssl CLI, and runs, in
# alternating rounds against one server of each build:
#   base plain | new plain | new TLS   route lookups, 16 connections, depth 1 and 8
# then connections per second (connect, handshake, one lookup, close) over
# TLS and plain. Server pinned to one core, client to the other; prints one
# markdown table with medians and the per-round ratios.
#
#   tools/bench_tls.sh [--rounds N] [--dur S] [--base REF] [--key rsa|ec] [--keep]
#
# Needs: cmake, a C compiler, jq, taskset, openssl, git.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

ROUNDS=5
DUR=3
BASE=main
KEY=rsa
KEEP=0
ns_args "--rounds=ROUNDS --dur=DUR --base=BASE --key=KEY --keep:KEEP" "$@"
ns_need jq taskset cmake openssl git

. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsbench-tls.XXXXXX bench_tls.sh 50
log() { echo "[bench_tls $(date +%T)] $*" >&2; }

log "building this tree and $BASE (Release)"
NEW="$WORK/new"
BASE_SRC="$WORK/base-src"
mkdir -p "$BASE_SRC"
git -C "$ROOT" archive "$BASE" | tar -x -C "$BASE_SRC"
ns_build_release "$ROOT" "$NEW" namesrvd nsbench
ns_build_release "$BASE_SRC" "$WORK/base" namesrvd nsbench

log "certificates ($KEY)"
C="$WORK/certs"
ns_bench_certs "$C" "$KEY"

start() { # name bin-dir args... -> PORT_<name>
    local name=$1 bin=$2; shift 2
    mkdir -p "$WORK/$name"
    taskset -c "$SRV_CPU" "$bin/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 \
        --portFile="$WORK/$name/port" --dataDir="$WORK/$name/data" --logLevel=warn \
        --configStorePath="$WORK/$name/namesrv.properties" "$@" >>"$WORK/$name/server.log" 2>&1 &
    PIDS+=("$!")
    eval "PID_$name=$!"
    for _ in $(seq 200); do [ -s "$WORK/$name/port" ] && break; sleep 0.05; done
    [ -s "$WORK/$name/port" ] || { cat "$WORK/$name/server.log" >&2; exit 1; }
    eval "PORT_$name=$(cat "$WORK/$name/port")"
}
start base "$WORK/base"
start new "$NEW" --tls.server.certPath="$C/srv.pem" --tls.server.keyPath="$C/srv.key" \
    --tls.config.file=

run() { # label port round pid [nsbench args] -> one JSON file per round
    local label=$1 port=$2 round=$3 pid=$4; shift 4
    taskset -c "$CLI_CPU" "$NEW/nsbench" --ns "127.0.0.1:$port" --server-pid "$pid" --conns 16 --depth 1,8 \
        --duration "$DUR" --warmup 0.5 --json "$@" >"$WORK/$label.$round.json"
}
hs() { # label port [args]: one line "conn/s p50 p99" appended to $WORK/hs.<label>
    local label=$1 port=$2; shift 2
    taskset -c "$CLI_CPU" "$NEW/nsbench" --ns "127.0.0.1:$port" --handshakes --duration 2 \
        --warmup 0.3 "$@" | tee -a "$WORK/hs.log" |
        sed -E 's/.*= ([0-9]+) conn\/s.*p50 ([0-9]+) .*p99 ([0-9]+) .*/\1 \2 \3/' >>"$WORK/hs.$label"
}
for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    run base_plain "$PORT_base" "$r" "$PID_base"
    run new_plain "$PORT_new" "$r" "$PID_new"
    run new_tls "$PORT_new" "$r" "$PID_new" --tls-ca "$C/ca.pem"
    hs base "$PORT_base"
    hs plain "$PORT_new"
    hs tls "$PORT_new" --tls-ca "$C/ca.pem"
done

qps() { jq -r --argjson d "$2" '.runs[] | select(.depth == $d) | .qps' "$1"; }
cpu() { jq -r --argjson d "$2" '.runs[] | select(.depth == $d) | .server.cpu_us_per_req_sched' "$1"; }
p99() { jq -r --argjson d "$2" '.runs[] | select(.depth == $d) | .latency_us.route.p99' "$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); if (NR % 2) print a[m]; else print (a[m] + a[m + 1]) / 2 }'; }

echo
echo "TLS vs plain: 16 connections, 10 brokers x 100 topics, $ROUNDS alternating rounds of ${DUR} s per depth, key $KEY, $(date -u +%FT%TZ)"
echo
echo "| depth | base plain QPS | new plain QPS | new TLS QPS | plain new/base QPS (per round) | TLS/plain QPS | server CPU us/lookup base / plain / TLS | p99 us base / plain / TLS |"
echo "|---|---|---|---|---|---|---|---|"
for d in 1 8; do
    ratios=""
    tls_r=""
    for r in $(seq "$ROUNDS"); do
        b=$(qps "$WORK/base_plain.$r.json" "$d"); n=$(qps "$WORK/new_plain.$r.json" "$d"); t=$(qps "$WORK/new_tls.$r.json" "$d")
        ratios="$ratios $(awk -v a="$n" -v b="$b" 'BEGIN { printf "%.3f", a / b }')"
        tls_r="$tls_r $(awk -v a="$t" -v b="$n" 'BEGIN { printf "%.3f", a / b }')"
    done
    mb=$(for r in $(seq "$ROUNDS"); do qps "$WORK/base_plain.$r.json" "$d"; done | median)
    mn=$(for r in $(seq "$ROUNDS"); do qps "$WORK/new_plain.$r.json" "$d"; done | median)
    mt=$(for r in $(seq "$ROUNDS"); do qps "$WORK/new_tls.$r.json" "$d"; done | median)
    pb=$(for r in $(seq "$ROUNDS"); do p99 "$WORK/base_plain.$r.json" "$d"; done | median)
    pn=$(for r in $(seq "$ROUNDS"); do p99 "$WORK/new_plain.$r.json" "$d"; done | median)
    pt=$(for r in $(seq "$ROUNDS"); do p99 "$WORK/new_tls.$r.json" "$d"; done | median)
    cb=$(for r in $(seq "$ROUNDS"); do cpu "$WORK/base_plain.$r.json" "$d"; done | median)
    cn=$(for r in $(seq "$ROUNDS"); do cpu "$WORK/new_plain.$r.json" "$d"; done | median)
    ct=$(for r in $(seq "$ROUNDS"); do cpu "$WORK/new_tls.$r.json" "$d"; done | median)
    mr=$(echo "$ratios" | tr ' ' '\n' | grep . | median)
    tr_=$(echo "$tls_r" | tr ' ' '\n' | grep . | median)
    printf '| %s | %.0f | %.0f | %.0f | %s (median %s) | %s | %.2f / %.2f / %.2f | %.0f / %.0f / %.0f |\n' "$d" "$mb" "$mn" "$mt" \
        "$(echo $ratios)" "$mr" "$tr_" "$cb" "$cn" "$ct" "$pb" "$pn" "$pt"
done
echo
col() { awk -v c="$2" '{ print $c }' "$WORK/hs.$1" | median; }
per_round() { awk '{ printf "%s ", $1 }' "$WORK/hs.$1"; }
echo "| connections/s (connect, handshake, 1 lookup, close; one at a time; 2 s per round) | conn/s (median) | per round | cycle p50 us | p99 us |"
echo "|---|---|---|---|---|"
echo "| new, TLS ($KEY) | $(col tls 1) | $(per_round tls)| $(col tls 2) | $(col tls 3) |"
echo "| new, plain | $(col plain 1) | $(per_round plain)| $(col plain 2) | $(col plain 3) |"
echo "| base, plain | $(col base 1) | $(per_round base)| $(col base 2) | $(col base 3) |"
