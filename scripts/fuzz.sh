#!/usr/bin/env bash
# Runs every cargo-fuzz target of nfs-proto for a fixed time (default 60 s each), as many at
# once as the machine has cores (FUZZ_JOBS=N to change): each target still gets its full time
# on a core of its own, in half the wall time on a 2-core CI machine.
#
# A crash, a panic, a timeout, a leak or a single allocation larger than 64 MiB (inputs are at most
# 1 MiB, so the decoders have no business allocating that much) fails the run. Uses the stable
# toolchain with RUSTC_BOOTSTRAP=1 when no nightly is installed, since cargo-fuzz needs -Z flags.
set -euo pipefail
cd "$(dirname "$0")/../nfs-proto"
seconds=${1:-60}
jobs=${FUZZ_JOBS:-$(nproc)}

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi

# Seeds: the golden captures' records and generated callbacks (regenerated each run).
rm -rf fuzz/seeds
cargo run --quiet --example fuzz_seeds -- fuzz/seeds

targets=$(cargo "${toolchain[@]}" fuzz list)
# Built once, before the runs start (concurrent runs would only wait for each other's build).
printf '\n==> building the fuzz targets\n'
cargo "${toolchain[@]}" fuzz build --release >fuzz/build.log 2>&1 || {
    tail -n 60 fuzz/build.log
    echo "building the fuzz targets FAILED (full log: nfs-proto/fuzz/build.log)"
    exit 1
}

# One target for $seconds; its log in fuzz/run-<target>.log, its exit status in .status.
run_one() {
    local t=$1 log="fuzz/run-$1.log" rc=0
    mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
    cargo "${toolchain[@]}" fuzz run --release "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -max_len=1048576 -malloc_limit_mb=64 -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 >"$log" 2>&1 || rc=$?
    echo "$rc" >"fuzz/run-$t.status"
}

printf '\n==> fuzzing %s targets for %ss each, %s at a time\n' "$(wc -w <<<"$targets")" "$seconds" "$jobs"
running=0
for t in $targets; do
    rm -f "fuzz/run-$t.status"
    run_one "$t" &
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

failed=0
for t in $targets; do
    log="fuzz/run-$t.log"
    printf '\n==> fuzz %s\n' "$t"
    if [[ "$(cat "fuzz/run-$t.status" 2>/dev/null)" != 0 ]]; then
        # A crash, panic, leak, timeout or oversized allocation (libFuzzer saves the input
        # under fuzz/artifacts/<target>/).
        tail -n 60 "$log"
        echo "fuzz target $t FAILED (full log: nfs-proto/$log)"
        failed=1
        continue
    fi
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || tail -n 5 "$log"
done
exit "$failed"
