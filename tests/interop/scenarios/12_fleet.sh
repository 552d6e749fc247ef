# Scenario 12: the fleet. Three namesrvd that know each other (peers), a
# real broker whose namesrvAddr lists only two of them: `namesrvctl fleet
# diff` names the broker missing from the third, the peer checks of the
# third and of the others call it divergent once peerDivergenceMillis has
# passed (here 15 s, longer than the broker's 10 s registration period),
# and the alert rule fires on the scraped metrics (promtool test rules).
# The broker's list is fixed and it registers with all three: they agree
# and the alert clears. Last, mqadmin updateKvConfig against one server
# only: fleet diff names the key.
IT_NEEDS="java"

DIVERGE_MS=15000

scenario() {
    command -v promtool >/dev/null || it_fail "promtool is needed (Debian: prometheus)"
    local n
    for n in nsA nsB nsC; do
        ns_start "$n" --httpListen=127.0.0.1:0 --httpPortFile="$SDIR/$n/http.port" \
            --peerCheckIntervalMillis=2000 --peerDivergenceMillis=$DIVERGE_MS
    done
    local a b c all
    a=$(ns_addr nsA)
    b=$(ns_addr nsB)
    c=$(ns_addr nsC)
    all="$a;$b;$c"
    # every server gets the whole list, itself included, as brokers do
    for n in nsA nsB nsC; do
        nsctl config set peers "$all" --ns "$(ns_addr "$n")" >/dev/null ||
            it_fail "config set peers on $n failed"
    done
    it_wait 20 "nsA finds itself in its peers" grep -q "is this server; skipped" "$SDIR/nsA.log"

    broker_start b1 "$a;$b" c1 b1 0
    local t0
    t0=$(it_ms)
    local out rc
    out=$(nsctl fleet diff --ns "$all" 2>&1)
    rc=$?
    echo "$out" >"$SDIR/fleet-diff.missing.txt"
    [ "$rc" = 1 ] || it_fail "fleet diff exited $rc with b1 missing from nsC (want 1; see fleet-diff.missing.txt)"
    expect_in "$out" "c1/b1 +member +$a" "fleet diff names c1/b1 on nsA"
    expect_in "$out" "^ +$c +\(absent\)" "fleet diff shows it absent on nsC"
    expect_in "$out" "addr $(br_addr b1)" "fleet diff names b1's address"
    it_log "fleet diff with b1 on nsA and nsB only:"$'\n'"$out"

    # divergent on nsC's checks of nsA (and nsA's of nsC), not before the time
    it_wait 60 "nsC calls nsA divergent" peer_is nsC divergent "$a" 1
    local took=$(($(it_ms) - t0))
    # t0 is taken once b1 registered with nsA and nsB, up to a second or two
    # after its registration with nsA began the episode
    ((took >= DIVERGE_MS - 3000)) || it_fail "nsC called nsA divergent after $took ms (< $DIVERGE_MS)"
    it_wait 30 "nsA calls nsC divergent" peer_is nsA divergent "$c" 1
    peer_is nsA in_sync "$b" 1 || it_fail "nsA and nsB hold the same and are not in sync"
    it_log "divergent after $took ms (peerDivergenceMillis $DIVERGE_MS)"
    it_expect_grep "$SDIR/nsC.log" "fleet: peer $a is divergent: .*broker c1/b1" "nsC logs what differs"
    alert_test firing nsC "$a"
    alert_test firing nsA "$c"

    # the broker's list fixed: it registers with all three, they agree
    broker_stop b1
    broker_start b1 "$all" c1 b1 0 "namesrvAddr=$all"
    out=$(nsctl fleet diff --ns "$all" 2>&1)
    rc=$?
    echo "$out" >"$SDIR/fleet-diff.fixed.txt"
    [ "$rc" = 0 ] || it_fail "fleet diff exited $rc once b1 registered with all three (see fleet-diff.fixed.txt)"
    it_log "fleet diff with b1 on all three:"$'\n'"$out"
    it_wait 30 "nsC and nsA in sync again" peer_is nsC in_sync "$a" 1
    it_wait 30 "nsA no longer calls nsC divergent" peer_is nsA divergent "$c" 0
    it_expect_grep "$SDIR/nsC.log" "fleet: peer $a agrees again" "nsC logs the end of the episode"
    alert_test cleared nsC "$a"
    alert_test cleared nsA "$c"

    # a KV entry written to one server only (an admin tool that knew one)
    out=$(mqadmin updateKvConfig updateKvConfig -n "$b" -s IT_FLEET -k it.key -v on-b-only)
    expect_in "$out" "create or update kv config to namespace success" "updateKvConfig on nsB"
    out=$(nsctl fleet diff --ns "$all" --json 2>&1)
    rc=$?
    echo "$out" >"$SDIR/fleet-diff.kv.json"
    [ "$rc" = 1 ] || it_fail "fleet diff exited $rc with a key on nsB only (see fleet-diff.kv.json)"
    expect_in "$out" "\"kind\":\"kv\",\"item\":\"IT_FLEET/it.key\",\"leaf\":\"value\"" "fleet diff names the key"
    expect_in "$out" "\"$b\":\"on-b-only\"" "with nsB's value"
    expect_in "$out" "\"$a\":null" "and none on nsA"
    it_log "fleet diff --json with the key on nsB only: $out"
}

