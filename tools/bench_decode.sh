#!/usr/bin/env bash
# tools/bench_decode.sh - cost per extFields entry of decoding a request
# header, from 10 to 10^6 entries, JSON and RocketMQ binary headers. Linear
# decoding shows as a flat ns/entry column (without the key index, a walk
# per entry, 80,000 entries took ~9 s and 10^6 took minutes).
#
#   tools/bench_decode.sh [max_entries]     (default 1000000)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target nsdecodebench >/dev/null
exec "$build/nsdecodebench" "${1:-1000000}"
