#!/bin/bash
# PID 1 of the interop guest (run from the scenario disk, mounted at /scenario, so editing it or
# the workload needs no guest rebuild). Sets up the guest, starts the scenario's server, then
# either runs the workload (MODE=run: results go to the serial console as CHECK lines, then the
# guest powers off) or gives a root shell on the console (MODE=shell).
#
# /scenario/scenario.env sets:
#   SERVER       knfsd | pnfs | none
#   MOUNT_OPTS   client mount options, e.g. vers=4.1
#   EXPORT       the path clients mount (server:EXPORT)
#   SERVER_DIR   where the server keeps file data in the guest, if plain files (optional)
#   PNFS_ARGS    pnfs arguments (SERVER=pnfs; the binary is /scenario/pnfs)
#   MODE         run | shell
#   WORKLOAD     the script MODE=run runs (default workload.sh; restart.sh is the restart scenario)
#   SERVER_FS    xfs: the server keeps its data on an XFS image with reflink, else on an ext4
#                one (both in the guest's memory: servers.sh)
#   RDMA         1: soft-RoCE on the veth pair before the server starts (servers.sh, rdma_up;
#                reported as CHECK rdma_up), knfsd also listens for RPC-over-RDMA on port
#                20049, and workload.sh runs the RDMA checks (client 1 mounts $RDMA_ADDR with
#                proto=rdma,port=20049)
#   RDMA_PNFS    1 (with RDMA=1 and SERVER=pnfs): our server listens on RDMA port 20049, so
#                workload.sh runs the RDMA checks against it too; without it they are skipped
#   RDMA_MANY_FILES  files the RDMA pass's many_files check makes (default 2000)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=${TERM:-linux}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
echo 1 >/proc/sys/kernel/sysrq
# No printk chatter between result lines.
echo 1 >/proc/sys/kernel/printk

poweroff() {
    sync
    echo o >/proc/sysrq-trigger
    sleep 30
}

hostname c1
ip link set lo up
# The scenario's settings, exported for workload.sh.
set -a
# shellcheck source=/dev/null
. /scenario/scenario.env
set +a
. /scenario/servers.sh

echo "GUEST kernel $(uname -r) server=$SERVER mount=$MOUNT_OPTS mode=$MODE${RDMA:+ rdma=$RDMA}"
# Soft-RoCE first: a server started next can listen on it from the start.
if [[ ${RDMA:-} == 1 ]]; then
    t0=$(date +%s%N)
    if rdma_up >/tmp/rdma-up.log 2>&1; then
        echo "CHECK rdma_up PASS $((($(date +%s%N) - t0) / 1000000))ms $(tr '\n' ' ' </tmp/rdma-up.log)"
    else
        echo "CHECK rdma_up FAIL $((($(date +%s%N) - t0) / 1000000))ms $(tr '\n' ' ' </tmp/rdma-up.log)"
    fi
fi
# (To a file, not a pipe: the daemons started keep their output open.)
if start_server >/tmp/server-start.log 2>&1; then
    echo "CHECK server_start PASS $SERVER, data on $(findmnt -no FSTYPE -T "$(backend_dir)" 2>/dev/null)"
else
    sed 's/^/server start: /' /tmp/server-start.log
    echo "CHECK server_start FAIL $SERVER did not start: $(head -c 400 /tmp/server-start.log | tr '\n' ' ')"
    [[ $MODE == shell ]] || { echo "WORKLOAD END"; poweroff; }
fi

if [[ $MODE == shell ]]; then
    mkdir -p /mnt/c1
    # (proto=rdma in MOUNT_OPTS, with RDMA=1: over soft-RoCE, at veth-c1's address.)
    addr=127.0.0.1
    [[ $MOUNT_OPTS != *proto=rdma* ]] || addr=$RDMA_ADDR
    mount -t nfs -o "$MOUNT_OPTS" "$addr:$EXPORT" /mnt/c1 && echo "mounted $addr:$EXPORT on /mnt/c1"
    echo "root shell in the guest: the workload is /scenario/workload.sh; 'exit' powers off"
    setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
else
    bash "/scenario/${WORKLOAD:-workload.sh}"
    echo "WORKLOAD END"
fi
poweroff
