#!/usr/bin/env bash
# Boots the interop guest (building it first if needed) on one scenario.
#
#   run.sh SCENARIO_DIR [--interactive]
#
# SCENARIO_DIR holds scenario.env (see guest-init.sh) and any extra files (the pnfs binary);
# together with the guest scripts of this folder it becomes the scenario disk, /dev/vdb, mounted
# at /scenario in the guest. The root image is attached with snapshot=on: every boot starts from
# the same clean root and the cached image never changes. The guest has no network card; its
# servers and clients talk over its own loopback and a veth pair between its own namespaces.
#
# Batch mode (default): the serial console is this script's stdout; the guest powers off when
# the workload ends. --interactive: console and qemu monitor on the terminal (Ctrl-A X quits).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scenario=$(cd "$1" && pwd)
interactive=${2:-}

guest=$("$here/build.sh")

# The scenario disk: small, rebuilt every run, so editing the workload needs no guest rebuild.
disk=$scenario.ext4
cp "$here"/*.sh "$here"/*.py "$scenario/"
used=$(du -sm "$scenario" | cut -f1)
mkfs.ext4 -q -F -L scenario -d "$scenario" "$disk" "$((used + 64))M" >/dev/null

# The CPU: everything TCG can emulate but ERMS and FSRM. With them the guest's kernel and glibc
# copy memory with `rep movsb`, which TCG runs a byte per iteration; without them they copy 8
# bytes at a time. Measured on a 2-core CI machine (knfsd, write_read_64MiB, many_files_2000,
# fio_randwrite_verify_64MiB, tar_extract_diff): 197 s with `max`, 174-175 s without them
# (write_read_64MiB 22.4 s -> 15.2 s). `qemu64` does not get through the first mount.
#
# The clock: the guest's kernel finds the emulated CPUs' TSCs unsynchronized and would read
# time from the emulated HPET (a device access, under qemu's global lock, for each reading;
# and no vDSO clock_gettime for user space: a system call each). TCG's TSCs all count the
# host's clock, so tsc=reliable is true here; a 1,141-file tar extraction through our
# server took 34 s instead of 38.5.
#
# Memory: 3 GiB, of which the server's file system image takes up to 2.5 (servers.sh).
args=(
    -accel tcg,thread=multi -cpu max,-erms,-fsrm -smp 2 -m 3072
    -no-reboot -nic none
    -kernel "$guest/vmlinuz" -initrd "$guest/initrd.gz"
    -append "console=ttyS0 panic=-1 loglevel=4 mitigations=off tsc=reliable"
    -drive "file=$guest/rootfs.ext4,format=raw,if=virtio,snapshot=on"
    -drive "file=$disk,format=raw,if=virtio"
)
if [[ $interactive == --interactive ]]; then
    exec qemu-system-x86_64 "${args[@]}" -nographic
else
    exec qemu-system-x86_64 "${args[@]}" -display none -monitor none -serial stdio </dev/null
fi
