# Helpers shared by the guest workloads (sourced by workload.sh and restart.sh): the check
# runner, comparisons, and the two clients' mounts.
#
# Client 1 is the guest's own kernel client (hostname c1) mounting 127.0.0.1:$EXPORT on $M.
# Client 2 is a second, independent kernel client: its own network namespace (joined to the first
# by a veth pair), its own hostname (the Linux client's owner string derives from it, so it gets
# its own client id) and its own mount namespace, mounting 10.99.0.1:$EXPORT on $C2M.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# (Set before sourcing to run the checks elsewhere: interop-tests/host/mount-workload.sh.)
M=${M:-/mnt/c1}
C2M=${C2M:-/mnt/c2}
H=${H:-/scenario}
SRC=${SRC:-/tmp/src}
mkdir -p "$M" "$SRC"

# --- helpers -----------------------------------------------------------------------------------

# check NAME FUNCTION...: runs FUNCTION in a child bash with errexit (outside any condition, so
# errexit really applies) and reports it as $CHECK_PREFIX$NAME (the RDMA checks run the file
# checks again with CHECK_PREFIX=rdma_). A check still running after CHECK_TIMEOUT seconds
# (default 600) is killed and fails, so one hung operation does not stop the suite: NFS waits
# on a hard mount are killable.
check() {
    local name=${CHECK_PREFIX:-}$1 t0 rc ms detail
    shift
    if [[ -n ${ONLY:-} && ! $name =~ $ONLY && ! $name =~ ^(rdma_)?(mount_c[12]|mountstats|unmount)$ ]]; then
        return 0
    fi
    # SKIP_CHECKS=<regex>: a scenario leaves out checks another scenario runs on the same code
    # paths (SKIP_WHY says which); the report lists them as skipped, with the reason.
    if [[ -n ${SKIP_CHECKS:-} && $name =~ $SKIP_CHECKS ]]; then
        echo "SKIP $name ${SKIP_WHY:-left out of this scenario (SKIP_CHECKS)}"
        return 0
    fi
    echo "RUN $name"
    t0=$(date +%s%N)
    timeout -k 10 "${CHECK_TIMEOUT:-600}" bash -c 'set -eo pipefail; "$@"' "$name" "$@" \
        >/tmp/check.out 2>&1
    rc=$?
    if ((rc == 124 || rc == 137)); then
        echo "timed out after ${CHECK_TIMEOUT:-600} s" >>/tmp/check.out
    fi
    ms=$((($(date +%s%N) - t0) / 1000000))
    detail=$(tr '\n\r' '  ' </tmp/check.out | tr -cd '[:print:]' | tail -c 600)
    if ((rc == 0)); then
        echo "CHECK $name PASS ${ms}ms $detail"
    else
        echo "CHECK $name FAIL ${ms}ms (exit $rc) $detail"
    fi
}

# expect_eq WHAT GOT WANT
expect_eq() {
    if [[ $2 != "$3" ]]; then
        echo "$1: got '${2:0:100}', want '${3:0:100}'"
        return 1
    fi
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
# Forget cached pages, dentries and inodes, so the next read comes from the server.
drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}
# Runs a command as client 2 (its network, mount and UTS namespaces).
c2() { nsenter -t "$C2PID" -n -m -u -- "$@"; }

# --- mounts ------------------------------------------------------------------------------------

# mount_c1 [OPTIONS [ADDRESS]]: client 1 mounts ADDRESS:$EXPORT (default 127.0.0.1) on $M with
# OPTIONS (default $MOUNT_OPTS).
mount_c1() {
    local opts=${1:-$MOUNT_OPTS} addr=${2:-127.0.0.1}
    mount -t nfs -o "$opts" "$addr:$EXPORT" "$M"
    # The negotiated version must be the one asked for (no silent fallback).
    local want
    want=$(sed -n 's/.*vers=\([0-9.]*\).*/\1/p' <<<"$opts")
    [[ -n $want ]]
    grep " $M " /proc/mounts
    grep " $M " /proc/mounts | grep -q "vers=$want,"
}

