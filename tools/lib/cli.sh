# cli.sh - sourced first by the scripts in tools/: what their command lines
# and Release builds have in common, so each says only what is its own.
#
#   ns_usage               the script's header comment (line 2 up to the first
#                          line that is not a comment) without its '# '
#   ns_args SPEC ARG...    the option loop, its options declared in SPEC, one
#                          word each: --name=VAR takes a value into VAR,
#                          --name:VAR is a flag that sets VAR=1. -h/--help
#                          prints the usage and exits 0; an unknown ARG or a
#                          missing value is refused (exit 2)
#   ns_need TOOL...        exit 1 naming the first TOOL not on PATH
#   ns_bench_certs DIR KEY a CA and a loopback server certificate (openssl)
#   ns_build_release SRC DIR TARGET...
#                          a Release build (tests off) of the tree SRC in
#                          DIR; quiet, or the tail of its log and exit 1
#   ns_builds_default      when BUILDS (a --builds list) is empty: the
#                          Release build of this tree (namesrvd, nsbench)
#                          in RELEASE_DIR, and BUILDS set to it
#
# NAME in messages is the script's file name. Set on sourcing: ROOT, the top
# of the tree the script is in; RELEASE_DIR, where its Release build goes
# ($BUILD_DIR, else ROOT/build-release); SRV_CPU and CLI_CPU, the cores a
# benchmark pins its server and client to (0 and 1), and NS_PIN_OPTS, the
# ns_args words that change them.

NS_CLI_NAME=$(basename "$0")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RELEASE_DIR=${BUILD_DIR:-$ROOT/build-release}
SRV_CPU=0
CLI_CPU=1
NS_PIN_OPTS="--server-cpu=SRV_CPU --client-cpu=CLI_CPU"

ns_usage() {
    sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p;};}' "$0"
}

ns_args() {
    local spec=" $1 " var
    shift
    while [ $# -gt 0 ]; do
        case "$spec" in
        *" $1="*)
            var=${spec#*" $1="}
            [ $# -ge 2 ] || { echo "$NS_CLI_NAME: $1 needs a value" >&2; exit 2; }
            printf -v "${var%% *}" '%s' "$2"
            shift 2 ;;
        *" $1:"*)
            var=${spec#*" $1:"}
            printf -v "${var%% *}" 1
            shift ;;
        *)
            case "$1" in
            -h | --help) ns_usage; exit 0 ;;
            *) echo "$NS_CLI_NAME: unknown argument $1" >&2; exit 2 ;;
            esac ;;
        esac
    done
}

ns_need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$NS_CLI_NAME: $tool is required" >&2; exit 1; }
    done
}

ns_build_release() {
    local src=$1 dir=$2 log
    shift 2
    log=$(mktemp /tmp/ns-build.XXXXXX)
    if ! { cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DNS_BUILD_TESTS=OFF &&
        cmake --build "$dir" -j2 --target "$@"; } >"$log" 2>&1; then
        tail -30 "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
}

ns_builds_default() {
    if [ -z "$BUILDS" ]; then
        ns_build_release "$ROOT" "$RELEASE_DIR" namesrvd nsbench
        BUILDS=$RELEASE_DIR
    fi
}

# ns_bench_certs DIR KEY: a CA (ca.pem) and a server certificate for
# 127.0.0.1/localhost (srv.pem, srv.key) in DIR, RSA-2048 or (KEY=ec) P-256,
# made with the openssl CLI; its log in DIR/openssl.log, shown on failure.
ns_bench_certs() {
    local dir=$1 newkey
    mkdir -p "$dir"
    if [ "$2" = ec ]; then newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1); else newkey=(-newkey rsa:2048); fi
    (cd "$dir" &&
        openssl req -x509 "${newkey[@]}" -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca &&
        openssl req "${newkey[@]}" -nodes -keyout srv.key -out srv.csr -subj /CN=localhost &&
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -set_serial 7 -out srv.pem -days 2 \
            -extfile srv.ext) >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log" >&2; exit 1; }
}
