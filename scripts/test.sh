#!/usr/bin/env bash
# The one test command (README quick start, step 2; .ci/run calls it).
#
# Installs what the checks need on a fresh Debian machine (you are root), then runs, in order:
# formatting, clippy with warnings as errors, every workspace test (unit, property, golden
# captures, tshark's dissector over our encodings, hostile lengths, the metadata server over
# loopback, and the interop scenarios: the stock Linux client in a qemu guest against knfsd (the
# harness's own control) and against our server, NFSv4.1 and 4.2; the peer servers the Rust
# client is tested against: nfs-ganesha and `pnfs server` as processes; `pnfs mount` on
# /dev/fuse), and a short fuzz run of every fuzz target.
#
# Environment:
#   FUZZ_SECONDS=N   seconds per fuzz target (default 30; 0 skips fuzzing)
#   FUZZ_JOBS=N      fuzz targets run at once (default: one per core)
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says how far into the run it starts: CI runs this on a 2-core machine and must
# stay well under an hour.
log() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# --- tools -------------------------------------------------------------------------------------
missing=()
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
# The interop guest (interop-tests/guest/build.sh and run.sh).
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
command -v cpio >/dev/null 2>&1 || missing+=(cpio)
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
# nfs-ganesha, the peer server the Rust client is tested against (interop-tests/src/peers.rs).
{ command -v ganesha.nfsd && dpkg -s nfs-ganesha-vfs; } >/dev/null 2>&1 ||
    missing+=(nfs-ganesha nfs-ganesha-vfs)
# `pnfs mount`'s tests (tests/mount.rs): fusermount3 unmounts as users do (as root the mount
# itself is a direct mount(2) of /dev/fuse, no helper and no libfuse).
command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
# The mount workload's fio check (interop-tests/host/mount-workload.sh).
command -v fio >/dev/null 2>&1 || missing+=(fio)
# The MPI-IO check on two mounts (interop-tests/tests/mpi_io.rs), with Open MPI's ROMIO: its
# MPI_File_sync fsyncs on every rank, so the unmodified SYNC-BARRIER-SYNC can be shown with
# -o fsync_revalidate (mpich 4.0's skips the reader's fsync; the test runs with either).
command -v mpicc.openmpi >/dev/null 2>&1 || missing+=(openmpi-bin libopenmpi-dev)
# The rdma crate (NFS over RDMA): its C shim is built against rdma-core's headers (they bring
# libibverbs1 and librdmacm1, which the binary then links); PNFS_RDMA=on below makes their
# absence a build error rather than a build without RDMA.
dpkg -s libibverbs-dev librdmacm-dev >/dev/null 2>&1 || missing+=(libibverbs-dev librdmacm-dev)
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The tshark-based tests, the interop scenarios and the tests against nfs-ganesha must run
# here, not skip.
export PNFS_REQUIRE_TSHARK=1
export PNFS_REQUIRE_INTEROP=1
export PNFS_REQUIRE_GANESHA=1
export PNFS_REQUIRE_FUSE=1
export PNFS_REQUIRE_MPI=1
export PNFS_MPICC=mpicc.openmpi PNFS_MPIEXEC=mpiexec.openmpi
# The binary the interop scenarios run must have RDMA (rdma/build.rs).
export PNFS_RDMA=on

# Disk: a CI machine may have only a few GiB free. Debug builds keep line tables (backtraces name
# files and lines) but not full debug info, and nothing incremental: the workspace's target/ then
# takes about a third of what it would.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only
log "disk: $(df -h --output=avail . | tail -n 1 | tr -d ' ') free here"

fuzz_seconds=${FUZZ_SECONDS:-30}
if [[ "$fuzz_seconds" != 0 ]] && ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz
fi

# --- static checks -----------------------------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

# --- tests -------------------------------------------------------------------------------------
# The interop scenarios run our server in the guest: the release binary, as users run it.
log "cargo build --release --bin pnfs"
cargo build --release --quiet --bin pnfs
export PNFS_BINARY=$PWD/target/release/pnfs

log "cargo test --workspace"
cargo test --workspace --quiet 2>&1 | tee target/test-output.txt
grep -q "test result:" target/test-output.txt

# --- fuzzing -----------------------------------------------------------------------------------
if [[ "$fuzz_seconds" != 0 ]]; then
    log "fuzzing: scripts/fuzz.sh $fuzz_seconds"
    ./scripts/fuzz.sh "$fuzz_seconds"
fi

log "all checks passed"
