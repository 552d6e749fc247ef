# Scenario 1: a real 5.3.3 broker registers with JSON bodies, then, restarted
# with compressedRegister=true, with zlib bodies whose header still says
# compressed=false (the 5.3.3 broker's mismatch, which the Java NameServer
# rejects and namesrvd accepts on purpose: docs/protocol.md "What it serves"). Both
# registrations must land: a topic created after each start is routed.
IT_NEEDS="java"

scenario() {
    ns_start ns
    local ns
    ns=$(ns_addr ns)

    broker_start b1 "$ns" c1 b1 0 compressedRegister=false
    it_wait 60 "broker b1 in the cluster info" route_has_broker TBW102 b1 "$(br_addr b1)"
    mqadmin json_topic updateTopic -n "$ns" -c c1 -t IT_JSON -r 4 -w 4 >/dev/null
    it_wait 60 "route of IT_JSON (JSON registration)" route_has_broker IT_JSON b1 "$(br_addr b1)"
    (($(br_registrations b1 "$ns") > 0)) || it_fail "broker b1 logged no completed JSON registration"

    broker_stop b1
    # the restart waits for a completed (now compressed) registration
    broker_start b1 "$ns" c1 b1 0 compressedRegister=true
    it_expect_grep "$(br_log b1)" "compressedRegister=true" "b1 restarted with compressedRegister=true"
    mqadmin zlib_topic updateTopic -n "$ns" -c c1 -t IT_ZLIB -r 2 -w 2 >/dev/null
    it_wait 60 "route of IT_ZLIB (compressed registration)" route_has_broker IT_ZLIB b1 "$(br_addr b1)"
    it_expect_no_grep "$(br_log b1)" "Failed to register current broker" "a broker registration failed"
    it_expect_no_grep "$SDIR/ns.log" "(WARN|ERROR).*REGISTER_BROKER" "namesrvd warned about a registration"
    # the route clients get shows the queue numbers the broker registered
    nsctl route --ns "$ns" --json IT_ZLIB >"$SDIR/route.IT_ZLIB.json"
    it_expect_grep "$SDIR/route.IT_ZLIB.json" '"readQueueNums": *2' "IT_ZLIB route has 2 read queues"
}

# route_has_broker TOPIC BROKERNAME ADDR - namesrvd routes TOPIC to that broker
route_has_broker() {
    nsctl route --ns "$(ns_addr ns)" --json "$1" >"$SDIR/route.$1.json" 2>&1 || return 1
    grep -q "\"brokerName\": *\"$2\"" "$SDIR/route.$1.json" && grep -q "\"$3\"" "$SDIR/route.$1.json"
}
