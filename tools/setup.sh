#!/usr/bin/env bash
# tools/setup.sh - the two set-up commands of README.md.
#
#   tools/setup.sh run    install what is missing, build, run namesrvd in the
#                         foreground on 127.0.0.1:9876 with ./data as data dir
#   tools/setup.sh test   install what is missing, check the formatting,
#                         build (Debug, Release and ASan+UBSan, all with
#                         -Werror; Release only built, not run) and run
#                         every test, the interop suite last
#                         (against the ASan+UBSan build), then build the
#                         Debian package and inspect it
#   tools/setup.sh format only the formatting check (clang-format drift)
#   tools/setup.sh interop  install what is missing, build (Debug) and run only
#                         the interop suite (tests/interop/README.md); extra
#                         arguments pick scenarios by name, --version X the
#                         Apache RocketMQ version (default 5.3.3)
#   tools/setup.sh package  only the package step: build/namesrv_<v>_<arch>.deb
#   tools/setup.sh docker   build the container image and start it (needs a Docker engine)
#
# Both are idempotent and work as root on a fresh Debian 12 machine.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

# What the build needs: tools/dist/build-deps, the one list the Dockerfile and
# the package check read too (first column; comments and blank lines skipped).
build_deps() { sed -e 's/#.*//' "$top/tools/dist/build-deps" | awk 'NF { print $1 }'; }
packages="$(build_deps | tr '\n' ' ')"
# What only the tests need: libcmocka-dev (unit tests), clang-format (the format
# check), clang (libFuzzer targets); the interop suite: JVM and Maven for Apache
# RocketMQ, Go for its Go client, mdb_stat to read the store's last transaction id
packages="$packages libcmocka-dev clang-format clang openjdk-17-jdk-headless maven golang-go lmdb-utils"
# prometheus: promtool checks the alert rules and every scrape in the tests; jq: the
# dashboard JSON lint; gnuplot-nox: tools/render_dashboard.sh (by hand, not in the tests);
# openssl: the CLI the tests make certificates and key files with
packages="$packages prometheus jq gnuplot-nox openssl"

# RocketMQ versions besides the interop suite's default (5.3.3) that CI runs,
# and on which scenarios: 5.5.0 is the newest 5.x whose broker, client and
# tools Maven Central serves (5.5.1's client, tools and parent POM are not
# there), 4.9.7 the newest 4.9.x (4.9.8 has no broker artifact there)
interop_versions="5.5.0 4.9.7"
interop_version_scenarios="01 02 03 07 13"

