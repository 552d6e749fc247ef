#!/usr/bin/env bash
# interop_tls.sh - the real Java peers over TLS against namesrvd: a RocketMQ
# 5.3.3 broker started with -Dtls.enable=true registers with two namesrvds,
# one in tls.server.mode=permissive and one in enforcing; a Java admin client
# (DefaultMQAdminExt) with -Dtls.enable=true reads the cluster and the
# broker's route from both, and the same client without TLS reads them from
# the permissive one and is refused by the enforcing one. Certificates are
# made with the openssl CLI.
# Run by hand (the interop suite, tests/interop, does not run it); it exits
# non-zero when any step fails.
#
#   tools/interop_tls.sh [--build DIR] [--m2 DIR] [--keep]
#
# Needs: java + javac (17), the RocketMQ 5.3.3 jars and their dependencies in
# a Maven repository (default ~/.m2/repository), openssl, a built namesrvd.
set -euo pipefail
. "$(dirname "$0")/lib/cli.sh"

BUILD="$ROOT/build-test"
M2="$HOME/.m2/repository"
KEEP=0
ns_args "--build=BUILD --m2=M2 --keep:KEEP" "$@"
ns_need java javac openssl
[ -x "$BUILD/namesrvd" ] || { echo "interop_tls.sh: no $BUILD/namesrvd (build first)" >&2; exit 1; }
ls "$M2"/org/apache/rocketmq/rocketmq-broker/5.3.3/*.jar >/dev/null 2>&1 ||
    { echo "interop_tls.sh: no RocketMQ 5.3.3 broker jar under $M2" >&2; exit 1; }

. "$ROOT/tools/lib/work.sh"
ns_work_begin /tmp/interop-tls.XXXXXX interop_tls.sh
log() { echo "[interop-tls $(date +%T)] $*" >&2; }
fail() { echo "interop_tls.sh: FAILED: $*" >&2; exit 1; }

log "certificates"
(cd "$WORK" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
        -out ca.pem -days 2 -subj /CN=interop-ca &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key \
        -out srv.csr -subj /CN=localhost &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -set_serial 9 -out srv.pem -days 2 \
        -extfile srv.ext) >"$WORK/openssl.log" 2>&1 || { cat "$WORK/openssl.log" >&2; exit 1; }
CP=$(find "$M2" -name '*.jar' | grep -v -E 'osx|sources|javadoc' | tr '\n' ':')

start_ns() { # name mode -> port on stdout
    mkdir -p "$WORK/$1"
    "$BUILD/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$WORK/$1/port" \
        --dataDir="$WORK/$1/data" --configStorePath="$WORK/$1/namesrv.properties" \
        --tls.server.mode="$2" --tls.server.certPath="$WORK/srv.pem" \
        --tls.server.keyPath="$WORK/srv.key" --tls.config.file= 2>"$WORK/$1/namesrvd.log" &
    PIDS+=("$!")
    for _ in $(seq 100); do [ -s "$WORK/$1/port" ] && break; sleep 0.1; done
}
log "namesrvd P (tls.server.mode=permissive) and E (enforcing)"
start_ns p permissive
start_ns e enforcing
PP=$(cat "$WORK/p/port")
NP=$(cat "$WORK/e/port")

cat >"$WORK/RouteCheck.java" <<'EOF'
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class RouteCheck {
    public static void main(String[] args) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(args[0]);
        admin.setInstanceName("interop-tls-" + System.nanoTime());
        admin.start();
        try {
            ClusterInfo ci = admin.examineBrokerClusterInfo();
            System.out.println("clusters " + ci.getClusterAddrTable());
            TopicRouteData r = admin.examineTopicRouteInfo(args[1]);
            System.out.println("route " + args[1] + " " + r.getBrokerDatas());
        } finally {
            admin.shutdown();
        }
    }
}
EOF
(cd "$WORK" && javac -cp "$CP" RouteCheck.java) || fail "javac"

log "Java broker with -Dtls.enable=true, registering with P 127.0.0.1:$PP and E 127.0.0.1:$NP"
BPORT=$((30000 + RANDOM % 20000))
cat >"$WORK/broker.conf" <<EOF
brokerClusterName=TlsCluster
brokerName=tls-broker-a
brokerId=0
namesrvAddr=127.0.0.1:$PP;127.0.0.1:$NP
listenPort=$BPORT
brokerIP1=127.0.0.1
storePathRootDir=$WORK/store
storePathCommitLog=$WORK/store/commitlog
autoCreateTopicEnable=true
EOF
(cd "$WORK" && exec java -Xms256m -Xmx256m -Dtls.enable=true -Duser.home="$WORK" -Drocketmq.home.dir="$WORK" -cp "$CP" \
    org.apache.rocketmq.broker.BrokerStartup -c broker.conf >broker.out 2>&1) &
PIDS+=("$!")
registered=0
for _ in $(seq 120); do
    if "$BUILD/namesrvctl" clusters --ns "127.0.0.1:$NP" --tls-ca "$WORK/ca.pem" 2>/dev/null |
        grep -q tls-broker-a &&
        "$BUILD/namesrvctl" clusters --ns "127.0.0.1:$PP" --tls-ca "$WORK/ca.pem" 2>/dev/null |
        grep -q tls-broker-a; then
        registered=1
        break
    fi
    sleep 1
done
[ "$registered" = 1 ] || { tail -20 "$WORK/broker.out" >&2; fail "the broker did not register over TLS"; }
log "the broker registered over TLS with both (namesrvctl --tls-ca sees it)"

route() { # port [java -D...] -> fails unless the route names the broker
    local port=$1 out
    shift
    out=$(cd "$WORK" && java "$@" -cp "$CP:." RouteCheck "127.0.0.1:$port" TBW102 2>&1) ||
        { echo "$out" >&2; return 1; }
    echo "$out" | grep -q "route TBW102 .*tls-broker-a" || { echo "$out" >&2; return 1; }
    echo "$out" | grep '^route'
}
r=$(route "$NP" -Dtls.enable=true) || fail "Java client with tls.enable=true, enforcing"
log "E, Java client with tls.enable=true: $r"
r=$(route "$PP" -Dtls.enable=true) || fail "Java client with tls.enable=true, permissive"
log "P, Java client with tls.enable=true: $r"
r=$(route "$PP") || fail "plain Java client, permissive"
log "P, plain Java client: $r"

if (cd "$WORK" && java -cp "$CP:." RouteCheck "127.0.0.1:$NP" TBW102 >"$WORK/plain.out" 2>&1); then
    fail "a plain Java client was served by an enforcing namesrvd"
fi
grep -q "plain connection refused: tls.server.mode=enforcing" "$WORK/e/namesrvd.log" ||
    fail "no log line for the refused plain client"
log "E, plain Java client refused: $(grep -m1 'plain connection refused' "$WORK/e/namesrvd.log")"
echo "interop_tls.sh: OK (a TLS broker registers with permissive and enforcing namesrvds; Java clients resolve routes over TLS from both and plain from the permissive one; the enforcing one refuses plain)"
