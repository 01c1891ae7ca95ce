#!/bin/bash
# Reproduces and dumps the open RDMA stall (docs/design.md, "RPC-over-RDMA: the transport",
# Known problem): the Linux client over soft-RoCE, creating empty files on our server, now and
# then waits for its 60 s retransmit timeout. Run it in the guest with our server:
#
#   RDMA=1 RDMA_PNFS=1 SCRIPT=interop-tests/guest/rdma-stall.sh \
#       interop-tests/guest/shell.sh pnfs target/release/pnfs vers=4.2
#
# (SERVER=knfsd works too: `shell.sh knfsd`, the control, which does not stall.) It restarts our
# server with RUST_LOG=rdma=trace, mounts over RDMA, creates up to $N files and, at the first
# create that makes no progress for 4 s, prints: the stuck process's kernel stack, the client's
# RPC tasks (rpc_debug), the queue pairs (rdma res), rxe's hardware counters, the tail of our
# server's log; then, once that create is through (about 60 s later), the mount's counters
# (the xprt line's local_inv_needed among them).
#
# READDIR=1 lists the directory after each create (READDIR replies come in multi-region Reply
# chunks, so the client Local-Invalidates after them as after our layouts: the knfsd control
# for that). TRACE=1 records the client's rpcrdma tracepoints and prints their tail at the stall
# (xprtrdma_post_send tells whether the client posted the stuck call's Send). The guest sees
# only scenario.env, so set them in a wrapper given as SCRIPT: `TRACE=1 bash /scenario/rdma-stall.sh`.
N=${N:-300}
if [[ ${TRACE:-} == 1 ]]; then
    modprobe rpcrdma # (its events exist once it is loaded)
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    echo 8192 >/sys/kernel/tracing/buffer_size_kb
    echo 1 >/sys/kernel/tracing/events/rpcrdma/enable
    echo 1 >/sys/kernel/tracing/events/sunrpc/xprt_transmit/enable
    echo 1 >/sys/kernel/tracing/tracing_on
fi
if [[ $SERVER == pnfs ]]; then
    kill "$(cat /tmp/pnfs.pid)"
    sleep 2
    (cd /srv && RUST_LOG=rdma=trace,info /scenario/pnfs $PNFS_ARGS >/tmp/pnfs-trace.log 2>&1 &)
    sleep 8
fi
hw() {
    local f v
    for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
        v=$(cat "$f")
        [[ $v == 0 ]] || echo "HW $1 $(basename "$f")=$v"
    done
}
mkdir -p /mnt/x
mount -t nfs -o vers=4.2,proto=rdma,port=20049 "10.99.0.1:$EXPORT" /mnt/x || { echo "STALL mount failed"; exit 1; }
mkdir -p /mnt/x/stall
start=$EPOCHREALTIME
( for ((i = 0; i < N; i++)); do
    : >/mnt/x/stall/f$i
    [[ ${READDIR:-} != 1 ]] || ls -f /mnt/x/stall >/dev/null
    echo "$i" >/tmp/progress
done; echo done >/tmp/progress ) &
last= same=0
while sleep 1; do
    p=$(cat /tmp/progress 2>/dev/null)
    [[ $p == done ]] && { echo "STALL none: $N creates in $(( (${EPOCHREALTIME/./} - ${start/./}) / 1000 )) ms"; break; }
    if [[ $p == "$last" ]]; then same=$((same + 1)); else same=0 last=$p; fi
    ((same == 4)) || continue
    echo "STALL at create $p"
    for d in /proc/[0-9]*; do
        [[ $(awk '/^State:/{print $2}' "$d/status" 2>/dev/null) == D ]] || continue
        echo "STACK $d $(cat "$d/comm")"
        sed 's/^/STACK   /' "$d/stack"
    done
    echo 0 >/proc/sys/sunrpc/rpc_debug
    dmesg | grep -A8 -- '-pid- flgs' | tail -n 12 | sed 's/^/RPCTASKS /'
    rdma res show qp 2>&1 | sed 's/^/QP /'
    hw stalled
    if [[ ${TRACE:-} == 1 ]]; then
        echo 0 >/sys/kernel/tracing/tracing_on
        grep -v '^#' /sys/kernel/tracing/trace | tail -n 80 | cut -c1-240 | sed 's/^/TRACE /'
    fi
    [[ $SERVER == pnfs ]] && sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs-trace.log | tail -n 40 | cut -c1-240 | sed 's/^/SERVER /'
    # The stalled create ends with the client's retransmit (60 s); no more creates after it.
    kill %1 2>/dev/null
    break
done
wait
awk '/xprt:/ || /^[ \t]*(OPEN|CLOSE|NULL):/ {print "MOUNTSTATS " $0}' /proc/self/mountstats
umount -l /mnt/x
