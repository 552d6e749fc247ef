#!/usr/bin/env bash
# powercut.sh - simulated power cuts by hand: runs the power-cut harness
# (tests/powercut/powercut.c, built as build*/tests/powercut) for many cuts,
# under one syncMode or all three, and prints each run's totals.
#
#   tools/powercut.sh [--cuts N] [--seed S] [--sync-mode MODE|all] [--ignore-sync]
#                     [--bin BINARY] [--verbose]
#
#   --cuts N        cuts per run (default 10000)
#   --seed S        the run's seed (default: from the clock; printed); each cut
#                   derives its own seed from it, printed with the cut
#   --sync-mode M   full (default), nometasync, nosync, or all (one run each)
#   --ignore-sync   a disk that lies about flushes: the shim records no sync
#                   (the harness must then find losses)
#   --bin BINARY    the harness (default: the newest of build*/tests/powercut)
#   --verbose       one line per cut
#
# Under full the run passes only with no acknowledged write lost and no
# unopenable store; under nometasync and nosync (and --ignore-sync) the
# harness is told to expect losses and the totals say what they were.
# A failing cut's files, journal and seed are kept under the run's
# directory (printed). Exit status: 0 when every run passed, 1 otherwise.
set -u
. "$(dirname "$0")/lib/cli.sh"

cuts=10000
seed=""
mode=full
bin=""
ignore_sync=""
verbose=""
ns_args "--cuts=cuts --seed=seed --sync-mode=mode --ignore-sync:ignore_sync --bin=bin --verbose:verbose" "$@"
extra=""
[ -z "$ignore_sync" ] || extra="$extra --ignore-sync"
[ -z "$verbose" ] || extra="$extra --verbose"

if [ -z "$bin" ]; then
    bin=$(ls -t "$ROOT"/build*/tests/powercut 2>/dev/null | head -n 1)
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "powercut.sh: no harness binary (build the tests, or give --bin)" >&2
    exit 2
fi
[ -n "$seed" ] || seed=$(( $(date +%s) % 2147483647 ))
case "$mode" in
all) modes="full nometasync nosync" ;;
full | nometasync | nosync) modes=$mode ;;
*) ns_usage >&2; exit 2 ;;
esac

status=0
logdir=$(mktemp -d "${TMPDIR:-/tmp}/powercut.XXXXXX")
for m in $modes; do
    # only full with a disk that keeps its flushes promises no loss
    expect="--expect-loss"
    [ "$m" != full ] || [ -n "$ignore_sync" ] || expect=""
    log="$logdir/$m.log"
    echo "== $bin --cuts $cuts --seed $seed --sync-mode $m$extra $expect"
    # shellcheck disable=SC2086 # word splitting of the option lists is meant
    "$bin" --cuts "$cuts" --seed "$seed" --sync-mode "$m" $extra $expect >"$log" 2>&1
    rc=$?
    # the totals, and the first failures (the whole output stays in the log)
    grep -E '^#   |^# totals|^# power' "$log"
    grep -E '^(LOST|UNOPENABLE|kept )' "$log" | head -n 5
    echo "== exit $rc (output: $log)"
    [ "$rc" = 0 ] || status=1
done
exit $status
