# Scenario 11: authentication with RocketMQ's own credentials. The real
# AclClientRPCHook (rocketmq-client 5.3.3) signs the fixed requests of
# tests/unit/test_auth.c as our unit test expects. A namesrvd with
# authMode=all and sealed secrets (authKeyFile; users made offline before
# the start) serves: a 5.3.3 broker configured with its
# innerClientAuthenticationCredentials registers; another broker with the
# same key under a broker name the key is not granted is refused (not in
# the cluster); a producer with AclClientRPCHook (a client key) resolves the
# routes and sends, one without credentials gets no route; mqadmin reading
# $ROCKETMQ_HOME/conf/tools.yml with an admin key writes KV config and
# settings, with a client key it is refused. Every refusal is in the admin
# audit trail with the peer address, and /metrics counts them by reason.
IT_NEEDS="java"
# the RocketMQ versions it cannot apply to (a glob) and why
IT_SKIP_VERSION="4.*"
IT_SKIP_WHY="it signs brokers with 5.x authentication settings (innerClientAuthenticationCredentials, authenticationMetadataProvider), which 4.x brokers do not have"

# has_refusal NSDATA PATTERN - `namesrvctl user refusals` has a line matching.
has_refusal() { nsctl user refusals --data-dir "$1" 2>/dev/null | grep -q -E -- "$2"; }

