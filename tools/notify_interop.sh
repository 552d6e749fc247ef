#!/usr/bin/env bash
# notify_interop.sh - NOTIFY_MIN_BROKER_ID_CHANGE (905) against real Apache
# RocketMQ 5.3.3 brokers: a master (id 0) and a slave (id 1), both with
# enableSlaveActingMaster=true, register with namesrvd (notifyMinBrokerIdChanged
# =true). The master is killed -9: namesrvd unregisters it when its
# connection closes and tells the slave, which must log that it now acts as
# master (min broker 1). The master starts again: its registration lowers the
# smallest id and the slave must log that the master is back (min broker 0).
# Prints what namesrvd logged and what the slave did, and how long each took.
#
#   tools/notify_interop.sh
#
# Needs java (17) and mvn; the broker's classpath is resolved by Maven
# (offline when ~/.m2 has rocketmq-broker 5.3.3). Environment: BUILD_DIR
# (default build-test), WORK (a scratch directory, default a new mktemp -d;
# removed at the end unless KEEP=1). Everything listens on 127.0.0.1. Run by
# hand, like the benchmarks: two broker JVMs take ~1 minute and ~600 MB.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build-test}
NS_BIN="$top/$BUILD_DIR/namesrvd"
[ -x "$NS_BIN" ] || { echo "no $NS_BIN: build first (tools/setup.sh test)" >&2; exit 2; }
command -v java >/dev/null && command -v mvn >/dev/null || { echo "needs java and mvn" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d /tmp/notify_interop.XXXXXX)}
mkdir -p "$WORK"/{ns,m,s}
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# the broker's classpath
cat > "$WORK/pom.xml" <<'EOF'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ns.interop</groupId><artifactId>broker-classpath</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId>
      <version>5.3.3</version></dependency>
  </dependencies>
</project>
EOF
(cd "$WORK" && { mvn -o -q dependency:build-classpath -Dmdep.outputFile=cp.txt >/dev/null 2>&1 ||
    mvn -q dependency:build-classpath -Dmdep.outputFile=cp.txt >/dev/null; })

# a port p such that no socket uses p-2, p or p+1 (the broker's fast, main
# and HA ports), below the ephemeral range so no outbound connection takes
# one of them meanwhile
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))
        ss -tan | awk '{print $4}' | grep -qE ":($((p - 2))|$p|$((p + 1)))\$" || { echo "$p"; return; }
    done
}

"$NS_BIN" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$WORK/ns/port" \
    --dataDir="$WORK/ns/data" --configStorePath="$WORK/ns/namesrv.properties" \
    --notifyMinBrokerIdChanged=true --supportActingMaster=true >"$WORK/ns/namesrvd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$WORK/ns/port" ] && break; sleep 0.1; done
NS_ADDR=127.0.0.1:$(cat "$WORK/ns/port")
MPORT=$(free_port)
SPORT=$(free_port)
M=127.0.0.1:$MPORT
S=127.0.0.1:$SPORT

broker_conf() { # dir id port role
    cat > "$WORK/$1/broker.conf" <<EOF
brokerClusterName=InteropCluster
brokerName=interop-broker
brokerId=$2
brokerRole=$4
listenPort=$3
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
namesrvAddr=$NS_ADDR
storePathRootDir=$WORK/$1/store
enableSlaveActingMaster=true
mappedFileSizeCommitLog=10485760
mappedFileSizeConsumeQueue=60000
EOF
}
broker_conf m 0 "$MPORT" ASYNC_MASTER
broker_conf s 1 "$SPORT" SLAVE

start_broker() { # dir
    (cd "$WORK/$1" && exec java -Xms192m -Xmx192m -XX:MaxDirectMemorySize=192m -XX:+UseSerialGC \
        -Duser.home="$WORK/$1" -Drocketmq.home.dir="$WORK/$1" -cp "$(cat "$WORK/cp.txt")" \
        org.apache.rocketmq.broker.BrokerStartup -c "$WORK/$1/broker.conf" >"$WORK/$1/stdout.log" 2>&1) &
    pids+=($!)
}

# lines in file $1 so far (0 when it does not exist yet)
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# waits up to $3 seconds for a line after the first $2 of file $1 to match
# the extended regex $4
wait_for() {
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        tail -n +$(($2 + 1)) "$1" 2>/dev/null | grep -qE "$4" && return 0
        sleep 0.05
    done
    echo "FAIL: no '$4' in $1 after $3 s" >&2
    return 1
}
# waits until namesrvd lists both brokers of the group
CTL="$top/$BUILD_DIR/namesrvctl"
wait_registered() {
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        out=$("$CTL" clusters -n "$NS_ADDR" --json 2>/dev/null || true)
        [[ $out == *"\"$M\""* && $out == *"\"$S\""* ]] && return 0
        sleep 0.2
    done
    echo "FAIL: the brokers did not both register" >&2
    return 1
}
ms() { date +%s%3N; }
SLAVE_LOG="$WORK/s/logs/rocketmqlogs/broker.log"

start_broker m
wait_for "$WORK/m/stdout.log" 0 90 "boot success"
start_broker s
wait_for "$WORK/s/stdout.log" 0 90 "boot success"
wait_registered
sleep 2 # the slave's own member-group sync (every second) has run

echo "== kill -9 the master ($M)"
n_ns=$(lines "$WORK/ns/namesrvd.log")
n_s=$(lines "$SLAVE_LOG")
t0=$(ms)
{ kill -9 "${pids[1]}" && wait "${pids[1]}"; } 2>/dev/null || true
wait_for "$WORK/ns/namesrvd.log" "$n_ns" 15 \
    "NOTIFY_MIN_BROKER_ID_CHANGE to $S sent: .*minBrokerId=1 minBrokerAddr=$S offlineBrokerAddr=$M"
t1=$(ms)
wait_for "$SLAVE_LOG" "$n_s" 15 "min broker id changed, prev [0-9]+, new 1"
wait_for "$SLAVE_LOG" "$n_s" 15 "Min broker changed, old: 0-[^,]*, new 1-$S"
t2=$(ms)
echo "namesrvd notified the slave $((t1 - t0)) ms after the kill (polled every 50 ms);" \
    "the slave had switched to acting master $((t2 - t0)) ms after it"

echo "== start the master again"
n_ns=$(lines "$WORK/ns/namesrvd.log")
n_s=$(lines "$SLAVE_LOG")
start_broker m
wait_for "$WORK/ns/namesrvd.log" "$n_ns" 120 \
    "NOTIFY_MIN_BROKER_ID_CHANGE to $S sent: .*minBrokerId=0 minBrokerAddr=$M offlineBrokerAddr=null haBrokerAddr=127.0.0.1:$((MPORT + 1))"
t1=$(ms)
wait_for "$SLAVE_LOG" "$n_s" 15 "min broker id changed, prev [0-9]+, new 0"
wait_for "$SLAVE_LOG" "$n_s" 15 "Min broker changed, old: 1-$S, new 0-$M"
t2=$(ms)
echo "the slave followed the master's return $((t2 - t1)) ms after namesrvd notified it"

echo "== namesrvd:"
grep -h "NOTIFY_MIN_BROKER_ID_CHANGE\|unregistered" "$WORK/ns/namesrvd.log"
echo "== slave ($S):"
grep -hE "min broker id changed|Min broker changed" "$SLAVE_LOG"
echo "PASS"
