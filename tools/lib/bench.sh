# bench.sh - sourced by the benchmarks in tools/ after cli.sh: starting and
# stopping namesrvd and the echo server pinned to SRV_CPU, running nsbench
# pinned to CLI_CPU, and formatting its JSON.
#
# Needs, set by the caller: WORK (scratch directory), PIDS (array: every
# process started here is added to it, for the caller's cleanup), NAMESRVD
# and NSBENCH (the binaries). start_server passes FIXED_PORT (0 unless set)
# and any extra namesrvd arguments.

# Busy share of all CPUs over one second (other processes on the machine).
background_busy() {
    local a b
    a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
    local ta=0 tb=0 i
    for i in 1 2 3 4 5 6 7 8; do ta=$((ta + a[i])); tb=$((tb + b[i])); done
    local idle=$(((b[4] + b[5]) - (a[4] + a[5]))) total=$((tb - ta))
    echo $(((100 * (total - idle)) / (total > 0 ? total : 1)))
}

wait_file() { # file timeout_s [pid: give up when it exits]
    local i
    for i in $(seq $(($2 * 20))); do
        [ -s "$1" ] && return 0
        [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && { [ -s "$1" ]; return; }
        sleep 0.05
    done
    return 1
}

# start_server NAME [extra namesrvd args] -> sets SRV_PID SRV_PORT SRV_DIR
start_server() {
    local name=$1; shift
    SRV_DIR="$WORK/$name"
    mkdir -p "$SRV_DIR"
    rm -f "$SRV_DIR/port"
    taskset -c "$SRV_CPU" "$NAMESRVD" --bindAddress=127.0.0.1 --listenPort="${FIXED_PORT:-0}" \
        --portFile="$SRV_DIR/port" --dataDir="$SRV_DIR/data" --syncMode=full --logLevel=warn \
        --configStorePath="$SRV_DIR/namesrv.properties" --kvConfigPath="$SRV_DIR/kvConfig.json" \
        "$@" >>"$SRV_DIR/server.log" 2>&1 &
    SRV_PID=$!
    PIDS+=("$SRV_PID")
    wait_file "$SRV_DIR/port" 10 "$SRV_PID" || { echo "$NS_CLI_NAME: namesrvd did not start" >&2; cat "$SRV_DIR/server.log" >&2; exit 1; }
    SRV_PORT=$(cat "$SRV_DIR/port")
}

stop_pid() {
    local p=$1 i
    kill -TERM "$p" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}

# start_echo NAME BYTES -> ECHO_PID ECHO_PORT
start_echo() {
    local dir="$WORK/$1"
    mkdir -p "$dir"
    rm -f "$dir/echo.port"
    taskset -c "$SRV_CPU" "$NSBENCH" --echo-server --bind 127.0.0.1 --port 0 \
        --port-file "$dir/echo.port" --response-bytes "$2" 2>>"$dir/echo.log" &
    ECHO_PID=$!
    PIDS+=("$ECHO_PID")
    wait_file "$dir/echo.port" 10 "$ECHO_PID" || { echo "$NS_CLI_NAME: echo server did not start" >&2; exit 1; }
    ECHO_PORT=$(cat "$dir/echo.port")
}

# client OUTFILE ARGS... : nsbench pinned to the client core, JSON to OUTFILE
client() {
    local out=$1; shift
    local rc=0
    taskset -c "$CLI_CPU" "$NSBENCH" --json --server-cpu "$SRV_CPU" --client-cpu "$CLI_CPU" "$@" \
        >"$out" 2>>"$out.err" || rc=$?
    if [ ! -s "$out" ] || ! jq -e . "$out" >/dev/null 2>&1; then
        echo "$NS_CLI_NAME: nsbench failed (rc $rc): $*" >&2
        cat "$out.err" >&2
        echo '{"ok":false,"runs":[]}' >"$out"
    fi
}

j() { jq -r "$2" "$1" 2>/dev/null || echo "?"; } # j FILE FILTER

fmt() { # number with 1 decimal (or ?)
    case "$1" in "" | null | "?") echo "?" ;; *) printf "%.1f" "$1" ;; esac
}
fmt0() {
    case "$1" in "" | null | "?") echo "?" ;; *) printf "%.0f" "$1" ;; esac
}
# verdict EXPR -> yes / NO (EXPR evaluated by awk; ? when data is missing)
verdict() {
    case "$1" in *"?"* | *null*) echo "?"; return ;; esac
    if awk "BEGIN{exit !($1)}"; then echo "yes"; else echo "**NO**"; fi
}

lmdb_used() { # data dir -> bytes in use (pages used - free pages) * page size
    if command -v mdb_stat >/dev/null; then
        mdb_stat -ef "$1" 2>/dev/null | awk '/Page size:/{ps=$3} /Number of pages used:/{u=$5}
            /Free pages:/{f=$3} END{ if (ps) printf "%d", (u-f)*ps; else print "?" }'
    else
        echo "?"
    fi
}

mib() { case "$1" in "" | null | "?") echo "?" ;; *) awk "BEGIN{printf \"%.1f\", $1/1048576}" ;; esac; }
mib_kb() { case "$1" in "" | null | "?") echo "?" ;; *) awk "BEGIN{printf \"%.1f\", $1/1024}" ;; esac; }
