#!/usr/bin/env bash
# tests/interop/run.sh [--version X] [NAME_PATTERN ...] - the interop suite:
# real Apache RocketMQ brokers, Java clients and mqadmin of version X
# (default 5.3.3; 5.5.0 and 4.9.7 are run in CI too) and the Go client
# against the real namesrvd, every process on 127.0.0.1 with temp dirs. See
# README.md.
#
# Environment:
#   NS_INTEROP_VERSION  the RocketMQ version when --version is not given
#   NS_INTEROP_BIN      directory with namesrvd and namesrvctl (default: build-test/)
#   NS_INTEROP_CACHE    compiled programs and the classpath (default: ~/.cache/namesrvd-interop),
#                       one directory per RocketMQ version so that versions never share
#                       classes or a classpath; jars stay in Maven's ~/.m2, Go modules in
#                       Go's module cache
#   NS_INTEROP_RESULTS  results: one directory per scenario with every process's log
#                       (default: $NS_INTEROP_BIN/interop-results for 5.3.3,
#                       interop-results-X for another version; emptied first)
#   CI=true             a peer that cannot be had is a failure, not a skip
#
# Prints one line per scenario (name, PASS/FAIL/SKIP, seconds, reason), then a
# table; exits 1 if any scenario failed (or, with CI=true, was skipped).
set -uo pipefail

IT_DEFAULT_VERSION=5.3.3
IT_RMQ_VERSION=${NS_INTEROP_VERSION:-$IT_DEFAULT_VERSION}
# --version may stand anywhere on the line; the other arguments are patterns
IT_PATTERNS=()
while [ $# -gt 0 ]; do
    case $1 in
    --version)
        [ $# -ge 2 ] || { echo "interop: --version needs a value" >&2; exit 2; }
        IT_RMQ_VERSION=$2
        shift 2
        ;;
    --version=*)
        IT_RMQ_VERSION=${1#--version=}
        shift
        ;;
    *)
        IT_PATTERNS+=("$1")
        shift
        ;;
    esac
done
set -- "${IT_PATTERNS[@]}"
[[ $IT_RMQ_VERSION =~ ^[45]\.[0-9]+\.[0-9]+$ ]] ||
    { echo "interop: RocketMQ version '$IT_RMQ_VERSION' is not 4.x.y or 5.x.y" >&2; exit 2; }
# the major version picks what differs between 4.x and 5.x peers (log lines,
# JVM flags, which scenarios apply)
IT_RMQ_MAJOR=${IT_RMQ_VERSION%%.*}
export IT_RMQ_VERSION IT_RMQ_MAJOR

IT_HERE=$(cd "$(dirname "$0")" && pwd)
IT_TOP=$(cd "$IT_HERE/../.." && pwd)
IT_BIN=$(cd "${NS_INTEROP_BIN:-$IT_TOP/build-test}" && pwd) || exit 2
IT_CACHE=${NS_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/namesrvd-interop}
if [ "$IT_RMQ_VERSION" = "$IT_DEFAULT_VERSION" ]; then
    IT_RESULTS=${NS_INTEROP_RESULTS:-$IT_BIN/interop-results}
else
    IT_RESULTS=${NS_INTEROP_RESULTS:-$IT_BIN/interop-results-$IT_RMQ_VERSION}
fi
IT_CI=false
[ "${CI:-}" = true ] && IT_CI=true
export IT_HERE IT_TOP IT_BIN IT_CACHE IT_RESULTS

for f in namesrvd namesrvctl; do
    [ -x "$IT_BIN/$f" ] || { echo "interop: $IT_BIN/$f missing: build first" >&2; exit 2; }
done
rm -rf "$IT_RESULTS"
mkdir -p "$IT_RESULTS" "$IT_CACHE"

# shellcheck source=lib/common.sh
. "$IT_HERE/lib/common.sh"
# shellcheck source=lib/rocketmq.sh
. "$IT_HERE/lib/rocketmq.sh"
# shellcheck source=lib/peers.sh
. "$IT_HERE/lib/peers.sh"

suite_start=$(it_ms)
echo "== interop: Apache RocketMQ $IT_RMQ_VERSION; preparing peers (logs in $IT_RESULTS)"
declare -A PEER_WHY
for peer in $IT_PEERS; do
    t0=$(it_ms)
    if why=$("peer_prepare_$peer" 2>&1 >"$IT_RESULTS/prepare-$peer.log"); then
        printf '   peer %-6s ready (%d ms)\n' "$peer" $(($(it_ms) - t0))
    else
        PEER_WHY[$peer]=${why:-see prepare-$peer.log}
        printf '\n   !!!!! PEER MISSING: %s: %s\n   !!!!! (log: %s)\n\n' "$peer" "${PEER_WHY[$peer]}" \
            "$IT_RESULTS/prepare-$peer.log"
    fi
done
IT_JAVA_OUT=$(peer_java_dir)
[ -f "$IT_JAVA_OUT/cp.txt" ] && IT_CP="$IT_JAVA_OUT/classes:$(cat "$IT_JAVA_OUT/cp.txt")"
IT_GO="$IT_CACHE/go/nsinterop-go"
export IT_CP IT_GO