# expect_in TEXT REGEX WHAT - TEXT has a line matching REGEX (grep -E)
expect_in() {
    grep -q -E -- "$2" <<<"$1" || it_fail "$3: no line matches '$2' in:"$'\n'"$1"
    it_log "ok: $3"
}

# scrape NS - NS's /metrics into $SDIR/NS.metrics
scrape() {
    curl -s "http://127.0.0.1:$(cat "$SDIR/$1/http.port")/metrics" >"$SDIR/$1.metrics"
}

# peer_is NS WHAT PEER VALUE - NS exports namesrv_peer_WHAT{peer="PEER"} VALUE
peer_is() {
    scrape "$1" && grep -q -x "namesrv_peer_$2{peer=\"$3\"} $4" "$SDIR/$1.metrics"
}

# rule_description ALERT - the description annotation of ALERT in the
# rules file, as written there (a quoted YAML string)
rule_description() {
    awk -v a="$1" '$0 ~ "alert: "a"$" {on = 1} on && /description:/ {sub(/^ *description: */, ""); print; exit}' \
        "$IT_TOP/docs/monitoring/namesrv-alerts.yml"
}

# alert_test firing|cleared NS PEER - promtool test rules: the alert rules of
# docs/monitoring on NS's scraped namesrv_peer_divergent for PEER, held for
# five minutes, fire NamesrvPeerDivergent (or do not).
alert_test() {
    local want=$1 ns=$2 peer=$3 v t="$SDIR/alert.$1.$2.test.yml"
    scrape "$ns"
    v=$(sed -n "s/^namesrv_peer_divergent{peer=\"$peer\"} //p" "$SDIR/$ns.metrics")
    [ -n "$v" ] || it_fail "$ns exports no namesrv_peer_divergent for $peer"
    {
        echo "rule_files: [\"$IT_TOP/docs/monitoring/namesrv-alerts.yml\"]"
        echo "evaluation_interval: 1m"
        echo "tests:"
        echo "  - interval: 1m"
        echo "    input_series:"
        echo "      - series: 'namesrv_peer_divergent{instance=\"$ns\",job=\"namesrv\",peer=\"$peer\"}'"
        echo "        values: '${v}x5'"
        echo "    alert_rule_test:"
        echo "      - eval_time: 2m"
        echo "        alertname: NamesrvPeerDivergent"
        if [ "$want" = firing ]; then
            echo "        exp_alerts:"
            echo "          - exp_labels: {instance: $ns, job: namesrv, peer: \"$peer\", severity: warning}"
            echo "            exp_annotations:"
            echo "              summary: \"$ns and its peer $peer disagree\""
            echo "              description: $(rule_description NamesrvPeerDivergent)"
        else
            echo "        exp_alerts: []"
        fi
    } >"$t"
    promtool test rules "$t" >"$t.out" 2>&1 ||
        it_fail "NamesrvPeerDivergent is not $want on $ns's scraped value $v (see $(basename "$t").out)"
    it_log "ok: NamesrvPeerDivergent $want on $ns for $peer (scraped namesrv_peer_divergent $v)"
}
