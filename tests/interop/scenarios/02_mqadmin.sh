# Scenario 2: the real mqadmin (MQAdminStartup from rocketmq-tools 5.3.3)
# against namesrvd and a real broker. mqadmin prints its errors and exits 0,
# so every command's output is checked, and each change is read back.
IT_NEEDS="java"

scenario() {
    ns_start ns
    local ns b out
    ns=$(ns_addr ns)
    mqadmin_shell_start # the commands after the first run in one JVM
    broker_start b1 "$ns" c1 b1 0
    b=$(br_addr b1)

    out=$(mqadmin_jvm clusterList clusterList -n "$ns")
    expect_line "$out" "^c1 +b1 +0 +$b " "clusterList shows c1/b1/0 at $b"

    out=$(mqadmin updateTopic updateTopic -n "$ns" -c c1 -t IT_ADMIN -r 3 -w 3)
    expect_line "$out" "create topic to $b success" "updateTopic created IT_ADMIN on b1"
    it_wait 60 "IT_ADMIN routed" nsctl_route_has IT_ADMIN '"brokerName": *"b1"'

    out=$(mqadmin topicRoute topicRoute -n "$ns" -t IT_ADMIN)
    expect_line "$out" '"brokerName" *: *"b1"' "topicRoute names broker b1"
    # 5.5 mqadmin prints the map key on a line of its own: {\n\t\t0:"addr"
    expect_line "$out" "(^|[{,])[[:space:]]*\"?0\"? *: *\"$b\"" "topicRoute maps id 0 to $b"
    expect_line "$out" '"readQueueNums" *: *3' "topicRoute shows 3 read queues"
    expect_line "$out" '"perm" *: *6' "topicRoute shows perm 6"

    out=$(mqadmin topicList topicList -n "$ns")
    expect_line "$out" "^IT_ADMIN$" "topicList lists IT_ADMIN"
    expect_line "$out" "^TBW102$" "topicList lists TBW102"
    out=$(mqadmin topicListCluster topicList -n "$ns" -c)
    expect_line "$out" "^c1 +IT_ADMIN( |$)" "topicList -c shows IT_ADMIN in cluster c1"

    out=$(mqadmin topicClusterList topicClusterList -n "$ns" -t IT_ADMIN)
    expect_line "$out" "^c1$" "topicClusterList says c1"

    # write perms first: the order conf below changes the broker's topic
    # configs (it takes ORDER_TOPIC_CONFIG from namesrvd's answers) and its
    # next registration with a new data version rewrites the queues' perm,
    # with Java's name server as with ours
    out=$(mqadmin wipeWritePerm wipeWritePerm -n "$ns" -b b1)
    expect_line "$out" "wipe write perm of broker\[b1\] in name server\[$ns\] OK, [1-9]" "wipeWritePerm OK"
    out=$(mqadmin topicRouteWiped topicRoute -n "$ns" -t IT_ADMIN)
    expect_line "$out" '"perm" *: *4' "after wipeWritePerm the route is read-only (perm 4)"
    out=$(mqadmin addWritePerm addWritePerm -n "$ns" -b b1)
    expect_line "$out" "add write perm of broker\[b1\] in name server\[$ns\] OK, [1-9]" "addWritePerm OK"
    out=$(mqadmin topicRouteAdded topicRoute -n "$ns" -t IT_ADMIN)
    expect_line "$out" '"perm" *: *6' "after addWritePerm the route is writable again (perm 6)"

    # KV config: read back through namesrvctl (mqadmin has no get command)
    out=$(mqadmin updateKvConfig updateKvConfig -n "$ns" -s IT_NS -k it.key -v it-value)
    expect_line "$out" "create or update kv config to namespace success" "updateKvConfig succeeded"
    [ "$(nsctl kv get --ns "$ns" IT_NS it.key)" = it-value ] || it_fail "updateKvConfig: value not stored"
    out=$(mqadmin deleteKvConfig deleteKvConfig -n "$ns" -s IT_NS -k it.key)
    expect_line "$out" "delete kv config from namespace success" "deleteKvConfig succeeded"
    if nsctl kv get --ns "$ns" IT_NS it.key >/dev/null 2>&1; then
        it_fail "deleteKvConfig: key still there"
    fi

    out=$(mqadmin getNamesrvConfig getNamesrvConfig -n "$ns")
    expect_line "$out" "^=+$ns=+$" "getNamesrvConfig names the server"
    expect_line "$out" "^orderMessageEnable +=  false$" "getNamesrvConfig: orderMessageEnable = false"
    out=$(mqadmin updateNamesrvConfig updateNamesrvConfig -n "$ns" -k orderMessageEnable -v true)
    expect_line "$out" "update name server config success" "updateNamesrvConfig succeeded"
    out=$(mqadmin getNamesrvConfig2 getNamesrvConfig -n "$ns")
    expect_line "$out" "^orderMessageEnable +=  true$" "getNamesrvConfig after the update: orderMessageEnable = true"

    # order conf, visible in the route now that orderMessageEnable is on
    out=$(mqadmin updateOrderConf updateOrderConf -n "$ns" -t IT_ADMIN -m put -v "b1:3")
    expect_line "$out" "update orderConf success. topic=\[IT_ADMIN\], orderConf=\[b1:3\]" "updateOrderConf put"
    out=$(mqadmin getOrderConf updateOrderConf -n "$ns" -t IT_ADMIN -m get)
    expect_line "$out" "get orderConf success. topic=\[IT_ADMIN\], orderConf=\[b1:3\]" "updateOrderConf get"
    out=$(mqadmin topicRouteOrder topicRoute -n "$ns" -t IT_ADMIN)
    expect_line "$out" '"orderTopicConf" *: *"b1:3"' "topicRoute carries orderTopicConf b1:3"
    out=$(mqadmin deleteOrderConf updateOrderConf -n "$ns" -t IT_ADMIN -m delete)
    expect_line "$out" "delete orderConf success. topic=\[IT_ADMIN\]" "updateOrderConf delete"

    # the broker's address comes from the cluster info namesrvd serves
    out=$(mqadmin getBrokerConfig getBrokerConfig -n "$ns" -c c1)
    expect_line "$out" "$b" "getBrokerConfig -c c1 found the broker at $b"
    expect_line "$out" "^brokerName +=  b1$" "getBrokerConfig shows brokerName b1"
    expect_line "$out" "^brokerClusterName +=  c1$" "getBrokerConfig shows brokerClusterName c1"

    out=$(mqadmin deleteTopic deleteTopic -n "$ns" -c c1 -t IT_ADMIN)
    expect_line "$out" "delete topic \[IT_ADMIN\] from cluster \[c1\] success" "deleteTopic on the broker"
    expect_line "$out" "delete topic \[IT_ADMIN\] from NameServer success" "deleteTopic on the name server"
    out=$(mqadmin topicRouteDeleted topicRoute -n "$ns" -t IT_ADMIN)
    expect_line "$out" "No topic route info in name server for the topic: IT_ADMIN" \
        "after deleteTopic the route is gone (TOPIC_NOT_EXIST)"
}

# expect_line TEXT ERE WHAT - fails unless a line of TEXT matches ERE
expect_line() {
    grep -q -E -- "$2" <<<"$1" || it_fail "$3 (no line matching /$2/; output in mqadmin.*.log)"
}

nsctl_route_has() {
    nsctl route --ns "$(ns_addr ns)" --json "$1" 2>/dev/null | grep -q -E -- "$2"
}