install_missing() {
    local missing=()
    for p in $packages; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "setup: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Every C file as the committed .clang-format lays it out; lists the ones
# that drift (the project's sources, not build trees).
format_check() {
    local drift=() f
    while IFS= read -r f; do
        clang-format --style=file "$f" | cmp -s - "$f" || drift+=("$f")
    done < <(git -C "$top" ls-files '*.c' '*.h' 2>/dev/null || find src store migrations include tools tests -name '*.[ch]')
    if [ ${#drift[@]} -gt 0 ]; then
        echo "setup: not formatted (run clang-format -i on them):" >&2
        printf '  %s\n' "${drift[@]}" >&2
        return 1
    fi
}

build() { # dir, cmake args...
    local dir=$1
    shift
    cmake -S "$top" -B "$dir" "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" >/dev/null
}

# Builds the .deb with CPack in build-pkg and checks what it holds
# (dpkg-deb -I: control fields and maintainer scripts; -c: the files).
package() {
    local dir="$top/build-pkg"
    build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNS_BUILD_TESTS=OFF
    rm -f "$dir"/namesrv_*.deb
    (cd "$dir" && cpack -G DEB >/dev/null)
    local deb
    deb=$(ls "$dir"/namesrv_*.deb)
    dpkg-deb -I "$deb"
    dpkg-deb -c "$deb"
    local info files
    info=$(dpkg-deb -I "$deb")
    files=$(dpkg-deb -c "$deb")
    # every runtime package of tools/dist/build-deps (second column) is in Depends
    local runtime
    runtime=$(sed -e 's/#.*//' "$top/tools/dist/build-deps" | awk 'NF && $2 != "-" { print $2 }')
    for want in "Package: namesrv" "Depends: adduser" $runtime postinst prerm postrm; do
        grep -q "$want" <<<"$info" || { echo "setup: package control lacks '$want'" >&2; exit 1; }
    done
    for want in ./usr/bin/namesrvd ./usr/bin/namesrvctl ./usr/lib/systemd/system/namesrvd.service \
        ./usr/share/man/man8/namesrvd.8.gz ./usr/share/man/man8/namesrvctl.8.gz \
        ./usr/share/namesrv/namesrv.properties; do
        grep -q " $want\$" <<<"$files" || { echo "setup: package lacks $want" >&2; exit 1; }
    done
    local x
    x=$(mktemp -d)
    dpkg-deb -x "$deb" "$x"
    dpkg-deb -e "$deb" "$x/DEBIAN"
    grep -q '^ExecStart=/usr/bin/namesrvd -c /etc/namesrv/namesrv.properties$' \
        "$x/usr/lib/systemd/system/namesrvd.service" || { echo "setup: unit ExecStart" >&2; exit 1; }
    grep -q '^Type=notify$' "$x/usr/lib/systemd/system/namesrvd.service"
    for script in postinst prerm postrm; do sh -n "$x/DEBIAN/$script"; done
    "$x/usr/bin/namesrvd" --version >/dev/null
    rm -rf "$x"
    cp "$deb" "$top/build/" 2>/dev/null || { mkdir -p "$top/build" && cp "$deb" "$top/build/"; }
    echo "== package $(basename "$deb") built and inspected"
}

case "${1:-}" in
run)
    install_missing
    build "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNS_BUILD_TESTS=OFF
    mkdir -p "$top/data"
    exec "$top/build/namesrvd" --bindAddress=127.0.0.1 --listenPort=9876 \
        --dataDir="$top/data" --configStorePath="$top/data/namesrv.properties" "${@:2}"
    ;;
test)
    install_missing
    start=$(date +%s)
    echo "== format (clang-format, .clang-format)"
    format_check
    echo "== build (Debug, -Werror)"
    build "$top/build-test" -DCMAKE_BUILD_TYPE=Debug -DNS_WERROR=ON
    # Optimised builds warn about what -O0 never looks at (uninitialised
    # paths, truncation that needs value ranges), so Release with its tests
    # must build warning-free too; building it is the whole check, its tests
    # are the Debug ones run below. Its own build dir: the benches reuse
    # build-release with other options.
    echo "== build (Release, -Werror, tests included; build only)"
    build "$top/build-werror-release" -DCMAKE_BUILD_TYPE=Release -DNS_WERROR=ON -DNS_BUILD_TESTS=ON
    echo "== monitoring files (alert rules, dashboard)"
    "$top/tools/check_monitoring.sh"
    echo "== build dependencies (one list: setup, Dockerfile, package) and the image's settings"
    "$top/tools/check_build_deps.sh" "$top/build-test"
    echo "== tests"
    (cd "$top/build-test" && ctest --output-on-failure -j "$jobs")
    echo "== build (ASan+UBSan, -Werror)"
    build "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DNS_WERROR=ON -DNS_SANITIZE=ON
    echo "== tests under ASan+UBSan"
    (cd "$top/build-asan" &&
        ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            ctest --output-on-failure -j "$jobs")
    echo "== fuzzing (clang + libFuzzer: every corpus replayed, each target ${NS_FUZZ_SECONDS:-20} s)"
    "$top/tools/fuzz.sh"
    if [ "${NS_INTEROP:-1}" = 0 ] && [ "${CI:-}" != true ]; then
        echo "== interop suite skipped (NS_INTEROP=0)"
    else
        echo "== interop suite (real RocketMQ 5.3.3 peers) against the ASan+UBSan build"
        ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            NS_INTEROP_BIN="$top/build-asan" "$top/tests/interop/run.sh"
        # the other versions in the field on what every cluster does:
        # registration, routing, mqadmin, Java and Go produce/consume, and
        # non-ASCII names and values (5.5's fastjson2 writes them raw); the
        # rest of their scenarios with tools/setup.sh interop --version X
        for v in $interop_versions; do
            echo "== interop suite (real RocketMQ $v peers: $interop_version_scenarios) against the ASan+UBSan build"
            ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                NS_INTEROP_BIN="$top/build-asan" "$top/tests/interop/run.sh" --version "$v" \
                $interop_version_scenarios
        done
    fi
    echo "== package"
    package
    echo "== all tests passed in $(($(date +%s) - start)) s"
    ;;
format)
    format_check
    ;;
package)
    install_missing
    package
    ;;
docker)
    # Builds the container image (tools/docker/Dockerfile) and starts it with
    # the store, backups and settings in named volumes, ports on loopback.
    command -v docker >/dev/null && docker info >/dev/null 2>&1 || {
        echo "setup: docker needs a running Docker engine (docker info failed)" >&2
        exit 1
    }
    "$top/tools/check_build_deps.sh"
    rev=$(git -C "$top" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    docker build -f "$top/tools/docker/Dockerfile" --build-arg NS_GIT_REVISION="$rev" -t namesrv "$top"
    docker rm -f namesrv >/dev/null 2>&1 || true
    docker run -d --name namesrv -p 127.0.0.1:9876:9876 -p 127.0.0.1:9877:9877 \
        -v namesrv-data:/var/lib/namesrv -v namesrv-backups:/var/backups/namesrv \
        -v namesrv-etc:/etc/namesrv namesrv "${@:2}"
    for _ in $(seq 60); do
        [ "$(docker inspect -f '{{.State.Health.Status}}' namesrv 2>/dev/null)" = healthy ] && break
        sleep 1
    done
    docker ps --filter name=namesrv
    ;;
interop)
    install_missing
    build "$top/build-test" -DCMAKE_BUILD_TYPE=Debug -DNS_WERROR=ON
    exec "$top/tests/interop/run.sh" "${@:2}"
    ;;
*)
    echo "usage: tools/setup.sh run [--key=value ...] | tools/setup.sh test | tools/setup.sh format | tools/setup.sh interop [--version X] [SCENARIO ...] | tools/setup.sh package | tools/setup.sh docker" >&2
    exit 2
    ;;
esac
