#!/bin/bash
# The server-restart scenario (WORKLOAD=restart.sh), run inside the guest by guest-init.sh: pnfs
# is killed with SIGKILL in the middle of a write workload and started again over the same data
# directory, while both clients keep files open, hold locks and write with fsync.
#
#   c1: 3 writers (small files: write, fsync, record the checksum, close, next)
#       1 appender (one file open for the whole run: append, fsync, record)
#       1 lock holder: fcntl write lock on bytes [0, 100) of rs/locked, held across the restart
#   c2: 1 appender, 1 lock holder on bytes [100, 200) of rs/locked
#   each client's new processes try the other client's range with F_SETLK: denied before and
#   after the restart, granted once the holders release
#
#   start load ── kill -9 ── 3 s outage ── start again ── kill -9 at its first reclaim ── start
#   again ── writers resume ── lock checks ── release ── stop writers ── umount + mount
#   ── verify every recorded fsync ── the last boot's reclaims in the server log
#
# A writer records a state (path, size, sha256, time) only after its fsync returned, so every
# recorded state is data the server promised to keep. The lease and grace time come from the
# scenario's pnfs.yaml (short, so that the scenario fits in minutes under TCG). The same CHECK
# lines as workload.sh (see common.sh); the server log is /tmp/pnfs.log, both boots.
# shellcheck source=common.sh
. /scenario/common.sh
# shellcheck source=servers.sh
. /scenario/servers.sh
# shellcheck source=load.sh
. /scenario/load.sh

# Processes that write with fsync and record what they wrote (c2app runs on client 2), and the
# lock holders.
WRITERS="w1 w2 w3 appender c2app"
HOLDERS="hold1 hold2"

# trylock CLIENT START LEN: one F_SETLK write lock attempt on LEN bytes from START of rs/locked,
# from a new process on CLIENT (c1 or c2); prints ok or denied.
trylock() {
    if [[ $1 == c2 ]]; then
        c2 python3 "$H/restarttest.py" trylock "$C2M/rs/locked" "$2" "$3"
    else
        python3 "$H/restarttest.py" trylock "$M/rs/locked" "$2" "$3"
    fi
}
# expect_lock CLIENT START LEN ok|denied
expect_lock() {
    local got
    got=$(trylock "$1" "$2" "$3")
    echo "$1 F_SETLK [$2, $(($2 + $3))): $got;"
    [[ $got == "$4"* ]] || { echo "want $4"; return 1; }
}
# Each client tries the range the other client's holder locked.
expect_locks() {
    expect_lock c2 0 100 "$1"
    expect_lock c1 100 100 "$1"
}

# --- the steps ---------------------------------------------------------------------------------

