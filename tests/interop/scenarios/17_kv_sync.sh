# Scenario 17: KV config that converges (kvSync). Three namesrvd with
# kvSync=true, each with the other two (and itself) in peers, checking every
# 200 ms. (i) The real mqadmin's updateKvConfig sent to one server reaches
# the other two: the real admin client (getKVConfig, GET_KV_CONFIG, one
# client per server) reads it from each, and the time from the written
# server showing it to the last one showing it is the convergence time
# (measured for five writes, one to each server in turn; logged and in
# convergence.txt). (ii) Two mqadmin JVMs started at once write the same key
# on two servers: both succeed, and every server ends with one and the same
# value, which stays. (iii) mqadmin's deleteKvConfig on one server while
# another is killed: the killed one's store still holds the value, and when
# it is restarted on it the delete is not undone: the key stays absent on
# all three over many checks, and the returned server logs that it took the
# tombstone.
IT_NEEDS="java"

CHECK_MS=200
NSP=IT_KVSYNC

scenario() {
    local n all="" a b c out
    # ports first: every server is started with the whole list as its peers
    for n in nsA nsB nsC; do
        it_free_ports 1
        NS_PORT[$n]=$IT_PORT
        all+="${all:+;}127.0.0.1:$IT_PORT"
    done
    for n in nsA nsB nsC; do kv_ns_start "$n" "$all"; done
    a=$(ns_addr nsA)
    b=$(ns_addr nsB)
    c=$(ns_addr nsC)
    it_wait 20 "nsA says kvSync is on" grep -q "kvsync: on" "$SDIR/nsA.log"
    mqadmin_shell_start

    # (i) a write to one server reaches the other two; five times, to each in turn
    local i target spreads=()
    for i in 1 2 3 4 5; do
        case $((i % 3)) in 1) target=$a ;; 2) target=$b ;; 0) target=$c ;; esac
        kv_watch w$i "$all" k1 "=value-$i" 15000 $((5 * CHECK_MS))
        out=$(mqadmin put$i updateKvConfig -n "$target" -s $NSP -k k1 -v "value-$i")
        expect_in "$out" "create or update kv config to namespace success" "updateKvConfig $i to $target"
        kv_watch_end w$i "value-$i written to $target is on all three"
        spreads+=("$KV_SPREAD")
        it_log "value-$i written to $target: on the last of the three $KV_SPREAD ms after the first"
    done
    printf '%s\n' "${spreads[@]}" | sort -n >"$SDIR/convergence.txt"
    it_log "convergence, ms from the written server showing the value to the last one," \
        "$CHECK_MS ms checks: $(paste -s -d ' ' "$SDIR/convergence.txt")"

    # (ii) two admins write the same key at once on two servers
    local pa pb
    mqadmin_jvm raceA updateKvConfig -n "$a" -s $NSP -k k2 -v from-nsA >/dev/null &
    pa=$!
    mqadmin_jvm raceB updateKvConfig -n "$b" -s $NSP -k k2 -v from-nsB >/dev/null &
    pb=$!
    wait "$pa" "$pb"
    it_expect_grep "$SDIR/mqadmin.raceA.log" "create or update kv config to namespace success" "the write on nsA"
    it_expect_grep "$SDIR/mqadmin.raceB.log" "create or update kv config to namespace success" "the write on nsB"
    local ta tb later=""
    ta=$(race_time nsA)
    tb=$(race_time nsB)
    it_log "the two writes, as each server's admin trail has them: nsA $ta, nsB $tb"
    [[ $ta > $tb ]] && later=from-nsA
    [[ $tb > $ta ]] && later=from-nsB
    kv_watch race "$all" k2 same 15000 $((15 * CHECK_MS))
    kv_watch_end race "one value of k2 on all three"
    [[ $KV_VALUE == from-nsA || $KV_VALUE == from-nsB ]] || it_fail "k2 converged to '$KV_VALUE'"
    # the later write wins (the same millisecond: the tie-break, either)
    [ -z "$later" ] || [ "$KV_VALUE" = "$later" ] ||
        it_fail "k2 converged to $KV_VALUE, not to the later write $later"
    it_log "k2 is $KV_VALUE on all three, and stays"

    # (iii) a delete while one server is down is not undone when it returns
    out=$(mqadmin put-k3 updateKvConfig -n "$b" -s $NSP -k k3 -v before-delete)
    expect_in "$out" "create or update kv config to namespace success" "updateKvConfig k3 to nsB"
    kv_watch k3-everywhere "$all" k3 "=before-delete" 15000 0
    kv_watch_end k3-everywhere "k3 on all three"
    ns_kill9 nsC
    it_log "nsC killed"
    out=$(mqadmin del-k3 deleteKvConfig -n "$a" -s $NSP -k k3)
    expect_in "$out" "delete kv config from namespace success" "deleteKvConfig k3 on nsA"
    kv_watch k3-deleted "$a;$b" k3 absent 15000 $((5 * CHECK_MS))
    kv_watch_end k3-deleted "k3 gone from nsA and nsB"
    nsctl export-kvconfig --data-dir "$(ns_datadir nsC)" -o "$SDIR/nsC.kvConfig.json" ||
        it_fail "export-kvconfig of the stopped nsC failed"
    it_expect_grep "$SDIR/nsC.kvConfig.json" '"k3"[[:space:]]*:[[:space:]]*"before-delete"' "nsC missed the delete (its store)"
    kv_ns_start nsC "$all"
    kv_watch k3-stays-deleted "$all" k3 absent 15000 $((25 * CHECK_MS))
    kv_watch_end k3-stays-deleted "k3 absent on all three after nsC returned, for 25 checks"
    it_expect_grep "$SDIR/nsC.log" "kvsync: took 1 of 1 entries from .* \(first $NSP/k3, deleted\)" \
        "the returned nsC took the tombstone from a peer"
    local s
    for s in nsA nsB; do
        it_expect_no_grep "$SDIR/$s.log" "kvsync: took .* from $c \(first $NSP/k3" "$s took k3 back from nsC"
    done
}

