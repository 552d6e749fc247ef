# bench_peers.sh - sourced by tools/bench.sh for --peers: the same route
# lookups against namesrvd, the Java NameServer (Apache RocketMQ
# $PEER_RMQ_VERSION, its classpath resolved by Maven from tools/peers/pom.xml
# into ~/.m2) and, when NS_RUST_NAMESRV names its binary (`cargo install
# rocketmq-namesrv`), rocketmq-rust's NameServer, each on SRV_CPU alone,
# with the echo server as the ceiling; rounds alternate the targets, the best
# round of each is kept. Uses bench.sh's helpers (lib/bench.sh): WORK, PIDS,
# client, start_echo, stop_pid, wait_file, j, fmt, fmt0, mib_kb.

PEER_RMQ_VERSION=${PEER_RMQ_VERSION:-5.3.3}

# peer_java_cp -> JAVA_CP (the Java NameServer's classpath), or exit 1
peer_java_cp() {
    ns_need java mvn
    mvn -B -q -f "$ROOT/tools/peers/pom.xml" -Drocketmq.version="$PEER_RMQ_VERSION" \
        dependency:build-classpath -Dmdep.outputFile="$WORK/java.cp" >"$WORK/mvn.log" 2>&1 ||
        { tail -20 "$WORK/mvn.log" >&2; echo "bench.sh: the Java NameServer could not be resolved" >&2; exit 1; }
    JAVA_CP=$(cat "$WORK/java.cp")
}

# peer_start KIND NAME -> PEER_PID PEER_PORT: namesrvd, java or rust on SRV_CPU
peer_start() {
    local kind=$1 dir="$WORK/$2"
    rm -rf "$dir"
    mkdir -p "$dir"
    case $kind in
    namesrvd)
        start_server "$2"
        PEER_PID=$SRV_PID PEER_PORT=$SRV_PORT
        return ;;
    java)
        it_port=$(($(od -An -N2 -tu2 /dev/urandom) % 20000 + 30000))
        printf 'listenPort=%s\n' "$it_port" >"$dir/ns.conf"
        taskset -c "$SRV_CPU" java -Xms512m -Xmx512m -Duser.home="$dir" -Drocketmq.home.dir="$dir" \
            -cp "$JAVA_CP" org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/ns.conf" \
            >"$dir/out" 2>&1 &
        PEER_PID=$! ;;
    rust)
        it_port=$(($(od -An -N2 -tu2 /dev/urandom) % 20000 + 30000))
        # without a home it stops at once ("Service lifecycle operation failed")
        (cd "$dir" && exec taskset -c "$SRV_CPU" "$NS_RUST_NAMESRV" --listenPort "$it_port" \
            --bindAddress 127.0.0.1 --rocketmqHome "$dir" --kvConfigPath "$dir/kvConfig.json") \
            >"$dir/out" 2>&1 &
        PEER_PID=$! ;;
    esac
    PIDS+=("$PEER_PID")
    PEER_PORT=$it_port
    local i
    for i in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PEER_PORT") 2>/dev/null && return 0
        kill -0 "$PEER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench.sh: the $kind NameServer did not listen" >&2
    cat "$dir/out" >&2
    exit 1
}

