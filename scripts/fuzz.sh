#!/usr/bin/env bash
# Runs every cargo-fuzz target of nfs-proto for a fixed time (default 60 s each).
#
# A crash, a panic, a timeout or a single allocation larger than 64 MiB (inputs are at most
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

targets=$(cargo "${toolchain[@]}" fuzz list)
for t in $targets; do
    printf '\n==> fuzz %s for %ss\n' "$t" "$seconds"
    mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t"
    rm -rf "fuzz/artifacts/$t"
    cargo "${toolchain[@]}" fuzz run --release "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -max_len=1048576 -malloc_limit_mb=64 -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 2>&1 | grep -E "^(#[0-9]+.*DONE|Done|==|SUMMARY|stat::number_of_executed_units|INFO: -max_total_time)" || true
    # libFuzzer writes every failing input (crash, leak, timeout, oversized malloc) to
    # fuzz/artifacts/<target>/: that, not grep's exit status, decides.
    if compgen -G "fuzz/artifacts/$t/*" >/dev/null; then
        echo "fuzz target $t found a failing input:" fuzz/artifacts/"$t"/*
        exit 1
    fi
done
