#!/usr/bin/env bash
# callgrind_commit.sh - server instructions per topic of a large registration
# that rewrites its routes (the commit of bench.sh's mixed workload, without
# the read load), counted by callgrind, for one build or several side by side.
#
#   tools/callgrind_commit.sh [--count N] [--topics T] [--rounds R] [--builds DIR,DIR...]
#                             [--profile]
#
# For each round and build: namesrvd starts under callgrind with collection
# off; one client registers the capacity topology (1,000 brokers, 20,000
# topics) and holds it; one more broker registers T topics (default 10,000,
# compressed; its topics are the topology's first T, so each route carries
# that broker and one or two others) twice unmeasured, then collection is
# switched on for N more registrations (default 6), each a new DataVersion
# with every queue count flipped: every topic's queue row, route and digest
# leaf is rewritten. Each client's run starts by adding the broker's topics
# (it was unregistered when the previous run's connection closed) and ends
# with that unregistration, so the count is the difference between a run of
# N + 1 registrations and a run of 1, each measured until the server is idle,
# over the whole process (the writer's work, the decode of the body
# included), divided by N * T. --profile also
# prints the inclusive count per topic of the commit's main steps over the
# N + 1 run (the adding and the removal included). Default:
# 1 round, one build, ROOT/build-release (built here). Needs valgrind
# (callgrind_control, callgrind_annotate). Loopback only.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

COUNT=6
TOPICS=10000
ROUNDS=1
BUILDS=""
PROFILE=0
ns_args "--count=COUNT --topics=TOPICS --rounds=ROUNDS --builds=BUILDS --profile:PROFILE" "$@"
ns_need valgrind callgrind_control callgrind_annotate
ns_builds_default
. "$ROOT/tools/lib/work.sh"
. "$ROOT/tools/lib/callgrind.sh"
ns_work_begin /tmp/nscgcommit.XXXXXX callgrind_commit.sh

register() { # build port count
    "$1/nsbench" --ns "127.0.0.1:$2" --mode register --no-setup --setup-brokers 1 \
        --setup-topics 10 --reg-brokers 1 --reg-topics "$TOPICS" --conns 1 --depth 1 \
        --count "$3" --warmup 0 --drain-timeout-ms 600000
}

# Waits till the server has used no CPU for a second (an unregistration
# after a close runs on).
settle() { # pid
    local a b=-1
    while :; do
        a=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
        [ "$a" = "$b" ] && return
        b=$a
        sleep 1
    done
}

# Instructions of one measured client run of COUNT registrations.
measured() { # build port dir pid count
    ns_cg_begin "$4"
    register "$1" "$2" "$5" >"$3/measured.log" 2>&1
    settle "$4"
    grep -q "errors=0 " "$3/measured.log" ||
        { echo "callgrind_commit.sh: errors in $3/measured.log" >&2; exit 1; }
    ns_cg_total "$3" "$4"
}

# Inclusive instructions per topic of the commit's main steps.
profile() { # dir pid topics
    local f
    f=$(ls -S "$1"/cg."$2"* | head -1)
    callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
        awk -v n="$3" '/\?\?\?:(reg_apply|body_check|ns_queue_update|ns_registry_before_commit|ns_route_materialise|ns_route_assemble|encode_form|ns_route_put|ns_digest_queue|ns_digest_flush) / {
            gsub(",", "", $1); match($0, /\?\?\?:[a-z_]+/)
            printf "    %-26s %7.0f\n", substr($0, RSTART + 4, RLENGTH - 4), $1 / n }'
}

one_run() { # build round
    local b=$1 d="$WORK/run$2" pid port total one
    mkdir -p "$d"
    ns_cg_server "$b" "$d"
    pid=$CG_PID port=$CG_PORT
    ns_cg_hold "$b" "$d" 1000 20000
    register "$b" "$port" 2 >"$d/warm.log" 2>&1
    settle "$pid"
    one=$(measured "$b" "$port" "$d" "$pid" 1)
    rm -f "$d"/cg."$pid".*
    total=$(($(measured "$b" "$port" "$d" "$pid" $((COUNT + 1))) - one))
    printf '%s round %s: %d instructions per registration, %d per topic\n' "$b" "$2" \
        "$((total / COUNT))" "$((total / COUNT / TOPICS))"
    [ "$PROFILE" = 1 ] && profile "$d" "$pid" "$(((COUNT + 1) * TOPICS))"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$d"
}

ns_rounds "$ROUNDS" "$BUILDS" one_run
awk '/round/ { s[$1] += $(NF - 2); n[$1]++ } END {
    for (b in s) printf "%s: %.0f instructions per topic (mean of %d)\n", b, s[b] / n[b], n[b] }' \
    "$WORK/all.txt"
