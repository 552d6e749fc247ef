# Scenario 6: master and slave brokers of one group (b1: ids 0 and 1). The
# slave gets its master's HA address from namesrvd's answer to its
# registration; the route and the cluster info show both; a real push
# consumer, reading slowly, keeps reading from the slave after the master
# has been stopped, and gets every message.
IT_NEEDS="java"

scenario() {
    local n=40
    ns_start ns
    local ns m s out
    ns=$(ns_addr ns)
    mqadmin_shell_start
    broker_group_launch g "$ns" c1 b1
    broker_group_ready g
    m=$(br_addr g-m)
    s=$(br_addr g-s)

    out=$(mqadmin updateTopic updateTopic -n "$ns" -c c1 -t IT_MS -r 1 -w 1)
    grep -q "create topic to $m success" <<<"$out" || it_fail "updateTopic IT_MS failed"
    if [ "${IT_RMQ_MAJOR:-5}" = 4 ]; then
        # a 4.x slave refuses to create a topic ("Can't modify topic or
        # subscription group from slave broker", AdminBrokerProcessor
        # .validateSlave) and copies its master's topics every 10 s
        # (SlaveSynchronize.syncAll, from the master address namesrvd gave
        # it): wait for the copy in its topics.json
        it_wait 30 "the slave copied IT_MS from its master" \
            grep -q '"IT_MS"' "$SDIR/g-s.store/config/topics.json"
    else
        # a 5.3.3 slave copies its master's topics at most once a minute (and
        # not at all before a registration told it the master's address):
        # create the topic on the slave too, or it refuses pulls for it
        out=$(mqadmin updateTopicSlave updateTopic -n "$ns" -b "$s" -t IT_MS -r 1 -w 1)
        grep -q "create topic to $s success" <<<"$out" || it_fail "updateTopic IT_MS on the slave failed"
    fi
    it_wait 60 "IT_MS routed" nsctl route --ns "$ns" IT_MS
    out=$(mqadmin clusterList clusterList -n "$ns")
    grep -q -E "^c1 +b1 +0 +$m " <<<"$out" || it_fail "clusterList lacks the master b1/0 at $m"
    grep -q -E "^c1 +b1 +1 +$s " <<<"$out" || it_fail "clusterList lacks the slave b1/1 at $s"
    out=$(mqadmin topicRoute topicRoute -n "$ns" -t IT_MS)
    grep -q -E "(^|[{,])[[:space:]]*\"?0\"? *: *\"$m\"" <<<"$out" || it_fail "route of IT_MS lacks the master"
    grep -q -E "(^|[{,])[[:space:]]*\"?1\"? *: *\"$s\"" <<<"$out" || it_fail "route of IT_MS lacks the slave"

    java_prog producer Produce "$ns" IT_MS m6 "$n"
    it_wait_exit "$IT_PID" 120 "producer"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "producer sent all $n"
    java_prog replicated WaitReplicated "$ns" "$m" "$s" 60
    it_wait_exit "$IT_PID" 90 "slave catching up with the master"

    # one message at a time; after 5 the consumer waits at a gate while the
    # master is stopped, then goes on: what it reads then comes from the slave
    # (at most 2 messages of the master's are prefetched: pullThresholdForQueue=1)
    : >"$SDIR/gate"
    java_prog consumer Consume "$ns" IT_MS it_ms_group m6 "$n" 180 50 "$SDIR/gate" 5
    local cpid=$IT_PID
    it_wait 120 "consumer got 5 messages" got_at_least 5
    broker_stop g-m
    it_log "master stopped after $(got) messages"
    out=$(nsctl route --ns "$ns" --json IT_MS)
    grep -q "\"$m\"" <<<"$out" && it_fail "the stopped master is still in the route"
    grep -q "\"$s\"" <<<"$out" || it_fail "the slave is not in the route after the master stopped"
    local before
    before=$(got)
    rm -f "$SDIR/gate"
    it_wait_exit "$cpid" 180 "consumer"
    it_expect_grep "$SDIR/consumer.out" "^RECEIVED $n of $n$" "consumer received all $n"
    it_log "$(($(got) - before)) messages read with the master down"
    (($(got) - before >= n - before - 3)) || it_fail "too few messages read from the slave"
    return 0
}

got() { it_grep_count "$SDIR/consumer.out" "^GOT "; }
got_at_least() { (($(got) >= $1)); }
