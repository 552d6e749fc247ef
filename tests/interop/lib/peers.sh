# tests/interop/lib/peers.sh - getting the peers: Apache RocketMQ
# $IT_RMQ_VERSION by Maven coordinates (tests/interop/java/pom.xml with
# -Drocketmq.version) and the Go client by Go modules (tests/interop/go/go.mod),
# each compiled with our programs into $IT_CACHE: the Java side in a directory
# of its own per RocketMQ version (classes and classpath never mix), the Go
# program once (the Go client does not depend on the broker's version). A peer_prepare_X function prints to stdout its progress (run.sh
# sends that to prepare-X.log) and, when the peer cannot be had, one line on
# stderr saying why, and returns non-zero.

IT_PEERS="java go"

# peer_java_dir - where the Java side of $IT_RMQ_VERSION is compiled to.
peer_java_dir() { echo "$IT_CACHE/java-$IT_RMQ_VERSION"; }

# java: broker, mqadmin (tools) and client jars, and our programs.
peer_prepare_java() {
    local out src="$IT_HERE/java"
    out=$(peer_java_dir)
    command -v java >/dev/null || { echo "no java on PATH (Debian: openjdk-17-jdk-headless)" >&2; return 1; }
    command -v mvn >/dev/null || { echo "no mvn on PATH (Debian: maven)" >&2; return 1; }
    command -v mdb_stat >/dev/null || { echo "no mdb_stat on PATH (Debian: lmdb-utils)" >&2; return 1; }
    java -version 2>&1
    # Maven is slow to start: skip it when the sources, the pom and the jars
    # it listed are unchanged since the last successful build.
    local stamp
    stamp=$( (echo "$IT_RMQ_VERSION" && cat "$src/pom.xml" $(find "$src/src" -name '*.java' | sort)) |
        sha256sum | cut -d' ' -f1)
    if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] && [ -f "$out/cp.txt" ] &&
        tr ':' '\n' <"$out/cp.txt" | while read -r j; do [ -f "$j" ] || exit 1; done; then
        echo "cached: $out"
        return 0
    fi
    rm -f "$out/stamp"
    if ! mvn -B -f "$src/pom.xml" -Drocketmq.version="$IT_RMQ_VERSION" -Dnsinterop.out="$out" \
        compile dependency:build-classpath -Dmdep.outputFile="$out/cp.txt"; then
        echo "mvn could not resolve or compile the RocketMQ $IT_RMQ_VERSION artifacts (offline? see the log)" >&2
        return 1
    fi
    echo "$stamp" >"$out/stamp"
}

# go: github.com/apache/rocketmq-client-go/v2 and our program.
peer_prepare_go() {
    command -v go >/dev/null || { echo "no go on PATH (Debian: golang-go)" >&2; return 1; }
    go version
    mkdir -p "$IT_CACHE/go"
    if ! (cd "$IT_HERE/go" && go build -o "$IT_CACHE/go/nsinterop-go" . 2>&1); then
        echo "go build of the rocketmq-client-go/v2 program failed (offline? see the log)" >&2
        return 1
    fi
}
