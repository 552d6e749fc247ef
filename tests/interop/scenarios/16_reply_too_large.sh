# Scenario 16: a reply larger than a frame may be, as the real Java admin
# client sees it (issue 27). namesrvd refuses to build a reply over
# maxFrameBytes less 4 KiB for the header and answers SYSTEM_ERROR "reply
# too large"; Java's NameServer sends the frame, and a Java client whose
# frameMaxLength (com.rocketmq.remoting.frameMaxLength, 16 MiB by default) is
# smaller drops it and closes the connection, so the caller gets a remoting
# exception that names no reason (5.3.3: RemotingSendRequestException). Both are shown with small limits instead of
# 16 MiB of KV config: a namespace of 120 KiB imported from kvConfig.json.
#  1. namesrvd with maxFrameBytes=65536: the client gets code 1 and the remark
#     at once (well before its 5 s timeout); a small namespace is listed.
#  2. namesrvd with the default limit sends the 120 KiB list whole to a client
#     with frameMaxLength=65536, as Java's NameServer would: the client fails
#     with no reason, which is what the refusal in 1 spares it.
IT_NEEDS="java"

# kv_file FILE - a kvConfig.json (Java's format) with IT_BIG (120 keys of 1 KiB)
# and IT_SMALL (3 keys)
kv_file() {
    local v i sep=""
    v=$(printf 'v%.0s' $(seq 1000))
    {
        printf '{"configTable":{"IT_SMALL":{"a":"1","b":"2","c":"3"},"IT_BIG":{'
        for ((i = 0; i < 120; i++)); do
            printf '%s"key-%03d":"%s"' "$sep" "$i" "$v"
            sep=","
        done
        printf '}}}\n'
    } >"$1"
}

# kv_list NAME NS NAMESPACE - KvList's one line (KvList.java) in KV_OUT
# (not in $(...): java_prog's process must be the scenario shell's child)
kv_list() {
    java_prog "$1" KvList "$2" "$3" 5000
    it_wait_exit "$IT_PID" 60 "KvList $1"
    KV_OUT=$(grep -E '^(KVLIST|REFUSED|FAILED) ' "$SDIR/$1.out" | head -1)
}

scenario() {
    local out ms jvm=$IT_JVM_CLIENT
    mkdir -p "$SDIR/small" "$SDIR/dflt"
    kv_file "$SDIR/small/kvConfig.json"
    kv_file "$SDIR/dflt/kvConfig.json"

    ns_start small --maxFrameBytes=65536
    kv_list big1 "$(ns_addr small)" IT_BIG
    out=$KV_OUT
    it_log "maxFrameBytes=65536, IT_BIG: $out"
    grep -q -E '^REFUSED code=1 ms=[0-9]+ .*reply too large' <<<"$out" ||
        it_fail "the Java client did not get SYSTEM_ERROR 'reply too large' for IT_BIG: $out"
    ms=$(sed -E 's/^REFUSED code=1 ms=([0-9]+) .*/\1/' <<<"$out")
    ((ms < 3000)) || it_fail "the refusal took $ms ms (the client's timeout is 5000 ms)"
    it_expect_grep "$SDIR/small.log" "reply of [0-9]+ bytes not sent: over maxFrameBytes" \
        "namesrvd logged the refused reply"
    kv_list small1 "$(ns_addr small)" IT_SMALL
    out=$KV_OUT
    grep -q '^KVLIST n=3 ' <<<"$out" || it_fail "IT_SMALL not listed whole over the same server: $out"

    ns_start dflt
    kv_list big2 "$(ns_addr dflt)" IT_BIG
    out=$KV_OUT
    grep -q '^KVLIST n=120 ' <<<"$out" || it_fail "IT_BIG not listed whole under the default limit: $out"
    IT_JVM_CLIENT="$jvm -Dcom.rocketmq.remoting.frameMaxLength=65536"
    kv_list big3 "$(ns_addr dflt)" IT_BIG
    IT_JVM_CLIENT=$jvm
    out=$KV_OUT
    it_log "a 120 KiB frame to a client with frameMaxLength=65536: $out"
    grep -q '^FAILED ' <<<"$out" ||
        it_fail "a client with frameMaxLength=65536 read a 120 KiB frame ($out): the contrast this scenario shows does not hold"
}
