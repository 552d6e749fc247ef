# tests/interop/lib/common.sh - process bookkeeping, waits and checks for the
# interop scenarios. Sourced by run.sh; every function works on absolute paths.
#
# A scenario runs in its own subshell with these globals:
#   SDIR      its results directory (logs of every process it starts)
#   SNAME     its name
# Every process a scenario starts is a process-group leader (setsid); its pid
# is recorded in $SDIR/pids and the whole group is killed when the scenario
# ends, whatever way it ends (it_cleanup, installed as an EXIT trap).

it_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Fails the scenario: prints the reason, which run.sh shows in the table.
it_fail() {
    printf '%s\n' "$*" >>"$SDIR/failure"
    it_log "FAIL: $*"
    exit 1
}

# it_note TEXT - a remark run.sh shows beside a PASS in its table: what part of
# the scenario did not apply to this RocketMQ version, so that it is not
# passed silently.
it_note() {
    printf '%s\n' "$*" >>"$SDIR/note"
    it_log "NOTE: $*"
}

# it_spawn NAME LOGFILE CMD... - starts CMD as the leader of a new process
# group with stdout+stderr to LOGFILE; sets IT_PID to its pid (= its pgid).
# Not in $(...): the process must be a child of the scenario's shell.
it_spawn() {
    local name=$1 log=$2
    shift 2
    setsid "$@" >"$log" 2>&1 </dev/null &
    IT_PID=$!
    echo "$IT_PID $name" >>"$SDIR/pids"
}

# it_alive PID - true while the process runs (a zombie counts as gone).
it_alive() {
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    s=${s##*) }
    [ "${s%% *}" != Z ]
}

# it_stop PID [SECONDS] - SIGTERM to the process group, SIGKILL after SECONDS
# (default 30) if it is still there; waits until it is gone.
it_stop() {
    local pid=$1 limit=${2:-30} i
    it_alive "$pid" || return 0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < limit * 10; i++)); do
        it_alive "$pid" || break
        sleep 0.1
    done
    if it_alive "$pid"; then
        it_log "pid $pid still alive after ${limit}s: SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null || true
}

# it_kill9 PID - kill -9 of the whole process group, waits until it is gone.
it_kill9() {
    local pid=$1
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Stops every process group the scenario started, newest first (brokers
# before their name servers), SIGKILL for any still there after 20 s. The
# EXIT trap of every scenario; run.sh calls it again after the scenario.
it_cleanup() {
    [ -f "$SDIR/pids" ] || return 0
    local pid name i
    while read -r pid name; do
        it_alive "$pid" || continue
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 200; i++)); do
            it_alive "$pid" || break
            sleep 0.1
        done
        it_alive "$pid" && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; }
    done < <(tac "$SDIR/pids")
    return 0
}

# it_wait SECONDS DESCRIPTION CMD... - polls CMD every 0.2 s until it
# succeeds; fails the scenario with DESCRIPTION after SECONDS.
it_wait() {
    local limit=$1 what=$2
    shift 2
    local end=$(($(date +%s%N) / 1000000 + limit * 1000))
    while :; do
        "$@" && return 0
        (($(date +%s%N) / 1000000 > end)) && it_fail "timed out after ${limit}s waiting for: $what"
        sleep 0.2
    done
}

# it_wait_quiet SECONDS CMD... - like it_wait, but returns 1 instead of failing.
it_wait_quiet() {
    local limit=$1
    shift
    local end=$(($(date +%s%N) / 1000000 + limit * 1000))
    while :; do
        "$@" && return 0
        (($(date +%s%N) / 1000000 > end)) && return 1
        sleep 0.2
    done
}

# it_grep_count FILE PATTERN - how many lines of FILE match (0 if none/no file).
it_grep_count() { grep -c -E -- "$2" "$1" 2>/dev/null || true; }

# it_expect_grep FILE PATTERN WHAT - fails unless FILE has a line matching the ERE.
it_expect_grep() {
    grep -q -E -- "$2" "$1" 2>/dev/null || it_fail "$3 (no line matching /$2/ in $(basename "$1"))"
}

# it_expect_no_grep FILE PATTERN WHAT - fails if FILE has a line matching the ERE.
it_expect_no_grep() {
    if grep -q -E -- "$2" "$1" 2>/dev/null; then
        it_fail "$3 (line matching /$2/ in $(basename "$1"): $(grep -m1 -E -- "$2" "$1"))"
    fi
}

# it_port_free PORT - true if nothing accepts connections on 127.0.0.1:PORT.
it_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# it_free_ports N - sets IT_PORT to a base port B such that B-2 .. B+N-1
# look free and were not handed out before in this run (a broker uses its
# listenPort, listenPort-2 and listenPort+1). Ports come from 20000-31999,
# below Linux's ephemeral range, so that outgoing connections do not take
# them between the check and the bind.
it_free_ports() {
    local n=$1 base p ok try
    for ((try = 0; try < 200; try++)); do
        base=$((20002 + (RANDOM * 32768 + RANDOM) % 11990))
        ok=1
        for ((p = base - 2; p < base + n; p++)); do
            if ! it_port_free "$p" || grep -qsx -- "$p" "$IT_RESULTS/ports.used"; then
                ok=0
                break
            fi
        done
        if ((ok)); then
            for ((p = base - 2; p < base + n; p++)); do echo "$p"; done >>"$IT_RESULTS/ports.used"
            IT_PORT=$base
            return 0
        fi
    done
    it_fail "no free loopback ports found"
}

# it_http_get PORT PATH - the body of http://127.0.0.1:PORT/PATH (HTTP/1.0).
it_http_get() {
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
    sed '1,/^\r$/d' <&3
    exec 3<&-
}

# it_metric PORT SERIES - the value of one series on /metrics ("" if absent).
it_metric() { it_http_get "$1" /metrics | awk -v s="$2" '$1 == s { print $2 }'; }

# it_ms - milliseconds since the epoch.
it_ms() { echo $(($(date +%s%N) / 1000000)); }
