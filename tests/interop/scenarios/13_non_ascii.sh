# Scenario 13: names and values outside ASCII, end to end. RocketMQ 5.5
# serialises with fastjson2, which writes non-ASCII as raw UTF-8 where 5.3.3
# and 4.x (fastjson 1) escaped it as \uXXXX; namesrvd must take both from
# brokers and mqadmin and give clients what their parser reads back. A
# broker of cluster "cü" named "bä漢😀" registers (names in the request
# header and the JSON body; the last character is outside the BMP, a
# surrogate pair when escaped); mqadmin's clusterList shows both names; an
# order conf "bä漢😀:2" put by mqadmin (a KV value, sent in a request
# header) is read back by mqadmin (the value in a response header) and in
# the route; a KV value "wert-€漢😀" is stored as sent; a real producer,
# routed only by namesrvd, sends to the broker "bä漢😀" (the client matched
# the route body's broker name with its address table).
IT_NEEDS="java"

scenario() {
    local cluster="cü" bname="bä漢😀" kvval="wert-€漢😀" n=20
    ns_start ns --orderMessageEnable=true
    local ns b out
    ns=$(ns_addr ns)
    # the broker reads broker.conf as java.util.Properties (ISO-8859-1), so
    # its names go there as \u escapes; our programs' arguments need a UTF-8
    # locale to reach the JVM intact
    export LC_ALL=C.UTF-8
    IT_JVM_CLIENT="$IT_JVM_CLIENT -Dfile.encoding=UTF-8"
    mqadmin_shell_start # reads its commands as UTF-8 whatever the locale
    broker_start b1 "$ns" c1 b1 0 'brokerClusterName=c\u00fc' 'brokerName=b\u00e4\u6f22\ud83d\ude00'
    b=$(br_addr b1)

    nsctl clusters --ns "$ns" --json >"$SDIR/clusters.json" 2>&1 || it_fail "namesrvctl clusters failed"
    grep -q -F "$bname" "$SDIR/clusters.json" || grep -q -F '\u00e4\u6f22\ud83d\ude00' "$SDIR/clusters.json" ||
        it_fail "namesrvd did not store the broker name $bname (clusters.json)"

    out=$(mqadmin clusterList clusterList -n "$ns")
    grep -q -E "^$cluster +$bname +0 +$b " <<<"$out" ||
        it_fail "mqadmin clusterList does not show $cluster/$bname/0 at $b (mqadmin.clusterList.log)"

    out=$(mqadmin updateTopic updateTopic -n "$ns" -c "$cluster" -t IT_UTF8 -r 2 -w 2)
    grep -q "create topic to $b success" <<<"$out" || it_fail "updateTopic -c $cluster failed"
    it_wait 60 "IT_UTF8 routed" nsctl route --ns "$ns" IT_UTF8

    out=$(mqadmin updateOrderConf updateOrderConf -n "$ns" -t IT_UTF8 -m put -v "$bname:2")
    grep -q -F "orderConf=[$bname:2]" <<<"$out" || it_fail "updateOrderConf put $bname:2 failed"
    out=$(mqadmin getOrderConf updateOrderConf -n "$ns" -t IT_UTF8 -m get)
    grep -q -F "get orderConf success. topic=[IT_UTF8], orderConf=[$bname:2]" <<<"$out" ||
        it_fail "updateOrderConf get does not read back $bname:2 (mqadmin.getOrderConf.log)"
    out=$(mqadmin topicRoute topicRoute -n "$ns" -t IT_UTF8)
    grep -q -E "\"brokerName\" *: *\"$bname\"" <<<"$out" || it_fail "topicRoute lacks broker name $bname"
    grep -q -E "\"orderTopicConf\" *: *\"$bname:2\"" <<<"$out" || it_fail "topicRoute lacks orderTopicConf $bname:2"

    out=$(mqadmin updateKvConfig updateKvConfig -n "$ns" -s IT_NS -k it.key -v "$kvval")
    grep -q "create or update kv config to namespace success" <<<"$out" || it_fail "updateKvConfig $kvval failed"
    [ "$(nsctl kv get --ns "$ns" IT_NS it.key)" = "$kvval" ] ||
        it_fail "KV value stored as '$(nsctl kv get --ns "$ns" IT_NS it.key)', sent '$kvval'"

    java_prog producer Produce "$ns" IT_UTF8 m12 "$n"
    it_wait_exit "$IT_PID" 120 "producer"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "producer sent all $n"
    it_expect_grep "$SDIR/producer.out" "^SENT 0 SEND_OK $bname " "the producer sent to broker $bname"
}
