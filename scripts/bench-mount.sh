#!/usr/bin/env bash
# `pnfs mount` against the library on the same server: sequential 1 MiB writes and reads
# (dd and fio on the mount, `pnfs cp` and `pnfs cat`), and 4 KiB random reads (fio on the
# mount, the library's `randread` example), printed side by side. A benchmark, not a test:
# run it by hand, as root (FUSE), on an otherwise idle machine.
#
#   scripts/bench-mount.sh [SIZE_MIB] [RUNS]      (default 1024 MiB, 3 runs)
#
# The server is the release `pnfs server` with three data servers on loopback, its data on
# tmpfs (/dev/shm) so that the disk does not decide the figures; DATA_DIR=... puts it
# elsewhere. Needs fio for the fio rows (apt-get install fio).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1024}
runs=${2:-3}
cargo build --release --quiet --bin pnfs -p pnfs
cargo build --release --quiet -p client --example randread
pnfs=$PWD/target/release/pnfs
randread=$PWD/target/release/examples/randread
work=$(mktemp -d /tmp/pnfs-bench.XXXXXX)
out=$(mktemp -u /dev/shm/pnfs-bench-out.XXXXXX)
data=${DATA_DIR:-$(mktemp -d /dev/shm/pnfs-bench.XXXXXX)}
port=$((30000 + RANDOM % 20000))
cleanup() {
    umount "$work/mnt" 2>/dev/null || true
    [[ -n ${server:-} ]] && kill "$server" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work" "$out"
    [[ -z ${DATA_DIR:-} ]] && rm -rf "$data"
}
trap cleanup EXIT
cat >"$work/pnfs.yaml" <<YAML
listen: 127.0.0.1:$port
metrics_listen: 127.0.0.1:$((port + 20))
data_dir: $data
grace_time: 0
cluster:
  secret: $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  data_servers:
    - { id: 1, addresses: [127.0.0.1:$((port + 1))], control: 127.0.0.1:$((port + 11)) }
    - { id: 2, addresses: [127.0.0.1:$((port + 2))], control: 127.0.0.1:$((port + 12)) }
    - { id: 3, addresses: [127.0.0.1:$((port + 3))], control: 127.0.0.1:$((port + 13)) }
YAML
chmod 600 "$work/pnfs.yaml"
"$pnfs" server --config "$work/pnfs.yaml" >"$work/server.log" 2>&1 &
server=$!
url=nfs://127.0.0.1:$port
# Ready when the MDS counts its three data servers up.
for _ in $(seq 300); do
    "$pnfs" stats "127.0.0.1:$((port + 20))" 2>/dev/null | grep -q 'pnfs_data_servers{state="up"} *3$' && break
    sleep 0.1
done
mkdir "$work/mnt"
"$pnfs" mount --daemon "$url/" "$work/mnt"
head -c $((size << 20)) /dev/urandom >"$work/src"
ms() { local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $((($(date +%s%N) - s) / 1000000)); }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; cat "$work/src" >/dev/null; }
mbps() { echo $((size * 1048576 / 1000 / $1)); }
median() { tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
cw=() mw=() cr=() mr=()
for i in $(seq "$runs"); do
    # Alternate which goes first: the server's state after one write is the other's start.
    if ((i % 2)); then
        cw+=("$(ms "$pnfs" cp --no-progress "$work/src" "$url/cp.bin")")
        mw+=("$(ms dd if="$work/src" of="$work/mnt/dd.bin" bs=1M conv=fsync)")
    else
        mw+=("$(ms dd if="$work/src" of="$work/mnt/dd.bin" bs=1M conv=fsync)")
        cw+=("$(ms "$pnfs" cp --no-progress "$work/src" "$url/cp.bin")")
    fi
    # Reads into a file on tmpfs: what `pnfs cp` from the server does, and `dd` off the mount.
    drop
    cr+=("$(ms "$pnfs" cp --no-progress "$url/cp.bin" "$out")")
    rm -f "$out"
    drop
    mr+=("$(ms dd if="$work/mnt/dd.bin" of="$out" bs=1M)")
    rm -f "$out"
    "$pnfs" rm "$url/cp.bin" && rm "$work/mnt/dd.bin"
done
a=$(echo "${cw[@]}" | median) b=$(echo "${mw[@]}" | median)
c=$(echo "${cr[@]}" | median) d=$(echo "${mr[@]}" | median)
echo "== ${size} MiB, medians of $runs (ms; MB/s) =="
printf '%-28s %8s %8s   %8s %8s   %s\n' "" "library" "MB/s" "mount" "MB/s" "mount/library"
printf '%-28s %8d %8d   %8d %8d   %.2f\n' "sequential write (fsync)" "$a" "$(mbps "$a")" "$b" "$(mbps "$b")" "$(echo "$a / $b" | bc -l)"
printf '%-28s %8d %8d   %8d %8d   %.2f\n' "sequential read" "$c" "$(mbps "$c")" "$d" "$(mbps "$d")" "$(echo "$c / $d" | bc -l)"
echo "(library: pnfs cp to the server and back into a tmpfs file; mount: dd bs=1M, the same)"
if command -v fio >/dev/null; then
    f=$work/mnt/fio.dat
    fio_line() { fio --output-format=terse --terse-version=3 "$@" | awk -F';' '{ print $0 }'; }
    w=$(fio --name=w --filename="$f" --size=${size}M --rw=write --bs=1M --ioengine=psync --end_fsync=1 --output-format=terse --terse-version=3 | awk -F';' '{ printf "%.0f", $48 / 1024 }')
    drop
    r=$(fio --name=r --filename="$f" --size=${size}M --rw=read --bs=1M --ioengine=psync --output-format=terse --terse-version=3 | awk -F';' '{ printf "%.0f", $7 / 1024 }')
    drop
    rr=$(fio --name=rr --filename="$f" --size=${size}M --rw=randread --bs=4k --ioengine=psync --numjobs=4 --runtime=10 --time_based --group_reporting --output-format=terse --terse-version=3 | awk -F';' '{ printf "%d IOPS, %.1f MB/s", $8, $7 / 1024 }')
    echo "fio on the mount: write 1M ${w} MiB/s, read 1M ${r} MiB/s, randread 4k x4 jobs: $rr"
    lib=$("$randread" "127.0.0.1:$port" /fio.dat 4096 20000 4)
    echo "$lib (4 jobs)"
fi
