# Scenario 8: acting master. A master and a slave of one group, both with
# enableSlaveActingMaster=true (so they heartbeat every second with
# BROKER_HEARTBEAT), namesrvd with supportActingMaster=true. When the master
# stops, the slave (the group's smallest id left) re-registers as prime
# slave: namesrvd takes away the write permission of its queues and routes
# clients to it under id 0, as the Java NameServer's pickupTopicRouteData
# does. This is also the set-up to copy for scenarios that need a real
# master and acting-master slave (broker_group_launch with IT_ACTING=1).
IT_NEEDS="java"
# the RocketMQ versions it cannot apply to (a glob) and why
IT_SKIP_VERSION="4.*"
IT_SKIP_WHY="acting master (enableSlaveActingMaster, supportActingMaster) came with RocketMQ 5.0"

scenario() {
    ns_start ns --supportActingMaster=true
    local ns m s out
    ns=$(ns_addr ns)
    IT_ACTING=1 broker_group_launch g "$ns" c1 b1
    broker_group_ready g
    m=$(br_addr g-m)
    s=$(br_addr g-s)
    # the group's own topic (rmq_sys_SYNC_BROKER_MEMBER_b1 is left out of
    # acting-master routes on purpose) and one of ours on both brokers
    mqadmin_shell_start
    out=$(mqadmin updateTopic updateTopic -n "$ns" -c c1 -t IT_ACT -r 2 -w 2)
    grep -q "create topic to $m success" <<<"$out" || it_fail "updateTopic IT_ACT failed"
    out=$(mqadmin updateTopicSlave updateTopic -n "$ns" -b "$s" -t IT_ACT -r 2 -w 2)
    grep -q "create topic to $s success" <<<"$out" || it_fail "updateTopic IT_ACT on the slave failed"
    it_wait 60 "IT_ACT routed to master and slave" route_is IT_ACT "\"0\": *\"$m\"" "\"1\": *\"$s\"" '"perm": *6'

    broker_stop g-m
    BR_REGS[g-s@$ns]=$(br_registrations g-s "$ns")
    broker_wait_registered g-s "$ns"
    it_wait 30 "slave routed as acting master (id 0, read-only)" \
        route_is IT_ACT "\"0\": *\"$s\"" '"perm": *4'
    route_is IT_ACT "\"1\": *\"$s\"" && it_fail "the acting master is also listed under id 1"
    # what a real client sees
    out=$(mqadmin topicRoute topicRoute -n "$ns" -t IT_ACT)
    grep -q -E "(^|[{,])[[:space:]]*\"?0\"? *: *\"$s\"" <<<"$out" || it_fail "mqadmin topicRoute does not show the acting master"
    return 0
}

# route_is TOPIC ERE... - namesrvd's route (JSON) matches every ERE
route_is() {
    local t=$1 f="$SDIR/route.$1.json" re
    shift
    nsctl route --ns "$(ns_addr ns)" --json "$t" >"$f" 2>&1 || return 1
    for re in "$@"; do grep -q -E -- "$re" "$f" || return 1; done
}
