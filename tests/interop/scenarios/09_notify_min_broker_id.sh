# Scenario 9: NOTIFY_MIN_BROKER_ID_CHANGE (905). namesrvd with
# notifyMinBrokerIdChanged=true and a real acting-master group (the set-up
# of scenario 8). kill -9 of the master closes its registration connection:
# namesrvd unregisters it and tells the slave, now the group's smallest id;
# the slave's admin processor logs the 905 and switches to acting master.
# The master's return lowers the smallest id again: namesrvd tells the
# slave, which follows it back.
IT_NEEDS="java"
# the RocketMQ versions it cannot apply to (a glob) and why
IT_SKIP_VERSION="4.*"
IT_SKIP_WHY="NOTIFY_MIN_BROKER_ID_CHANGE and the acting-master slave came with RocketMQ 5.0"

# since FILE N ERE - a line after the first N lines of FILE matches ERE
since() { tail -n +$(($2 + 1)) "$1" 2>/dev/null | grep -q -E -- "$3"; }
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

scenario() {
    ns_start ns --supportActingMaster=true --notifyMinBrokerIdChanged=true
    local ns m s slog nslog n_s n_ns
    ns=$(ns_addr ns)
    IT_ACTING=1 broker_group_launch g "$ns" c1 b1
    broker_group_ready g
    m=$(br_addr g-m)
    s=$(br_addr g-s)
    slog=$(br_log g-s)
    nslog=$(readlink -f "$SDIR/ns.log")

    n_s=$(lines "$slog")
    n_ns=$(lines "$nslog")
    it_kill9 "${BR_PID[g-m]}"
    it_wait 15 "namesrvd tells the slave that the master went" since "$nslog" "$n_ns" \
        "NOTIFY_MIN_BROKER_ID_CHANGE to $s sent: .*minBrokerId=1 minBrokerAddr=$s offlineBrokerAddr=$m haBrokerAddr=null"
    it_wait 15 "the slave took the 905" since "$slog" "$n_s" "min broker id changed, prev [0-9]+, new 1([^0-9]|$)"
    it_wait 15 "the slave acts as master" since "$slog" "$n_s" "Min broker changed, old: 0-[^,]*, new 1-$s"

    n_s=$(lines "$slog")
    n_ns=$(lines "$nslog")
    broker_start g-m "$ns" c1 b1 0 # the same conf and ports
    it_wait 30 "namesrvd tells the slave that the master is back" since "$nslog" "$n_ns" \
        "NOTIFY_MIN_BROKER_ID_CHANGE to $s sent: .*minBrokerId=0 minBrokerAddr=$m offlineBrokerAddr=null"
    it_wait 15 "the slave took the 905" since "$slog" "$n_s" "min broker id changed, prev [0-9]+, new 0([^0-9]|$)"
    it_wait 15 "the slave follows the master" since "$slog" "$n_s" "Min broker changed, old: 1-$s, new 0-$m"
    return 0
}
