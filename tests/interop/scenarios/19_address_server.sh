# Scenario 19: the address server. A real broker with
# fetchNamesrvAddrByAddressServer=true and a real producer, neither given a
# namesrvAddr, both pointed at nsA's HTTP listener (the broker with
# rmqAddressServerDomain, the producer with -Drocketmq.namesrv.domain, both
# HOST:PORT so no :8080 is added): they poll
# http://127.0.0.1:PORT/rocketmq/nsaddr and find nsA alone. Once both work,
# nsB is added to nsA's `peers` while running: the broker registers with
# nsB after its next poll (fetchNamesrvAddrInterval, 2 s here) and
# registration (10 s); the producer learns nsB at its next poll and, with
# nsA stopped, goes on sending with routes from nsB.
#
# How long the producer takes is the Java client's, and cannot be set: it
# polls at start, 10 s later, then every 2 minutes (MQClientInstance). nsB
# is added within a few seconds of its start, before the 10 s poll, and the
# wait for it is bounded at 140 s in case that poll is missed.
IT_NEEDS="java"

scenario() {
    local n
    for n in nsA nsB; do
        ns_start "$n" --httpListen=127.0.0.1:0 --httpPortFile="$SDIR/$n/http.port" \
            --peerCheckIntervalMillis=1000
    done
    local a b http domain
    a=$(ns_addr nsA)
    b=$(ns_addr nsB)
    http=$(cat "$SDIR/nsA/http.port")
    domain="127.0.0.1:$http"
    it_wait 10 "nsA's address server lists nsA alone" list_is "$a"

    IT_REG_WAIT=0 broker_start b1 "" c1 b1 0 fetchNamesrvAddrByAddressServer=true \
        "rmqAddressServerDomain=$domain" fetchNamesrvAddrInterval=2000
    it_wait 60 "b1 registers with nsA, found through the address server" \
        br_registered_since b1 "$a" 0
    # the URL as the broker asked it (Host header and path; this script's
    # own requests send a Host without a port, and the broker is the only
    # Java poller yet), logged once by nsA
    local url
    url=$(sed -n "s|.*address server: GET \(http://$domain/[^ ]*\) from .*|\1|p" "$SDIR/nsA.log" | head -1)
    [ -n "$url" ] || it_fail "nsA logged no address server request from the broker"
    it_log "ok: the broker polled $url (nsA's log)"
    [ "$url" = "http://$domain/rocketmq/nsaddr" ] || it_fail "the broker polled $url"
    it_expect_grep "$(br_log b1)" "name server address changed, old: null new: $a\$" \
        "b1 logs the list it was given"

    # a producer with no namesrvAddr, sending one message every 300 ms (the
    # Java client's poll period allows up to 140 s for what follows)
    IT_JAVA_PROPS="-Drocketmq.namesrv.domain=$domain" java_prog producer Produce - IT_ADDR addr 1000 300
    local ppid=$IT_PID
    it_wait 60 "the producer sends through nsA" grep -q "^SENT " "$SDIR/producer.out"
    # the client logs through the broker jar's logback configuration (on
    # the classpath): its lines are in broker_default.log of its home
    local clog="$SDIR/producer.home/logs/rocketmqlogs"

    # nsB joins the fleet while they run
    nsctl config set peers "$a;$b" --ns "$a" >/dev/null || it_fail "config set peers on nsA failed"
    local t0
    t0=$(it_ms)
    it_wait 5 "nsA's address server lists nsA and nsB" list_is "$a;$b"
    it_wait 60 "b1 registers with nsB, added to the address server's list" \
        br_registered_since b1 "$b" 0
    it_log "ok: b1 registered with nsB $(($(it_ms) - t0)) ms after it joined nsA's peers"
    it_expect_grep "$(br_log b1)" "name server address changed, old: $a new: $a;$b\$" \
        "b1 logs the new list"
    it_wait 140 "the producer learns nsB from the address server" \
        grep -r -q -F "new=$a;$b" "$clog"
    it_log "ok: the producer learned nsB $(($(it_ms) - t0)) ms after it joined nsA's peers"

    # without nsA, the producer's routes come from nsB
    local routes sent
    routes=$(route_lookups nsB)
    ns_stop nsA
    sent=$(it_grep_count "$SDIR/producer.out" "^SENT ")
    it_wait 60 "the producer sends 20 more with nsA stopped" sent_since "$sent" 20
    it_wait 30 "nsB answers the producer's route lookups" lookups_since nsB "$routes"
    it_log "ok: GET_ROUTEINFO_BY_TOPIC on nsB $routes -> $(route_lookups nsB)"
    it_stop "$ppid" 10
    it_expect_no_grep "$SDIR/producer.out" "^FAILED " "no send failed"
}

# list_is LIST - nsA's address server answers exactly LIST
list_is() { [ "$(it_http_get "$(cat "$SDIR/nsA/http.port")" /rocketmq/nsaddr)" = "$1" ]; }

# route_lookups NS - GET_ROUTEINFO_BY_TOPIC requests NS answered SUCCESS
route_lookups() {
    local v
    v=$(it_metric "$(cat "$SDIR/$1/http.port")" \
        'namesrv_requests_total{request="GET_ROUTEINFO_BY_TOPIC",code="SUCCESS"}')
    echo "${v:-0}"
}
lookups_since() { (($(route_lookups "$1") > $2)); }
sent_since() { (($(it_grep_count "$SDIR/producer.out" "^SENT ") >= $1 + $2)); }
