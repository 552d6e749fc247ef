# Scenario 18: seeding from a peer. A real broker registers with namesrvd
# nsA only, and mqadmin creates a topic on it and writes a KV entry through
# nsA. Then a new namesrvd nsB starts with an empty store,
# seedFromPeers=true and peers=nsA: the real mqadmin topicRoute against nsB
# names the broker with its address and queues, and GET_KV_CONFIG on nsB
# answers the KV entry, although the broker is not configured with
# nsB at all and never registers with it. nsB logs the seed before its HTTP
# listener and answers /readyz; the broker's address is held on grace,
# unconfirmed (namesrv_seed_state 1).
IT_NEEDS="java"

scenario() {
    ns_start nsA
    local a b out
    a=$(ns_addr nsA)
    broker_start b1 "$a" c1 b1 0
    out=$(mqadmin updateTopic updateTopic -n "$a" -c c1 -t IT_SEED -r 3 -w 3)
    expect_in "$out" "create topic to $(br_addr b1) success" "updateTopic created IT_SEED on b1"
    it_wait 30 "nsA routes IT_SEED" route_names "$a" IT_SEED
    out=$(mqadmin updateKvConfig updateKvConfig -n "$a" -s IT_SEED_NS -k seed.key -v from-a)
    expect_in "$out" "create or update kv config to namespace success" "updateKvConfig on nsA"

    local t0
    t0=$(it_ms)
    ns_start nsB --seedFromPeers=true --peers="$a" --httpListen=127.0.0.1:0 \
        --httpPortFile="$SDIR/nsB/http.port"
    b=$(ns_addr nsB)
    it_log "nsB listening $(($(it_ms) - t0)) ms after its start"
    it_expect_grep "$SDIR/nsB.log" "seedFromPeers: seeded from $a" "nsB logs the seed"

    # the route, as the real admin tool reads it from nsB
    out=$(mqadmin topicRouteB topicRoute -n "$b" -t IT_SEED)
    expect_in "$out" '"brokerName" *: *"b1"' "topicRoute on nsB names broker b1"
    expect_in "$out" "(^|[{,])[[:space:]]*\"?0\"? *: *\"$(br_addr b1)\"" "with b1's address as id 0"
    expect_in "$out" '"readQueueNums" *: *3' "and its 3 read queues"
    it_log "first route from nsB $(($(it_ms) - t0)) ms after its start"
    # the KV entry mqadmin wrote to nsA, read from nsB (GET_KV_CONFIG)
    out=$(nsctl kv get IT_SEED_NS seed.key --ns "$b" 2>&1 || true)
    expect_in "$out" "from-a" "the KV entry on nsB"

    # the broker never registered with nsB: it does not know it
    it_expect_no_grep "$SDIR/nsB.log" "registered: new" "no registration reached nsB"
    (($(br_registrations b1 "$b") == 0)) || it_fail "b1 registered with nsB"
    local http
    http=$(cat "$SDIR/nsB/http.port")
    [ "$(it_http_get "$http" /readyz >/dev/null && echo ok)" = ok ] || it_fail "nsB is not ready"
    local seeded listening
    seeded=$(grep -n "seedFromPeers: seeded from" "$SDIR/nsB.log" | head -1 | cut -d: -f1)
    listening=$(grep -n "http: /metrics, /healthz, /readyz" "$SDIR/nsB.log" | head -1 | cut -d: -f1)
    ((seeded < listening)) || it_fail "nsB opened /readyz (line $listening) before the seed (line $seeded)"
    [ "$(it_metric "$http" namesrv_seed_state)" = 1 ] || it_fail "namesrv_seed_state is not 1 on nsB"
    it_expect_grep "$SDIR/nsB.log" "restored 1 broker address" "b1 held on grace as a restored broker"
}

# expect_in TEXT REGEX WHAT - TEXT has a line matching REGEX (grep -E)
expect_in() {
    grep -q -E -- "$2" <<<"$1" || it_fail "$3: no line matches '$2' in:"$'\n'"$1"
    it_log "ok: $3"
}

# route_names NS TOPIC - namesrvctl reads a route of TOPIC from NS
route_names() {
    nsctl route "$2" --ns "$1" >/dev/null 2>&1
}
