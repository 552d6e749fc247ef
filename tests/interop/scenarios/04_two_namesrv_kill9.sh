# Scenario 4: two namesrvd in the broker's and the producer's name-server
# lists. While a real producer sends, one namesrvd is killed with kill -9
# and restarted on its port: no send fails, and the restarted server answers
# the topic's route from its store before the broker has registered with it
# again (the Java NameServer would answer TOPIC_NOT_EXIST until then).
IT_NEEDS="java"

scenario() {
    local n=300
    ns_start nsA
    ns_start nsB
    local a b list
    a=$(ns_addr nsA)
    b=$(ns_addr nsB)
    list="$a;$b"
    broker_start b1 "$list" c1 b1 0
    local out
    out=$(mqadmin updateTopic updateTopic -n "$list" -c c1 -t IT_HA -r 4 -w 4)
    grep -q "create topic to $(br_addr b1) success" <<<"$out" || it_fail "updateTopic IT_HA failed"
    it_wait 60 "IT_HA routed by nsA" route_ok nsA IT_HA
    it_wait 60 "IT_HA routed by nsB" route_ok nsB IT_HA

    java_prog producer Produce "$list" IT_HA m4 "$n" 50
    local ppid=$IT_PID
    it_wait 120 "30 messages sent" sent_at_least 30

    local try proven=0 regs
    for try in 1 2 3; do
        ns_kill9 nsA
        it_log "nsA killed with kill -9 after $(sent) sends"
        local at=$(($(sent) + 20))
        it_wait 60 "20 more sends with nsA down" sent_at_least "$at"
        regs=$(br_registrations b1 "$a")
        ns_start nsA
        route_ok nsA IT_HA || it_fail "restarted nsA has no route for IT_HA (see route.nsA.IT_HA.json)"
        if [ "$(br_registrations b1 "$a")" = "$regs" ]; then
            proven=1
            it_log "restarted nsA answered the route from its store (b1 registrations with it: $regs)"
            it_expect_grep "$SDIR/nsA.log" "restored 1 broker address\(es\) and [1-9][0-9]* routed topic" \
                "nsA restored the broker from its store"
            break
        fi
        it_log "b1 registered with nsA during the restart: once more"
    done
    ((proven)) || it_fail "could not restart nsA between two registrations of b1"

    it_wait_exit "$ppid" 240 "producer"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "every send succeeded"
    # the broker's next registration reaches the restarted server again
    BR_REGS[b1@$a]=$regs
    broker_wait_registered b1 "$a"
    route_ok nsA IT_HA || it_fail "nsA lost IT_HA after b1 registered again"
}

# route_ok NS TOPIC - NS routes TOPIC to b1 at its address
route_ok() {
    local f="$SDIR/route.$1.$2.json"
    nsctl route --ns "$(ns_addr "$1")" --json "$2" >"$f" 2>&1 &&
        grep -q "\"$(br_addr b1)\"" "$f"
}
sent() { it_grep_count "$SDIR/producer.out" "^SENT "; }
sent_at_least() { (($(sent) >= $1)); }
