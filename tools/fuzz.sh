#!/usr/bin/env bash
# tools/fuzz.sh - builds the libFuzzer targets of tests/fuzz with clang,
# replays every seed corpus and every past crash input (regressions/), then
# fuzzes each target for NS_FUZZ_SECONDS (default 20) seconds with inputs up
# to maxFrameBytes (16 MiB). A crash fails the run; its input is saved under
# tests/fuzz/regressions/<target>/ to be committed with the fix.
#
#   tools/fuzz.sh [target ...]        (default: every tests/fuzz/fuzz_*.c)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build-fuzz"
secs=${NS_FUZZ_SECONDS:-20}
if ! command -v clang >/dev/null; then
    echo "fuzz: clang not installed; skipped" >&2
    exit 0
fi
CC=clang cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNS_FUZZ=ON \
    -DNS_BUILD_TESTS=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$top"/tests/fuzz/fuzz_*.c; do
        t=$(basename "$f" .c)
        targets+=("${t#fuzz_}")
    done
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
    --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
status=0
printf '%-14s %8s %10s %9s %s\n' target seeds execs exec/s result
for t in "${targets[@]}"; do
    bin="$build/tests/fuzz/fuzz_$t"
    corpus="$top/tests/fuzz/corpus/$t"
    regress="$top/tests/fuzz/regressions/$t"
    mkdir -p "$corpus" "$regress" "$work/$t"
    seeds=$(find "$corpus" "$regress" -type f | wc -l)
    # 1. every seed and every past crash input, once
    if ! "$bin" -runs=0 "$corpus" "$regress" >"$work/$t.replay" 2>&1; then
        echo "fuzz: $t fails on a committed input:" >&2
        tail -40 "$work/$t.replay" >&2
        status=1
        continue
    fi
    # 2. a short fuzzing run; new inputs go to a scratch corpus
    if "$bin" -max_total_time="$secs" -max_len=16777216 -rss_limit_mb=4096 -timeout=25 \
        -print_final_stats=1 -artifact_prefix="$regress/" "$work/$t" "$corpus" \
        >"$work/$t.log" 2>&1; then
        result=ok
    else
        result="CRASH (input saved in tests/fuzz/regressions/$t/)"
        tail -60 "$work/$t.log" >&2
        status=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log" | tail -1)
    printf '%-14s %8s %10s %9s %s\n' "$t" "$seeds" "${execs:-?}" "${rate:-?}" "$result"
done
exit $status
