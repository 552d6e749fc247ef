# Scenario 5: a broker's life as namesrvd sees it.
#  a. a registration whose data version is unchanged writes nothing to the
#     store (LMDB's last transaction id stays, checked over a window in
#     which namesrvctl audit shows no version change);
#  b. a broker shut down unregisters, and is gone from the cluster info the
#     moment its shutdown returns (namesrvd answers UNREGISTER_BROKER after
#     the commit: docs/protocol.md "What it serves");
#  c. a broker that stops heartbeating while its connection stays open (a
#     hung JVM: SIGSTOP) is evicted once its heartbeat timeout
#     (brokerNotActiveTimeoutMillis, which a 5.3.3 broker with
#     enableSlaveActingMaster sends in its registration) has run out, and
#     not before;
#  d. a broker killed with kill -9 is evicted at once: its connection
#     closes, as the Java NameServer's BrokerHousekeepingService does (the
#     timeout of c. is for brokers whose connection does not close).
IT_NEEDS="java"

scenario() {
    ns_start ns --scanNotActiveBrokerInterval=500
    local ns
    ns=$(ns_addr ns)
    broker_launch b1 "$ns" c1 b1 0
    broker_launch b2 "$ns" c1 b2 0 enableSlaveActingMaster=true brokerNotActiveTimeoutMillis=3000
    broker_ready b1
    broker_ready b2
    clusters_have "$(br_addr b1)" || it_fail "b1 missing from the cluster info"
    clusters_have "$(br_addr b2)" || it_fail "b2 missing from the cluster info"

    # a. unchanged re-registration: no store write
    local try t1 t2 a1 a2 ok=0
    for try in 1 2 3; do
        t1=$(ns_txnid ns)
        a1=$(audit_count)
        broker_wait_registered b1 "$ns"
        t2=$(ns_txnid ns)
        a2=$(audit_count)
        it_log "window $try: txn $t1 -> $t2, audit records $a1 -> $a2"
        if [ "$a1" = "$a2" ]; then
            [ "$t1" = "$t2" ] || it_fail "an unchanged re-registration wrote to the store (txn $t1 -> $t2)"
            ok=1
            break
        fi
    done
    ((ok)) || it_fail "the brokers' data versions never settled over 3 registrations"

    # b. shutdown unregisters, and the unregistration is committed when it returns
    broker_stop b1
    clusters_have "$(br_addr b1)" && it_fail "b1 still in the cluster info after its shutdown"
    it_expect_grep "$SDIR/ns.log" "broker b1 $(br_addr b1) \(c1\) unregistered: UNREGISTER_BROKER" \
        "namesrvd logged b1's unregistration"
    nsctl route --ns "$ns" b1 >/dev/null 2>&1 && it_fail "topic b1 still routed after b1 left"

    # c. needs a broker that sends its own heartbeat timeout (5.x with
    # enableSlaveActingMaster); a 4.x broker sends none, so the fixed 120 s
    # applies, and part c is noted as not run
    if [ "$IT_RMQ_MAJOR" = 4 ]; then
        it_note "part c (hung broker evicted after its own heartbeat timeout) not on 4.x: its brokers send no heartbeatTimeoutMillis"
    else
        hung_broker_evicted
    fi
    # d. kill -9: evicted at once
    broker_kill9 b2
    it_wait 10 "killed b2 evicted" grep -q "broker b2 .* unregistered: its registration connection closed" \
        "$SDIR/ns.log"
    clusters_have "$(br_addr b2)" && it_fail "b2 still in the cluster info after kill -9"
    return 0
}

clusters_have() { nsctl clusters --ns "$(ns_addr ns)" --json 2>/dev/null | grep -q "\"$1\""; }
audit_count() { nsctl audit --data-dir "$(ns_datadir ns)" --json | grep -c . || true; }
expired_logged() { grep -q "broker $1 .* expired" "$SDIR/ns.log"; }

# c. hung broker (connection open, no heartbeats): evicted after 3 s, not
# before; then it wakes up and registers again
hung_broker_evicted() {
    local ns stopped took
    ns=$(ns_addr ns)
    stopped=$(it_ms)
    kill -STOP -- "-${BR_PID[b2]}"
    it_wait 30 "hung b2 evicted" expired_logged b2
    took=$(($(it_ms) - stopped))
    it_expect_grep "$SDIR/ns.log" "broker b2 $(br_addr b2) \(c1\) expired: .*timeout 3000 ms" \
        "b2 evicted with the 3000 ms timeout it registered"
    # "not before" is judged from the broker's last heartbeat, which the log
    # line names: it heartbeats every second, so SIGSTOP may come up to 1 s
    # after it and the eviction as early as 2 s after the SIGSTOP
    local silent
    silent=$(grep -m1 -o "broker b2 .* expired: no heartbeat for [0-9]* ms" "$SDIR/ns.log" |
        grep -o "[0-9]* ms$" | grep -o "[0-9]*")
    ((silent >= 3000)) || it_fail "b2 evicted after $silent ms without a heartbeat, before its 3000 ms timeout"
    ((took >= 1900)) || it_fail "b2 evicted $took ms after SIGSTOP: earlier than its last heartbeat allows"
    clusters_have "$(br_addr b2)" && it_fail "b2 still in the cluster info after its eviction"
    it_log "hung b2 evicted $took ms after SIGSTOP"

    # the broker wakes up and registers again (killed with kill -9 in d.)
    BR_REGS[b2@$ns]=$(br_registrations b2 "$ns")
    kill -CONT -- "-${BR_PID[b2]}"
    broker_wait_registered b2 "$ns"
    it_wait 10 "b2 back in the cluster info" clusters_have "$(br_addr b2)"
}