# peers_run: the table (printed, and to OUT)
peers_run() {
    local kinds=(namesrvd java) k topo r i
    [ -n "${NS_RUST_NAMESRV:-}" ] && kinds+=(rust)
    peer_java_cp
    local rounds=$ROUNDS
    : >"$WORK/peers.md"
    for topo in "10 100 16 smoke" "1000 20000 64 capacity"; do
        set -- $topo
        # JSON registration bodies, a Java broker's default (compressedRegister=false):
        # rocketmq-rust refuses the zlib form ("Failed to decode RegisterBrokerBody")
        local tp=(--setup-brokers "$1" --setup-topics "$2" --plain-bodies)
        for r in $(seq "$rounds"); do
            for k in "${kinds[@]}"; do
                log "peers: $4, round $r: $k"
                peer_start "$k" "$k-$4"
                # the brokers stay connected (a closed one is unregistered) until the server stops
                taskset -c "$CLI_CPU" "$NSBENCH" --json --ns "127.0.0.1:$PEER_PORT" --mode setup \
                    "${tp[@]}" --hold 900 --ready-file "$WORK/$4.$k.r$r.ready" \
                    >"$WORK/$4.$k.setup.json" 2>>"$WORK/$4.$k.setup.err" &
                local hold=$!
                PIDS+=("$hold")
                if ! wait_file "$WORK/$4.$k.r$r.ready" 600 "$hold"; then
                    # a peer that cannot take the topology gets a row saying why
                    [ "$k" = namesrvd ] && { cat "$WORK/$4.$k.setup.err" >&2; exit 1; }
                    log "peers: $4: $k not set up: $(tail -1 "$WORK/$4.$k.setup.err")"
                    stop_pid "$PEER_PID"
                    stop_pid "$hold"
                    continue
                fi
                client "$WORK/$4.$k.r$r.json" --ns "127.0.0.1:$PEER_PORT" "${tp[@]}" --no-setup \
                    --conns "$3" --depth 1,8 --duration "$DUR" --warmup 3 --server-pid "$PEER_PID"
                stop_pid "$PEER_PID"
                stop_pid "$hold"
            done
            local body
            body=$(j "$WORK/$4.namesrvd.r1.json" '.runs[0].avg_body_bytes // 400' | awk '{printf "%d", $1 + 0.5}')
            start_echo "echo-$4" "$body"
            client "$WORK/$4.echo.r$r.json" --ns "127.0.0.1:$ECHO_PORT" "${tp[@]}" --no-setup \
                --no-verify --conns "$3" --depth 1,8 --duration "$DUR" --warmup 1 --server-pid "$ECHO_PID"
            stop_pid "$ECHO_PID"
        done
        for i in 0 1; do
            local e d
            e=$(jq -s "map(.runs[$i].qps // 0) | max" "$WORK/$4".echo.r*.json)
            d=$(j "$WORK/$4.echo.r1.json" ".runs[$i].depth")
            for k in "${kinds[@]}"; do
                local q p99 hwm err
                if ! ls "$WORK/$4.$k".r*.json >/dev/null 2>&1; then
                    printf '| %s (%s brokers, %s topics, %s conns), depth %s | %s | set-up failed: %s | | | | |\n' \
                        "$4" "$1" "$2" "$3" "$d" "$k" "$(tail -1 "$WORK/$4.$k.setup.err")" >>"$WORK/peers.md"
                    continue
                fi
                q=$(jq -s "map(.runs[$i].qps // 0) | max" "$WORK/$4.$k".r*.json)
                p99=$(jq -s "map(.runs[$i].latency_us.route.p99 // 1e12) | min" "$WORK/$4.$k".r*.json)
                hwm=$(jq -s "map(.runs[$i].server.vm_hwm_kb // 0) | max" "$WORK/$4.$k".r*.json)
                err=$(jq -s "map(.runs[$i].errors + .runs[$i].mismatches + .runs[$i].lost) | max" "$WORK/$4.$k".r*.json)
                printf '| %s (%s brokers, %s topics, %s conns), depth %s | %s | %s | **%s×** | %s µs | %s MiB | %s |\n' \
                    "$4" "$1" "$2" "$3" "$d" "$k" "$(fmt0 "$q")" \
                    "$(awk -v a="$q" -v b="$e" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "?" }')" \
                    "$(fmt "$p99")" "$(mib_kb "$hwm")" "$err" >>"$WORK/peers.md"
            done
        done
    done
    {
        echo
        echo "bench.sh --peers — $(date -u '+%Y-%m-%d %H:%M UTC'); each server alone on CPU $SRV_CPU, nsbench on CPU $CLI_CPU;" \
            "best of $rounds rounds of ${DUR} s (warm-up 3 s, JIT included); Java NameServer $PEER_RMQ_VERSION;" \
            "$([ -n "${NS_RUST_NAMESRV:-}" ] && echo "rocketmq-rust: $NS_RUST_NAMESRV" || echo "rocketmq-rust not measured (NS_RUST_NAMESRV unset)")"
        echo
        echo "| workload | server | lookups/s | ratio to echo | p99 | peak RSS | errors |"
        echo "|---|---|---|---|---|---|---|"
        cat "$WORK/peers.md"
    } >"$WORK/final.md"
    cat "$WORK/final.md"
    [ -z "$OUT" ] || cp "$WORK/final.md" "$OUT"
}
