# work.sh - sourced by the scripts in tools/: a scratch directory and the
# processes a script starts, both cleaned up when it exits.
#
#   ns_work_begin TEMPLATE NAME [WAIT_TENTHS]
#
# sets WORK=$(mktemp -d TEMPLATE) and an empty PIDS array; the script adds
# the pid of every process it starts to PIDS. On exit each of them gets
# TERM, then WAIT_TENTHS tenths of a second (default 100) to go, then KILL
# (by pid only); WORK is removed unless KEEP=1 ("NAME: kept WORK" on
# stderr). INT and TERM exit with 130.
#
#   ns_wait_file FILE TENTHS
#
# waits up to TENTHS tenths of a second for FILE to be non-empty (a port
# file, a ready file); "NAME: no FILE" and exit 1 when it is not.
#
#   ns_rounds R DIRS FN
#
# runs FN DIR ROUND for each of R rounds and each build directory of the
# comma-separated DIRS, rounds alternating (A B A B ...), its output also
# in WORK/all.txt; the directories stay in the array NS_DIRS.

ns_work_begin() {
    WORK=$(mktemp -d "$1")
    NS_WORK_NAME=$2
    NS_WORK_WAIT=${3:-100}
    PIDS=()
    trap ns_work_cleanup EXIT
    trap 'exit 130' INT TERM
}

ns_work_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq "$NS_WORK_WAIT"); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "$NS_WORK_NAME: kept $WORK" >&2; else rm -rf "$WORK"; fi
}

ns_wait_file() {
    for _ in $(seq "$2"); do [ -s "$1" ] && return 0; sleep 0.1; done
    echo "$NS_WORK_NAME: no $1" >&2
    exit 1
}

ns_rounds() {
    local r b
    IFS=, read -r -a NS_DIRS <<<"$2"
    for r in $(seq "$1"); do
        for b in "${NS_DIRS[@]}"; do "$3" "$b" "$r"; done
    done | tee "$WORK/all.txt"
}
