#!/usr/bin/env bash
# Boots the interop guest with a root shell on the terminal, for debugging, or runs one script in
# it (SCRIPT=...).
#
#   interop-tests/guest/shell.sh [knfsd | pnfs BINARY | none] [MOUNT_OPTIONS]
#
# Starts the server (default knfsd; `pnfs BINARY` copies that binary in and runs `pnfs
# $PNFS_ARGS`, default `server`), mounts it on /mnt/c1 with MOUNT_OPTIONS (default vers=4.1)
# and gives a shell. In the guest, `bash /scenario/workload.sh` runs the whole workload
# (ONLY=<regex> to pick checks), `exit` powers off, and Ctrl-A X kills qemu. Builds the guest
# first if it is not cached.
#
# Environment:
#   SERVER_FS=xfs   the server's data on an XFS image with reflink, as the vers=4.2 scenarios
#                   (else on an ext4 image; both in the guest's memory)
#                   do (servers.sh)
#   RDMA=1          soft-RoCE on the veth pair before the server starts (servers.sh, rdma_up),
#                   knfsd listening on RDMA port 20049 too; with proto=rdma in MOUNT_OPTIONS,
#                   /mnt/c1 is mounted over it (at 10.99.0.1, veth-c1's address)
#   RDMA_PNFS=1     workload.sh runs its RDMA checks against our server as well
#   PNFS_ARGS=...   our server's arguments (default `server`)
#   PNFS_CONFIG=FILE  copied to /scenario/pnfs.yaml (PNFS_ARGS='server --config /scenario/pnfs.yaml')
#   PNFS_DS_IDS="1 2 3"  with PNFS_ARGS='mds --config ...': the data servers as processes
#   RUST_LOG=...    our server's log filter (e.g. info,nfs_server::compound=debug)
#   SCRIPT=FILE     no shell: FILE is copied onto the scenario disk and run in the guest once the
#                   server is up (it can source /scenario/common.sh and servers.sh for the
#                   helpers), the console goes to stdout and the guest powers off at its end
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base=${PNFS_INTEROP_DIR:-$repo/target/interop-guest}
server=${1:-knfsd}
dir=$base/runs/shell
rm -rf "$dir"
mkdir -p "$dir"
export_path=/srv/export server_dir=/srv/export
if [[ $server == pnfs ]]; then
    cp "${2:?usage: shell.sh pnfs BINARY [MOUNT_OPTIONS]}" "$dir/pnfs"
    shift
    export_path=/ server_dir=
fi
mode=shell workload=workload.sh
if [[ -n ${SCRIPT:-} ]]; then
    # (A name run.sh's copy of the guest scripts cannot overwrite.)
    mode=run workload=user-script
    cp "$SCRIPT" "$dir/$workload"
fi
[[ -z ${PNFS_CONFIG:-} ]] || cp "$PNFS_CONFIG" "$dir/pnfs.yaml"
cat >"$dir/scenario.env" <<ENV
SERVER='$server'
MOUNT_OPTS='${2:-vers=4.1}'
EXPORT='$export_path'
SERVER_DIR='$server_dir'
PNFS_ARGS='${PNFS_ARGS:-server}'
SERVER_FS='${SERVER_FS:-}'
RDMA='${RDMA:-}'
RDMA_PNFS='${RDMA_PNFS:-}'
MODE='$mode'
WORKLOAD='$workload'
ENV
# (Unset, not empty, when not given: an empty RUST_LOG would silence the server.)
[[ -z ${RUST_LOG:-} ]] || echo "RUST_LOG='$RUST_LOG'" >>"$dir/scenario.env"
[[ -z ${PNFS_DS_IDS:-} ]] || echo "PNFS_DS_IDS='$PNFS_DS_IDS'" >>"$dir/scenario.env"
if [[ $mode == run ]]; then
    exec "$here/run.sh" "$dir"
fi
exec "$here/run.sh" "$dir" --interactive
