#!/usr/bin/env bash
# render_dashboard.sh - a picture of the dashboard's main panels with real
# data: a real Prometheus scrapes a real namesrvd on loopback every second
# while nsbench drives it through a few minutes of life (lookups, changing
# registrations, a kill -9 and restart with brokers coming back in the grace
# window and the rest evicted); then the panels' queries (from
# docs/monitoring/namesrv-dashboard.json, $__rate_interval = 10s) are run
# against Prometheus' query_range API and plotted with gnuplot.
#
#   tools/render_dashboard.sh [OUT.png]      (default /tmp/namesrv-dashboard.png)
#
# Needs: prometheus, gnuplot (Debian gnuplot-nox), jq, curl. Loopback only;
# takes about 3 minutes. BUILD_DIR as for bench_metrics.sh.
set -euo pipefail

OUT="${1:-/tmp/namesrv-dashboard.png}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="${BUILD_DIR:-$ROOT/build-release}"
DASH="$ROOT/docs/monitoring/namesrv-dashboard.json"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j2 --target namesrvd nsbench >/dev/null
W=$(mktemp -d /tmp/nsdash.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HPORT=$(free_port)
PPORT=$(free_port)
NSPID=""
start_ns() {
    rm -f "$W/port"
    "$BUILD/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$W/port" \
        --dataDir="$W/data" --configStorePath="$W/p" --kvConfigPath="$W/kv" --logLevel=warn \
        --httpListen="127.0.0.1:$HPORT" --brokerGraceWindowMillis=30000 \
        --scanNotActiveBrokerInterval=1000 2>>"$W/ns.log" &
    NSPID=$!
    PIDS+=("$NSPID")
    for _ in $(seq 200); do [ -s "$W/port" ] && break; sleep 0.05; done
    NS="127.0.0.1:$(cat "$W/port")"
}
cat >"$W/prom.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: namesrv
    static_configs: [{targets: ["127.0.0.1:$HPORT"]}]
EOF
start_ns
prometheus --config.file="$W/prom.yml" --storage.tsdb.path="$W/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" --log.level=warn 2>"$W/prom.log" &
PIDS+=($!)
T0=$(date +%s)
bench() { "$BUILD/nsbench" --ns "$NS" "$@" >/dev/null 2>&1 || true; }

echo "render_dashboard: 0 s: 10 brokers x 100 topics register and stay; lookups at 20,000/s" >&2
bench --mode setup --setup-brokers 10 --setup-topics 100 --hold 75 &
PIDS+=($!)
sleep 3
bench --mode route --no-setup --topics 100 --conns 8 --depth 4 --rate 20000 --duration 25 --warmup 0
echo "render_dashboard: registrations with changing data versions beside lookups" >&2
bench --mode mixed --no-setup --topics 100 --reg-brokers 2 --reg-topics 2000 \
    --reg-interval-ms 500 --conns 8 --rate 10000 --duration 25 --warmup 0
bench --mode route --no-setup --topics 100 --conns 8 --depth 4 --rate 40000 --duration 15 --warmup 0
echo "render_dashboard: kill -9, restart: the brokers wait in the grace window" >&2
kill -9 "$NSPID"; wait "$NSPID" 2>/dev/null || true
sleep 2
start_ns
bench --mode route --no-setup --topics 100 --conns 8 --depth 4 --rate 20000 --duration 10 --warmup 0
echo "render_dashboard: 6 of the 10 brokers come back; the others are evicted at the window's end" >&2
bench --mode setup --setup-brokers 6 --setup-topics 60 --hold 60 &
PIDS+=($!)
bench --mode route --no-setup --topics 60 --conns 8 --depth 4 --rate 20000 --duration 45 --warmup 0
sleep 5
T1=$(date +%s)

# query_range of one expression -> gnuplot data, appended to file: per
# series a "# legend" line, "t value" lines and two blank lines
query() { # file expr legendFormat
    local q=${2//\$__rate_interval/10s}
    q=${q//\$job/namesrv}
    q=${q//\$instance/.*}
    curl -s -G "http://127.0.0.1:$PPORT/api/v1/query_range" --data-urlencode "query=$q" \
        --data-urlencode "start=$T0" --data-urlencode "end=$T1" --data-urlencode "step=2" >"$W/q.json"
    jq -r --arg l "$3" --argjson t0 "$T0" '.data.result[] |
        select([.values[][1] | tonumber? // 0] | max > 0) | .metric as $m |
        "# " + ($l | gsub("\\{\\{(?<k>[a-z_]+)\\}\\}"; ($m[.k] // ""))),
        (.values[] | "\(.[0] - $t0) \(.[1])"), "", ""' "$W/q.json" >>"$1"
}
# plot_panel n "title" "ylabel" "dashboard panel title" target_index...
plot_panel() {
    local n=$1 title=$2 ylabel=$3 panel=$4
    shift 4
    : >"$W/p$n.dat"
    for i in "$@"; do
        query "$W/p$n.dat" \
            "$(jq -r --arg t "$panel" --argjson i "$i" '.panels[] | select(.title == $t) | .targets[$i].expr' "$DASH")" \
            "$(jq -r --arg t "$panel" --argjson i "$i" '.panels[] | select(.title == $t) | .targets[$i].legendFormat' "$DASH")"
    done
    echo "$title|$ylabel" >"$W/p$n.title"
}
plot_panel 1 "Requests/s by request" "req/s" "Requests/s by request" 0
plot_panel 2 "Request latency p50 / p99" "seconds" "Request latency" 0 1
plot_panel 3 "Brokers by state" "brokers" "Brokers by state" 0
plot_panel 4 "Writer commit latency" "seconds" "Writer commit latency" 0 1 2
plot_panel 5 "Registrations, heartbeats, evictions (per 10 s)" "" "Registrations, heartbeats, evictions" 0 1 2
plot_panel 6 "Grace window remaining (s), connections open" "" "Grace window" 0 &&
    query "$W/p6.dat" "$(jq -r '.panels[] | select(.title == "Connections") | .targets[0].expr' "$DASH")" "connections open"

# legends: the label values of each series (from the "# k=v,..." lines)
{
    echo "set terminal pngcairo noenhanced size 1600,1000 font 'DejaVu Sans,9' background rgb '#181b1f'"
    echo "set output '$OUT'"
    echo "set multiplot layout 3,2 title 'namesrvd on loopback, scraped by Prometheus every 1 s (x: seconds since start; kill -9 and restart at ~70 s, grace window 30 s)' textcolor rgb '#d8d9da'"
    echo "set border lc rgb '#555555'; set grid lc rgb '#333333'; set key textcolor rgb '#d8d9da' top left"
    echo "set xtics textcolor rgb '#d8d9da'; set ytics textcolor rgb '#d8d9da'; set style data lines"
    for n in 1 2 3 4 5 6; do
        IFS='|' read -r title ylabel <"$W/p$n.title"
        echo "set title '$title' textcolor rgb '#d8d9da'; set ylabel '$ylabel' textcolor rgb '#d8d9da'"
        [ "$n" = 2 ] || [ "$n" = 4 ] && echo "set logscale y; set format y '%.0e'" || echo "unset logscale y; set format y '%g'"
        blocks=$(grep -c '^# ' "$W/p$n.dat" || true)
        if [ "$blocks" = 0 ]; then echo "plot NaN title 'no data'"; continue; fi
        printf 'plot '
        i=0
        grep '^# ' "$W/p$n.dat" | sed 's/^# //' |
            while read -r lab; do
                [ -z "$lab" ] && lab="series $i"
                [ $i -gt 0 ] && printf ', '
                printf "'%s' index %d using 1:2 lw 2 title '%s'" "$W/p$n.dat" "$i" "$lab"
                i=$((i + 1))
            done
        echo
    done
    echo "unset multiplot"
} >"$W/plot.gp"
gnuplot "$W/plot.gp"
echo "render_dashboard: wrote $OUT" >&2
