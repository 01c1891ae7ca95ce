#!/usr/bin/env bash
# The stock Linux client against `pnfs server` and against knfsd, in the same qemu guest:
# files created, stat'ed and removed per second (empty and 4 KiB), and 1 MiB sequential
# write (with fsync) and read MB/s, printed as ratios. The guest runs under software
# emulation (TCG), so its absolute figures mean little: the ratio to knfsd, measured the same
# way in the same guest, is the figure. Two boots (knfsd, then ours), each running every
# measurement RUNS times; medians. A benchmark, not a test: run it by hand, as root.
#
#   scripts/bench-guest.sh [FILES] [SIZE_MIB] [RUNS] [MOUNT_OPTS]   (default 300 128 3 vers=4.2)
#
# Our server is the release `pnfs server` with its default configuration (an MDS and three
# data servers on the guest's loopback, files striped over them); knfsd exports /srv/export;
# both keep their data on the guest's ext4 root. Builds the guest like the interop tests do
# (interop-tests/guest/build.sh, cached in target/interop-guest).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-300}
size=${2:-128}
runs=${3:-3}
opts=${4:-vers=4.2}
cargo build --release --quiet --bin pnfs -p pnfs
work=$(mktemp -d /tmp/pnfs-bench-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat >"$work/bench.sh" <<GUEST
#!/bin/bash
# Runs in the guest (interop-tests/guest/shell.sh SCRIPT=...): mounts the server, measures.
mkdir -p /mnt/b
if ! mount -t nfs -o "$opts" "127.0.0.1:\$EXPORT" /mnt/b; then
    echo "BENCH-FAIL mount"
    exit 0
fi
echo "BENCH-INFO \$(grep ' /mnt/b ' /proc/mounts)"
python3 - /mnt/b $files $size $runs <<'PY'
import os, sys, time
root, files, size, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
block = b"\xa5" * (1 << 20)
small = b"\x5a" * 4096

def timed(f):
    t = time.monotonic()
    f()
    return time.monotonic() - t

def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")

for run in range(runs):
    for kind, data in (("empty", b""), ("4k", small)):
        d = f"{root}/run{run}-{kind}"
        os.mkdir(d)
        names = [f"{d}/f{i}" for i in range(files)]
        def create():
            for n in names:
                fd = os.open(n, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                if data:
                    os.write(fd, data)
                os.close(fd)
        print(f"BENCH create-{kind} {files / timed(create):.1f}", flush=True)
        drop_caches()
        print(f"BENCH stat-{kind} {files / timed(lambda: [os.stat(n) for n in names]):.1f}", flush=True)
        print(f"BENCH remove-{kind} {files / timed(lambda: [os.unlink(n) for n in names]):.1f}", flush=True)
        os.rmdir(d)
    big = f"{root}/big{run}"
    def write():
        fd = os.open(big, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
        for _ in range(size):
            os.write(fd, block)
        os.fsync(fd)
        os.close(fd)
    print(f"BENCH write-1m {size * 1.048576 / timed(write):.1f}", flush=True)
    drop_caches()
    def read():
        fd = os.open(big, os.O_RDONLY)
        while os.read(fd, 1 << 20):
            pass
        os.close(fd)
    print(f"BENCH read-1m {size * 1.048576 / timed(read):.1f}", flush=True)
    os.unlink(big)
PY
# The RPCs the client sent for all of it, by operation (from /proc/self/mountstats).
awk '/per-op statistics/ { on = 1; next } on && NF > 2 && \$2 > 0 { sub(":", "", \$1); printf "BENCH-OPS %s %d\\n", \$1, \$2 }' /proc/self/mountstats
umount /mnt/b
GUEST

for server in knfsd pnfs; do
    echo "bench-guest.sh: booting the guest with $server ($files files, $size MiB, $runs runs, $opts)" >&2
    if [[ $server == pnfs ]]; then
        SCRIPT=$work/bench.sh interop-tests/guest/shell.sh pnfs target/release/pnfs "$opts" >"$work/$server.log" 2>&1 || true
    else
        SCRIPT=$work/bench.sh interop-tests/guest/shell.sh knfsd "$opts" >"$work/$server.log" 2>&1 || true
    fi
    if ! grep -q '^BENCH ' "$work/$server.log"; then
        echo "bench-guest.sh: no figures from the $server boot:" >&2
        grep -E 'CHECK|BENCH|rror' "$work/$server.log" | tail -20 >&2
        exit 1
    fi
    grep '^BENCH-INFO' "$work/$server.log" | sed "s/^BENCH-INFO/$server:/" >&2
    echo "$server: RPCs sent, all runs: $(awk '/^BENCH-OPS/ { printf "%s %s, ", $2, $3 }' "$work/$server.log" | sed 's/, $//')" >&2
done

python3 - "$work/knfsd.log" "$work/pnfs.log" <<'PY'
import statistics, sys
def load(path):
    out = {}
    for line in open(path, errors="replace"):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "BENCH":
            out.setdefault(parts[1], []).append(float(parts[2]))
    return out
k, p = load(sys.argv[1]), load(sys.argv[2])
print(f"{'measure':<14} {'unit':<8} {'pnfs (min-max)':>24} {'knfsd (min-max)':>24} {'ratio':>6}")
for name in k:
    unit = "MB/s" if name.endswith("-1m") else "files/s"
    if name not in p:
        print(f"{name:<14} {unit:<8} {'-':>24}")
        continue
    a, b = statistics.median(p[name]), statistics.median(k[name])
    fa = f"{a:.0f} ({min(p[name]):.0f}-{max(p[name]):.0f})"
    fb = f"{b:.0f} ({min(k[name]):.0f}-{max(k[name]):.0f})"
    print(f"{name:<14} {unit:<8} {fa:>24} {fb:>24} {a / b:>6.2f}")
PY
