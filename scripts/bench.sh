#!/usr/bin/env bash
# Our server against nfs-ganesha, through the same client: `pnfs bench --compare` on
# loopback, with the release `pnfs server` (an MDS and three data servers, files striped
# over them) as A and nfs-ganesha's VFS export as B, both keeping their data in one
# directory (tmpfs by default). A benchmark for people, not a CI test: run it by hand, as
# root (ganesha's VFS backend needs it), on an otherwise idle machine (docs/bench.md).
#
#   scripts/bench.sh [SIZE] [RUNS] [FILES]      (default 256MiB, 3 runs, 1000 files)
#
# Runs: the sequential and random phases on a file of SIZE (2 s apart: --delay); the metadata phases with FILES
# files, empty and of 4 KiB, by 1 and by 8 tasks. Each prints its table (median, min, max of
# the runs, latency percentiles, and the ratio A/B) and the CPU the client and each server
# spent per GiB or per operation. First, iperf3 over loopback as the machine's limit.
#
# Environment: BENCH_BASE=DIR keeps both servers' data below DIR instead of a fresh
# directory in /dev/shm (e.g. a disk, where fsync costs what it costs); OUT=DIR also writes
# an SVG chart of each comparison there; BENCH_ARGS="..." adds options to every `pnfs bench`
# (e.g. --no-delegations: the metadata phases without our server's delegations);
# DS_BACKEND=null gives the data servers the null backend (sizes only, no data kept), so the
# sequential phases measure the protocol and the network against iperf3's line, not the
# disk (nfs-ganesha still writes its files: compare it with the local backend). Installs
# nfs-ganesha, its VFS backend and iperf3 with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-256MiB}
runs=${2:-3}
files=${3:-1000}

need() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "bench.sh: installing ${missing[*]}" >&2
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
            echo "bench.sh: could not install ${missing[*]}" >&2
            return 1
        fi
    fi
}
have_ganesha=1
need nfs-ganesha nfs-ganesha-vfs || have_ganesha=0
need iperf3 || true
if ((have_ganesha)) && ((EUID != 0)); then
    echo "bench.sh: nfs-ganesha's VFS backend needs root; measuring pnfs server alone" >&2
    have_ganesha=0
fi

cargo build --release --quiet --bin pnfs -p pnfs
pnfs=$PWD/target/release/pnfs
base=${BENCH_BASE:-/dev/shm}
backend=${DS_BACKEND:-local}
work=$(mktemp -d "$base/pnfs-bench.XXXXXX")
port=$((30000 + RANDOM % 20000))
gport=$((port + 30))
iport=$((port + 31))
server='' ganesha=''
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null || true
    [[ -n $ganesha ]] && kill "$ganesha" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# --- pnfs server: an MDS and three data servers on loopback.
mkdir "$work/pnfs"
cat >"$work/pnfs.yaml" <<YAML
listen: 127.0.0.1:$port
metrics_listen: 127.0.0.1:$((port + 20))
data_dir: $work/pnfs
grace_time: 0
cluster:
  secret: $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  data_servers:
    - { id: 1, addresses: [127.0.0.1:$((port + 1))], control: 127.0.0.1:$((port + 11)), backend: $backend }
    - { id: 2, addresses: [127.0.0.1:$((port + 2))], control: 127.0.0.1:$((port + 12)), backend: $backend }
    - { id: 3, addresses: [127.0.0.1:$((port + 3))], control: 127.0.0.1:$((port + 13)), backend: $backend }
YAML
chmod 600 "$work/pnfs.yaml"
"$pnfs" server --config "$work/pnfs.yaml" >"$work/server.log" 2>&1 &
server=$!
up=0
for _ in $(seq 300); do
    if "$pnfs" stats "127.0.0.1:$((port + 20))" 2>/dev/null | grep -q 'pnfs_data_servers{state="up"} *3$'; then
        up=1
        break
    fi
    sleep 0.1
done
if ((!up)); then
    echo "bench.sh: pnfs server did not come up:" >&2
    tail -20 "$work/server.log" >&2
    exit 1
fi
a=nfs://127.0.0.1:$port/

# --- nfs-ganesha: one NFSv4.1 export (the configuration of interop-tests' ganesha peer).
b=''
if ((have_ganesha)); then
    plugins=$(dirname "$(ls /usr/lib/*/ganesha/libfsalvfs.so /usr/lib64/ganesha/libfsalvfs.so /usr/lib/ganesha/libfsalvfs.so 2>/dev/null | head -1)")
    mkdir "$work/export" "$work/recovery"
    cat >"$work/ganesha.conf" <<CONF
