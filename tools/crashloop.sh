#!/bin/sh
# crashloop.sh - run the kill -9 crash test (tests/crash/test_kv_crash.c) many
# times with different seeds and report the runs that failed.
#
#   tools/crashloop.sh [-n RUNS] [-i ITERATIONS] [-s FIRST_SEED] [-b BINARY] [-o LOGDIR]
#
#   -n RUNS        how many runs (default 50)
#   -i ITERATIONS  kill/restart iterations per run (NS_CRASH_ITERATIONS; default 20)
#   -s FIRST_SEED  seed of the first run; run k uses FIRST_SEED + k
#                  (default: derived from the clock; printed)
#   -b BINARY      the crash test binary (default: the first of
#                  build*/tests/crash_kv_crash, newest first)
#   -o LOGDIR      where the output of failed runs is kept (default: a new
#                  directory under ${TMPDIR:-/tmp})
#
# Replay one failure with:  NS_CRASH_SEED=<seed> NS_CRASH_ITERATIONS=<n> <binary>
# Exit status: 0 when every run passed, 1 when some failed, 2 on bad usage.
set -u

runs=50
iterations=20
seed=""
bin=""
logdir=""

usage() {
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

while getopts "n:i:s:b:o:h" opt; do
    case "$opt" in
    n) runs=$OPTARG ;;
    i) iterations=$OPTARG ;;
    s) seed=$OPTARG ;;
    b) bin=$OPTARG ;;
    o) logdir=$OPTARG ;;
    *) usage ;;
    esac
done

case "$runs$iterations${seed:-0}" in
*[!0-9]*) echo "crashloop: -n, -i and -s take non-negative integers" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
    # newest build first
    bin=$(ls -t "$root"/build*/tests/crash_kv_crash 2>/dev/null | head -n 1)
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "crashloop: crash test binary not found (build it: make crash_kv_crash, or pass -b)" >&2
    exit 2
fi
if [ -z "$seed" ]; then
    seed=$(( $(date +%s) % 1000000 * 1000 ))
fi
if [ -z "$logdir" ]; then
    logdir=$(mktemp -d "${TMPDIR:-/tmp}/crashloop-XXXXXX") || exit 2
else
    mkdir -p "$logdir" || exit 2
fi

echo "crashloop: $runs runs x $iterations iterations of $bin, seeds $seed..$((seed + runs - 1))"
failed=0
failed_seeds=""
acked_total=0
start=$(date +%s)
k=0
while [ "$k" -lt "$runs" ]; do
    s=$((seed + k))
    out="$logdir/run-$s.log"
    if NS_CRASH_SEED=$s NS_CRASH_ITERATIONS=$iterations "$bin" >"$out" 2>&1; then
        acked=$(sed -n 's/.* \([0-9][0-9]*\) acknowledged .*/\1/p' "$out" | tail -n 1)
        acked_total=$((acked_total + ${acked:-0}))
        printf 'run %d seed %d: ok (%s acked)\n' "$((k + 1))" "$s" "${acked:-?}"
        rm -f "$out"
    else
        failed=$((failed + 1))
        failed_seeds="$failed_seeds $s"
        printf 'run %d seed %d: FAILED (log: %s)\n' "$((k + 1))" "$s" "$out"
        grep -E 'LOST|TORN|ERROR|FAIL|died|did not come back' "$out" | head -n 5 | sed 's/^/    /'
    fi
    k=$((k + 1))
done
elapsed=$(( $(date +%s) - start ))

echo "crashloop: $((runs - failed))/$runs runs passed, $acked_total acknowledged ops checked," \
     "${elapsed}s"
if [ "$failed" -gt 0 ]; then
    echo "crashloop: failed seeds:$failed_seeds (logs in $logdir)"
    echo "crashloop: replay with NS_CRASH_SEED=<seed> NS_CRASH_ITERATIONS=$iterations $bin"
    exit 1
fi
rmdir "$logdir" 2>/dev/null
exit 0
