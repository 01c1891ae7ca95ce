#!/bin/bash
# The data-server outage scenario (WORKLOAD=dskill.sh), run inside the guest by guest-init.sh:
# the cluster runs as separate processes (`pnfs mds` and `pnfs ds --id 1..3`, PNFS_DS_IDS), both
# clients write through their file layouts with fsync, and data server 2 is killed with SIGKILL
# in the middle of it and started again over the same directory a few seconds later.
#
#   c1: 3 writers (small files: write, fsync, record the checksum, close, next)
#       1 appender (one file open for the whole run, growing over every data server)
#   c2: 1 appender
#   a 24 MiB file written with dd conv=fsync before the kill (striped over all three)
#
#   start load ── kill -9 ds2 ── 5 s outage ── start ds2 again ── writers resume ── stop
#   ── umount + mount ── verify every recorded fsync and the 24 MiB file
#
# While the data server is down, I/O to it (through the layout, or through the MDS, which the
# client falls back to) waits: the MDS answers NFS4ERR_DELAY and LAYOUTGET of files on it
# NFS4ERR_LAYOUTTRYLATER. No writer may see an error, and every state a writer recorded after
# its fsync must read back: the data server's new write verifier makes the client send again
# what it had not committed (RFC 8881 section 18.32.3).
# shellcheck source=common.sh
. /scenario/common.sh
# shellcheck source=servers.sh
. /scenario/servers.sh
# shellcheck source=load.sh
. /scenario/load.sh

WRITERS="w1 w2 w3 appender c2app"
HOLDERS=""
KILLED=2

start_load() {
    mkdir -p "$M/ds"
    local w
    for w in w1 w2 w3; do
        spawn "$w" python3 "$H/restarttest.py" writer "$M/ds/$w" "$w" "$RS/$w.log" "$RS/stop"
    done
    spawn appender python3 "$H/restarttest.py" appender "$M/ds/appended" "$RS/appender.log" \
        "$RS/stop"
    spawn c2app c2 python3 "$H/restarttest.py" appender "$C2M/ds/appended-c2" "$RS/c2app.log" \
        "$RS/stop"
    head -c $((24 << 20)) /dev/urandom >"$SRC/big"
    dd if="$SRC/big" of="$M/ds/big" bs=1M conv=fsync status=none
    wait_for 180 "3 fsyncs from each writer" each_has_states 3
    none_ended || { cat "$RS"/*.out; return 1; }
    echo "$(all_states) fsynced states so far; 24 MiB file written and fsynced"
}

kill_ds() {
    local pid before during after
    pid=$(cat "/tmp/pnfs-ds$KILLED.pid")
    before=$(all_states)
    kill9 "$pid" "pnfs ds $KILLED"
    during=$(all_states)
    sleep 4
    after=$(all_states)
    none_ended || { echo "a process ended during the outage:"; cat "$RS"/*.out; return 1; }
    echo "killed data server $KILLED (pid $pid) with $before fsynced states; $((after - during)) more completed during the 5 s outage (files on the other data servers)"
}

restart_ds() {
    rm -f "/tmp/pnfs-ds$KILLED.pid"
    start_pnfs_ds "$KILLED"
    date +%s.%N >"$RS/restarted_at"
    echo "data server $KILLED running again, pid $(cat "/tmp/pnfs-ds$KILLED.pid")"
}

fsynced_intact() {
    umount "$M"
    mount_c1 >/dev/null
    drop_caches
    sed "s#^$C2M/#$M/#" "$RS/c2app.log" >"$RS/c2app.c1view"
    local logs=("$RS"/w?.log "$RS/appender.log" "$RS/c2app.c1view") got
    got=$(python3 "$H/restarttest.py" verify "${logs[@]}")
    expect_eq "24 MiB file" "$(sha "$M/ds/big")" "$(sha "$SRC/big")"
    set -- $got
    echo "$1 fsynced states of $2 files and the 24 MiB file intact after umount+mount"
}

# The MDS handed out layouts and the data servers hold the data: each data server's objects
# have grown (the 24 MiB file alone puts 8 MiB on each).
layouts_used() {
    mountstats "$M" c1 </proc/self/mountstats >/tmp/ms1
    local lg d bad=0
    lg=$(awk '$3 == "LAYOUTGET" { print $4 }' /tmp/ms1)
    echo -n "c1 LAYOUTGET ${lg:-0} (this mount); "
    for d in /srv/pnfs-data/ds1 /srv/pnfs-data/ds2 /srv/pnfs-data/ds3; do
        echo -n "$d: $(du -sm "$d" | cut -f1) MiB; "
        (($(du -sm "$d" | cut -f1) >= 8)) || bad=1
    done
    ((bad == 0))
}

# What the client's kernel said: informational (it may log the lost data server connection).
client_kernel_messages() {
    local log
    log=$(dmesg | grep -iE 'nfs|rpc' | grep -viE 'registered|installing|loaded' || true)
    echo "${log:-no NFS messages}"
}

export -f $(compgen -A function)
export M C2M H SRC RS WRITERS HOLDERS KILLED

check mount_c1 mount_c1
check mount_c2 mount_c2
C2PID=$(cat /tmp/c2.pid 2>/dev/null || true)
export C2PID

check dskill_load_running start_load
check dskill_kill9_data_server kill_ds
check dskill_data_server_again restart_ds
check dskill_writers_resume writers_resume
check dskill_writers_finish_ok writers_finish
check dskill_fsynced_files_intact fsynced_intact
check dskill_layouts_used layouts_used
check dskill_client_kernel_log client_kernel_messages
check unmount unmount_all
for id in 1 2 3; do tail -n 15 "/tmp/pnfs-ds$id.log" | sed "s/^/pnfs-ds$id.log: /"; done
server_log_for_console
