#!/bin/bash
# The interop workload, run inside the guest by guest-init.sh once the server answers.
#
# Client 1 is the guest's own kernel client (hostname c1) mounting 127.0.0.1:$EXPORT on /mnt/c1.
# Client 2 is a second, independent kernel client: its own network namespace (joined to the first
# by a veth pair), its own hostname (the Linux client's owner string derives from it, so it gets
# its own client id) and its own mount namespace, mounting 10.99.0.1:$EXPORT on /mnt/c2.
#
# Every check prints, on the serial console:
#   RUN <name>
#   CHECK <name> PASS|FAIL <milliseconds>ms <detail>
# and the per-op counts of /proc/self/mountstats come last as `MOUNTSTAT <client> <op> <count>`.
# The Rust side parses these lines; a check that prints RUN but never CHECK took the guest down.
# ONLY=<regex> (in scenario.env or the environment) runs only the checks whose names match, plus
# the mounts, mountstats and unmount. The helpers (check, expect_eq, mounts) are in common.sh.
# shellcheck source=common.sh
. /scenario/common.sh
# (backend_dir: where the server keeps file data)
# shellcheck source=servers.sh
. /scenario/servers.sh
# (the checks, one function each)
# shellcheck source=checks.sh
. /scenario/checks.sh

# --- the suite ---------------------------------------------------------------------------------

# Each check runs in its own bash (see check), which needs the functions and settings.
export -f $(compgen -A function)
export M C2M H SRC DS_DIRS TAR_ROOT TAR_DIRS RDMA_ADDR RDMA_ADDR2 PNFS_DS_IDS

check mount_c1 mount_c1
if [[ -n ${NFS_DEBUG:-} ]]; then
    # shellcheck disable=SC2086 # a list of flags
    rpcdebug -m nfs -s $NFS_DEBUG 2>&1 | tail -n 1
fi
check mount_c2 mount_c2
C2PID=$(cat /tmp/c2.pid 2>/dev/null || true)
export C2PID
# First, while no delegation is held: the counters' deltas are then these checks' alone.
if [[ $SERVER == pnfs ]]; then
    check deleg_recall_writer_open deleg_recall_open
    check deleg_recall_writer_closed deleg_recall_closed
fi

# Mirrored flex files (the pnfs-flex-mirrors scenario), first, on an empty file system: a data
# server killed mid-write and re-silvered (checks.sh).
if [[ -n ${MIRROR_CHECKS:-} ]]; then
    check mirrors_two_copies_32MiB mirror_traffic
    check mirrors_ds_killed_mid_256MiB_write mirror_kill
    check mirrors_resilvered mirror_resilver
    check mirrors_data_server_replaced mirror_replaced
fi

# The checks every client passes (checks.sh).
file_checks
check sync sync_check
check dd_conv_fsync dd_fsync
check fio_randwrite_verify_64MiB fio_verify
# (The TCP figure the RDMA checks compare with.)
[[ ${RDMA:-} != 1 ]] || check fio_seq_64MiB fio_seq
check tar_extract_diff tar_tree
check odirect_dd_1MiB odirect_dd $((1 << 20))
check odirect_pread_eof_1MiB odirect_pread $((1 << 20))
check odirect_dd_1MiB_plus_1 odirect_dd $(((1 << 20) + 1))
check odirect_pread_eof_1MiB_plus_1 odirect_pread $(((1 << 20) + 1))
check odirect_dd_32MiB_plus_123 odirect_dd $(((32 << 20) + 123))
check odirect_pread_eof_32MiB_plus_123 odirect_pread $(((32 << 20) + 123))
if [[ $NFS_VERS == 4.2 ]]; then
    check fallocate_grow fallocate_grow
    [[ $SERVER != pnfs ]] || check fallocate_keeps_layout fallocate_layout
    check fallocate_punch_hole fallocate_punch
    check seek_data_hole seek_data_hole
    check copy_file_range_64MiB copy_range
    check cp_reflink_always reflink_clone
fi
if [[ -n ${PNFS_CHECKS:-} ]]; then
    check pnfs_striping_96MiB pnfs_striping
    check pnfs_recall_on_truncate pnfs_recall
    check pnfs_flex_files_32MiB pnfs_flex_files
fi
check mountstats report_mountstats
if [[ -n ${PNFS_CHECKS:-} ]]; then
    check pnfs_layout_traffic pnfs_traffic
fi
cat /tmp/mountstats.txt 2>/dev/null
check unmount unmount_all

# RDMA=1: the same clients again over RPC-over-RDMA (soft-RoCE, brought up by guest-init.sh),
# proto=rdma,port=20049 with the scenario's version: client 1 at RDMA_ADDR, client 2 at
# RDMA_ADDR2 from the root network namespace (servers.sh says why), then the file checks and a
# sequential fio to compare with TCP's, every name prefixed rdma_. For SERVER=pnfs they run
# only with RDMA_PNFS=1 (the pnfs-files scenario sets it).
if [[ ${RDMA:-} == 1 && $SERVER == pnfs && ${RDMA_PNFS:-} != 1 ]]; then
    if rdma_listening; then
        echo "SKIP rdma_checks RDMA_PNFS=1 is not set, though our server listens on RDMA port 20049: with it they run against that"
    else
        echo "SKIP rdma_checks our server does not listen on RDMA port 20049 (RDMA_PNFS=1 in scenario.env runs them against it)"
    fi
elif [[ ${RDMA:-} == 1 ]]; then
    check rdma_verbs rdma_verbs
    # The clients retry a call after 15 s instead of 60 (timeo=150, and the layout drivers'
    # dataserver_timeo for their data-server connections): the soft-RoCE client in this guest
    # now and then leaves a call on a new connection unsent until it times out and
    # reconnects (docs/design.md, RPC-over-RDMA, "Known problem"); knfsd's control the same.
    rpc_timeouts 150
    check rdma_mount_c1 mount_c1 "$MOUNT_OPTS,proto=rdma,port=20049,timeo=150" "$RDMA_ADDR"
    check rdma_mount_c2 mount_c2 "$MOUNT_OPTS,proto=rdma,port=20049,timeo=150" "$RDMA_ADDR2"
    C2PID=$(cat /tmp/c2.pid 2>/dev/null || true)
    check rdma_xprt rdma_xprt
    # (In a directory of their own: the files of the checks over TCP are still there.)
    mkdir -p "$M/rdma"
    M=$M/rdma C2M=$C2M/rdma SERVER_DIR=${SERVER_DIR:+$SERVER_DIR/rdma} CHECK_PREFIX=rdma_ \
        MANY_FILES=${RDMA_MANY_FILES:-2000} file_checks
    check rdma_fio_seq_64MiB fio_seq
    check rdma_unmount unmount_all
    rpc_timeouts 600
fi
# What went wrong, for the console log: the server's warnings and the client's messages.
if [[ $SERVER == pnfs && -n ${RUST_LOG:-} ]]; then
    server_log_verbose
elif [[ $SERVER == pnfs ]]; then
    sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log | grep -aE ' (WARN|ERROR) ' | tail -n 60 | sed 's/^/pnfs.log: /'
fi
lines=30
[[ -z ${NFS_DEBUG:-} ]] || lines=400
dmesg | grep -iE 'nfs|rpc|pnfs|layout' | grep -viE 'registered|installing|loaded' | tail -n "$lines" | sed 's/^/dmesg: /'
