# Scenario 20: a real broker with 200,000 topics (issue 31). Its topics are
# written into its topics.json before it starts (creating them one by one
# with mqadmin would take hours), then it registers the two ways a broker
# this large can:
#  1. enableSplitRegistration=true (5.x): the topics go in several
#     REGISTER_BROKER requests of splitRegistrationSize (800) topics each,
#     all with the same DataVersion; namesrvd adds the topics a part brings
#     that it does not hold yet, as Java's NameServer does, so all 200,000
#     are routed.
#  2. compressedRegister=true, no split: one zlib body (the JSON, ~25 MB,
#     would pass the 16 MiB frame limit uncompressed).
# Each time: GET_ALL_TOPIC_LIST counts every topic and the first, a middle
# and the last topic are routed to the broker.
IT_NEEDS="java"
IT_SKIP_VERSION="4.*"
IT_SKIP_WHY="split registration (enableSplitRegistration) came with RocketMQ 5.0"

BIG_N=${IT_BIG_TOPICS:-200000}

# topics_json FILE - a broker's topics.json with BIG_N topics IT_BIG_0..N-1
topics_json() {
    awk -v n="$BIG_N" 'BEGIN {
        printf "{\"dataVersion\":{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},\"topicConfigTable\":{"
        for (i = 0; i < n; i++)
            printf "%s\"IT_BIG_%d\":{\"topicName\":\"IT_BIG_%d\",\"readQueueNums\":2,\"writeQueueNums\":2,\"perm\":6,\"topicFilterType\":\"SINGLE_TAG\",\"topicSysFlag\":0,\"order\":false,\"attributes\":{}}", (i ? "," : ""), i, i
        printf "}}\n"
    }' >"$1"
}

# all_topics_routed LABEL - every IT_BIG_ topic in the topic list, three routed
all_topics_routed() {
    local n t
    nsctl topics --ns "$(ns_addr ns)" --timeout 60000 >"$SDIR/topics.$1" 2>&1 || return 1
    n=$(grep -c '^IT_BIG_' "$SDIR/topics.$1" || true)
    [ "$n" = "$BIG_N" ] || { it_log "$1: $n of $BIG_N topics listed so far"; return 1; }
    for t in IT_BIG_0 "IT_BIG_$((BIG_N / 2))" "IT_BIG_$((BIG_N - 1))"; do
        nsctl route --ns "$(ns_addr ns)" --json "$t" >"$SDIR/route.$t.json" 2>&1 || return 1
        grep -q '"brokerName": *"big"' "$SDIR/route.$t.json" || return 1
    done
}

scenario() {
    ns_start ns
    local ns t0
    ns=$(ns_addr ns)
    mkdir -p "$SDIR/b1.store/config"
    topics_json "$SDIR/b1.store/config/topics.json"
    it_log "topics.json: $BIG_N topics, $(($(stat -c %s "$SDIR/b1.store/config/topics.json") / 1048576)) MiB"

    t0=$(it_ms)
    IT_REG_WAIT=0 broker_start b1 "$ns" c1 big 0 enableSplitRegistration=true \
        splitRegistrationSize=800 compressedRegister=false
    it_wait 180 "all $BIG_N topics routed (split registration)" all_topics_routed split
    it_log "split registration: every topic routed $(($(it_ms) - t0)) ms after the broker started"
    it_expect_no_grep "$(br_log b1)" "Failed to register current broker" "a split registration failed"

    # The broker's stop is not checked: its shutdown unregisters 200,000
    # topics with a fixed 3 s timeout (BrokerOuterAPI.unregisterBroker),
    # which the ASan+UBSan build can pass (the release build takes ~0.5 s),
    # and a registration cut short by its shutdown logs "Failed to register".
    broker_stop b1
    ns_stop ns
    local skip
    skip=$(wc -l <"$(br_log b1)")
    rm -rf "$(ns_datadir ns)"
    ns_start ns
    ns=$(ns_addr ns)
    t0=$(it_ms)
    IT_REG_WAIT=0 broker_start b1 "$ns" c1 big 0 enableSplitRegistration=false compressedRegister=true
    it_wait 180 "all $BIG_N topics routed (one compressed registration)" all_topics_routed zlib
    it_log "compressed registration: every topic routed $(($(it_ms) - t0)) ms after the broker started"
    # the same broker home: only what it logged since it started again
    tail -n "+$((skip + 1))" "$(br_log b1)" >"$SDIR/broker.zlib.log"
    it_expect_no_grep "$SDIR/broker.zlib.log" "Failed to register current broker" \
        "the compressed registration failed"
    it_expect_no_grep "$SDIR/ns.log" "ERROR" "namesrvd logged an error"
}