# mount_c2 [OPTIONS [ADDRESS]]: client 2 mounts $EXPORT on $C2M with OPTIONS (default
# $MOUNT_OPTS). Without ADDRESS, from namespace c2 at 10.99.0.1, over the veth pair 10.99.0.1
# (root namespace) <-> 10.99.0.2 (c2) (servers.sh, veth_pair). With ADDRESS (the RDMA checks,
# servers.sh RDMA_ADDR2), from the root network namespace at ADDRESS: still its own UTS and
# mount namespaces, hostname c2, so its own client id.
mount_c2() {
    local opts=${1:-$MOUNT_OPTS} addr=${2:-10.99.0.1} ns=(ip netns exec c2 unshare --uts)
    [[ -z ${2:-} ]] || ns=(unshare --uts --mount)
    veth_pair
    mkdir -p "$C2M"
    rm -f /tmp/c2.ready
    # `ip netns exec` and `unshare` exec in place, and so does `sh -c 'exec sleep'`: $! is the
    # pid of a process that stays in client 2's namespaces, for nsenter.
    "${ns[@]}" sh -c "hostname c2 && mount -t nfs -o '$opts' \
        '$addr':'$EXPORT' '$C2M' && touch /tmp/c2.ready; exec sleep 1000000" &
    echo "$!" >/tmp/c2.pid
    # 30 s for the mount; over RDMA 130 s: soft-RoCE in the guest now and then leaves a new
    # connection's first Send unsent until the client's 60 s RPC timeout (docs/design.md,
    # RPC-over-RDMA, "Known problem"), which client 1's mount (run in the foreground) simply
    # waits out; client 2's must not fail where it would.
    local i tenths=300
    [[ $opts == *proto=rdma* ]] && tenths=1300
    for ((i = 0; i < tenths; i++)); do
        [[ -f /tmp/c2.ready ]] && break
        sleep 0.1
    done
    [[ -f /tmp/c2.ready ]]
    C2PID=$(cat /tmp/c2.pid)
    expect_eq "client 2 hostname" "$(c2 hostname)" c2
    c2 grep " $C2M " /proc/mounts
}

# rpc_timeouts TENTHS: how long the file and flex files layout drivers wait for a data server
# before they retry a call (their dataserver_timeo; a mount's own is its timeo option). The
# kernel's default is 600 (60 s).
rpc_timeouts() {
    local m
    for m in nfs_layout_nfsv41_files nfs_layout_flexfiles; do
        modprobe "$m" 2>/dev/null || true
        [[ ! -w /sys/module/$m/parameters/dataserver_timeo ]] ||
            echo "$1" >"/sys/module/$m/parameters/dataserver_timeo"
    done
}

unmount_all() {
    c2 umount "$C2M"
    umount "$M"
    kill "$C2PID" 2>/dev/null || true
}

# --- mountstats --------------------------------------------------------------------------------

# Prints `MOUNTSTAT <client> <op> <count>` for each op with a nonzero count.
mountstats() {
    awk -v who="$2" -v mnt="$1" '
        /^device / { inmnt = ($5 == mnt); inops = 0; next }
        inmnt && /per-op statistics/ { inops = 1; next }
        inmnt && inops && NF > 1 && $1 ~ /:$/ && $2 > 0 { sub(":", "", $1); print "MOUNTSTAT", who, $1, $2 }
    '
}

# The sum of the samples of the server's counters page (`pnfs stats`, saved in /tmp/stats)
# whose name and labels are exactly $1.
stat_of() { { grep -F "$1 " /tmp/stats || true; } | awk '{ n += $NF } END { print n + 0 }'; }

# For a run by hand with PNFS_INTEROP_RUST_LOG (RUST_LOG in the guest): the server's whole log
# for the console, less the successful routine operations (SEQUENCE, PUTFH, GETATTR, I/O...).
server_log_verbose() {
    sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log |
        grep -avE 'op=OP_(SEQUENCE|PUTFH|PUTROOTFH|GETFH|GETATTR|ACCESS|LOOKUP|READ|WRITE|COMMIT) status=NFS4_OK' |
        sed 's/^/pnfs.log: /'
}
