# tests/interop/lib/rocketmq.sh - namesrvd, Apache RocketMQ brokers, mqadmin
# and our client programs, as used by the scenarios. Sourced by run.sh after
# common.sh. Needs from run.sh: IT_BIN (namesrvd, namesrvctl), IT_CP (Java
# classpath: the RocketMQ $IT_RMQ_VERSION jars and our classes), IT_GO (our
# Go program), IT_RMQ_MAJOR (4 or 5: what differs between the two lines).
#
# Every process logs to $SDIR/<name>.*; see README.md for the layout.

declare -gA NS_PORT NS_PID BR_PORT BR_PID BR_REGS BR_NS

IT_JVM_SMALL="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -XX:-UsePerfData"
IT_JVM_BROKER="-Xms256m -Xmx384m -XX:MaxDirectMemorySize=256m $IT_JVM_SMALL"
IT_JVM_CLIENT="-Xms32m -Xmx128m $IT_JVM_SMALL"
# 4.x was built for Java 8: on Java 17 its store unmaps files through
# DirectByteBuffer's cleaner by reflection (MappedFile: setAccessible on
# "attachment"/"viewedBuffer"/"cleaner", then jdk.internal.ref.Cleaner.clean),
# which the module system refuses unless those packages are opened to it.
# Without them the broker's shutdown hook dies in the store's shutdown,
# before it unregisters (scenario 05 sees that).
if [ "${IT_RMQ_MAJOR:-5}" = 4 ]; then
    IT_JVM_OPENS="--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
    IT_JVM_OPENS="$IT_JVM_OPENS --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED"
    IT_JVM_BROKER="$IT_JVM_BROKER $IT_JVM_OPENS"
    IT_JVM_CLIENT="$IT_JVM_CLIENT $IT_JVM_OPENS"
fi

# rmq_home DIR - makes DIR a ROCKETMQ_HOME for a broker or mqadmin: a 4.x
# one reads its logback configuration from DIR/conf (tests/interop/java/conf-4);
# 5.x ones carry theirs in the jars.
rmq_home() {
    mkdir -p "$1/conf"
    [ "${IT_RMQ_MAJOR:-5}" = 4 ] && cp "$IT_HERE/java/conf-4/"logback_*.xml "$1/conf/"
    return 0
}

# ---- namesrvd ------------------------------------------------------------

# ns_start NAME [--key=value ...] - starts namesrvd NAME on 127.0.0.1 with
# its data in $SDIR/NAME.data; the first start takes any free port, a
# restart takes the port NAME had. Waits until it accepts connections.
ns_start() {
    local name=$1
    shift
    local dir="$SDIR/$name"
    mkdir -p "$dir"
    local port=${NS_PORT[$name]:-0}
    rm -f "$dir/port"
    local log="$SDIR/$name.log.$(date +%s%N)"
    it_spawn "$name" "$log" "$IT_BIN/namesrvd" \
        --bindAddress=127.0.0.1 --listenPort="$port" --portFile="$dir/port" \
        --dataDir="$dir/data" --kvConfigPath="$dir/kvConfig.json" \
        --configStorePath="$dir/namesrv.properties" --rocketmqHome="$dir" "$@"
    local pid=$IT_PID
    NS_PID[$name]=$pid
    it_wait 30 "namesrvd $name writes its port file" test -s "$dir/port"
    NS_PORT[$name]=$(cat "$dir/port")
    # one log file per run of NAME, and NAME.log for the latest
    ln -sf "$(basename "$log")" "$SDIR/$name.log"
    it_log "namesrvd $name pid $pid on 127.0.0.1:${NS_PORT[$name]}"
}

ns_addr() { echo "127.0.0.1:${NS_PORT[$1]}"; }
ns_stop() { it_stop "${NS_PID[$1]}" 15; }
ns_kill9() { it_kill9 "${NS_PID[$1]}"; }
ns_datadir() { echo "$SDIR/$1/data"; }

# ns_txnid NAME - the store's last committed LMDB transaction id (read-only
# look at the live store; a write of any kind bumps it).
ns_txnid() {
    mdb_stat -e "$(ns_datadir "$1")" | sed -n 's/.*Last transaction ID: *//p'
}

# ns_has_broker NAME ADDR - namesrvd NAME's cluster info lists the broker
# address ADDR.
ns_has_broker() { nsctl clusters --ns "$(ns_addr "$1")" --json 2>/dev/null | grep -q "\"$2\""; }

# nsctl ARGS... - namesrvctl (its online commands against given servers).
nsctl() { "$IT_BIN/namesrvctl" "$@"; }

# ---- brokers -------------------------------------------------------------

