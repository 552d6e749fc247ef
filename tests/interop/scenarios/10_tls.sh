# Scenario 9: TLS on the remoting port. Two namesrvd with a certificate the
# openssl CLI makes here, one tls.server.mode=permissive and one enforcing; a
# 5.3.3 broker started with -Dtls.enable=true registers with both over TLS; a
# Java producer and push consumer with -Dtls.enable=true find the broker only
# through the enforcing one and exchange N messages; namesrvctl reads the
# route over TLS (--tls-ca) from both and in plain from the permissive one
# only, and the enforcing one logs the plain attempt as refused.
IT_NEEDS="java"

scenario() {
    local n=50
    (cd "$SDIR" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout ca.key -out ca.pem -days 2 -subj /CN=interop-ca &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout srv.key -out srv.csr -subj /CN=localhost &&
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -set_serial 9 -out srv.pem \
            -days 2 -extfile srv.ext) >"$SDIR/openssl.log" 2>&1 ||
        it_fail "openssl could not make the certificates"
    local tls=(--tls.server.certPath="$SDIR/srv.pem" --tls.server.keyPath="$SDIR/srv.key"
        --tls.config.file=)
    ns_start nsp --tls.server.mode=permissive "${tls[@]}"
    ns_start nse --tls.server.mode=enforcing "${tls[@]}"
    local p e
    p=$(ns_addr nsp)
    e=$(ns_addr nse)
    IT_JVM_BROKER="$IT_JVM_BROKER -Dtls.enable=true"
    IT_JVM_CLIENT="$IT_JVM_CLIENT -Dtls.enable=true"
    broker_start b1 "$p;$e" c1 b1 0 # waits for its registration with both
    nsctl clusters --ns "$e" --tls-ca "$SDIR/ca.pem" >"$SDIR/clusters.nse.txt" 2>&1 ||
        it_fail "namesrvctl --tls-ca cannot read the enforcing namesrvd"
    it_expect_grep "$SDIR/clusters.nse.txt" "b1" "the broker registered over TLS with the enforcing namesrvd"

    java_exchange "$e" IT_TLS it_tls_group m9 "$n" " over TLS"

    nsctl route --ns "$e" --tls-ca "$SDIR/ca.pem" IT_TLS >"$SDIR/route.nse.tls.txt" 2>&1 ||
        it_fail "no route for IT_TLS over TLS from the enforcing namesrvd"
    nsctl route --ns "$p" --tls-ca "$SDIR/ca.pem" IT_TLS >"$SDIR/route.nsp.tls.txt" 2>&1 ||
        it_fail "no route for IT_TLS over TLS from the permissive namesrvd"
    nsctl route --ns "$p" IT_TLS >"$SDIR/route.nsp.plain.txt" 2>&1 ||
        it_fail "the permissive namesrvd did not serve a plain client"
    if nsctl route --ns "$e" IT_TLS >"$SDIR/route.nse.plain.txt" 2>&1; then
        it_fail "the enforcing namesrvd served a plain client"
    fi
    it_expect_grep "$SDIR/nse.log" "closed: plain connection refused: tls.server.mode=enforcing" \
        "the enforcing namesrvd logs the refused plain client"
}
