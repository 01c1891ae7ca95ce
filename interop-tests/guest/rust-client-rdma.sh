#!/bin/bash
# The bundled Rust client (`pnfs cp`, `pnfs list-io`) over RPC-over-RDMA against our server, in
# the guest with soft-RoCE. Run from the host:
#
#   RDMA=1 RDMA_PNFS=1 SCRIPT=interop-tests/guest/rust-client-rdma.sh \
#       interop-tests/guest/shell.sh pnfs target/release/pnfs
#
# RC_SIZE_MIB=N (in a SCRIPT wrapper) copies N MiB instead of 256: 64 takes about 2 minutes of
# checks, 256 about 4.5 (not in CI: its time is short).
#
# (the binary built with `cargo build --release` where rdma-core's headers are installed). Checks, each a CHECK line:
#
#   rc_rdma_roundtrip      256 MiB local -> nfs+rdma:// -> local, sha256 equal both ways, the
#                          client's RDMA counters (-v) showing the calls and replies went by RDMA
#   rc_rdma_connection     an RDMA CM connection to port 20049 seen (rdma res) during the put
#   rc_rdma_list_io        one write_list and one read_list of 1,000 extents over RDMA, the file
#                          then copied back and compared with the expected image
#   rc_rdma_registrations  memory registrations per GiB moved, with and without the cache
#   rc_rdma_vs_tcp         throughput and client CPU seconds of the same copies over nfs:// and
#                          nfs+rdma:// (through the MDS: --no-pnfs), as ratios
#   rc_rdma_pnfs           the same round trip with file layouts: the MDS over RDMA, data
#                          servers at their rdma addresses if GETDEVICEINFO lists some, else TCP
#   rc_cluster             `pnfs server` replaced by `pnfs mds` and three `pnfs ds` processes
#                          (as dskill.sh runs them)
#   rc_rdma_dskill         data server 2 killed with SIGKILL in the middle of a 256 MiB
#                          `pnfs cp` over nfs+rdma:// (layouts on) and started again 5 s later:
#                          the copy must finish and read back equal
#
# Always at 10.99.0.1 (veth-c1, where rxe0 is): rxe does not run on lo.
# shellcheck source=common.sh
. /scenario/common.sh
# shellcheck source=servers.sh
. /scenario/servers.sh

P=/scenario/pnfs
A=10.99.0.1
R=nfs+rdma://$A
T=nfs://$A
W=/var/tmp/rc
SIZE_MIB=${RC_SIZE_MIB:-256}
mkdir -p "$W"

# run NAME CMD...: runs CMD with its elapsed, user and system seconds in $W/NAME.time and its
# stderr in $W/NAME.err (the guest has no /usr/bin/time: python's getrusage of the child);
# fails with that stderr if CMD fails.
run() {
    local name=$1
    shift
    if ! python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
with open(sys.argv[1] + ".err", "w") as err:
    rc = subprocess.call(sys.argv[2:], stderr=err)
e = time.monotonic() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1] + ".time", "w") as f:
    f.write(f"{e:.2f} {u.ru_utime:.2f} {u.ru_stime:.2f}\n")
sys.exit(rc)' "$W/$name" "$@"; then
        echo "$name failed: $(tail -n 5 "$W/$name.err")"
        return 1
    fi
}
# The counter NAME of the RDMA line of run NAME's -v output.
rdma_line() { grep -o 'RDMA: .*' "$W/$1.err" | tail -n 1; }
registrations() { rdma_line "$1" | grep -o 'registrations [0-9]*' | grep -o '[0-9]*'; }
elapsed() { cut -d' ' -f1 "$W/$1.time"; }
cpu() { awk '{ print $2 + $3 }' "$W/$1.time"; }
mbps() { awk -v s="$(elapsed "$1")" -v m="$SIZE_MIB" 'BEGIN { printf "%.1f", m / (s > 0 ? s : 0.001) }'; }

make_source() {
    head -c $((SIZE_MIB << 20)) /dev/urandom >"$W/src"
    sha "$W/src" >"$W/src.sha"
    echo "$SIZE_MIB MiB source, sha256 $(cut -c1-16 "$W/src.sha")..."
}

# Removes files on the server (the guest's disk holds only a few copies of the source).
server_rm() { "$P" rm "$@" >/dev/null 2>&1 || true; }

# Samples `rdma res show cm_id` until a connection to port 20049 from a pnfs process shows
# (into $W/cm_id), for at most $1 seconds.
watch_cm_id() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        rdma res show cm_id 2>/dev/null | grep 'dst-addr [^ ]*:20049' | grep -m1 pnfs >"$W/cm_id" && return 0
        sleep 0.1
    done
    return 1
}