start_load() {
    mkdir -p "$M/rs"
    head -c 200 /dev/zero | tr '\0' . >"$M/rs/locked"
    spawn hold1 python3 "$H/restarttest.py" hold "$M/rs/locked" 0 100 "$RS/hold1.ready" \
        "$RS/release" "$RS/hold1.done"
    spawn hold2 c2 python3 "$H/restarttest.py" hold "$C2M/rs/locked" 100 100 "$RS/hold2.ready" \
        "$RS/release" "$RS/hold2.done"
    wait_for 60 "the lock holders" test -f "$RS/hold1.ready" -a -f "$RS/hold2.ready"
    local w
    for w in w1 w2 w3; do
        spawn "$w" python3 "$H/restarttest.py" writer "$M/rs/$w" "$w" "$RS/$w.log" "$RS/stop"
    done
    spawn appender python3 "$H/restarttest.py" appender "$M/rs/appended" "$RS/appender.log" \
        "$RS/stop"
    spawn c2app c2 python3 "$H/restarttest.py" appender "$C2M/rs/appended-c2" "$RS/c2app.log" \
        "$RS/stop"
    wait_for 180 "3 fsyncs from each writer" each_has_states 3
    none_ended || { cat "$RS"/*.out; return 1; }
    echo "2 locks held; $(all_states) fsynced states so far"
}

lock_blocks_before() { expect_locks denied; }

kill_mid_write() {
    local pid before during after
    pid=$(cat /tmp/pnfs.pid)
    before=$(all_states)
    kill9 "$pid" pnfs
    during=$(all_states)
    sleep 2
    after=$(all_states)
    # No fsync can complete while the server is down; the writers wait, they do not fail.
    expect_eq "fsynced states during the outage" "$after" "$during"
    none_ended || { echo "a process ended during the outage:"; cat "$RS"/*.out; return 1; }
    echo "killed pid $pid with $before fsynced states; none completed in the 3 s outage; all writers blocked"
}

restart_server() {
    start_pnfs
    date +%s.%N >"$RS/restarted_at"
    echo "pnfs listening again, pid $(cat /tmp/pnfs.pid)"
}

# A second SIGKILL as soon as the restarted server logs its first reclaim (tail -F follows the
# log through inotify): the clients are in the middle of their recovery or just through it
# (the detail says which), and must recover again from a third boot.
kill_at_first_reclaim() {
    local pid n over tailpid rc=0
    pid=$(cat /tmp/pnfs.pid)
    # (Through a fifo: the guest has no /dev/fd for a process substitution.)
    mkfifo "$RS/log.fifo"
    tail -F -n +1 /tmp/pnfs.log >"$RS/log.fifo" 2>/dev/null &
    tailpid=$!
    timeout 120 grep -m 1 -q 'reclaimed' <"$RS/log.fifo" || rc=$?
    kill -9 "$pid"
    kill "$tailpid" 2>/dev/null || true
    ((rc == 0)) || { echo "no reclaim logged in 120 s"; return 1; }
    n=$(grep -c 'reclaimed' /tmp/pnfs.log || true)
    over=$(grep -c 'grace period over' /tmp/pnfs.log || true)
    sleep 1
    start_pnfs
    date +%s.%N >"$RS/restarted_at"
    echo -n "killed pid $pid after $n reclaims ($( ((over)) && echo after || echo before) the end of its grace period);"
    echo " pnfs listening again, pid $(cat /tmp/pnfs.pid)"
}

lock_blocks_after() {
    expect_locks denied
    none_ended || { cat "$RS"/*.out; return 1; }
}

lock_granted_after_release() {
    touch "$RS/release"
    wait_for 60 "the holders' unlocks" test -f "$RS/hold1.rc" -a -f "$RS/hold2.rc"
    expect_eq "holder 1 exit status" "$(cat "$RS/hold1.rc")" 0
    expect_eq "holder 2 exit status" "$(cat "$RS/hold2.rc")" 0
    expect_locks ok
}

fsynced_intact() {
    # Remount and drop caches: every byte checked below comes from the restarted server,
    # client 2's files too (its log names them under its own mount point).
    umount "$M"
    mount_c1 >/dev/null
    drop_caches
    sed "s#^$C2M/#$M/#" "$RS/c2app.log" >"$RS/c2app.c1view"
    local logs=("$RS"/w?.log "$RS/appender.log" "$RS/c2app.c1view") got killed before
    got=$(python3 "$H/restarttest.py" verify "${logs[@]}")
    killed=$(cat "$RS/killed_at")
    before=$(cat "${logs[@]}" | awk -v t="$killed" '$4 < t' | wc -l)
    expect_eq "bytes written under c1's reclaimed lock" "$(head -c 12 "$M/rs/locked")" \
        "locked by c1"
    expect_eq "bytes written under c2's reclaimed lock" "$(tail -c +101 "$M/rs/locked" | head -c 12)" \
        "locked by c2"
    set -- $got
    echo "$1 fsynced states of $2 files intact after umount+mount ($before recorded before the kill, $(($1 - before)) after)"
}

reclaims_logged() {
    local opens locks clients
    # The last boot's part of the log.
    server_log | awk '/ grace period for reclaims/ { n++ } { print n, $0 }' >/tmp/pnfs.boots.log
    awk -v last="$(tail -n 1 /tmp/pnfs.boots.log | cut -d' ' -f1)" '$1 == last' /tmp/pnfs.boots.log |
        cut -d' ' -f2- >/tmp/pnfs.clean.log
    opens=$(grep -c ' reclaimed open ' /tmp/pnfs.clean.log || true)
    locks=$(grep -c ' reclaimed lock ' /tmp/pnfs.clean.log || true)
    clients=$(grep -o 'reclaimed .* clientid=[0-9]*' /tmp/pnfs.clean.log | sed 's/.*=//' | sort -u | wc -l)
    # (Each reclaim is in the console log, as the pnfs.log lines at the end.)
    echo -n "last boot: open reclaims: $opens, lock reclaims: $locks, from $clients clients; "
    grep ' grace period' /tmp/pnfs.clean.log | tr '\n' ';'
    # At least each client's holder and appender opens, and each holder's lock.
    ((opens >= 4 && locks >= 2 && clients == 2))
    # Both clients of the first boot came back and sent RECLAIM_COMPLETE.
    grep -q 'grace period over unreclaimed=0' /tmp/pnfs.clean.log
}

# The last boot's counters: the clients wrote through their layouts again (WRITEs on the data
# servers), and what settling sizes with the data servers did.
layouts_used() {
    local ds w=0
    /scenario/pnfs stats >/tmp/stats || return 1
    for ds in 1 2 3; do
        w=$((w + $(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_WRITE\",status=\"ok\"}")))
    done
    echo -n "last boot: $w WRITEs on the data servers, $(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}') through the MDS;"
    echo -n " sizes settled $(stat_of pnfs_layout_sizes_settled_total), grown $(stat_of pnfs_layout_sizes_grown_total);"
    echo " all boots: $(grep -c 'size grown to what the data servers hold' /tmp/pnfs.log || true) sizes grown"
    ((w > 0))
}

# --- the scenario ------------------------------------------------------------------------------

export -f $(compgen -A function)
export M C2M H SRC RS WRITERS HOLDERS

check mount_c1 mount_c1
check mount_c2 mount_c2
C2PID=$(cat /tmp/c2.pid 2>/dev/null || true)
export C2PID

check restart_load_running start_load
check restart_lock_blocks_before lock_blocks_before
check restart_kill9_mid_write kill_mid_write
check restart_server_again restart_server
check restart_kill9_again_at_first_reclaim kill_at_first_reclaim
check restart_writers_resume writers_resume
check restart_lock_still_blocks lock_blocks_after
check restart_lock_granted_after_release lock_granted_after_release
check restart_writers_finish_ok writers_finish
check restart_fsynced_files_intact fsynced_intact
check restart_reclaims_logged reclaims_logged
check restart_writes_through_layouts layouts_used
check restart_client_kernel_log client_kernel_log
check unmount unmount_all
# The server's own account of both boots, for the console log.
server_log_for_console
