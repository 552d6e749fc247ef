#!/bin/sh
# run.sh - the ACL interop check with the real RocketMQ 5.3.3 Java classes
# (AclInterop.java): signatures of fixed inputs, then a live namesrvd with
# authMode=all serving a real broker, a producer and the admin API.
#
#   tests/interop/auth/run.sh BUILD_DIR LIB_DIR
# LIB_DIR holds the 5.3.3 jars (rocketmq-client, -tools, -broker and their
# dependencies, e.g. `mvn dependency:copy-dependencies` of
# org.apache.rocketmq:rocketmq-broker:5.3.3 and rocketmq-tools:5.3.3).
# Exit 0 when every check passes. Runs on 127.0.0.1 only.
set -eu
B=$1
LIB=$2
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/ns-acl-interop.XXXXXX)
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

echo "== signatures of fixed inputs (tests/unit/test_auth.c cases A-C)"
java -cp "$LIB/*" "$HERE/AclInterop.java" vectors 2>/dev/null | grep -E '^[ABC] ' > "$T/vectors"
cat "$T/vectors"
grep -q '^A GeeGoP9mRvDhoVp4PD5omX0prgE= ' "$T/vectors"
grep -q '^B HrKLPreAKqd/2zvbOIHCBZuiIk0=$' "$T/vectors"
grep -q '^C X4NV3tvrnlxil3uP0cIUdElLNCE=$' "$T/vectors"
echo "ok   the Java hook signs cases A-C as our unit test expects"

echo "== live: namesrvd authMode=all, secrets sealed (authKeyFile)"
D=$T/data
openssl rand -hex 32 > "$T/ns.key"
K="--key-file $T/ns.key"
"$B/namesrvctl" user add admin1 --role admin --secret adminsecret --data-dir "$D" $K >/dev/null
"$B/namesrvctl" user add brk1 --role broker --secret brokersecret \
    --brokers 'DefaultCluster/broker-a' --data-dir "$D" $K >/dev/null
"$B/namesrvctl" user add cli1 --role client --secret clientsecret --data-dir "$D" $K >/dev/null
"$B/namesrvd" --dataDir="$D" --listenPort=0 --bindAddress=127.0.0.1 --portFile="$T/port" \
    --authMode=all --authPenaltyMaxMillis=0 --authKeyFile="$T/ns.key" \
    --configStorePath="$T/ns.properties" 2> "$T/namesrvd.log" &
PID=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
NS=127.0.0.1:$(cat "$T/port")
mkdir -p "$T/brokers" "$T/mqhome/conf"
printf 'accessKey: admin1\nsecretKey: adminsecret\n' > "$T/mqhome/conf/tools.yml"
export ROCKETMQ_HOME="$T/mqhome"
RC=0
java -Xmx512m -cp "$LIB/*" -Duser.home="$T" "$HERE/AclInterop.java" live "$NS" "$T/brokers" \
    2>"$T/java.log" > "$T/java.out" || RC=$?
grep -E '^(ok|FAIL) |checks' "$T/java.out" || true
echo "== refusals namesrvd recorded"
"$B/namesrvctl" user refusals --data-dir "$D" | sed 's/^/   /' | head -20
"$B/namesrvctl" user refusals --data-dir "$D" > "$T/refusals"
for want in "REGISTER_BROKER brk1: this AccessKey is not granted broker name 'broker-b'" \
    "GET_ROUTEINFO_BY_TOPIC -: GET_ROUTEINFO_BY_TOPIC needs a signed request"; do
    if grep -qF "$want" "$T/refusals"; then
        echo "ok   on record: $want"
    else
        echo "FAIL on record: $want"
        RC=1
    fi
done
exit $RC