scenario() {
    # 1. the Java hook against our unit test's values
    java $IT_JVM_CLIENT -cp "$IT_CP" nsinterop.SignVectors >"$SDIR/vectors.out" 2>"$SDIR/vectors.err" ||
        it_fail "SignVectors failed (see vectors.err)"
    it_expect_grep "$SDIR/vectors.out" '^A GeeGoP9mRvDhoVp4PD5omX0prgE= ' "the Java hook signs case A as test_auth.c expects"
    it_expect_grep "$SDIR/vectors.out" '^B HrKLPreAKqd/2zvbOIHCBZuiIk0=$' "the Java hook signs case B as test_auth.c expects"
    it_expect_grep "$SDIR/vectors.out" '^C X4NV3tvrnlxil3uP0cIUdElLNCE=$' "the Java hook signs case C as test_auth.c expects"
    it_log "the real AclClientRPCHook signs cases A-C as our unit test expects"

    # 2. users, sealed with the server's key, made before it starts
    local d="$SDIR/ns/data" key="$SDIR/ns.key" u
    mkdir -p "$SDIR/ns"
    openssl rand -hex 32 >"$key"
    for u in "admin1 admin adminsecret" "brk1 broker brokersecret --brokers c11/b11" \
        "cli1 client clientsecret"; do
        set -- $u
        nsctl user add "$1" --role "$2" --secret "$3" "${@:4}" --data-dir "$d" \
            --key-file "$key" >>"$SDIR/users.log" 2>&1 || it_fail "namesrvctl user add $1 failed"
    done
    nsctl user list --data-dir "$d" >"$SDIR/users.txt" 2>&1
    [ "$(grep -c ' sealed ' "$SDIR/users.txt")" = 3 ] || it_fail "secrets not sealed: $(cat "$SDIR/users.txt")"
    if grep -q -a -E 'adminsecret|brokersecret|clientsecret' "$d/data.mdb"; then
        it_fail "a plaintext secret is in the store file"
    fi
    ns_start ns --authMode=all --authPenaltyMaxMillis=0 --authKeyFile="$key" \
        --httpListen=127.0.0.1:0 --httpPortFile="$SDIR/ns/http.port"
    local ns hp admin=(--access-key admin1 --secret-key adminsecret)
    ns=$(ns_addr ns)
    it_wait 10 "the HTTP port file" test -s "$SDIR/ns/http.port"
    hp=$(cat "$SDIR/ns/http.port")

    # 3. two real brokers signing with brk1, granted c11/b11 only
    local cred='innerClientAuthenticationCredentials={"accessKey":"brk1","secretKey":"brokersecret"}'
    local prov=authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider
    broker_launch b11 "$ns" c11 b11 0 "$cred" "$prov"
    broker_launch b12 "$ns" c11 b12 0 "$cred" "$prov"
    broker_ready b11
    broker_wait_boot b12 "$SDIR/b12.out"
    it_wait 40 "b12's registration refused and on record" \
        has_refusal "$d" "REGISTER_BROKER brk1 broker_name: this AccessKey is not granted broker name 'b12'"
    nsctl clusters --ns "$ns" "${admin[@]}" >"$SDIR/clusters.txt" 2>&1 || it_fail "namesrvctl clusters (admin1) failed"
    it_expect_grep "$SDIR/clusters.txt" "b11" "broker b11 registered with its inner-client credentials"
    it_expect_no_grep "$SDIR/clusters.txt" "b12" "broker b12 (name not granted) must not be registered"
    if nsctl clusters --ns "$ns" >"$SDIR/clusters.unsigned.txt" 2>&1; then
        it_fail "an unsigned namesrvctl clusters was answered under authMode=all"
    fi

    # 4. producers: with AclClientRPCHook (cli1) and without credentials
    local n=20 signed="-Dnsinterop.accessKey=cli1 -Dnsinterop.secretKey=clientsecret"
    IT_JVM_CLIENT="$IT_JVM_CLIENT $signed" java_prog producer Produce "$ns" IT_AUTH m11 "$n"
    local ppid=$IT_PID
    it_wait_exit "$ppid" 120 "producer with AclClientRPCHook"
    it_expect_grep "$SDIR/producer.out" "^SUMMARY sent=$n failed=0$" "the signed producer sent all $n"
    java_prog anon Produce "$ns" IT_AUTH a11 1
    local apid=$IT_PID i=0 rc=0
    while it_alive "$apid" && ((i++ < 300)); do sleep 0.2; done
    it_alive "$apid" && it_fail "the unsigned producer still runs after 60 s"
    wait "$apid" || rc=$?
    [ "$rc" != 0 ] || it_fail "the unsigned producer sent (exit 0)"
    it_expect_grep "$SDIR/anon.out" "^SUMMARY sent=0 failed=1$" "the unsigned producer sent nothing"
    it_expect_grep "$SDIR/anon.out" "No route info" "the unsigned producer got no route"
    has_refusal "$d" "GET_ROUTEINFO_BY_TOPIC - unsigned: GET_ROUTEINFO_BY_TOPIC needs a signed request" ||
        it_fail "the unsigned producer's lookups are not on record"

    # 5. mqadmin with conf/tools.yml: admin1 may, cli1 may not
    local out home="$SDIR/client.home"
    mkdir -p "$home/conf"
    printf 'accessKey: admin1\nsecretKey: adminsecret\n' >"$home/conf/tools.yml"
    mqadmin_shell_start
    out=$(mqadmin updateKvConfig updateKvConfig -n "$ns" -s ORDER_TOPIC_CONFIG -k IT_AUTH -v b11:4)
    grep -q "create or update kv config to namespace success" <<<"$out" ||
        it_fail "mqadmin updateKvConfig (admin1) failed: $(tail -3 <<<"$out")"
    [ "$(nsctl kv get --ns "$ns" "${admin[@]}" ORDER_TOPIC_CONFIG IT_AUTH)" = b11:4 ] ||
        it_fail "updateKvConfig (admin1): value not stored"
    out=$(mqadmin updateNamesrvConfig updateNamesrvConfig -n "$ns" -k orderMessageEnable -v true)
    grep -q "update name server config success" <<<"$out" ||
        it_fail "mqadmin updateNamesrvConfig (admin1) failed: $(tail -3 <<<"$out")"
    out=$(mqadmin getNamesrvConfig getNamesrvConfig -n "$ns")
    grep -q -E "^authMode +=  all$" <<<"$out" || it_fail "getNamesrvConfig (admin1): no authMode = all"
    grep -q -E "^orderMessageEnable +=  true$" <<<"$out" || it_fail "getNamesrvConfig (admin1): the update is not there"
    printf 'accessKey: cli1\nsecretKey: clientsecret\n' >"$home/conf/tools.yml"
    out=$(mqadmin updateKvConfigClient updateKvConfig -n "$ns" -s ORDER_TOPIC_CONFIG -k IT_AUTH2 -v x)
    if grep -q "create or update kv config to namespace success" <<<"$out"; then
        it_fail "mqadmin updateKvConfig with a client key succeeded"
    fi
    grep -q "PUT_KV_CONFIG needs role admin" <<<"$out" ||
        it_fail "mqadmin (cli1) was not told the role it lacks: $(tail -3 <<<"$out")"
    out=$(mqadmin updateNamesrvConfigClient updateNamesrvConfig -n "$ns" -k orderMessageEnable -v false)
    grep -q "UPDATE_NAMESRV_CONFIG needs role admin" <<<"$out" ||
        it_fail "mqadmin updateNamesrvConfig (cli1) not refused: $(tail -3 <<<"$out")"
    if nsctl kv get --ns "$ns" "${admin[@]}" ORDER_TOPIC_CONFIG IT_AUTH2 >/dev/null 2>&1; then
        it_fail "the client's KV write was stored"
    fi

    # 6. the trail and the counters
    local peer='127\.0\.0\.1:[0-9]+'
    nsctl user refusals --data-dir "$d" >"$SDIR/refusals.txt" 2>&1
    nsctl audit --admin --data-dir "$d" >"$SDIR/audit-admin.txt" 2>&1
    it_expect_grep "$SDIR/refusals.txt" " $peer REGISTER_BROKER brk1 broker_name: " "the refused broker is on record with its address"
    it_expect_grep "$SDIR/refusals.txt" " $peer PUT_KV_CONFIG cli1 role: PUT_KV_CONFIG needs role admin" "mqadmin's refused KV write is on record"
    it_expect_grep "$SDIR/refusals.txt" " $peer UPDATE_NAMESRV_CONFIG cli1 role: " "mqadmin's refused config update is on record"
    it_expect_grep "$SDIR/audit-admin.txt" "$peer +PUT_KV_CONFIG +ok .*AccessKey=admin1" "the admin's KV write is in the trail"
    it_expect_grep "$SDIR/audit-admin.txt" "$peer +PUT_KV_CONFIG +refused .*AccessKey=cli1 .*Signature=\(redacted\)" "the refused one is in the trail beside it"
    it_expect_no_grep "$SDIR/audit-admin.txt" "adminsecret|clientsecret|brokersecret" "a secret is in the trail"
    local v
    v=$(it_metric "$hp" 'namesrv_auth_refusals_total{reason="broker_name"}')
    [ -n "$v" ] && ((v >= 1)) || it_fail "namesrv_auth_refusals_total{reason=\"broker_name\"} is '$v'"
    v=$(it_metric "$hp" 'namesrv_auth_refusals_total{reason="role"}')
    [ -n "$v" ] && ((v >= 2)) || it_fail "namesrv_auth_refusals_total{reason=\"role\"} is '$v', want >= 2"
    v=$(it_metric "$hp" 'namesrv_auth_refusals_total{reason="unsigned"}')
    [ -n "$v" ] && ((v >= 1)) || it_fail "namesrv_auth_refusals_total{reason=\"unsigned\"} is '$v'"
    [ "$(it_metric "$hp" 'namesrv_auth_mode{mode="all"}')" = 1 ] || it_fail "namesrv_auth_mode{mode=\"all\"} is not 1"
    it_http_get "$hp" /metrics | grep '^namesrv_auth' >"$SDIR/metrics-auth.txt"
    it_log "refusals on record: $(grep -c . "$SDIR/refusals.txt"); $(tr '\n' ' ' <"$SDIR/metrics-auth.txt")"
}
