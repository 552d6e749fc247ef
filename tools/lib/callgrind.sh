# callgrind.sh - sourced by the scripts in tools/ that count a server's
# instructions with callgrind (the process started with --instr-atstart=no
# and --callgrind-out-file=DIR/cg.%p).
#
#   ns_cg_begin PID        zero the counters and switch collection on
#   ns_cg_total DIR PID    switch collection off, dump, and print the sum of
#                          the Ir totals of PID's dumps in DIR

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
