# Servers the interop guest can run (sourced by guest-init.sh). start_server starts $SERVER and
# returns once it answers on port 2049, or fails.

# Waits until something listens on TCP port 2049 (at most $1 seconds, and only while process
# $2, if given, lives).
wait_port_2049() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        ss -Htln 'sport = :2049' | grep -q . && return 0
        if [[ -n ${2:-} ]] && ! kill -0 "$2" 2>/dev/null; then
            return 1
        fi
        sleep 0.1
    done
    return 1
}

# Where the server keeps file data in the guest: knfsd's export, or our server's data
# directory (the MDS's and the data servers' objects; `pnfs server` runs in /srv).
backend_dir() {
    case $SERVER in
    knfsd) echo "$SERVER_DIR" ;;
    pnfs) echo /srv/pnfs-data ;;
    esac
}

# The server's data directory (backend_dir) on a file system of its own, made on an image in
# the guest's memory (a sparse file on a tmpfs, through a loop device): ext4, or with
# SERVER_FS=xfs XFS with reflink, so that CLONE can reflink and SEEK_DATA/SEEK_HOLE see XFS's
# extents. The servers run their usual code on a block device's file system (our data
# servers' objects go through the blocking pool and fsync as on a disk; a tmpfs would take
# the in-memory path), but a sync costs the journal's work and no trip through the emulated
# disk: on the root's ext4 a 1,141-file tar extraction through our server took 34 s, here
# 30 s, and reading the files back 15.6 s against 11.5 s. Mounted with discard, so that the
# blocks of removed files go back to the tmpfs. Mounted once: the restart scenario starts the
# server again.
mount_backend_fs() {
    local dir fs=${SERVER_FS:-ext4} mem=/var/tmp/backend img
    dir=$(backend_dir)
    # (SERVER=none: no server, no data.)
    [[ -n $dir ]] || return 0
    mountpoint -q "$dir" && return 0
    modprobe -a loop "$fs" 2>/dev/null
    mkdir -p "$mem" "$dir"
    mount -t tmpfs -o size=2560m tmpfs "$mem" || return 1
    img=$mem/backend.$fs
    truncate -s 2G "$img" || return 1
    case $fs in
    xfs) mkfs.xfs -q -f -m reflink=1 "$img" || return 1 ;;
    ext4) mkfs.ext4 -q -F "$img" || return 1 ;;
    *) echo "unknown SERVER_FS=$fs"; return 1 ;;
    esac
    mount -t "$fs" -o loop,discard "$img" "$dir" || return 1
    # (An empty export, as the root's directory was: no lost+found in it.)
    rmdir "$dir/lost+found" 2>/dev/null
    echo -n "$dir: $(findmnt -no FSTYPE,SOURCE "$dir") on a tmpfs image"
    [[ $fs != xfs ]] || echo -n ", reflink=$(xfs_info "$dir" | grep -o 'reflink=[01]')"
    echo
}

# --- the veth pair and soft-RoCE ----------------------------------------------------------------

# The guest's one link between namespaces: namespace c2 and the veth pair 10.99.0.1 (veth-c1,
# root namespace) <-> 10.99.0.2 (veth-c2, in c2). Client 2 mounts over it (common.sh, mount_c2)
# and soft-RoCE runs on it (rdma_up). Made once: calling it again does nothing.
veth_pair() {
    ip link show veth-c1 >/dev/null 2>&1 && return 0
    ip netns add c2 &&
        ip link add veth-c1 type veth peer name veth-c2 &&
        ip link set veth-c2 netns c2 &&
        ip addr add 10.99.0.1/24 dev veth-c1 &&
        ip link set veth-c1 up &&
        ip netns exec c2 ip addr add 10.99.0.2/24 dev veth-c2 &&
        ip netns exec c2 ip link set veth-c2 up &&
        ip netns exec c2 ip link set lo up
}

