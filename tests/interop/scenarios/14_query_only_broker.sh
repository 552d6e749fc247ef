# Scenario 14: a broker that only asks is alive. A 5.3.3 broker with
# forceRegister=false asks each name server for its data version
# (QUERY_DATA_VERSION) every registerNameServerPeriod and registers only when
# told it changed (BrokerController.needRegister). namesrvd keeps a broker's
# data version in its store, so after a restart it answers "not changed" and
# the broker never registers with it again: its questions alone must keep it
# routed past the grace window after the restart and past its own heartbeat
# timeout. A second broker, killed with kill -9 while namesrvd was down, says
# nothing after the restart and is evicted once the grace window is over, not
# before.
#
# Short settings, so that it runs in about a minute after the brokers boot:
# a 20 s grace window; the brokers ask every 10 s (the shortest period a
# 5.3.3 broker takes) and send a 15 s heartbeat timeout, which they send only
# with enableSlaveActingMaster=true; that also makes them send BROKER_HEARTBEAT
# every brokerHeartbeatInterval (the first one 1 s after start), set to ~23
# days so that after the restart only their questions reach namesrvd (the
# restarted server's /metrics must count no heartbeat and no registration).
#
# 4.x: a 4.9.x broker asks the same way (BrokerController.registerBrokerAll,
# every max(10 s, registerNameServerPeriod)) but has none of the three
# acting-master settings and its REGISTER_BROKER header has no
# heartbeatTimeoutMillis, so namesrvd gives it the 120 s default (the Java
# 4.9.x NameServer's fixed BROKER_CHANNEL_EXPIRED_TIME) and sends no
# BROKER_HEARTBEAT. So b2 is evicted at the end of that timeout, which outlasts
# the grace window (max(brokerGraceWindowMillis, heartbeatTimeoutMillis)), and b1
# is held past it: the scenario takes about two minutes longer.
IT_NEEDS="java"

scenario() {
    local grace=20000 timeout=15000 hold_s=45
    # when b2 is to be evicted after the restart, and namesrvd's reason (ERE)
    local b2_due=$grace b2_why="the grace window" b2_re="grace window"
    if [ "${IT_RMQ_MAJOR:-5}" = 4 ]; then
        # the acting-master keys below mean nothing to a 4.x broker
        b2_due=120000 hold_s=140 b2_why="its 120 s heartbeat timeout"
        b2_re="\(timeout 120000 ms, registration"
    fi
    local brk=(forceRegister=false enableSlaveActingMaster=true
        brokerNotActiveTimeoutMillis=$timeout brokerHeartbeatInterval=2000000000)
    # a 4.9.x broker creates RMQ_SYS_TRANS_HALF_TOPIC at its first transaction
    # check, transactionCheckInterval (60 s) after start (TransactionalMessage
    # Bridge.selectTopicConfig -> TopicConfigManager.createTopicInSendMessage
    # BackMethod): a new data version and a forced registration in the middle
    # of the hold. 5.x creates it with the other system topics at start. Put
    # that check off.
    [ "${IT_RMQ_MAJOR:-5}" = 4 ] && brk+=(transactionCheckInterval=2000000000)
    ns_start ns --scanNotActiveBrokerInterval=500 --brokerGraceWindowMillis=$grace
    local ns
    ns=$(ns_addr ns)
    broker_launch b1 "$ns" c1 b1 0 "${brk[@]}"
    broker_launch b2 "$ns" c1 b2 0 "${brk[@]}"
    broker_ready b1
    broker_ready b2
    ns_has_broker ns "$(br_addr b1)" || it_fail "b1 missing from the cluster info"
    ns_has_broker ns "$(br_addr b2)" || it_fail "b2 missing from the cluster info"
    # the next question is answered "not changed": b1 asks and does not register
    local regs
    regs=$(br_registrations b1 "$ns")
    sleep 11
    [ "$(br_registrations b1 "$ns")" = "$regs" ] ||
        it_fail "b1 registered again with an unchanged data version (forceRegister=false)"

    # namesrvd restarts; b2 dies meanwhile
    ns_stop ns
    broker_kill9 b2
    rm -f "$SDIR/ns/http.port"
    ns_start ns --scanNotActiveBrokerInterval=500 --brokerGraceWindowMillis=$grace \
        --httpListen=127.0.0.1:0 --httpPortFile="$SDIR/ns/http.port"
    local t0 hp
    t0=$(it_ms)
    it_wait 10 "the HTTP port file" test -s "$SDIR/ns/http.port"
    hp=$(cat "$SDIR/ns/http.port")
    it_expect_grep "$SDIR/ns.log" "restored 2 broker address\(es\)" "namesrvd restored both brokers"

    # b1 stays routed for hold_s (> grace + timeout + one period of its
    # questions); b2 goes after the grace window
    local b2_gone=-1 now
    while now=$(it_ms) && ((now - t0 < hold_s * 1000)); do
        ns_has_broker ns "$(br_addr b1)" ||
            it_fail "b1 evicted $((now - t0)) ms after the restart although it kept asking"
        nsctl route --ns "$ns" b1 >/dev/null 2>&1 ||
            it_fail "topic b1 not routed $((now - t0)) ms after the restart"
        if ((b2_gone < 0)) && ! ns_has_broker ns "$(br_addr b2)"; then
            b2_gone=$((now - t0))
            it_log "silent b2 gone $b2_gone ms after the restart (grace $grace ms)"
        fi
        sleep 1
    done
    ((b2_gone >= 0)) || it_fail "silent b2 still routed ${hold_s} s after the restart"
    # t0 is taken after the restart, so the window began a little earlier
    ((b2_gone >= b2_due - 1000)) ||
        it_fail "b2 evicted after $b2_gone ms, before the end of $b2_why ($b2_due ms)"
    it_expect_grep "$SDIR/ns.log" "broker b2 $(br_addr b2) \(c1\) expired: .*$b2_re" \
        "namesrvd logged b2's eviction at the end of $b2_why"
    it_expect_no_grep "$SDIR/ns.log" "broker b1 .* (expired|unregistered)" "namesrvd dropped b1"
    [ "$(br_registrations b1 "$ns")" = "$regs" ] ||
        it_fail "b1 registered after the restart: it was to stay alive on questions alone"

    local asked registered beat
    asked=$(it_metric "$hp" 'namesrv_requests_total{request="QUERY_DATA_VERSION",code="SUCCESS"}')
    registered=$(it_metric "$hp" 'namesrv_requests_total{request="REGISTER_BROKER",code="SUCCESS"}')
    beat=$(it_metric "$hp" 'namesrv_requests_total{request="BROKER_HEARTBEAT",code="SUCCESS"}')
    it_log "after the restart: QUERY_DATA_VERSION $asked, REGISTER_BROKER $registered, BROKER_HEARTBEAT $beat"
    [ -n "$asked" ] && ((asked >= 3)) || it_fail "b1 asked '$asked' times in ${hold_s} s, expected every 10 s"
    [ "${registered:-0}" = 0 ] || it_fail "$registered registrations reached the restarted namesrvd"
    [ "${beat:-0}" = 0 ] || it_fail "$beat heartbeats reached the restarted namesrvd"
    return 0
}