NFS_CORE_PARAM {
    NFS_Port = $gport;
    Bind_Addr = 127.0.0.1;
    Protocols = 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Plugins_Dir = "$plugins";
    Dbus_Name_Prefix = "pnfsbench$$";
}
NFS_KRB5 {
    Active_krb5 = false;
    CCacheDir = "$work/ccache";
}
NFSv4 {
    Graceless = true;
    Grace_Period = 1;
    Lease_Lifetime = 60;
    Minor_Versions = 1, 2;
    RecoveryBackend = fs;
    RecoveryRoot = "$work/recovery";
}
EXPORT {
    Export_Id = 1;
    Path = "$work/export";
    Pseudo = "/export";
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = 4;
    Transports = TCP;
    FSAL {
        Name = VFS;
    }
}
CONF
    ganesha.nfsd -F -L "$work/ganesha.log" -f "$work/ganesha.conf" -p "$work/ganesha.pid" \
        </dev/null >"$work/ganesha.out" 2>&1 &
    ganesha=$!
    for _ in $(seq 100); do
        "$pnfs" ls "nfs://127.0.0.1:$gport/export" >/dev/null 2>&1 && b=nfs://127.0.0.1:$gport/export && break
        kill -0 "$ganesha" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z $b ]]; then
        echo "bench.sh: nfs-ganesha did not come up; measuring pnfs server alone:" >&2
        tail -5 "$work/ganesha.log" "$work/ganesha.out" >&2 || true
    fi
fi

echo "== machine =="
echo "$(nproc) cores, $(uname -r); data in $work ($(df -T "$work" | awk 'NR == 2 { print $2 }'))"
if command -v iperf3 >/dev/null; then
    iperf3 -s -1 -p "$iport" >/dev/null 2>&1 &
    sleep 0.5
    # The line rate, and what it costs in CPU per GiB (sender + receiver, from iperf3's own
    # getrusage): the figures the CPU table of the seq phases compares with.
    if command -v python3 >/dev/null; then
        iperf3 -c 127.0.0.1 -p "$iport" -t 3 -J 2>/dev/null | python3 -c '
import json, sys
e = json.load(sys.stdin)["end"]
r, c = e["sum_received"], e["cpu_utilization_percent"]
per_gib = r["seconds"] / (r["bytes"] / 2**30) / 100
print("limit: loopback TCP %.1f Gbits/sec (iperf3, one stream, %.0f s), %.2f CPU-s per GiB (sender %.2f + receiver %.2f)"
      % (r["bits_per_second"] / 1e9, r["seconds"], (c["host_total"] + c["remote_total"]) * per_gib,
         c["host_total"] * per_gib, c["remote_total"] * per_gib))' || true
    else
        iperf3 -c 127.0.0.1 -p "$iport" -t 3 -f g 2>/dev/null |
            awk '/receiver/ { print "limit: loopback TCP " $7 " " $8 " (iperf3, one stream, 3 s)" }' || true
    fi
    wait $! 2>/dev/null || true
else
    echo "limit: no iperf3 (apt-get install iperf3)"
fi
echo "A = pnfs server (release; three data servers with the $backend backend, file layouts; it grants delegations)"
if [[ -n $b ]]; then
    echo "B = nfs-ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null) (VFS export, no layouts, no delegations)"
fi

plot=()
run() {
    local name=$1
    shift
    echo
    echo "== $name =="
    if [[ -n ${OUT:-} ]]; then
        mkdir -p "$OUT"
        plot=(--plot "$OUT/$name.svg")
    fi
    # Each server's CPU per phase, beside the client's (both run on this machine).
    local cmp=(--server-pids "$server")
    [[ -n $b ]] && cmp+=(--compare "$b" --compare-pids "$ganesha")
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of options
    "$pnfs" bench "$a" "${cmp[@]}" --runs "$runs" -q "${plot[@]}" "$@" ${BENCH_ARGS:-}
}
# A pause between runs: the removed file's space is freed before the next run is timed.
run seq-rand --only seq,rand --size "$size" --delay 2
for tasks in 1 8; do
    for fsize in 0 4KiB; do
        run "meta-${tasks}task-${fsize}" --only meta --files "$files" --file-size "$fsize" --tasks "$tasks"
    done
done
