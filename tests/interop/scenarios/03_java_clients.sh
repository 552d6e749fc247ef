# Scenario 3: a real Java producer (rocketmq-client 5.3.3) sends N messages
# to a topic nobody created (the broker creates it from TBW102's route, as
# autoCreateTopicEnable does by default), and a real push consumer, started
# at the same time, receives all N. Both find the broker only through
# namesrvd.
IT_NEEDS="java"

scenario() {
    local n=200
    ns_start ns
    local ns
    ns=$(ns_addr ns)
    broker_start b1 "$ns" c1 b1 0

    java_prog consumer Consume "$ns" IT_JAVA it_java_group m3 "$n" 180
    local cpid=$IT_PID
    java_prog producer Produce "$ns" IT_JAVA m3 "$n"
    local ppid=$IT_PID
    it_wait_exit "$ppid" 180 "producer"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "producer sent all $n"
    it_wait_exit "$cpid" 180 "consumer"
    it_expect_grep "$SDIR/consumer.out" "^RECEIVED $n of $n$" "consumer received all $n"
    # the auto-created topic is routed by namesrvd now
    nsctl route --ns "$ns" --json IT_JAVA >"$SDIR/route.IT_JAVA.json" 2>&1 ||
        it_fail "IT_JAVA has no route after the broker created it"
}
