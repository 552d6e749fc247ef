# callgrind.sh - sourced by the scripts in tools/ that count a server's
# instructions with callgrind (the process started with --instr-atstart=no
# and --callgrind-out-file=DIR/cg.%p).
#
#   ns_cg_begin PID        zero the counters and switch collection on
#   ns_cg_total DIR PID    switch collection off, dump, and print the sum of
#                          the Ir totals of PID's dumps in DIR
#   ns_cg_server BUILD DIR           BUILD's namesrvd under callgrind, collection
#                                    off, its files in DIR -> CG_PID, CG_PORT
#   ns_cg_hold BUILD DIR BROKERS TOPICS   a client registers that topology on
#                                    CG_PORT and holds it; returns once it is up

ns_cg_begin() {
    callgrind_control -z "$1" >/dev/null 2>&1
    callgrind_control -i on "$1" >/dev/null 2>&1
}

ns_cg_total() {
    local f v total=0
    callgrind_control -i off "$2" >/dev/null 2>&1
    callgrind_control -d "$2" >/dev/null 2>&1
    sleep 0.5
    for f in "$1"/cg."$2"*; do
        v=$(awk '/^totals:/ { print $2; exit }' "$f")
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

ns_cg_server() {
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$2/cg.%p" \
        "$1/namesrvd" --bindAddress=127.0.0.1 --listenPort=0 --portFile="$2/port" \
        --dataDir="$2/data" --logLevel=warn --configStorePath="$2/ns.properties" \
        --kvConfigPath="$2/kv.json" >"$2/log" 2>&1 &
    CG_PID=$!
    PIDS+=("$CG_PID")
    ns_wait_file "$2/port" 600
    CG_PORT=$(cat "$2/port")
}

ns_cg_hold() {
    "$1/nsbench" --ns "127.0.0.1:$CG_PORT" --mode setup --setup-brokers "$3" --setup-topics "$4" \
        --hold 3600 --ready-file "$2/ready" >"$2/setup.log" 2>&1 &
    PIDS+=("$!")
    ns_wait_file "$2/ready" 1200
}
