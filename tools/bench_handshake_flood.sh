#!/usr/bin/env bash
# bench_handshake_flood.sh - route lookup latency while other clients flood
# the server with new TLS connections, with the handshakes run on the loop
# that serves the lookups (tlsHandshakeOffload=false) and on worker threads
# (true, the default). Builds a Release namesrvd + nsbench
# of this tree, makes an RSA-2048 (or --key ec) certificate with the openssl
# CLI, and runs in alternating rounds, one server per setting:
#   quiet   plain lookups alone (--conns 4, depth 1, --rate 2000 per second)
#   flood   the same lookups while --flooders nsbench --handshakes clients
#           connect, handshake, look up once and close, back to back
# Server pinned to one core, every client to the other. Prints one markdown
# table: lookup p50/p99/max per setting (medians of the rounds) and the
# handshakes per second the flood got.
#
#   tools/bench_handshake_flood.sh [--rounds N] [--dur S] [--flooders N] [--key rsa|ec]
#                                  [--server-cpu LIST] [--client-cpu LIST] [--keep]
#
# Needs: cmake, a C compiler, jq, taskset, openssl. Loopback only.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

ROUNDS=3
DUR=5
FLOODERS=8
KEY=rsa
KEEP=0
ns_args "--rounds=ROUNDS --dur=DUR --flooders=FLOODERS --key=KEY --keep:KEEP $NS_PIN_OPTS" "$@"
ns_need jq taskset cmake openssl

. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/nsbench-hsflood.XXXXXX bench_handshake_flood.sh 50
log() { echo "[bench_handshake_flood $(date +%T)] $*" >&2; }

log "building this tree (Release)"
BIN="$WORK/bin"
ns_build_release "$ROOT" "$BIN" namesrvd nsbench

C="$WORK/certs"
ns_bench_certs "$C" "$KEY"

start() { # name offload -> PORT_<name>, PID_<name>
    local name=$1 offload=$2
    mkdir -p "$WORK/$name"
    taskset -c "$SRV_CPU" "$BIN/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 \
        --portFile="$WORK/$name/port" --dataDir="$WORK/$name/data" --logLevel=error \
        --configStorePath="$WORK/$name/namesrv.properties" --tls.config.file= \
        --tls.server.certPath="$C/srv.pem" --tls.server.keyPath="$C/srv.key" \
        --maxConnectionsPerAddress=0 --tlsHandshakeOffload="$offload" \
        >>"$WORK/$name/server.log" 2>&1 &
    PIDS+=("$!")
    eval "PID_$name=$!"
    for _ in $(seq 200); do [ -s "$WORK/$name/port" ] && break; sleep 0.05; done
    [ -s "$WORK/$name/port" ] || { cat "$WORK/$name/server.log" >&2; exit 1; }
    eval "PORT_$name=$(cat "$WORK/$name/port")"
}
start off false
start on true

lookups() { # label port round -> $WORK/<label>.<round>.json
    taskset -c "$CLI_CPU" "$BIN/nsbench" --ns "127.0.0.1:$2" --conns 4 --depth 1 --rate 2000 \
        --duration "$DUR" --warmup 0.5 --json >"$WORK/$1.$3.json"
}
flood() { # port round label: FLOODERS handshake clients for DUR+2 s, in the background
    local i
    FLOOD_PIDS=()
    for i in $(seq "$FLOODERS"); do
        taskset -c "$CLI_CPU" "$BIN/nsbench" --ns "127.0.0.1:$1" --handshakes --no-setup \
            --tls --tls-ca "$C/ca.pem" --duration "$((DUR + 2))" --warmup 0 \
            >"$WORK/flood.$3.$2.$i.txt" 2>&1 &
        FLOOD_PIDS+=("$!")
        PIDS+=("$!")
    done
    sleep 0.5
}
flood_wait() { local p; for p in "${FLOOD_PIDS[@]}"; do wait "$p" || true; done; }

for r in $(seq "$ROUNDS"); do
    log "round $r/$ROUNDS"
    for s in off on; do
        port=$(eval echo "\$PORT_$s")
        lookups "quiet_$s" "$port" "$r"
        flood "$port" "$r" "$s"
        lookups "flood_$s" "$port" "$r"
        flood_wait
    done
done

lat() { jq -r --arg q "$2" '.runs[0].latency_us.route[$q]' "$1"; }
median() { sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); if (NR % 2) print a[m]; else print (a[m] + a[m + 1]) / 2 }'; }
med() { for r in $(seq "$ROUNDS"); do lat "$WORK/$1.$r.json" "$2"; done | median; }
rounds() { for r in $(seq "$ROUNDS"); do lat "$WORK/$1.$r.json" "$2"; done | tr '\n' ' '; }
hs_rate() { # total conn/s of the flood in round r for setting s, summed over flooders
    cat "$WORK"/flood."$1"."$2".*.txt | sed -nE 's/.*= ([0-9.]+) conn\/s.*/\1/p' |
        awk '{ s += $1 } END { printf "%.0f", s }'
}
echo
echo "Lookups under a TLS handshake flood: $FLOODERS flooders ($KEY key), lookups 4 conns depth 1 at 2000/s, $ROUNDS rounds of ${DUR} s, $(date -u +%FT%TZ)"
echo
echo "| tlsHandshakeOffload | load | lookup p50 us | p99 us (per round) | max us | handshakes/s (per round) |"
echo "|---|---|---|---|---|---|"
for s in off on; do
    pace=$([ "$s" = off ] && echo false || echo true)
    for l in quiet flood; do
        hs="-"
        [ "$l" = flood ] && hs=$(for r in $(seq "$ROUNDS"); do hs_rate "$s" "$r"; printf ' '; done)
        echo "| $pace | $l | $(med "${l}_$s" p50) | $(med "${l}_$s" p99) ($(rounds "${l}_$s" p99)) | $(med "${l}_$s" max) | $hs |"
    done
done