# broker_start NAME NSLIST CLUSTER BROKERNAME BROKERID [key=value ...]
# Starts an Apache RocketMQ broker ($IT_RMQ_VERSION) in its own JVM (BrokerStartup from
# the Maven jars) with a generated broker.conf: loopback, free ports, its
# store in $SDIR/NAME.store, small files. Extra key=value lines go to the
# conf (they override the defaults below). A restart of NAME keeps its ports,
# store and conf unless new key=value pairs are given. Waits for "boot
# success" and then for a completed registration with every name server in
# NSLIST (IT_REG_WAIT=0: don't). A 5.x broker's registration at start
# goes nowhere (its list of reachable name servers is filled by a scan that
# has not run yet), so the first one that arrives is the periodic one, 10 s
# after start, with the Java NameServer as with namesrvd; a 4.x broker's
# arrives at once.
#
# broker_launch (same arguments) only starts the JVM, and broker_ready NAME
# does the waiting: several brokers then boot side by side.
broker_start() {
    broker_launch "$@"
    broker_ready "$1"
}

broker_launch() {
    local name=$1 nslist=$2 cluster=$3 bname=$4 bid=$5
    shift 5
    local conf="$SDIR/$name.conf" home="$SDIR/$name.home"
    rmq_home "$home"
    if [ -z "${BR_PORT[$name]:-}" ]; then
        it_free_ports 2
        BR_PORT[$name]=$IT_PORT
    fi
    local port=${BR_PORT[$name]}
    {
        echo "brokerClusterName=$cluster"
        echo "brokerName=$bname"
        echo "brokerId=$bid"
        [ "$bid" = 0 ] || echo "brokerRole=SLAVE"
        # no list: the broker finds its name servers some other way (an
        # address server: fetchNamesrvAddrByAddressServer=true)
        [ -z "$nslist" ] || echo "namesrvAddr=$nslist"
        echo "brokerIP1=127.0.0.1"
        echo "brokerIP2=127.0.0.1"
        echo "bindAddress=127.0.0.1" # remoting (and its fast port) on loopback only
        echo "listenPort=$port"
        echo "haListenPort=$((port + 1))"
        echo "storePathRootDir=$SDIR/$name.store"
        echo "storePathCommitLog=$SDIR/$name.store/commitlog"
        echo "mappedFileSizeCommitLog=16777216"
        echo "mappedFileSizeConsumeQueue=60000"
        echo "mappedFileSizeTimerLog=4194304"
        # the timer store stays on (5.3.3's deleteTopic fails without it), small
        echo "timerMaxDelaySec=3600"
        echo "flushDiskType=ASYNC_FLUSH"
        echo "autoCreateTopicEnable=true"
        echo "registerNameServerPeriod=10000" # the shortest the broker takes
        echo "diskMaxUsedSpaceRatio=95"
        local kv
        for kv in "$@"; do echo "$kv"; done
    } >"$conf.new"
    # later lines win in java.util.Properties, so overrides need no editing
    if [ $# -gt 0 ] || [ ! -f "$conf" ]; then mv "$conf.new" "$conf"; else rm -f "$conf.new"; fi
    local out="$SDIR/$name.out.$(date +%s%N)" a
    for a in ${nslist//;/ }; do BR_REGS[$name@$a]=$(br_registrations "$name" "$a"); done
    ROCKETMQ_HOME="$home" it_spawn "$name" "$out" java $IT_JVM_BROKER \
        -Duser.home="$home" -Drocketmq.home.dir="$home" -cp "$IT_CP" \
        org.apache.rocketmq.broker.BrokerStartup -c "$conf"
    local pid=$IT_PID
    ln -sf "$(basename "$out")" "$SDIR/$name.out"
    BR_PID[$name]=$pid
    BR_NS[$name]=$nslist
    it_log "broker $name ($cluster/$bname/$bid) pid $pid on 127.0.0.1:$port, namesrv $nslist"
}

broker_ready() {
    local name=$1 a
    broker_wait_boot "$name" "$SDIR/$name.out"
    if [ "${IT_REG_WAIT:-1}" = 1 ]; then
        for a in ${BR_NS[$name]//;/ }; do broker_wait_registered "$name" "$a"; done
    fi
}

# broker_wait_registered NAME NSADDR - waits until the broker logs one more
# completed registration with NSADDR than it had when it was (re)started, or
# than the count in BR_REGS[NAME@NSADDR] a scenario set.
broker_wait_registered() {
    local name=$1 a=$2
    it_wait 60 "broker $name registered with $a" br_registered_since "$name" "$a" "${BR_REGS[$name@$a]:-0}"
    BR_REGS[$name@$a]=$(br_registrations "$name" "$a")
}
br_registered_since() { (($(br_registrations "$1" "$2") > $3)); }

broker_wait_boot() {
    local name=$1 out pid=${BR_PID[$1]}
    out=$(readlink -f "$2")
    local end=$(($(it_ms) + ${IT_BOOT_TIMEOUT:-180} * 1000))
    while ! grep -q "boot success" "$out" 2>/dev/null; do
        it_alive "$pid" || it_fail "broker $name exited before boot success (see $(basename "$out"))"
        (($(it_ms) > end)) && it_fail "broker $name: no boot success within ${IT_BOOT_TIMEOUT:-180}s"
        sleep 0.3
    done
    it_log "broker $name booted"
}

# broker_group_launch PREFIX NSLIST CLUSTER BNAME [key=value ...]
# Launches a master PREFIX-m (id 0) and a slave PREFIX-s (id 1, SLAVE) of one
# broker group; the slave finds its master's HA address in namesrvd's answer
# to its registration. key=value pairs go to both confs; with IT_ACTING=1
# both get enableSlaveActingMaster=true (heartbeats every second, a 10 s
# heartbeat timeout, the slave may act as master; start namesrvd with
# --supportActingMaster=true to see that in routes). Then broker_group_ready
# PREFIX waits for both. Both have slaveReadEnable=true: a 5.3.3 slave
# rejects pulls ("system busy") without it.
broker_group_launch() {
    local p=$1 nslist=$2 cluster=$3 bname=$4
    shift 4
    local extra=(slaveReadEnable=true "$@")
    [ "${IT_ACTING:-0}" = 1 ] && extra+=(enableSlaveActingMaster=true)
    broker_launch "$p-m" "$nslist" "$cluster" "$bname" 0 "${extra[@]}"
    broker_launch "$p-s" "$nslist" "$cluster" "$bname" 1 "${extra[@]}"
}
broker_group_ready() {
    broker_ready "$1-m"
    broker_ready "$1-s"
    broker_wait_ha "$1-s" "$1-m"
}

# broker_wait_ha SLAVE MASTER - waits until the slave's HA client has
# connected to its master (the master's HA address came from namesrvd).
# A 5.x slave logs "HAClient connect to master ADDR" (DefaultHAClient). A
# 4.x slave's HAClient.connectMaster logs nothing: there the slave's
# store.log shows the address it was given ("update master address, OLD: ..
# NEW: ADDR", from the haServerAddr of namesrvd's reply to its registration)
# and the master's store.log the connection ("HAService receive new
# connection, /ADDR"; a group has one slave, so it is this one).
broker_wait_ha() {
    local f="$SDIR/$1.home/logs/rocketmqlogs/store.log"
    local mf="$SDIR/$2.home/logs/rocketmqlogs/store.log"
    if [ "${IT_RMQ_MAJOR:-5}" = 4 ]; then
        local ha="127.0.0.1:$((BR_PORT[$2] + 1))"
        it_wait 60 "slave $1 given its master's HA address $ha" \
            grep -q -E "update master address, OLD: [^ ]+ NEW: $ha\$" "$f"
        it_wait 60 "slave $1 connected to its master's HA port" \
            grep -q -F "HAService receive new connection, " "$mf"
    else
        it_wait 60 "slave $1 connected to its master's HA port" \
            grep -q -E "HAClient: connect to master|connect to master" "$f"
    fi
}

br_addr() { echo "127.0.0.1:${BR_PORT[$1]}"; }
# the broker's own log (RocketmqBroker logger) and its remoting log
br_log() { echo "$SDIR/$1.home/logs/rocketmqlogs/broker.log"; }
# graceful stop: the shutdown hook unregisters from every name server
broker_stop() { it_stop "${BR_PID[$1]}" 60; }
broker_kill9() { it_kill9 "${BR_PID[$1]}"; }

# br_registrations NAME NSADDR - how many registrations the broker logged
# as completed with that name server (4.x and 5.x word the line differently).
br_registrations() {
    if [ "${IT_RMQ_MAJOR:-5}" = 4 ]; then
        it_grep_count "$(br_log "$1")" "register broker\[[0-9]+\]to name server $2 OK\$"
    else
        it_grep_count "$(br_log "$1")" "Registering current broker to name server completed. TargetHost=$2\$"
    fi
}

# ---- mqadmin and our programs ----------------------------------------------

# mqadmin LABEL ARGS... - the real mqadmin (MQAdminStartup), output to
# $SDIR/mqadmin.LABEL.log and stdout: in the scenario's mqadmin shell JVM if
# one runs (mqadmin_shell_start), else in a JVM of its own. mqadmin prints
# its errors and exits 0, so callers check the output.
mqadmin() { IT_MQ_NEW_JVM=0 mqadmin_run "$@"; }
# mqadmin_jvm LABEL ARGS... - the same, always in a new JVM (like the script)
mqadmin_jvm() { IT_MQ_NEW_JVM=1 mqadmin_run "$@"; }
mqadmin_run() {
    local label=$1
    shift
    local log="$SDIR/mqadmin.$label.log"
    mkdir -p "$SDIR/client.home"
    echo "\$ mqadmin $*" >"$log"
    rmq_home "$SDIR/client.home"
    if [ "$IT_MQ_NEW_JVM" = 0 ] && [ -n "${IT_MQSHELL_PID:-}" ] && it_alive "$IT_MQSHELL_PID"; then
        mqadmin_shell "$log" "$@"
    else
        ROCKETMQ_HOME="$SDIR/client.home" timeout 120 java $IT_JVM_CLIENT \
            -Duser.home="$SDIR/client.home" -cp "$IT_CP" \
            org.apache.rocketmq.tools.command.MQAdminStartup "$@" >>"$log" 2>&1 </dev/null || true
    fi
    cat "$log"
}

# mqadmin_shell_start - one JVM that runs the mqadmin commands of this
# scenario (nsinterop.MqadminShell: MQAdminStartup.main per command); after
# it, mqadmin calls go to that JVM instead of a new one each.
mqadmin_shell_start() {
    rmq_home "$SDIR/client.home"
    coproc MQSHELL { ROCKETMQ_HOME="$SDIR/client.home" exec java $IT_JVM_CLIENT -Duser.home="$SDIR/client.home" \
        -cp "$IT_CP" nsinterop.MqadminShell 2>"$SDIR/mqadmin-shell.err"; }
    IT_MQSHELL_PID=$MQSHELL_PID
    echo "$MQSHELL_PID mqadmin-shell" >>"$SDIR/pids"
}

# mqadmin_shell LOG ARGS... - one mqadmin command through the shell JVM
mqadmin_shell() {
    local log=$1 reply
    shift
    local IFS=$'\t'
    echo "$log"$'\t'"$*" >&"${MQSHELL[1]}"
    IFS=' '
    read -r -t 120 reply <&"${MQSHELL[0]}" || it_fail "mqadmin shell did not answer: mqadmin $*"
    [ "$reply" = "DONE $log" ] || it_fail "mqadmin shell answered '$reply'"
}

# java_prog NAME CLASS ARGS... - runs one of our Java programs (tests/interop/java)
# in the background; sets IT_PID. Output in $SDIR/NAME.out, the client's own
# log in $SDIR/NAME.home/logs/rocketmqlogs/. IT_JAVA_PROPS: more JVM options
# (e.g. -Drocketmq.namesrv.domain=HOST:PORT).
java_prog() {
    local name=$1 class=$2
    shift 2
    mkdir -p "$SDIR/$name.home"
    # shellcheck disable=SC2086 # the options are words
    it_spawn "$name" "$SDIR/$name.out" java $IT_JVM_CLIENT ${IT_JAVA_PROPS:-} \
        -Duser.home="$SDIR/$name.home" -cp "$IT_CP" "nsinterop.$class" "$@"
}

# java_exchange NS TOPIC GROUP MARK N WHAT - a Java push consumer and a
# producer of N messages to TOPIC, started together, both finding the broker
# through NS only; fails the scenario unless the producer sent all N and the
# consumer received all N (180 s each). WHAT ends the producer's message
# (e.g. " over TLS", or "").
java_exchange() {
    local ns=$1 topic=$2 group=$3 mark=$4 n=$5 what=$6
    java_prog consumer Consume "$ns" "$topic" "$group" "$mark" "$n" 180
    local cpid=$IT_PID
    java_prog producer Produce "$ns" "$topic" "$mark" "$n"
    local ppid=$IT_PID
    it_wait_exit "$ppid" 180 "producer"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "producer sent all $n$what"
    it_wait_exit "$cpid" 180 "consumer"
    it_expect_grep "$SDIR/consumer.out" "^RECEIVED $n of $n$" "consumer received all $n"
}

# it_wait_exit PID SECONDS WHAT - waits for the program to end; fails the
# scenario on a timeout or a non-zero exit status.
it_wait_exit() {
    local pid=$1 limit=$2 what=$3 i
    for ((i = 0; i < limit * 5; i++)); do
        it_alive "$pid" || break
        sleep 0.2
    done
    if it_alive "$pid"; then
        it_kill9 "$pid"
        it_fail "$what: still running after ${limit}s"
    fi
    local rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 0 ] || it_fail "$what: exit status $rc"
}
