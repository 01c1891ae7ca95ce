#!/usr/bin/env bash
# Data-server scaling: does a file striped over N data servers move N times what one link
# moves? Each data server runs in its own network namespace behind its own veth link,
# rate-limited in both directions (tc tbf), so the link, not the machine, is the limit, as
# on a cluster where every data server has its own NIC. For N = 1, 2, 4 (or the counts
# given), it starts the MDS (root namespace, loopback) and N data servers (`pnfs mds`,
# `pnfs ds`; null backend by default, so the disk is not measured), runs
# `pnfs bench --only seq` and prints MB/s beside N x one link (iperf3 over link 1 in the
# same run) and the ratio. A benchmark, not a test: run it by hand, as root, on an
# otherwise idle machine (docs/bench.md).
#
#   scripts/bench-scale.sh [RATE] [SIZE] [RUNS] [COUNTS...]   (default 1gbit 1GiB 3 1 2 4)
#
# Environment: DS_BACKEND=local puts the data servers' objects on disk (BENCH_BASE=DIR,
# default /dev/shm); BENCH_ARGS="..." adds options to `pnfs bench`. Installs iperf3 with
# apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-1gbit}
size=${2:-1GiB}
runs=${3:-3}
shift $(($# < 3 ? $# : 3))
counts=("$@")
((${#counts[@]})) || counts=(1 2 4)
backend=${DS_BACKEND:-null}
max=0
for n in "${counts[@]}"; do ((n > max)) && max=$n; done

if ((EUID != 0)); then
    echo "bench-scale.sh: network namespaces need root" >&2
    exit 1
fi
if ! command -v iperf3 >/dev/null; then
    echo "bench-scale.sh: installing iperf3" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null
fi
cargo build --release --quiet --bin pnfs -p pnfs
pnfs=$PWD/target/release/pnfs
work=$(mktemp -d "${BENCH_BASE:-/dev/shm}/pnfs-scale.XXXXXX")
port=$((30000 + RANDOM % 20000))
tag=ps$$
pids=()
stop_servers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}
cleanup() {
    stop_servers
    for k in $(seq "$max"); do ip netns del "$tag-$k" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# One namespace and one rate-limited veth link per data server: 10.89.K.1 on the host's
# side, 10.89.K.2 in the namespace.
for k in $(seq "$max"); do
    ns=$tag-$k
    ip netns add "$ns"
    ip link add "$tag-h$k" type veth peer name "$tag-n$k"
    ip link set "$tag-n$k" netns "$ns"
    ip addr add "10.89.$k.1/24" dev "$tag-h$k"
    ip link set "$tag-h$k" up
    ip -n "$ns" addr add "10.89.$k.2/24" dev "$tag-n$k"
    ip -n "$ns" link set "$tag-n$k" up
    ip -n "$ns" link set lo up
    tc qdisc add dev "$tag-h$k" root tbf rate "$rate" burst 512kb latency 100ms
    tc -n "$ns" qdisc add dev "$tag-n$k" root tbf rate "$rate" burst 512kb latency 100ms
done

# One link's capacity, each way, by iperf3 in this run.
ip netns exec "$tag-1" iperf3 -s -1 -B 10.89.1.2 -p 5201 >/dev/null 2>&1 &
sleep 0.5
link_w=$(iperf3 -c 10.89.1.2 -p 5201 -t 3 -J | awk -F'[:,]' '/"sum_received"/ { r = 1 } r && /bits_per_second/ { print int($2 / 8e6); exit }')
wait
ip netns exec "$tag-1" iperf3 -s -1 -B 10.89.1.2 -p 5201 >/dev/null 2>&1 &
sleep 0.5
link_r=$(iperf3 -c 10.89.1.2 -p 5201 -t 3 -R -J | awk -F'[:,]' '/"sum_received"/ { r = 1 } r && /bits_per_second/ { print int($2 / 8e6); exit }')
wait
echo "== $(nproc) cores, $(uname -r); links: tbf $rate each way; one link by iperf3: $link_w MB/s to it, $link_r MB/s from it"
echo "data servers: $backend backend; pnfs bench --only seq --size $size --runs $runs (medians)"
printf '%-4s %12s %12s %10s %12s %12s %10s\n' N write_MB/s N*link write/N read_MB/s N*link read/N

for n in "${counts[@]}"; do
    dir=$work/n$n
    mkdir -p "$dir"
    {
        echo "listen: 127.0.0.1:$port"
        echo "metrics_listen: 127.0.0.1:$((port + 1))"
        echo "data_dir: $dir"
        echo "grace_time: 0"
        echo "cluster:"
        echo "  secret: $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        echo "  data_servers:"
        for k in $(seq "$n"); do
            echo "    - { id: $k, addresses: [10.89.$k.2:20491], control: 10.89.$k.2:20591, backend: $backend, data_dir: $dir/ds$k }"
        done
    } >"$dir/pnfs.yaml"
    chmod 600 "$dir/pnfs.yaml"
    for k in $(seq "$n"); do
        ip netns exec "$tag-$k" "$pnfs" ds --config "$dir/pnfs.yaml" --id "$k" >"$dir/ds$k.log" 2>&1 &
        pids+=($!)
    done
    "$pnfs" mds --config "$dir/pnfs.yaml" >"$dir/mds.log" 2>&1 &
    pids+=($!)
    up=0
    for _ in $(seq 300); do
        if "$pnfs" stats "127.0.0.1:$((port + 1))" 2>/dev/null | grep -q "pnfs_data_servers{state=\"up\"} *$n\$"; then
            up=1
            break
        fi
        sleep 0.1
    done
    if ((!up)); then
        echo "bench-scale.sh: the MDS does not see $n data servers up:" >&2
        tail -5 "$dir"/*.log >&2
        exit 1
    fi
    # shellcheck disable=SC2086
    "$pnfs" bench "nfs://127.0.0.1:$port/" --only seq --size "$size" --runs "$runs" --json -q ${BENCH_ARGS:-} >"$dir/bench.json"
    read -r w r < <(python3 - "$dir/bench.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def median(phase):
    for p in doc["phases"]:
        if p["phase"] == phase:
            return p["results"][0]["median"]
print(int(median("seq-write")), int(median("seq-read")))
PY
)
    printf '%-4s %12s %12s %10.2f %12s %12s %10.2f\n' "$n" "$w" $((n * link_w)) \
        "$(echo "$w / ($n * $link_w)" | bc -l)" "$r" $((n * link_r)) "$(echo "$r / ($n * $link_r)" | bc -l)"
    stop_servers
    port=$((port + 2))
done