roundtrip() {
    rm -f "$W/back" "$W/cm_id"
    watch_cm_id 60 &
    run put_rdma "$P" cp -v --no-progress --no-pnfs "$W/src" "$R/big"
    wait
    run get_rdma "$P" cp -v --no-progress --no-pnfs "$R/big" "$W/back"
    expect_eq "sha256 after the round trip" "$(sha "$W/back")" "$(cat "$W/src.sha")"
    rm -f "$W/back"
    server_rm "$R/big"
    local put get
    put=$(rdma_line put_rdma)
    get=$(rdma_line get_rdma)
    [[ -n $put && -n $get ]] || { echo "no RDMA counters in -v: $(tail -n 3 "$W/put_rdma.err")"; return 1; }
    # Writes went in Read chunks, reads came back in the Reply chunk.
    [[ $put =~ with\ a\ Read\ chunk\ [1-9] ]] || { echo "no Read chunks on put: $put"; return 1; }
    [[ $get =~ in\ the\ Reply\ chunk\ [1-9] ]] || { echo "no Reply chunks on get: $get"; return 1; }
    echo "sha256 equal both ways; put $(elapsed put_rdma) s: $put; get $(elapsed get_rdma) s: $get"
}

connection_seen() {
    [[ -s $W/cm_id ]] || { echo "no RDMA CM connection to port 20049 seen during the put: $(rdma res show cm_id 2>&1 | tr '\n' ';')"; return 1; }
    echo "during the put, rdma res: $(cat "$W/cm_id")"
}

list_io() {
    run listio "$P" list-io -v --no-pnfs --extents 1000 --max-extent 4096 --expect "$W/listio.exp" "$R/listio"
    cat "$W/listio.err" >&2
    run listio_back "$P" cp --no-progress --no-pnfs "$R/listio" "$W/listio.got"
    cmp "$W/listio.exp" "$W/listio.got" || { echo "the file differs from the extents written"; return 1; }
    run listio_pnfs "$P" list-io -v --extents 1000 --max-extent 4096 --seed 2 --expect "$W/listio2.exp" "$R/listio2"
    run listio2_back "$P" cp --no-progress "$R/listio2" "$W/listio2.got"
    cmp "$W/listio2.exp" "$W/listio2.got" || { echo "the pNFS file differs from the extents written"; return 1; }
    server_rm "$R/listio" "$R/listio2"
    rm -f "$W"/listio*.got
    echo "1000 extents each way, through the MDS and with layouts, file = expected image ($(size "$W/listio.exp") and $(size "$W/listio2.exp") bytes); $(rdma_line listio)"
}

registrations_per_gib() {
    # Each run moves SIZE_MIB out and SIZE_MIB back.
    run put_nocache "$P" cp -v --no-progress --no-pnfs --rdma-no-cache "$W/src" "$R/big3"
    run get_nocache "$P" cp -v --no-progress --no-pnfs --rdma-no-cache "$R/big3" "$W/back3"
    expect_eq "sha256 without the cache" "$(sha "$W/back3")" "$(cat "$W/src.sha")"
    rm -f "$W/back3"
    server_rm "$R/big3"
    local with without gib
    with=$(($(registrations put_rdma) + $(registrations get_rdma)))
    without=$(($(registrations put_nocache) + $(registrations get_nocache)))
    gib=$(awk -v m="$SIZE_MIB" 'BEGIN { print 2 * m / 1024 }')
    echo "registrations per GiB moved: with the cache $(awk -v r="$with" -v g="$gib" 'BEGIN { printf "%.1f", r / g }') ($with for $gib GiB), without $(awk -v r="$without" -v g="$gib" 'BEGIN { printf "%.1f", r / g }') ($without); put without: $(rdma_line put_nocache)"
}

rdma_vs_tcp() {
    run put_tcp "$P" cp --no-progress --no-pnfs "$W/src" "$T/big4"
    run get_tcp "$P" cp --no-progress --no-pnfs "$T/big4" "$W/back4"
    expect_eq "sha256 over TCP" "$(sha "$W/back4")" "$(cat "$W/src.sha")"
    rm -f "$W/back4"
    server_rm "$T/big4"
    local n
    for n in put_tcp get_tcp put_rdma get_rdma; do
        echo -n "$n $(mbps $n) MiB/s, $(elapsed $n) s, client CPU $(cpu $n) s; "
    done
    echo -n "ratios RDMA/TCP: put throughput $(awk -v a="$(elapsed put_tcp)" -v b="$(elapsed put_rdma)" 'BEGIN { printf "%.2f", a / b }')"
    echo -n ", get throughput $(awk -v a="$(elapsed get_tcp)" -v b="$(elapsed get_rdma)" 'BEGIN { printf "%.2f", a / b }')"
    echo -n ", put CPU $(awk -v a="$(cpu put_rdma)" -v b="$(cpu put_tcp)" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 0.01) }')"
    echo ", get CPU $(awk -v a="$(cpu get_rdma)" -v b="$(cpu get_tcp)" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 0.01) }')"
}

