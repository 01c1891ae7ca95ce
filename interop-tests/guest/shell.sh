#!/usr/bin/env bash
# Boots the interop guest with a root shell on the terminal, for debugging.
#
#   interop-tests/guest/shell.sh [knfsd | pnfs BINARY | none] [MOUNT_OPTIONS]
#
# Starts the server (default knfsd; `pnfs BINARY` copies that binary in and runs `pnfs server`),
# mounts it on /mnt/c1 with MOUNT_OPTIONS (default vers=4.1) and gives a shell. In the guest,
# `bash /scenario/workload.sh` runs the whole workload (ONLY=<regex> to pick checks), `exit`
# powers off, and Ctrl-A X kills qemu. Builds the guest first if it is not cached.
# SERVER_FS=xfs in the environment puts the server's data on an XFS image with reflink, as the
# vers=4.2 scenarios do (servers.sh).
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
cat >"$dir/scenario.env" <<ENV
SERVER='$server'
MOUNT_OPTS='${2:-vers=4.1}'
EXPORT='$export_path'
SERVER_DIR='$server_dir'
PNFS_ARGS='server'
SERVER_FS='${SERVER_FS:-}'
MODE='shell'
ENV
exec "$here/run.sh" "$dir" --interactive
