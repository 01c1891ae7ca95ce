# Load generators shared by the outage scenarios (restart.sh: the whole server is killed;
# dskill.sh: one data server is): processes that write with fsync and record every state the
# server acknowledged (restarttest.py), and the checks that they all resume, finish without an
# error, and that every recorded state reads back intact. The scenario sets WRITERS (process
# names with a $RS/NAME.log of fsynced states) and HOLDERS (other processes that must end).

RS=/tmp/rs
mkdir -p "$RS"

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s; fails naming WHAT on expiry.
wait_for() {
    local limit=$1 what=$2 i
    shift 2
    for ((i = 0; i < limit * 5; i++)); do
        "$@" && return 0
        sleep 0.2
    done
    echo "timed out after $limit s waiting for $what"
    return 1
}

# spawn NAME COMMAND...: runs COMMAND in its own session, detached from the check that starts
# it; its output goes to $RS/NAME.out and its exit status, when it ends, to $RS/NAME.rc.
spawn() {
    local name=$1
    shift
    setsid bash -c '"$@" >"$0.out" 2>&1; echo $? >"$0.rc"' "$RS/$name" "$@" </dev/null &
}

# Recorded fsync states of a writer, and of all of them.
states() { if [[ -f $RS/$1.log ]]; then wc -l <"$RS/$1.log"; else echo 0; fi; }
all_states() { cat "$RS"/*.log 2>/dev/null | wc -l; }
# Recorded states of writer $1 later than the time in file $2.
states_after() { awk -v t="$(cat "$2")" '$4 > t' "$RS/$1.log" | wc -l; }
each_has_states() {
    local w
    for w in $WRITERS; do (($(states "$w") >= $1)) || return 1; done
}
each_resumed() {
    local w
    for w in $WRITERS; do (($(states_after "$w" "$RS/restarted_at") >= $1)) || return 1; done
}
none_ended() { ! compgen -G "$RS/*.rc" >/dev/null; }
all_ended() {
    local w
    for w in $WRITERS $HOLDERS; do [[ -f $RS/$w.rc ]] || return 1; done
}

writers_resume() {
    wait_for 240 "2 fsyncs from each writer after the restart" each_resumed 2
    none_ended || { cat "$RS"/*.out; return 1; }
    local w
    for w in $WRITERS; do
        awk -v t="$(cat "$RS/restarted_at")" -v w="$w" \
            '$4 > t { printf "%s: first fsync %.1f s after the restart; ", w, $4 - t; exit }' \
            "$RS/$w.log"
    done
}

writers_finish() {
    touch "$RS/stop"
    wait_for 120 "every process to end" all_ended
    local w bad=0
    for w in $WRITERS $HOLDERS; do
        if [[ $(cat "$RS/$w.rc") != 0 ]] || [[ -s $RS/$w.out ]]; then
            echo "$w: exit $(cat "$RS/$w.rc"): $(tail -c 300 "$RS/$w.out")"
            bad=1
        fi
    done
    ((bad == 0))
    echo "every writer and holder exited 0 with no error output"
}

# The server log without colours, timestamps cut to the time of day and spans and module paths
# dropped: `03:06:48.840 reclaimed open clientid=... fileid=4 access=2`.
server_log() {
    sed -e 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log |
        sed -nE 's/^[0-9-]+T([0-9:]+\.[0-9]{3})[0-9]*Z +[A-Z]+ +(.*: )?([a-z_]+::)+[a-z_]+: /\1 /p'
}

# The server's log for the console at the end of a run: with RUST_LOG set by hand
# (PNFS_INTEROP_RUST_LOG) all of it but the routine successful operations, else its last 40
# lines.
server_log_for_console() {
    if [[ -n ${RUST_LOG:-} ]]; then
        server_log_verbose
    else
        server_log | tail -n 40 | sed 's/^/pnfs.log: /'
    fi
}

# What the client's kernel said about the outage (printk stays off the console).
client_kernel_log() {
    local log
    log=$(dmesg | grep -iE 'nfs|rpc' | grep -viE 'registered|installing|loaded' || true)
    echo "${log:-no NFS messages}"
    # Not an error here: "NFS: Server wrote zero bytes, expected N." is printed by the Linux
    # client when a data server WRITE failed (the server went away) and its pages were
    # handed to the MDS instead (filelayout_reset_write: the failed header still goes
    # through nfs_writeback_result with count 0, but no longer holds any page).
    ! grep -qiE 'fail|error|lost|bad' <<<"$log"
}

# kill9 PID NAME: SIGKILL, the time in $RS/killed_at, and 1 s later a check that it is gone
# (a killed child of guest-init.sh may linger as a zombie until reaped: dead all the same).
kill9() {
    kill -9 "$1"
    date +%s.%N >"$RS/killed_at"
    sleep 1
    if [[ -e /proc/$1 ]] && ! grep -q '^State:.*Z' "/proc/$1/status"; then
        echo "$2 ($1) still alive"
        return 1
    fi
}
