#!/usr/bin/env bash
# pause_test.sh - stop namesrvd (SIGSTOP, as a VM pause or a swap storm
# would) for a long time while five brokers go on heartbeating, then let it
# go on (SIGCONT): no live broker may be evicted, and a broker that went
# silent when the pause began must still be evicted once the grace window
# after the pause is over. Runs the pause test of tests/integration/
# test_liveness.c alone, against the real namesrvd of the build.
#
#   tools/pause_test.sh [--pause-ms MS] [--short] [--build DIR]
#
#   --pause-ms MS  how long the server stays stopped (default 200000)
#   --short        the CI settings (scan 1 s, grace 5 s, brokers heartbeating
#                  every second with a 4 s timeout) instead of the server's
#                  defaults (scan 5 s, grace 120 s, 120 s heartbeat timeout,
#                  idle connections closed after 120 s; brokers heartbeating
#                  every 5 s)
#   --build DIR    the build directory (default: build-test)
#
# With the defaults a run takes the pause plus about 2.5 minutes. Exit
# status: the test's (0 when it passed).
set -u
. "$(dirname "$0")/lib/cli.sh"

pause_ms=200000
short=0
build=$ROOT/build-test
ns_args "--pause-ms=pause_ms --short:short --build=build" "$@"
case "$pause_ms" in
'' | *[!0-9]*) echo "$NS_CLI_NAME: --pause-ms takes a number of milliseconds" >&2; exit 2 ;;
esac
bin=$build/tests/integration_liveness
[ -x "$bin" ] || {
    echo "$NS_CLI_NAME: $bin not found (cmake --build $build --target integration_liveness)" >&2
    exit 2
}
defaults=1
((short)) && defaults=0
echo "$NS_CLI_NAME: $(date -u +%FT%TZ) pause ${pause_ms} ms, $( ((defaults)) && echo "server defaults" || echo "CI settings")"
NSTEST_PAUSE_MS=$pause_ms NSTEST_PAUSE_DEFAULTS=$defaults "$bin"
rc=$?
echo "$NS_CLI_NAME: $(date -u +%FT%TZ) exit status $rc"
exit $rc
