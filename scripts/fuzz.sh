#!/usr/bin/env bash
# Runs every cargo-fuzz target of nfs-proto for a fixed time (default 60 s each).
#
# A crash, a panic, a timeout, a leak or a single allocation larger than 64 MiB (inputs are at most
# 1 MiB, so the decoders have no business allocating that much) fails the run. Uses the stable
# toolchain with RUSTC_BOOTSTRAP=1 when no nightly is installed, since cargo-fuzz needs -Z flags.
set -euo pipefail
cd "$(dirname "$0")/../nfs-proto"
seconds=${1:-60}

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
for t in $targets; do
    printf '\n==> fuzz %s for %ss\n' "$t" "$seconds"
    mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
    log="fuzz/run-$t.log"
    if ! cargo "${toolchain[@]}" fuzz run --release "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -max_len=1048576 -malloc_limit_mb=64 -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        # A crash, panic, leak, timeout or oversized allocation (libFuzzer saves the input
        # under fuzz/artifacts/<target>/), or a build failure.
        tail -n 60 "$log"
        echo "fuzz target $t FAILED (full log: nfs-proto/$log)"
        exit 1
    fi
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || tail -n 5 "$log"
done
