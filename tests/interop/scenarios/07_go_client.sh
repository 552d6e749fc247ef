# Scenario 7: the Go client (github.com/apache/rocketmq-client-go/v2)
# produces N messages and its push consumer receives all N, through a real
# 5.3.3 broker that it finds only through namesrvd.
IT_NEEDS="java go"

scenario() {
    local n=100
    ns_start ns
    local ns
    ns=$(ns_addr ns)
    broker_start b1 "$ns" c1 b1 0
    local out
    out=$(mqadmin updateTopic updateTopic -n "$ns" -c c1 -t IT_GO -r 4 -w 4)
    grep -q "create topic to $(br_addr b1) success" <<<"$out" || it_fail "updateTopic IT_GO failed"
    it_wait 60 "IT_GO routed" nsctl route --ns "$ns" IT_GO

    it_spawn go-consumer "$SDIR/go-consumer.out" "$IT_GO" consume "$ns" IT_GO it_go_group g7 "$n" 180
    local cpid=$IT_PID
    it_spawn go-producer "$SDIR/go-producer.out" "$IT_GO" produce "$ns" IT_GO g7 "$n"
    it_wait_exit "$IT_PID" 180 "go producer"
    it_expect_grep "$SDIR/go-producer.out" "^SUMMARY sent=$n failed=0$" "go producer sent all $n"
    it_wait_exit "$cpid" 180 "go consumer"
    it_expect_grep "$SDIR/go-consumer.out" "^RECEIVED $n of $n$" "go consumer received all $n"
}
