#!/usr/bin/env bash
# check_build_deps.sh - the build's dependencies are written once, in
# tools/dist/build-deps, and nothing else drifts from it:
#   1. every pkg-config module that CMakeLists.txt asks for comes from a
#      package of the list's first column (asked of dpkg: who owns the .pc);
#   2. tools/docker/Dockerfile installs that list (it COPYs and reads the
#      file) and names no -dev package of its own;
#   3. every runtime package of the second column is installed here, so
#      dpkg-shlibdeps can put it in the .deb's Depends (tools/setup.sh
#      package then checks that it did);
#   4. given a built namesrvd (tools/check_build_deps.sh BUILD_DIR), the
#      image's settings file (tools/docker/namesrv.properties) is one it
#      accepts, with httpListen set for the image's health check.
# Exit 0 when all hold, 1 with one line per drift. Run by tools/setup.sh test.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
list="$top/tools/dist/build-deps"
fail=0
drift() { echo "build-deps: $*" >&2; fail=1; }

build=$(sed -e 's/#.*//' "$list" | awk 'NF { print $1 }')
runtime=$(sed -e 's/#.*//' "$list" | awk 'NF && $2 != "-" { print $2 }')

# 1. pkg_check_modules(VAR [REQUIRED] IMPORTED_TARGET module[>=version])
modules=$(sed -n 's/^ *pkg_check_modules(\(.*\))/\1/p' "$top/CMakeLists.txt" |
    awk '{ print $NF }' | sed 's/[<>=].*//')
[ -n "$modules" ] || drift "no pkg_check_modules found in CMakeLists.txt"
for m in $modules; do
    dir=$(pkg-config --variable=pcfiledir "$m" 2>/dev/null) || { drift "pkg-config knows no module $m"; continue; }
    owner=$(dpkg -S "$dir/$m.pc" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$owner" ] || { drift "no package owns $dir/$m.pc"; continue; }
    grep -qx "$owner" <<<"$build" || drift "module $m comes from $owner, which tools/dist/build-deps does not list"
done

# 2. the Dockerfile reads the list and has no package list of its own
docker="$top/tools/docker/Dockerfile"
grep -q 'tools/dist/build-deps' "$docker" || drift "the Dockerfile does not read tools/dist/build-deps"
own=$(grep -v '^ *#' "$docker" | grep -o '[a-z0-9.+-]*-dev\b' | sort -u || true)
[ -z "$own" ] || drift "the Dockerfile names build packages of its own: $(echo $own)"

# 3. the runtime packages exist on this host
for p in $runtime; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        drift "runtime package $p (second column) is not installed: is its name right for this release?"
done

# 4. the image's settings file
if [ -n "${1:-}" ]; then
    conf="$top/tools/docker/namesrv.properties"
    eff=$("$1/namesrvd" -c "$conf" -p 2>&1) || drift "namesrvd refuses $conf: $eff"
    grep -q '^httpListen=0.0.0.0:9877$' <<<"$eff" ||
        drift "the image's settings have no httpListen=0.0.0.0:9877 (its HEALTHCHECK asks /healthz there)"
    grep -q 'namesrvctl", "health", "--http", "127.0.0.1:9877"' "$docker" ||
        drift "the Dockerfile's HEALTHCHECK does not ask namesrvctl health on 127.0.0.1:9877"
fi

[ "$fail" = 0 ] && echo "build-deps: $(wc -w <<<"$build") build and $(wc -w <<<"$runtime") runtime packages, CMakeLists.txt and the Dockerfile agree"
exit "$fail"