# run_scenario FILE - runs one scenario file in a subshell, bounded in time;
# appends "name status seconds reason" to $IT_RESULTS/summary.
run_scenario() {
    local file=$1 name status reason needs p
    name=$(basename "$file" .sh)
    local dir="$IT_RESULTS/$name"
    mkdir -p "$dir"
    needs=$(sed -n 's/^IT_NEEDS="\(.*\)"/\1/p' "$file")
    # a scenario that cannot apply to some versions says so: IT_SKIP_VERSION
    # is a glob on the version, IT_SKIP_WHY the reason shown for the SKIP
    local skip_pat skip_why
    skip_pat=$(sed -n 's/^IT_SKIP_VERSION="\(.*\)"/\1/p' "$file")
    skip_why=$(sed -n 's/^IT_SKIP_WHY="\(.*\)"/\1/p' "$file")
    reason=""
    for p in $needs; do
        [ -n "${PEER_WHY[$p]:-}" ] && reason+="peer $p missing: ${PEER_WHY[$p]}; "
    done
    local t0
    t0=$(it_ms)
    # shellcheck disable=SC2053 # the pattern is a glob on purpose
    if [ -n "$skip_pat" ] && [[ $IT_RMQ_VERSION == $skip_pat ]]; then
        status=SKIP
        reason="not on RocketMQ $IT_RMQ_VERSION: ${skip_why:-declared by the scenario}"
    elif [ -n "$reason" ]; then
        status=SKIP
        $IT_CI && status=FAIL
    else
        (
            SDIR=$dir
            SNAME=$name
            trap it_cleanup EXIT
            trap 'exit 143' TERM
            # shellcheck source=/dev/null
            . "$file"
            scenario
        ) >"$dir/scenario.log" 2>&1 &
        local spid=$! limit=${IT_SCENARIO_TIMEOUT:-300} rc=0 waited=0
        while it_alive "$spid" && ((waited < limit * 5)); do
            sleep 0.2
            waited=$((waited + 1))
        done
        if it_alive "$spid"; then
            echo "scenario timed out after ${limit}s" >>"$dir/failure"
            kill -TERM "$spid" 2>/dev/null
            sleep 3
            kill -KILL "$spid" 2>/dev/null
        fi
        wait "$spid" || rc=$?
        SDIR=$dir it_cleanup # whatever the subshell left running
        # a sanitizer report in any namesrvd log (the ASan+UBSan build under
        # tools/setup.sh test) fails the scenario too
        local san
        san=$(grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir"/*.log.* 2>/dev/null | head -1)
        [ -n "$san" ] && echo "sanitizer report in $(basename "$san")" >>"$dir/failure"
        if [ "$rc" = 0 ] && [ ! -s "$dir/failure" ]; then
            status=PASS
            [ -s "$dir/note" ] && reason=$(paste -s -d ';' "$dir/note")
        else
            status=FAIL
            reason=$(head -1 "$dir/failure" 2>/dev/null)
            [ -n "$reason" ] || reason="exit status $rc (see $name/scenario.log)"
        fi
    fi
    local secs
    secs=$(awk -v ms=$(($(it_ms) - t0)) 'BEGIN { printf "%.1f", ms / 1000 }')
    printf '%-26s %-4s %6ss  %s\n' "$name" "$status" "$secs" "$reason"
    if [ "$status" = FAIL ] && [ -f "$dir/scenario.log" ]; then
        sed 's/^/      | /' "$dir/scenario.log" | tail -25
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$secs" "$reason" >>"$IT_RESULTS/summary"
}

echo "== interop: scenarios"
for file in "$IT_HERE"/scenarios/[0-9]*.sh; do
    name=$(basename "$file" .sh)
    if [ $# -gt 0 ]; then
        match=0
        for pat in "$@"; do [[ $name == *$pat* ]] && match=1; done
        ((match)) || continue
    fi
    run_scenario "$file"
done

pass=0 fail=0 skip=0
echo
echo "== interop: results, Apache RocketMQ $IT_RMQ_VERSION ($IT_RESULTS)"
printf '%-26s | %-6s | %8s | %s\n' "scenario" "result" "seconds" "note"
printf '%s\n' "---------------------------+--------+----------+------------------------------"
while IFS=$'\t' read -r name status secs reason; do
    printf '%-26s | %-6s | %8s | %s\n' "$name" "$status" "$secs" "$reason"
    case $status in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) ;; *) skip=$((skip + 1)) ;; esac
done <"$IT_RESULTS/summary"
total=$(awk -v ms=$(($(it_ms) - suite_start)) 'BEGIN { printf "%.0f", ms / 1000 }')
echo
echo "== interop: wall time ${total} s"
# the closing line keeps the plain "word: N passed, N failed, N skipped" form
echo "== interop: Apache RocketMQ $IT_RMQ_VERSION"
echo "interop: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ] || exit 1
exit 0
