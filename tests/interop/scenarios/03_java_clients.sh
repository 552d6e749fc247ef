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

    java_exchange "$ns" IT_JAVA it_java_group m3 "$n" ""
    # the auto-created topic is routed by namesrvd now
    nsctl route --ns "$ns" --json IT_JAVA >"$SDIR/route.IT_JAVA.json" 2>&1 ||
        it_fail "IT_JAVA has no route after the broker created it"
}