# kv_ns_start NAME PEERS - namesrvd NAME with kvSync on, PEERS its peers
kv_ns_start() {
    ns_start "$1" --kvSync=true --peers="$2" --peerCheckIntervalMillis=$CHECK_MS
}

# kv_watch NAME ADDRS KEY WANT TIMEOUT_MS HOLD_MS - starts KvWatch (KvWatch.java)
# on $NSP/KEY of the servers ADDRS and waits until it has read from each
# once; kv_watch_end NAME WHAT then waits for its verdict: the state WANT
# reached on every server and held for HOLD_MS, else the scenario fails.
# Sets KV_SPREAD (ms from the first server in the state to the last) and
# KV_VALUE.
kv_watch() {
    java_prog "$1" KvWatch "$2" $NSP "$3" "$4" "$5" "$6"
    KV_WATCH_PID=$IT_PID
    it_wait 60 "KvWatch $1 started" grep -q "^READY$" "$SDIR/$1.out"
}
kv_watch_end() {
    local f="$SDIR/$1.out"
    it_wait_exit "$KV_WATCH_PID" 60 "KvWatch $1"
    it_expect_no_grep "$f" "^TIMEOUT" "$2"
    it_expect_no_grep "$f" "^LEFT" "$2, and stays so"
    it_expect_grep "$f" "^REACHED " "$2"
    it_expect_grep "$f" "^HELD " "$2, and stays so"
    KV_SPREAD=$(sed -n 's/^REACHED spread=\([0-9]*\) .*/\1/p' "$f")
    KV_VALUE=$(sed -n 's/^REACHED spread=[0-9]* value=//p' "$f")
    it_log "ok: $2 ($(grep -E '^(SEEN|REACHED|HELD)' "$f" | paste -s -d ' '))"
}

# race_time NAME - the time (UTC, ms) of the k2 write in NAME's admin trail
race_time() {
    nsctl audit --admin --data-dir "$(ns_datadir "$1")" 2>/dev/null |
        awk '$4 == "PUT_KV_CONFIG" && / key=k2( |$)/ { t = $2 } END { print t }'
}

# expect_in TEXT REGEX WHAT - TEXT has a line matching REGEX (grep -E)
expect_in() {
    grep -q -E -- "$2" <<<"$1" || it_fail "$3: no line matches '$2' in:"$'\n'"$1"
    it_log "ok: $3"
}