# The addresses RDMA clients mount (RPC-over-RDMA, port 20049), both on veth-c1: rxe cannot
# run on lo, and on the guest's kernel (6.1) rxe does not reach into namespace c2 (its UDP
# socket, port 4791, is in the root namespace only: RDMA CM from c2 ends in UNREACHABLE or
# "Network is unreachable"). So over RDMA both clients are in the root network namespace: client
# 1 mounts RDMA_ADDR, client 2 (its own UTS and mount namespaces, so its own client id) mounts
# RDMA_ADDR2, a second address of the server: with the same address and transport it would
# share client 1's nfs_client, and so its client id. rxe loops packets between addresses of one
# device back itself.
RDMA_ADDR=10.99.0.1
RDMA_ADDR2=10.99.0.3

# Soft-RoCE (RDMA=1 in scenario.env; guest-init.sh calls it before the server starts): loads
# rdma_rxe, adds an rxe device on each end of the veth pair (rxe0 on veth-c1 in the root
# namespace, rxe1 on veth-c2 in c2: `rdma link add` finds the netdev in the caller's
# namespace), adds RDMA_ADDR2 to veth-c1 and waits until `rdma link` shows both ports ACTIVE.
# Prints one line: the devices, or why not (and then returns 1). Calling it again only checks.
rdma_up() {
    local i links err
    veth_pair || { echo "soft-RoCE: cannot make the veth pair veth-c1/veth-c2"; return 1; }
    err=$(modprobe rdma_rxe 2>&1) || { echo "soft-RoCE: modprobe rdma_rxe failed: $err"; return 1; }
    if ! ip -o addr show dev veth-c1 | grep -q " $RDMA_ADDR2/"; then
        err=$(ip addr add "$RDMA_ADDR2/24" dev veth-c1 2>&1) ||
            { echo "soft-RoCE: cannot add $RDMA_ADDR2 to veth-c1: $err"; return 1; }
    fi
    if ! rdma link show rxe0/1 >/dev/null 2>&1; then
        err=$(rdma link add rxe0 type rxe netdev veth-c1 2>&1) ||
            { echo "soft-RoCE: rdma link add rxe0 type rxe netdev veth-c1 failed: $err"; return 1; }
    fi
    if ! rdma link show rxe1/1 >/dev/null 2>&1; then
        err=$(ip netns exec c2 rdma link add rxe1 type rxe netdev veth-c2 2>&1) ||
            { echo "soft-RoCE: rdma link add rxe1 type rxe netdev veth-c2 (namespace c2) failed: $err"; return 1; }
    fi
    # (A port is ACTIVE once its netdev is up with a carrier: both ends of the pair up. RDMA
    # devices are shared between namespaces, so the root namespace lists rxe1 too, without its
    # netdev, which is in c2.)
    for ((i = 0; i < 100; i++)); do
        links=$(rdma link show 2>&1)
        [[ $(grep -cE '^link rxe[01]/1 state ACTIVE ' <<<"$links") == 2 ]] && break
        sleep 0.1
    done
    if [[ $(grep -cE '^link rxe[01]/1 state ACTIVE ' <<<"$links") != 2 ]]; then
        echo "soft-RoCE: rxe0 and rxe1 not both ACTIVE after 10 s: $(tr '\n' ';' <<<"$links")"
        return 1
    fi
    echo "soft-RoCE: rxe0 on veth-c1 ($RDMA_ADDR, $RDMA_ADDR2) and rxe1 on veth-c2 (namespace c2) ACTIVE"
}

