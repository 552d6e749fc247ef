#!/usr/bin/env bash
# callgrind_registrations.sh - server instructions per REGISTER_BROKER that
# writes (a new DataVersion, every queue count flipped: each registration
# rewrites its topics' routes and writes a history record), counted by
# callgrind, for one build or several side by side, rounds alternating.
#
#   tools/callgrind_registrations.sh [--count N] [--rounds R] [--builds DIR,DIR...]
#
# For each round and build: namesrvd starts under callgrind with collection
# off; 200 brokers of 30 topics register 400 times unmeasured (their first
# registrations), then collection is switched on for N more (default 1000)
# and the total is divided by N. Default: 2 rounds, one build,
# ROOT/build-release (built here). Output: one line per round and build,
# then the mean per build (docs/performance.md, "Memory at the capacity
# topology"). Needs valgrind (callgrind_control). Loopback only.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

COUNT=1000
ROUNDS=2
BUILDS=""
ns_args "--count=COUNT --rounds=ROUNDS --builds=BUILDS" "$@"
ns_need valgrind callgrind_control
ns_builds_default
. "$ROOT/tools/lib/work.sh"
. "$ROOT/tools/lib/callgrind.sh"
ns_work_begin /tmp/nscgreg.XXXXXX callgrind_registrations.sh

register() { # build port count
    "$1/nsbench" --ns "127.0.0.1:$2" --mode register --no-setup --setup-brokers 1 \
        --setup-topics 10 --reg-brokers 200 --reg-topics 30 --conns 4 --depth 1 --count "$3" \
        --warmup 0 --drain-timeout-ms 120000
}

one_run() { # build round
    local b=$1 d="$WORK/run$2" pid port total
    mkdir -p "$d"
    ns_cg_server "$b" "$d"
    pid=$CG_PID port=$CG_PORT
    ns_cg_hold "$b" "$d" 1 10
    register "$b" "$port" 400 >"$d/warm.log" 2>&1
    ns_cg_begin "$pid"
    register "$b" "$port" "$COUNT" >"$d/measured.log" 2>&1
    total=$(ns_cg_total "$d" "$pid")
    grep -q "errors=0 " "$d/measured.log" ||
        { echo "callgrind_registrations.sh: errors in $d/measured.log" >&2; exit 1; }
    printf '%s round %s: %d instructions per registration\n' "$b" "$2" "$((total / COUNT))"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$d"
}

ns_rounds "$ROUNDS" "$BUILDS" one_run
awk '/round/ { s[$1] += $(NF - 3); n[$1]++ } END {
    for (b in s) printf "%s: %.0f instructions per registration (mean of %d)\n", b, s[b] / n[b], n[b] }' \
    "$WORK/all.txt"