pnfs_over_rdma() {
    rm -f "$W/back5"
    run put_pnfs "$P" cp -v --no-progress "$W/src" "$R/big5"
    run get_pnfs "$P" cp -v --no-progress "$R/big5" "$W/back5"
    expect_eq "sha256 with layouts" "$(sha "$W/back5")" "$(cat "$W/src.sha")"
    rm -f "$W/back5"
    server_rm "$R/big5"
    echo "put: $(grep -o 'pNFS, data servers: wrote [0-9]* B' "$W/put_pnfs.err"), $(elapsed put_pnfs) s; get: $(grep -o 'read [0-9]* B; MDS' "$W/get_pnfs.err"), $(elapsed get_pnfs) s; $(rdma_line get_pnfs)"
}

# The cluster as separate processes over the same data directory (dskill.sh's).
as_cluster() {
    local pid i
    pid=$(cat /tmp/pnfs.pid)
    kill "$pid"
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    printf 'data_dir: /srv/pnfs-data\nlease_time: 15\ngrace_time: 15\n' >/scenario/pnfs.yaml
    PNFS_DS_IDS="1 2 3" PNFS_ARGS="mds --config /scenario/pnfs.yaml" start_pnfs
    echo "mds pid $(cat /tmp/pnfs.pid), data servers $(cat /tmp/pnfs-ds1.pid) $(cat /tmp/pnfs-ds2.pid) $(cat /tmp/pnfs-ds3.pid)"
}

ds_killed_mid_copy() {
    local bg pid running
    rm -f "$W/back6" "$W/dskill.rc"
    (run put_dskill "$P" cp -v --no-progress "$W/src" "$R/big6"; echo $? >"$W/dskill.rc") &
    bg=$!
    # Once the copy is past the new MDS's grace period and well into the data: data server
    # 2's objects have grown by 3/32 of the file (24 MiB of the 256 / 3 it gets).
    local base i grown=$((SIZE_MIB * 3 / 32))
    base=$(du -sm /srv/pnfs-data/ds2 | cut -f1)
    for ((i = 0; i < 1200; i++)); do
        (($(du -sm /srv/pnfs-data/ds2 | cut -f1) >= base + grown)) && break
        [[ -e $W/dskill.rc ]] && break
        sleep 0.1
    done
    running=no
    [[ -e $W/dskill.rc ]] || running=yes
    pid=$(cat /tmp/pnfs-ds2.pid)
    kill -9 "$pid"
    sleep 5
    rm -f /tmp/pnfs-ds2.pid
    PNFS_DS_IDS="1 2 3" start_pnfs_ds 2
    wait "$bg"
    df -h / | tail -n 1 >&2
    [[ $(cat "$W/dskill.rc") == 0 ]] || { echo "the copy failed: $(tail -n 5 "$W/put_dskill.err")"; return 1; }
    run get_dskill "$P" cp -v --no-progress "$R/big6" "$W/back6"
    expect_eq "sha256 after the outage" "$(sha "$W/back6")" "$(cat "$W/src.sha")"
    rm -f "$W/back6"
    server_rm "$R/big6"
    echo "copy still running at the kill: $running; put $(elapsed put_dskill) s, equal after; $(grep -o 'fall-backs to the MDS [0-9]*, re-sent writes [0-9]*' "$W/put_dskill.err"); $(rdma_line put_dskill)"
}

cleanup() {
    rm -f "$W"/back* "$W"/*.got
    "$P" rm "$R/big" "$R/big3" "$R/big4" "$R/big5" "$R/big6" "$R/listio" "$R/listio2" 2>&1 || true
}

export -f $(compgen -A function)
export P A R T W SIZE_MIB

t0=$(date +%s)
df -h / /var/tmp | sed 's/^/df: /'
check rc_make_source make_source
check rc_rdma_roundtrip roundtrip
check rc_rdma_connection connection_seen
check rc_rdma_list_io list_io
check rc_rdma_registrations registrations_per_gib
check rc_rdma_vs_tcp rdma_vs_tcp
check rc_rdma_pnfs pnfs_over_rdma
check rc_cluster as_cluster
check rc_rdma_dskill ds_killed_mid_copy
check rc_cleanup cleanup
echo "rust-client-rdma: $(($(date +%s) - t0)) s of checks"
tail -n 20 /tmp/pnfs.log | sed 's/^/pnfs.log: /'