# Whether a server listens for RDMA CM connections on port 20049 (`rdma res` lists the
# listening cm_ids, our server's among them: its listener is no socket `ss` shows).
rdma_listening() { rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN .*src-addr [^ ]*:20049 '; }

# The kernel's own server: the control against which the workload itself is validated.
start_knfsd() {
    modprobe nfsd || return 1
    mount -t nfsd nfsd /proc/fs/nfsd || return 1
    mkdir -p /run/rpc_pipefs /var/lib/nfs/nfsdcld
    mount -t rpc_pipefs sunrpc /run/rpc_pipefs || return 1
    # Short lease and grace, so a test never waits long on either.
    echo 10 >/proc/fs/nfsd/nfsv4leasetime
    echo 10 >/proc/fs/nfsd/nfsv4gracetime
    mkdir -p "$SERVER_DIR"
    echo "$SERVER_DIR *(rw,async,no_subtree_check,no_root_squash,insecure)" >/etc/exports
    exportfs -ra || return 1
    rpc.mountd -N 3 || return 1
    # Without the client tracking daemon, knfsd holds every create for the grace period.
    nfsdcld || return 1
    rpc.nfsd -N 3 -V 4.1 -V 4.2 8 || return 1
    wait_port_2049 10 || return 1
    [[ ${RDMA:-} != 1 ]] || knfsd_rdma_listener
}

# RDMA=1: knfsd listens for RPC-over-RDMA on port 20049 too (what `rpc.nfsd --rdma` does: the
# transport "rdma" of svcrdma, in the rpcrdma module, written to the portlist).
knfsd_rdma_listener() {
    modprobe rpcrdma || return 1
    echo 'rdma 20049' >/proc/fs/nfsd/portlist || return 1
    grep -q '^rdma 20049$' /proc/fs/nfsd/portlist ||
        { echo "knfsd's portlist has no rdma 20049: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"; return 1; }
}

# Data server N of a multi-process cluster (PNFS_DS_IDS="1 2 3", with PNFS_ARGS="mds ..."):
# `pnfs ds --id N` over the scenario's pnfs.yaml, its pid in /tmp/pnfs-dsN.pid and its log
# appended to /tmp/pnfs-dsN.log. It binds its ports before it prints that it waits.
start_pnfs_ds() {
    local id=$1 i
    cd /srv || return 1
    /scenario/pnfs ds --config /scenario/pnfs.yaml --id "$id" >>"/tmp/pnfs-ds$id.log" 2>&1 &
    echo "$!" >"/tmp/pnfs-ds$id.pid"
    cd / || return 1
    for ((i = 0; i < 300; i++)); do
        grep -q 'waiting for the MDS' "/tmp/pnfs-ds$id.log" && return 0
        kill -0 "$(cat "/tmp/pnfs-ds$id.pid")" 2>/dev/null || break
        sleep 0.1
    done
    sed "s/^/pnfs ds $id: /" "/tmp/pnfs-ds$id.log"
    return 1
}

# Our server, copied onto the scenario disk by the test. Its pid goes to /tmp/pnfs.pid (the
# restart scenario kills it) and its log is appended to /tmp/pnfs.log (a restart adds to it).
start_pnfs() {
    local id
    for id in ${PNFS_DS_IDS:-}; do
        [[ -f /tmp/pnfs-ds$id.pid ]] || start_pnfs_ds "$id" || return 1
    done
    cd /srv || return 1
    # shellcheck disable=SC2086 # PNFS_ARGS is a word list
    /scenario/pnfs $PNFS_ARGS >>/tmp/pnfs.log 2>&1 &
    local pid=$!
    echo "$pid" >/tmp/pnfs.pid
    cd / || return 1
    if ! wait_port_2049 30 "$pid"; then
        sed 's/^/pnfs: /' /tmp/pnfs.log
        return 1
    fi
    # RDMA_PNFS=1: it listens on RDMA port 20049 too, at most 10 s later.
    [[ ${RDMA_PNFS:-} == 1 ]] || return 0
    local i
    for ((i = 0; i < 100; i++)); do
        rdma_listening && return 0
        sleep 0.1
    done
    echo "RDMA_PNFS=1 but nothing listens on RDMA port 20049: $(rdma res show cm_id 2>&1 | tr '\n' ';')"
    return 1
}

start_server() {
    mount_backend_fs || return 1
    case $SERVER in
    knfsd) start_knfsd ;;
    pnfs) start_pnfs ;;
    none) true ;;
    *) echo "unknown SERVER=$SERVER"; return 1 ;;
    esac
}
