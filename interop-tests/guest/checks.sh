#!/bin/bash
# The workload's checks, one function each: sourced by workload.sh in the guest, and by
# interop-tests/host/mount-workload.sh on the host, which runs them on two `pnfs mount`s.
# They expect common.sh's helpers and settings (M, C2M, H, SRC, check, expect_eq, drop_caches, c2)
# and, for the server-specific ones, servers.sh's.

# --- 1. sizes ----------------------------------------------------------------------------------

write_read() {
    local n=$1 f=$M/sizes/f.$1
    mkdir -p "$M/sizes"
    head -c "$n" /dev/urandom >"$SRC/f.$n"
    cp "$SRC/f.$n" "$f"
    drop_caches
    expect_eq "size" "$(size "$f")" "$n"
    expect_eq "sha256 read back" "$(sha "$f")" "$(sha "$SRC/f.$n")"
    if [[ -n ${SERVER_DIR:-} ]]; then
        expect_eq "sha256 on the server" "$(sha "$SERVER_DIR/sizes/f.$n")" "$(sha "$SRC/f.$n")"
    fi
}

# --- 2. trees ----------------------------------------------------------------------------------

deep_tree() {
    local p=$M/deep i
    for ((i = 0; i < 40; i++)); do p=$p/level$i; done
    mkdir -p "$p"
    echo bottom >"$p/file"
    drop_caches
    expect_eq "deep file" "$(cat "$p/file")" bottom
    expect_eq "find count" "$(find "$M/deep" | wc -l)" 42
    rm -r "$M/deep"
    [[ ! -e $M/deep ]]
}

# MANY_FILES files (default 2000; the RDMA pass against our server makes fewer, RDMA_MANY_FILES).
many_files() {
    local d=$M/many n=${MANY_FILES:-2000}
    mkdir "$d"
    local i name
    # A shell loop with no fork: OPEN(create) + CLOSE per file.
    for ((i = 1; i <= n; i++)); do
        printf -v name 'file%04d' "$i"
        : >"$d/$name"
    done
    printf -v name 'file%04d' "$((n / 2))"
    echo content >"$d/$name"
    drop_caches
    expect_eq "ls -l entries" "$(ls -l "$d" | grep -c '^-')" "$n"
    expect_eq "find | wc -l" "$(find "$d" | wc -l)" "$((n + 1))"
    expect_eq "$name" "$(cat "$d/$name")" content
    expect_eq "client 2 sees" "$(c2 ls "$C2M/many" | wc -l)" "$n"
}

# --- 3. namespace operations -------------------------------------------------------------------

rename_within_dir() {
    mkdir -p "$M/ren"
    echo a >"$M/ren/a"
    mv "$M/ren/a" "$M/ren/b"
    [[ ! -e $M/ren/a ]]
    expect_eq "renamed content" "$(cat "$M/ren/b")" a
    drop_caches
    [[ ! -e $M/ren/a ]]
    expect_eq "after drop_caches" "$(cat "$M/ren/b")" a
}

rename_across_dirs() {
    mkdir -p "$M/ren/x/y" "$M/ren/z"
    echo moved >"$M/ren/x/y/f"
    mv "$M/ren/x/y/f" "$M/ren/z/f"
    mv "$M/ren/x/y" "$M/ren/z/y"
    drop_caches
    [[ ! -e $M/ren/x/y ]]
    expect_eq "moved file" "$(cat "$M/ren/z/f")" moved
    [[ -d $M/ren/z/y ]]
    expect_eq "client 2 sees" "$(c2 cat "$C2M/ren/z/f")" moved
}

rename_over_existing() {
    echo new >"$M/ren/src"
    echo old >"$M/ren/dst"
    mv -f "$M/ren/src" "$M/ren/dst"
    drop_caches
    [[ ! -e $M/ren/src ]]
    expect_eq "target content" "$(cat "$M/ren/dst")" new
    expect_eq "entries" "$(ls "$M/ren" | grep -c -e '^src$' -e '^dst$')" 1
}

hard_links() {
    mkdir -p "$M/links"
    echo linked >"$M/links/a"
    ln "$M/links/a" "$M/links/b"
    ln "$M/links/a" "$M/links/c"
    expect_eq "nlink after two links" "$(stat -c %h "$M/links/a")" 3
    expect_eq "same inode" "$(stat -c %i "$M/links/b")" "$(stat -c %i "$M/links/a")"
    echo more >>"$M/links/c"
    drop_caches
    expect_eq "content through another link" "$(cat "$M/links/b")" "$(printf 'linked\nmore')"
    rm "$M/links/a"
    expect_eq "nlink after unlink" "$(stat -c %h "$M/links/b")" 2
    rm "$M/links/c"
    drop_caches
    expect_eq "nlink after drop_caches" "$(stat -c %h "$M/links/b")" 1
}

symlinks() {
    mkdir -p "$M/sym/dir"
    echo target >"$M/sym/dir/t"
    ln -s dir/t "$M/sym/rel"
    ln -s "$M/sym/dir" "$M/sym/abs"
    ln -s nowhere "$M/sym/dangling"
    drop_caches
    expect_eq "readlink" "$(readlink "$M/sym/rel")" dir/t
    expect_eq "through relative link" "$(cat "$M/sym/rel")" target
    expect_eq "through absolute link" "$(cat "$M/sym/abs/t")" target
    [[ -L $M/sym/dangling && ! -e $M/sym/dangling ]]
    expect_eq "lstat type" "$(stat -c %F "$M/sym/rel")" "symbolic link"
    expect_eq "client 2 readlink" "$(c2 readlink "$C2M/sym/rel")" dir/t
}

unlink_open_file() {
    mkdir -p "$M/unl"
    seq 1 10000 >"$M/unl/f"
    local want
    want=$(sha "$M/unl/f")
    exec 3<"$M/unl/f"
    rm "$M/unl/f"
    [[ ! -e $M/unl/f ]]
    drop_caches
    expect_eq "read after unlink" "$(sha256sum <&3 | cut -d' ' -f1)" "$want"
    exec 3<&-
    # The client's silly-renamed .nfsXXXX goes away with the last close.
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -z $(ls -A "$M/unl") ]] && return 0
        sleep 0.2
    done
    echo "left behind: $(ls -A "$M/unl")"
    return 1
}

# --- 4. attributes -----------------------------------------------------------------------------

chmod_check() {
    mkdir -p "$M/attr"
    echo x >"$M/attr/f"
    chmod 0640 "$M/attr/f"
    expect_eq "mode" "$(stat -c %a "$M/attr/f")" 640
    chmod 4755 "$M/attr/f"
    drop_caches
    expect_eq "mode after drop_caches" "$(stat -c %a "$M/attr/f")" 4755
    expect_eq "client 2 mode" "$(c2 stat -c %a "$C2M/attr/f")" 4755
}

chown_check() {
    echo x >"$M/attr/o"
    chown 1234:5678 "$M/attr/o"
    drop_caches
    expect_eq "owner" "$(stat -c %u:%g "$M/attr/o")" 1234:5678
    chown :4321 "$M/attr/o"
    expect_eq "group only" "$(stat -c %u:%g "$M/attr/o")" 1234:4321
}

utimes_check() {
    echo x >"$M/attr/t"
    touch -m -d '2001-02-03 04:05:06.5 UTC' "$M/attr/t"
    touch -a -d '1999-12-31 23:59:59 UTC' "$M/attr/t"
    drop_caches
    expect_eq "mtime" "$(stat -c %Y "$M/attr/t")" 981173106
    expect_eq "atime" "$(stat -c %X "$M/attr/t")" 946684799
    expect_eq "mtime nanoseconds" "$(stat -c %y "$M/attr/t" | cut -c21-29)" 500000000
    touch "$M/attr/t"
    (($(stat -c %Y "$M/attr/t") > 981173106))
}

truncate_check() {
    head -c 10000 /dev/urandom >"$SRC/trunc"
    cp "$SRC/trunc" "$M/attr/trunc"
    truncate -s 1048576 "$M/attr/trunc"
    drop_caches
    expect_eq "grown size" "$(size "$M/attr/trunc")" 1048576
    expect_eq "old bytes kept" "$(head -c 10000 "$M/attr/trunc" | sha256sum)" "$(sha256sum <"$SRC/trunc")"
    expect_eq "grown part is zeros" "$(tail -c +10001 "$M/attr/trunc" | tr -d '\0' | wc -c)" 0
    truncate -s 100 "$M/attr/trunc"
    drop_caches
    expect_eq "shrunk size" "$(size "$M/attr/trunc")" 100
    expect_eq "shrunk content" "$(sha "$M/attr/trunc")" "$(head -c 100 "$SRC/trunc" | sha256sum | cut -d' ' -f1)"
    : >"$M/attr/trunc"
    expect_eq "truncated to zero" "$(size "$M/attr/trunc")" 0
}

# --- 5. locks ----------------------------------------------------------------------------------

flock_locks() { python3 "$H/locktest.py" flock "$M/lockfile"; }
fcntl_locks() { python3 "$H/locktest.py" fcntl "$M/lockfile"; }
fcntl_locks_two_clients() { python3 "$H/locktest.py" fcntl2 "$M/lockfile2" "$C2PID" "$C2M/lockfile2"; }

# --- 6. close-to-open between two clients --------------------------------------------------------

# WRITER writes FILE (whole, or in place), READER had cached the old contents and must see the
# new ones whole on its next open.
cto() {
    local w=$1 r=$2 wpath=$3 rpath=$4
    head -c 200000 /dev/urandom >"$SRC/cto.old"
    head -c 300001 /dev/urandom >"$SRC/cto.new"
    head -c 300001 /dev/urandom >"$SRC/cto.same"
    $w cp "$SRC/cto.old" "$wpath"
    # The reader reads it twice (caching pages and attributes).
    expect_eq "reader sees old" "$($r sha256sum "$rpath" | cut -d' ' -f1)" "$(sha "$SRC/cto.old")"
    expect_eq "reader sees old again" "$($r sha256sum "$rpath" | cut -d' ' -f1)" "$(sha "$SRC/cto.old")"
    # Longer contents, written and closed by the writer.
    $w cp "$SRC/cto.new" "$wpath"
    expect_eq "reader sees new (longer)" "$($r sha256sum "$rpath" | cut -d' ' -f1)" "$(sha "$SRC/cto.new")"
    # Same size, overwritten in place within the same second.
    $w dd if="$SRC/cto.same" of="$wpath" conv=notrunc status=none
    expect_eq "reader sees in-place rewrite" "$($r sha256sum "$rpath" | cut -d' ' -f1)" "$(sha "$SRC/cto.same")"
    # Appended.
    $w sh -c "echo appended >>'$wpath'"
    expect_eq "reader sees append" "$($r tail -c 9 "$rpath")" appended
}
direct() { "$@"; }
cto_c1_to_c2() { cto direct c2 "$M/cto12" "$C2M/cto12"; }
cto_c2_to_c1() { cto c2 direct "$C2M/cto21" "$M/cto21"; }

# --- 7. durability paths -----------------------------------------------------------------------

fsync_check() { python3 "$H/fsynctest.py" "$M/fsync.dat" "$C2PID" "$C2M/fsync.dat"; }

sync_check() {
    head -c 3000000 /dev/urandom >"$SRC/sync"
    exec 4>"$M/sync.dat"
    cat "$SRC/sync" >&4
    sync
    # Still open on client 1: client 2 sees the data only if sync wrote it to the server.
    expect_eq "client 2 after sync" "$(c2 sha256sum "$C2M/sync.dat" | cut -d' ' -f1)" "$(sha "$SRC/sync")"
    exec 4>&-
}

dd_fsync() {
    head -c 8388608 /dev/urandom >"$SRC/dd"
    dd if="$SRC/dd" of="$M/dd.dat" bs=1M conv=fsync status=none
    expect_eq "client 2 after dd conv=fsync" "$(c2 sha256sum "$C2M/dd.dat" | cut -d' ' -f1)" "$(sha "$SRC/dd")"
}

fio_verify() {
    # Random 4 KiB writes with a checksum in every block, fsync at the end, then fio reads every
    # block back and checks it.
    fio --name=randwrite --filename="$M/fio.dat" --size=64M --rw=randwrite --bs=4k \
        --ioengine=psync --verify=crc32c --do_verify=1 --end_fsync=1 \
        --output-format=terse --terse-version=3 >/tmp/fio
    awk -F';' '{ printf "write %s KiB/s, verify read %s KiB/s; ", $48, $7 }' /tmp/fio
    # fio verified client 1's view; the server must hold the same bytes (client 2 reads them).
    expect_eq "client 2 sha256" "$(c2 sha256sum "$C2M/fio.dat" | cut -d' ' -f1)" "$(sha "$M/fio.dat")"
    echo "client 2 reads the same 64 MiB"
}

# --- 8. a real tree through tar ----------------------------------------------------------------

# The trees tar_tree copies: TAR_DIRS (paths under TAR_ROOT); by default the guest's
# documentation and two Python packages, about 2,000 files.
TAR_ROOT=${TAR_ROOT:-/}
TAR_DIRS=${TAR_DIRS:-usr/share/doc usr/lib/python3.11/email usr/lib/python3.11/json}

tar_tree() {
    local d
    # shellcheck disable=SC2086 # a list of directories
    tar -C "$TAR_ROOT" --exclude=__pycache__ -cf "$SRC/tree.tar" $TAR_DIRS
    mkdir -p "$M/tar"
    tar -C "$M/tar" -xf "$SRC/tree.tar"
    drop_caches
    for d in $TAR_DIRS; do
        diff -r --no-dereference -x __pycache__ "$TAR_ROOT/$d" "$M/tar/$d" >/tmp/tar.diff && continue
        # The first file that differs, closer: sizes and where the bytes part.
        local a b line
        line=$(grep -m 1 '^Binary files' /tmp/tar.diff || true)
        # shellcheck disable=SC2086 # "Binary files A and B differ"
        set -- $line
        a=${3:-} b=${5:-}
        if [[ -n $a ]]; then
            echo "first: $a $(size "$a") B vs $(size "$b") B: $(cmp "$a" "$b" 2>&1 | head -n 1); $(cmp -l "$a" "$b" 2>/dev/null | wc -l) bytes differ;"
            if [[ -n ${PNFS_CHECKS:-} ]]; then
                # Its objects on the data servers (dense, 1 MiB units over three): which hold what.
                local hex o i
                printf -v hex '%016x' "$(stat -c %i "$b")"
                for o in $(find $DS_DIRS -name "$hex.*"); do
                    i=${o##*.}
                    echo -n "object $o: $(size "$o") B, unit $i of the source: "
                    dd if="$a" bs=1M skip="$i" count=1 status=none >/tmp/unit
                    head -c "$(size /tmp/unit)" "$o" | cmp - /tmp/unit >/dev/null && echo -n "same; " || echo -n "differs ($(head -c 1048576 "$o" | od -An -tx1 -N8)); "
                done
            fi
        fi
        head -c 400 /tmp/tar.diff
        return 1
    done
    echo "$(tar -tf "$SRC/tree.tar" | wc -l) entries, $(($(size "$SRC/tree.tar") / 1024)) KiB"
}

# --- 9. end of file, space, SEEK, COPY and CLONE (issue 18) ------------------------------------

# The NFS version of the mounts. ALLOCATE, DEALLOCATE, SEEK, COPY and CLONE are NFSv4.2
# operations: on a vers=4.1 mount the Linux client answers fallocate and FICLONE with
# EOPNOTSUPP itself, copies through the page cache and seeks generically, so those checks run
# on vers=4.2 only; the O_DIRECT end-of-file checks run on both.
NFS_VERS=$(sed -n 's/.*vers=\([0-9.]*\).*/\1/p' <<<"${MOUNT_OPTS:-}")

# The per-op statistics of op $1 on client 1's mount, from /proc/self/mountstats: "ops
# transmissions timeouts bytes_sent bytes_received ..." (zeros if the op never ran).
op_stats() {
    awk -v mnt="$M" -v op="$1:" '
        /^device / { inmnt = ($5 == mnt); next }
        inmnt && $1 == op { $1 = ""; print; found = 1; exit }
        END { if (!found) print "0 0 0 0 0" }' /proc/self/mountstats
}

# The sum of every sample of counter $1 on the server's counters page (/tmp/stats), whatever
# its labels.
stat_sum() { awk -v name="$1" 'index($1, name "{") == 1 || $1 == name { n += $NF } END { print n + 0 }' /tmp/stats; }

# Our server's counters page in /tmp/stats once the data servers' counters on it are current:
# the MDS learns them from the data servers' HEALTH replies (every 2 s), so the page is read
# until two reads 3 s apart agree on them (at least one reply came in between).
settled_stats() {
    local a b i
    /scenario/pnfs stats >/tmp/stats
    a=$(grep -E '^pnfs_ds_(ops|copy_bytes)_total' /tmp/stats | md5sum)
    for ((i = 0; i < 10; i++)); do
        sleep 3
        /scenario/pnfs stats >/tmp/stats
        b=$(grep -E '^pnfs_ds_(ops|copy_bytes)_total' /tmp/stats | md5sum)
        [[ $a != "$b" ]] || return 0
        a=$b
    done
    echo "the data servers' counters did not settle in 30 s"
    return 1
}

# The KiB used on the file system of the server's data directory (the server is in the guest).
backend_used_kib() { sync; df -k --output=used "$(backend_dir)" | tail -n 1 | tr -d ' '; }

# sha256 of LEN bytes of FILE from OFFSET.
region_sha() { tail -c +$(($2 + 1)) "$1" | head -c "$3" | sha256sum | cut -d' ' -f1; }

# The bytes of FILE's range [OFFSET, OFFSET + LEN) that are not zero.
nonzero_in() { tail -c +$(($2 + 1)) "$1" | head -c "$3" | tr -d '\0' | wc -c; }

# The file of N random bytes the O_DIRECT checks read: $M/odirect/f.N, its source $SRC/od.N
# (written once, reused by the next check on the same size).
odirect_file() {
    local n=$1
    mkdir -p "$M/odirect"
    if [[ ! -f $SRC/od.$n || ! -f $M/odirect/f.$n ]]; then
        head -c "$n" /dev/urandom >"$SRC/od.$n"
        cp "$SRC/od.$n" "$M/odirect/f.$n"
    fi
    drop_caches
}

# `dd bs=1M iflag=direct` of an N-byte file ends, having read exactly the file. The Linux client
# does not cap O_DIRECT reads at its cached size: only the server's eof (or a short read) stops
# dd. Its output is capped at N + 2 MiB (a server that never says eof would otherwise fill the
# guest's memory with zeros) and dd at 60 s.
odirect_dd() {
    local n=$1 f=$M/odirect/f.$1 rc got
    odirect_file "$n"
    { timeout 60 dd if="$f" bs=1M iflag=direct status=none; echo $? >/tmp/od.rc; } |
        head -c $((n + (2 << 20))) >/tmp/od.out || true
    rc=$(cat /tmp/od.rc) got=$(size /tmp/od.out)
    if ((got > n)); then
        echo "dd read past the end of the $n B file: $got B or more (dd exit $rc, stopped at N + 2 MiB), $(nonzero_in /tmp/od.out "$n" $((got - n))) of the $((got - n)) B past the end not zero"
        return 1
    fi
    ((rc != 124)) || { echo "dd did not end within 60 s, $got of $n B read"; return 1; }
    ((rc == 0)) || { echo "dd failed (exit $rc) after $got of $n B"; return 1; }
    expect_eq "bytes read" "$got" "$n"
    expect_eq "sha256 of dd's output" "$(sha /tmp/od.out)" "$(sha "$SRC/od.$n")"
    echo "dd read the $n B and ended"
    rm -f /tmp/od.out
}

# pread with O_DIRECT at the last byte (1 byte, the file's), at the end and past it (0 bytes).
odirect_pread() {
    odirect_file "$1"
    python3 "$H/iotest.py" pread-eof "$M/odirect/f.$1" "$SRC/od.$1"
}

# fallocate -l on a file with data and on a new file: the size grows to the length, the new
# range reads as zeros, the old bytes are unchanged, and space_used covers the allocation.
fallocate_grow() {
    local d=$M/space f n=$(((2 << 20) + 4097)) l=$((7 << 20)) blocks
    mkdir -p "$d"
    f=$d/grow
    head -c "$n" /dev/urandom >"$SRC/grow"
    cp "$SRC/grow" "$f"
    fallocate -l "$l" "$f"
    fallocate -l $(((3 << 20) + 5)) "$d/new"
    drop_caches
    expect_eq "size after fallocate -l $l" "$(size "$f")" "$l"
    expect_eq "old bytes" "$(region_sha "$f" 0 "$n")" "$(sha "$SRC/grow")"
    expect_eq "nonzero bytes in the allocated range" "$(nonzero_in "$f" "$n" $((l - n)))" 0
    expect_eq "new file's size" "$(size "$d/new")" $(((3 << 20) + 5))
    expect_eq "new file's nonzero bytes" "$(tr -d '\0' <"$d/new" | wc -c)" 0
    blocks=$(($(stat -c '%b * %B' "$f")))
    echo "space used: $blocks B of the file, $(($(stat -c '%b * %B' "$d/new"))) B of the new one;"
    ((blocks >= l - (64 << 10))) || { echo "space_used $blocks B does not cover the $l B allocated"; return 1; }
    if [[ $SERVER == pnfs ]]; then
        # The allocation is on the data servers, in the objects of the file's stripes.
        local hex ds_blocks
        printf -v hex '%016x' "$(stat -c %i "$f")"
        ds_blocks=$(find $DS_DIRS -type f -name "$hex.*" -printf '%b\n' | awk '{ n += $1 * 512 } END { print n + 0 }')
        echo "the data servers' objects of the file use $ds_blocks B;"
        ((ds_blocks >= l - (192 << 10))) || { echo "want the $l B allocated"; return 1; }
    fi
}

# Our server: a new file given space with fallocate keeps its layout. Client 1 writes 3 MiB
# into it with O_DIRECT; the server's counters show the data servers serving those WRITEs and
# the MDS none (the bytes went through the layout).
fallocate_layout() {
    local f=$M/space/alloc-layout n=$((3 << 20)) ds0 ds1 mds0 mds1 ds
    mkdir -p "$M/space"
    fallocate -l "$n" "$f"
    head -c "$n" /dev/urandom >"$SRC/alloc-layout"
    ds_writes() {
        settled_stats >&2
        local ds n=0
        for ds in 1 2 3; do
            n=$((n + $(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_WRITE\",status=\"ok\"}")))
        done
        echo "$n $(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}')"
    }
    read -r ds0 mds0 <<<"$(ds_writes)"
    dd if="$SRC/alloc-layout" of="$f" bs=1M oflag=direct conv=notrunc,fsync status=none
    read -r ds1 mds1 <<<"$(ds_writes)"
    drop_caches
    expect_eq "sha256 read back" "$(sha "$f")" "$(sha "$SRC/alloc-layout")"
    echo "WRITEs of the 3 MiB after fallocate: data servers $((ds1 - ds0)), MDS $((mds1 - mds0))"
    ((ds1 - ds0 >= 3 && mds1 == mds0))
}

# fallocate --punch-hole of an unaligned range over five stripe units (all three data servers
# of our server): read fresh by client 1 (caches dropped) and by client 2, the range is zeros,
# the bytes before and after it are unchanged, the size too, and space_used drops.
fallocate_punch() {
    local f=$M/space/punch n=$(((6 << 20) + 123)) off=$(((1 << 20) - 12345)) len=$(((3 << 20) + 23456))
    local end b0 b1 who
    mkdir -p "$M/space"
    end=$((off + len))
    head -c "$n" /dev/urandom >"$SRC/punch"
    cp "$SRC/punch" "$f"
    drop_caches
    b0=$(($(stat -c '%b * %B' "$f")))
    fallocate --punch-hole -o "$off" -l "$len" "$f"
    drop_caches
    b1=$(($(stat -c '%b * %B' "$f")))
    for who in c1 c2; do
        if [[ $who == c1 ]]; then cp "$f" /tmp/punch.read; else c2 cat "$C2M/space/punch" >/tmp/punch.read; fi
        expect_eq "$who: size" "$(size /tmp/punch.read)" "$n"
        expect_eq "$who: nonzero bytes of the $len B punched at $off" "$(nonzero_in /tmp/punch.read "$off" "$len")" 0
        expect_eq "$who: bytes before the hole" "$(region_sha /tmp/punch.read 0 "$off")" "$(region_sha "$SRC/punch" 0 "$off")"
        expect_eq "$who: bytes after the hole" "$(region_sha /tmp/punch.read "$end" $((n - end)))" "$(region_sha "$SRC/punch" "$end" $((n - end)))"
    done
    rm -f /tmp/punch.read
    echo "space used $b0 B before the punch, $b1 B after"
    ((b0 - b1 >= len / 2)) || { echo "space_used dropped by $((b0 - b1)) B, want at least $((len / 2))"; return 1; }
}

# SEEK_DATA and SEEK_HOLE on a 16 MiB file with runs of data and holes in every data server's
# objects (iotest.py has the layout and the expected answers).
seek_data_hole() {
    mkdir -p "$M/space"
    python3 "$H/iotest.py" seek "$M/space/sparse"
}

# copy_file_range of 64 MiB within the mount: the client sends COPY and neither reads nor
# writes the bytes (its mountstats: COPY ops grow, READ and WRITE not at all), the copy reads
# back as the source; on our server the data servers' copy counters grow by at least the size
# (the bytes moved between the data servers, not through the MDS).
copy_range() {
    local d=$M/copy n=$((64 << 20)) c0 c1 r0 r1 w0 w1 k0=0 k1=0
    mkdir -p "$d"
    head -c "$n" /dev/urandom >"$SRC/copy"
    cp "$SRC/copy" "$d/src"
    # (Nothing cached: a copy through the client would have to READ the source.)
    drop_caches
    read -r c0 _ <<<"$(op_stats COPY)"
    r0=$(op_stats READ) w0=$(op_stats WRITE)
    if [[ $SERVER == pnfs ]]; then settled_stats; k0=$(stat_sum pnfs_ds_copy_bytes_total); fi
    python3 "$H/iotest.py" copy "$d/src" "$d/dst"
    # (A copy through the client would leave dirty pages: their WRITEs count too.)
    sync
    read -r c1 _ <<<"$(op_stats COPY)"
    r1=$(op_stats READ) w1=$(op_stats WRITE)
    if [[ $SERVER == pnfs ]]; then settled_stats; k1=$(stat_sum pnfs_ds_copy_bytes_total); fi
    local -a ra=($r0) rb=($r1) wa=($w0) wb=($w1)
    local reads=$((rb[0] - ra[0])) rbytes=$((rb[4] - ra[4])) writes=$((wb[0] - wa[0])) wbytes=$((wb[3] - wa[3]))
    echo -n "client: COPY $((c1 - c0)), READ $reads ($rbytes B received), WRITE $writes ($wbytes B sent);"
    [[ $SERVER != pnfs ]] || echo -n " data servers copied $((k1 - k0)) B (pnfs_ds_copy_bytes_total);"
    drop_caches
    expect_eq "sha256 of the copy" "$(sha "$d/dst")" "$(sha "$SRC/copy")"
    rm -f "$SRC/copy"
    ((c1 > c0)) || { echo " no COPY sent"; return 1; }
    ((reads == 0 && writes == 0)) || { echo " the client read or wrote during the copy"; return 1; }
    if [[ $SERVER == pnfs ]] && ((k1 - k0 < n)); then
        echo " the data servers copied $((k1 - k0)) B, want at least $n"
        return 1
    fi
}

# cp --reflink=always of a 16 MiB + 123 B file (five stripes and a piece on our server): the
# client sends CLONE, the clone reads back as the source, the server's file system (XFS with
# reflink, SERVER_FS=xfs) shares the blocks (its used space grows by less than a quarter of
# the file), and a write into the clone leaves the source as it was (copy on write).
reflink_clone() {
    local d=$M/clone n=$(((16 << 20) + 123)) c0 c1 u0 u1
    mkdir -p "$d"
    head -c "$n" /dev/urandom >"$SRC/clone"
    cp "$SRC/clone" "$d/src"
    read -r c0 _ <<<"$(op_stats CLONE)"
    u0=$(backend_used_kib)
    cp --reflink=always "$d/src" "$d/dst"
    u1=$(backend_used_kib)
    read -r c1 _ <<<"$(op_stats CLONE)"
    echo -n "client: CLONE $((c1 - c0)); $(findmnt -no FSTYPE -T "$(backend_dir)") under the server grew by $((u1 - u0)) KiB;"
    drop_caches
    expect_eq "sha256 of the clone" "$(sha "$d/dst")" "$(sha "$SRC/clone")"
    ((c1 > c0)) || { echo " no CLONE sent"; return 1; }
    (((u1 - u0) * 1024 < n / 4)) || { echo " the clone does not share the source's blocks"; return 1; }
    head -c 4096 /dev/urandom >/tmp/clone.patch
    dd if=/tmp/clone.patch of="$d/dst" bs=4096 seek=$(((5 << 20) / 4096)) conv=notrunc,fsync status=none
    drop_caches
    expect_eq "source after a write into the clone" "$(sha "$d/src")" "$(sha "$SRC/clone")"
    expect_eq "the clone's written block" "$(region_sha "$d/dst" $((5 << 20)) 4096)" "$(sha /tmp/clone.patch)"
    rm -f "$SRC/clone"
}

# --- 10. mountstats ----------------------------------------------------------------------------

report_mountstats() {
    mountstats "$M" c1 </proc/self/mountstats >/tmp/ms1
    c2 cat /proc/self/mountstats | mountstats "$C2M" c2 >/tmp/ms2
    cat /tmp/ms1 /tmp/ms2 >/tmp/mountstats.txt
    echo "$(wc -l </tmp/ms1) ops on c1, $(wc -l </tmp/ms2) on c2"
    # (Not with ONLY: the checks picked may neither open, write nor read.)
    [[ -z ${ONLY:-} ]] || return 0
    grep -q 'MOUNTSTAT c1 OPEN ' /tmp/ms1
    if [[ -z ${PNFS_CHECKS:-} ]]; then
        grep -q 'MOUNTSTAT c1 WRITE ' /tmp/ms1
        grep -q 'MOUNTSTAT c2 READ ' /tmp/ms2
    fi
}

# --- 11. pNFS (PNFS_CHECKS=1: our server handing out file layouts) -----------------------------

# The data server directories of the all-in-one server (`pnfs server` in /srv, default config).
DS_DIRS=${DS_DIRS:-/srv/pnfs-data/ds1 /srv/pnfs-data/ds2 /srv/pnfs-data/ds3}

# A 96 MiB file striped with a 1 MiB unit over three data servers leaves 32 MiB in one object on
# each (dense packing), and both clients read it back intact through their layouts (client 2
# reaches the data servers over the veth pair, at the address it reached the MDS by).
pnfs_striping() {
    local f=$M/striped n=$((96 << 20)) hex sizes d
    head -c "$n" /dev/urandom >"$SRC/striped"
    cp "$SRC/striped" "$f"
    sync
    printf -v hex '%016x' "$(stat -c %i "$f")"
    sizes=$(for d in $DS_DIRS; do find "$d" -name "$hex.*" -printf '%s\n'; done | sort | tr '\n' ' ')
    if [[ $sizes != "33554432 33554432 33554432 " ]]; then
        echo "file id $hex: objects $sizes; $(find $DS_DIRS -type f | wc -l) DS objects in all; MDS objects: $(find /srv/pnfs-data/data -type f | wc -l)"
        find $DS_DIRS -type f | tail -n 3
        return 1
    fi
    drop_caches
    expect_eq "sha256 via c1" "$(sha "$f")" "$(sha "$SRC/striped")"
    expect_eq "sha256 via c2" "$(c2 sha256sum "$C2M/striped" | cut -d' ' -f1)" "$(sha "$SRC/striped")"
    for d in $DS_DIRS; do echo "$d: $(du -sm "$d" | cut -f1) MiB"; done
}

# Client 1 writes a file through its RW layout and keeps it open; client 2 truncates it. The
# MDS recalls client 1's layout (CB_LAYOUTRECALL) and client 1 returns it in time (nothing is
# fenced); client 1 writes again through a new layout, and both clients then read the bytes
# the two operations leave: [0, 1 MiB) of the first write, a hole to 2 MiB, then the second
# write.
pnfs_recall() {
    local f=$M/recall r0 f0 r1 f1
    /scenario/pnfs stats >/tmp/stats || return 1
    r0=$(stat_of pnfs_layout_recalls_total) f0=$(stat_of pnfs_layouts_fenced_total)
    rm -f /tmp/recall.go
    python3 - "$f" "$SRC/recall.expected" <<'PY' &
import os, sys, time
path, expected = sys.argv[1], sys.argv[2]
first, second = os.urandom(4 << 20), os.urandom(1 << 20)
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, first)
os.fsync(fd)
open("/tmp/recall.written", "w").close()
while not os.path.exists("/tmp/recall.go"):
    time.sleep(0.05)
os.pwrite(fd, second, 2 << 20)
os.fsync(fd)
os.close(fd)
with open(expected, "wb") as e:
    e.write(first[: 1 << 20] + bytes(1 << 20) + second)
PY
    local writer=$! i
    for ((i = 0; i < 600; i++)); do
        [[ -e /tmp/recall.written ]] && break
        sleep 0.1
    done
    [[ -e /tmp/recall.written ]] || { kill "$writer"; echo "the writer did not write"; return 1; }
    c2 truncate -s 1M "$C2M/recall"
    touch /tmp/recall.go
    wait "$writer" || { echo "the writer failed"; return 1; }
    rm -f /tmp/recall.go /tmp/recall.written
    drop_caches
    expect_eq "sha256 via c1" "$(sha "$f")" "$(sha "$SRC/recall.expected")"
    expect_eq "sha256 via c2" "$(c2 sha256sum "$C2M/recall" | cut -d' ' -f1)" "$(sha "$SRC/recall.expected")"
    /scenario/pnfs stats >/tmp/stats || return 1
    r1=$(stat_of pnfs_layout_recalls_total) f1=$(stat_of pnfs_layouts_fenced_total)
    echo "recalls $((r1 - r0)), fenced $((f1 - f0))"
    ((r1 > r0 && f1 == f0))
}

# Per-op count of op $2 in mountstats file $1 (0 when absent).
ms_count() { awk -v op="$2" '$3 == op { n = $4 } END { print n + 0 }' "$1"; }

# After the whole suite: both clients took layouts and device info from the MDS (LAYOUTGET in
# OPEN compounds counts as OPEN; a separate LAYOUTGET, GETDEVICEINFO and LAYOUTCOMMIT each
# show), every data server served READs and WRITEs, and the MDS itself almost none: the
# clients' data went through their layouts. The server's counters say which server did the
# I/O; the clients' mountstats cannot (the file layout driver counts its data server READs
# and WRITEs in the MDS mount's per-op statistics: filelayout_read_count_stats).
pnfs_traffic() {
    local f who gdi lc ds r w mds_io ds_io=0 bad=0
    for who in c1 c2; do
        f=/tmp/ms${who#c}
        gdi=$(ms_count "$f" GETDEVICEINFO) lc=$(ms_count "$f" LAYOUTCOMMIT)
        echo "$who: LAYOUTGET $(ms_count "$f" LAYOUTGET) GETDEVICEINFO $gdi LAYOUTCOMMIT $lc LAYOUTRETURN $(ms_count "$f" LAYOUTRETURN), READ $(ms_count "$f" READ) WRITE $(ms_count "$f" WRITE) (MDS and DSs);"
        # Client 1 writes most of the suite; client 2 mostly reads.
        ((gdi > 0)) || bad=1
        [[ $who == c2 ]] || ((lc > 0)) || bad=1
    done
    /scenario/pnfs stats >/tmp/stats || return 1
    for ds in 1 2 3; do
        r=$(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_READ\",status=\"ok\"}")
        w=$(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_WRITE\",status=\"ok\"}")
        echo -n "ds$ds: READ $r WRITE $w; "
        ((r > 0 && w > 0)) || bad=1
        ds_io=$((ds_io + r + w))
    done
    mds_io=$(($(stat_of 'pnfs_ops_total{op="OP_READ",status="ok"}') + $(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}')))
    echo -n "MDS: READ+WRITE $mds_io; "
    # Near zero: at most 1% of the data servers' I/O operations.
    ((mds_io * 100 <= ds_io)) || bad=1
    # How the MDS answered the layout operations (failures by status).
    grep -E 'OP_(LAYOUT|GETDEVICE)' /tmp/stats | tr -s ' ' | tr '\n' ';'
    ((bad == 0))
}

# Flex files layouts (RFC 8435): a second `pnfs server` whose export serves them, on ports of
# its own (MDS 3049, data servers 30491-30493, no RDMA, counters at 127.0.0.1:9190), so the
# scenario's server is left as it is. Client 1 mounts it at /mnt/flex with the scenario's
# options: the stock client must pick the flex files driver (mountstats pnfs=LAYOUT_FLEX_FILES),
# a 32 MiB file written and read back after a remount must have its sha256, and all its I/O
# must have gone to one data server (a flex files file lives whole on one; a file of 100
# bytes too), none through the MDS.
pnfs_flex_files() {
    local d=/srv/flex f n=$((32 << 20)) pid ds r w total_r=0 total_w=0 busy=0 mds_io rc=0
    mkdir -p "$d" /mnt/flex
    cat >"$d/pnfs.yaml" <<YAML
listen: 0.0.0.0:3049
metrics_listen: 127.0.0.1:9190
rdma_listen: null
data_dir: $d/data
grace_time: 0
cluster:
  secret: $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  layout:
    layout_type: flex_files
  data_servers:
    - { id: 1, addresses: [0.0.0.0:30491], control: 127.0.0.1:30591, rdma_listen: null }
    - { id: 2, addresses: [0.0.0.0:30492], control: 127.0.0.1:30592, rdma_listen: null }
    - { id: 3, addresses: [0.0.0.0:30493], control: 127.0.0.1:30593, rdma_listen: null }
YAML
    chmod 600 "$d/pnfs.yaml"
    /scenario/pnfs server --config "$d/pnfs.yaml" >"$d/log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        /scenario/pnfs stats 127.0.0.1:9190 2>/dev/null | grep -q 'pnfs_data_servers{state="up"} *3$' && break
        sleep 0.1
    done
    mount -t nfs -o "$MOUNT_OPTS,port=3049" 127.0.0.1:/ /mnt/flex || { tail -5 "$d/log"; kill "$pid"; return 1; }
    head -c "$n" /dev/urandom >"$SRC/flex"
    cp "$SRC/flex" /mnt/flex/big
    head -c 100 "$SRC/flex" >/mnt/flex/small
    sync
    umount /mnt/flex
    mount -t nfs -o "$MOUNT_OPTS,port=3049" 127.0.0.1:/ /mnt/flex ||
        { tail -5 "$d/log"; echo "FAILED: the remount"; kill "$pid"; return 1; }
    # What failed is said last (after the server log's tail), where the check's summary shows it.
    local why=""
    why+=$(expect_eq "sha256 of the 32 MiB file" "$(sha /mnt/flex/big)" "$(sha "$SRC/flex")") || rc=1
    why+=$(expect_eq "the 100-byte file" "$(sha /mnt/flex/small)" "$(head -c 100 "$SRC/flex" | sha256sum | cut -d' ' -f1)") || rc=1
    local driver
    driver=$(awk '/ mounted on \/mnt\/flex /{ p = 1; next } /^device /{ p = 0 } p' /proc/self/mountstats |
        grep -o 'pnfs=[A-Z_]*' || true)
    echo -n "$driver; "
    [[ $driver == pnfs=LAYOUT_FLEX_FILES ]] || { rc=1; why+="driver '$driver'; "; }
    umount /mnt/flex
    # The data servers' counters reach the MDS with their HEALTH replies: wait for the reads.
    for _ in $(seq 100); do
        /scenario/pnfs stats 127.0.0.1:9190 >/tmp/stats
        total_r=0 total_w=0 busy=0
        for ds in 1 2 3; do
            r=$(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_READ\",status=\"ok\"}")
            w=$(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_WRITE\",status=\"ok\"}")
            total_r=$((total_r + r)) total_w=$((total_w + w))
            ((r + w == 0)) || busy=$((busy + 1))
        done
        ((total_r >= 32 && total_w >= 32)) && break
        sleep 0.2
    done
    mds_io=$(($(stat_of 'pnfs_ops_total{op="OP_READ",status="ok"}') + $(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}')))
    echo "data servers: READ $total_r WRITE $total_w on $busy of 3 (two files); MDS READ+WRITE $mds_io; $(grep -E '^pnfs_ops_total.*OP_(LAYOUT|GETDEVICE)' /tmp/stats | tr -s ' ' | tr '\n' ';')"
    ((total_r >= 32)) || { rc=1; why+="data servers READ $total_r < 32; "; }
    ((total_w >= 32)) || { rc=1; why+="data servers WRITE $total_w < 32; "; }
    ((mds_io == 0)) || { rc=1; why+="MDS READ+WRITE $mds_io; "; }
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    if ((rc != 0)); then
        tail -20 "$d/log"
        echo "FAILED: $why"
    fi
    return "$rc"
}

# --- 11b. flex files mirrors (MIRROR_CHECKS=1: `pnfs mds` and `pnfs ds --id 1..3` processes
# with layout_type flex_files and mirrors 2, the pnfs-flex-mirrors scenario) ---------------------

# The data servers' counters of OP_WRITE (ok), "ds1 ds2 ds3" order, from the MDS's metrics.
ds_writes() {
    /scenario/pnfs stats >/tmp/stats || return 1
    local ds out=""
    for ds in ${PNFS_DS_IDS:-1 2 3}; do
        out+="$(stat_of "pnfs_ds_ops_total{ds=\"$ds\",op=\"OP_WRITE\",status=\"ok\"}") "
    done
    echo "$out"
}

# The objects of the file at $1 (its fileid is the client's inode number) on every data server,
# one "ds<id> <path>" per line.
mirror_objects() {
    local ino hex
    ino=$(stat -c %i "$1") || return 1
    hex=$(printf '%016x' "$ino")
    find /srv/pnfs-data/ds?/objects -name "$hex.*" 2>/dev/null | sort |
        sed -E 's#^/srv/pnfs-data/(ds[0-9]+)/#\1 &#'
}

# A 32 MiB file written with fsync: the stock client picks flex files, the file's two copies
# are on two distinct data servers and each took all of it (WRITE counts grow on two data
# servers by at least 32 each, 1 MiB WRITEs), the MDS took none, and both copies read the same.
mirror_traffic() {
    local d=$M/mirror n=$((32 << 20)) before after driver busy=0 i rc=0 mds0 mds1 objs
    mkdir -p "$d"
    head -c "$n" /dev/urandom >"$SRC/mirror32"
    /scenario/pnfs stats >/tmp/stats
    mds0=$(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}')
    read -ra before <<<"$(ds_writes)"
    dd if="$SRC/mirror32" of="$d/f32" bs=1M conv=fsync status=none || return 1
    # The data servers' counters reach the MDS with their HEALTH replies.
    for _ in $(seq 50); do
        read -ra after <<<"$(ds_writes)"
        busy=0
        for i in "${!after[@]}"; do
            ((after[i] - before[i] >= 32)) && busy=$((busy + 1))
        done
        ((busy >= 2)) && break
        sleep 0.2
    done
    mds1=$(stat_of 'pnfs_ops_total{op="OP_WRITE",status="ok"}')
    driver=$(awk -v m="$M" '$0 ~ " mounted on " m " " { p = 1; next } /^device /{ p = 0 } p' /proc/self/mountstats |
        grep -o 'pnfs=[A-Z_]*')
    objs=$(mirror_objects "$d/f32")
    echo -n "$driver; data server WRITEs before ${before[*]}, after ${after[*]}; MDS WRITEs $((mds1 - mds0)); objects: $(tr '\n' ';' <<<"$objs") "
    [[ $driver == pnfs=LAYOUT_FLEX_FILES ]] || rc=1
    ((busy == 2)) || { echo "copies on $busy data servers, not 2"; rc=1; }
    ((mds1 == mds0)) || rc=1
    [[ $(wc -l <<<"$objs") == 2 ]] || rc=1
    local sums
    sums=$(awk '{ print $2 }' <<<"$objs" | xargs sha256sum | awk '{ print $1 }' | sort -u)
    expect_eq "both copies" "$sums" "$(sha "$SRC/mirror32")" || rc=1
    drop_caches
    expect_eq "sha256 read back" "$(sha "$d/f32")" "$(sha "$SRC/mirror32")" || rc=1
    return "$rc"
}

# Data server holding a copy of the file being written is killed with SIGKILL in the middle of
# a 256 MiB dd (conv=fsync) and left down: dd must finish without an error, the file must read
# back with its sha256 (after dropping the caches), the MDS must have counted a reported error
# (LAYOUTERROR or a flex files LAYOUTRETURN report) and marked the dead copy stale.
mirror_kill() {
    local d=$M/mirror n=$((256 << 20)) pid before now i victim="" rc=0 errs stale
    mkdir -p "$d"
    head -c "$n" /dev/urandom >"$SRC/mirror256"
    read -ra before <<<"$(ds_writes)"
    dd if="$SRC/mirror256" of="$d/f256" bs=1M conv=fsync status=none 2>/tmp/mirror-dd.err &
    pid=$!
    # Once 64 MiB went to the data servers: the victim is a data server taking this file's
    # WRITEs (both copies' servers are).
    for _ in $(seq 600); do
        read -ra now <<<"$(ds_writes)"
        for i in "${!now[@]}"; do
            if ((now[i] - before[i] >= 64)); then
                victim=$((i + 1))
                break 2
            fi
        done
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    [[ -n $victim ]] || { echo "no data server took 64 WRITEs of the file"; wait "$pid"; return 1; }
    kill -9 "$(cat "/tmp/pnfs-ds$victim.pid")"
    echo "$victim" >/tmp/mirror-victim
    echo -n "killed data server $victim after WRITEs ${now[*]} (before ${before[*]}); "
    local t0=$SECONDS
    wait "$pid" || { echo "dd failed: $(cat /tmp/mirror-dd.err)"; rc=1; }
    echo -n "dd finished $((SECONDS - t0)) s later; "
    drop_caches
    expect_eq "sha256 after the kill" "$(sha "$d/f256")" "$(sha "$SRC/mirror256")" || rc=1
    /scenario/pnfs stats >/tmp/stats
    errs=$(stat_of pnfs_layout_io_errors_total)
    stale=$(stat_of pnfs_mirror_stale_copies)
    echo -n "MDS: reported errors $errs, stale copies $stale, marked $(stat_of pnfs_mirror_copies_marked_stale_total); "
    grep -E '^pnfs_ops_total.*OP_(LAYOUTERROR|LAYOUTRETURN|LAYOUTGET)' /tmp/stats | tr -s ' ' | tr '\n' ';'
    ((errs > 0)) || rc=1
    ((stale > 0)) || rc=1
    return "$rc"
}

# The killed data server is started again: the MDS re-silvers the stale copies (metrics
# pnfs_mirror_stale_copies back to 0) and both copies of the 256 MiB file are then identical
# to the source.
mirror_resilver() {
    local victim objs sums t0=$SECONDS
    victim=$(cat /tmp/mirror-victim) || return 1
    start_pnfs_ds "$victim" || return 1
    for _ in $(seq 900); do
        /scenario/pnfs stats >/tmp/stats
        (($(stat_of pnfs_mirror_stale_copies) == 0)) && break
        sleep 0.2
    done
    echo -n "re-silver log: $(sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log | grep -aE 'mds::pnfs::mirrors|re-silver' | cut -c12-200 | tr '\n' ';'); "
    echo -n "data server $victim back; stale copies $(stat_of pnfs_mirror_stale_copies) after $((SECONDS - t0)) s, re-silvered $(stat_of pnfs_mirror_resilvered_copies_total) copies, $(($(stat_of pnfs_mirror_resilver_bytes_total) >> 20)) MiB; "
    (($(stat_of pnfs_mirror_stale_copies) == 0)) || return 1
    objs=$(mirror_objects "$M/mirror/f256")
    echo -n "objects: $(tr '\n' ';' <<<"$objs") "
    [[ $(wc -l <<<"$objs") == 2 ]] || return 1
    sums=$(awk '{ print $2 }' <<<"$objs" | xargs sha256sum | awk '{ print $1 }' | sort -u)
    expect_eq "both copies of the 256 MiB file" "$sums" "$(sha "$SRC/mirror256")" || return 1
    rm -rf "$SRC/mirror256" "$SRC/mirror32" "$M/mirror" 2>/dev/null || true
}

# A data server's disk is replaced: a 64 MiB file is written, a data server holding a copy is
# killed, its directory emptied (a new disk under the same id) and it is started again. The MDS
# sees another object store identity when it registers, marks every copy there stale and
# re-silvers them: the new directory holds the copy again with the file's sha256, the client
# reads the file back, and pnfs_ds_store_replaced_total counted it.
mirror_replaced() {
    local d=$M/mirror f victim objs sums t0
    mkdir -p "$d"
    f=$d/f64
    head -c $((64 << 20)) /dev/urandom >"$SRC/mirror64"
    dd if="$SRC/mirror64" of="$f" bs=1M conv=fsync status=none || return 1
    objs=$(mirror_objects "$f")
    [[ $(wc -l <<<"$objs") == 2 ]] || { echo "objects: $objs"; return 1; }
    victim=$(awk 'NR == 2 { sub("ds", "", $1); print $1 }' <<<"$objs")
    kill -9 "$(cat "/tmp/pnfs-ds$victim.pid")"
    sleep 1
    echo -n "data server $victim killed and its directory emptied ($(find "/srv/pnfs-data/ds$victim" -type f | wc -l) files); "
    rm -rf "/srv/pnfs-data/ds$victim"
    t0=$SECONDS
    start_pnfs_ds "$victim" || return 1
    for _ in $(seq 900); do
        /scenario/pnfs stats >/tmp/stats
        (($(stat_of pnfs_ds_store_replaced_total) >= 1 && $(stat_of pnfs_mirror_stale_copies) == 0)) && break
        sleep 0.2
    done
    echo -n "replaced stores $(stat_of pnfs_ds_store_replaced_total), stale copies $(stat_of pnfs_mirror_stale_copies) after $((SECONDS - t0)) s, re-silvered $(stat_of pnfs_mirror_resilvered_copies_total) copies in all; "
    echo -n "log: $(sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log | grep -a 'another object store' | cut -c12-240 | tr '\n' ';'); "
    (($(stat_of pnfs_ds_store_replaced_total) >= 1)) || return 1
    (($(stat_of pnfs_mirror_stale_copies) == 0)) || return 1
    objs=$(mirror_objects "$f")
    [[ $(wc -l <<<"$objs") == 2 ]] || { echo "objects after: $objs"; return 1; }
    sums=$(awk '{ print $2 }' <<<"$objs" | xargs sha256sum | awk '{ print $1 }' | sort -u)
    expect_eq "both copies of the 64 MiB file" "$sums" "$(sha "$SRC/mirror64")" || return 1
    drop_caches
    expect_eq "sha256 read back" "$(sha "$f")" "$(sha "$SRC/mirror64")" || return 1
    rm -rf "$SRC/mirror64" "$d" 2>/dev/null || true
}

# --- 12. delegations (our server) ------------------------------------------------------------

# The server's delegation counters now (saved in /tmp/stats): write and read delegations
# granted, recalled, returned, revoked, OPENs answered NFS4ERR_DELAY, and the delegations held
# now (both kinds).
deleg_counters() {
    /scenario/pnfs stats >/tmp/stats || return 1
    echo "$(stat_of 'pnfs_delegations_granted_total{type="write"}')" \
        "$(stat_of 'pnfs_delegations_granted_total{type="read"}')" \
        "$(stat_of pnfs_delegations_recalled_total)" \
        "$(stat_of pnfs_delegations_returned_total)" \
        "$(stat_of pnfs_delegations_revoked_total)" \
        "$(stat_of 'pnfs_ops_total{op="OP_OPEN",status="NFS4ERR_DELAY"}')" \
        "$(($(stat_of 'pnfs_delegations{type="write"}') + $(stat_of 'pnfs_delegations{type="read"}')))"
}

# deleg_deltas BEFORE AFTER: the counters' differences (two deleg_counters outputs), in words.
deleg_deltas() {
    local -a b=($1) a=($2)
    echo "granted write $((a[0] - b[0])) read $((a[1] - b[1])), recalled $((a[2] - b[2])), returned $((a[3] - b[3])), revoked $((a[4] - b[4])), OPEN NFS4ERR_DELAY $((a[5] - b[5]))"
}

# The bytes the all-in-one server holds of file id $1 on its disk: its data server objects
# (<id:016x>.<stripe>, written through layouts) and the MDS's own copy (<id:016x>, written
# through the MDS).
server_bytes() {
    local hex
    printf -v hex '%016x' "$1"
    find /srv/pnfs-data -type f -name "$hex*" -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'
}

# The counters before a delegation check, which needs no delegation held: a client may return
# an unused delegation whenever it likes, and that would count in the check's deltas.
deleg_baseline() {
    local s
    s=$(deleg_counters)
    set -- $s
    if (($7 != 0)); then
        echo "$7 delegations held before the check: its deltas would not be its own" >&2
        return 1
    fi
    echo "$s"
}

# After a delegation check: client 1 removes FILE, which recalls the read delegation client 2
# may have taken on its last open (REMOVE waits for its return), so that no delegation is held
# for the next check.
deleg_cleanup() {
    local s
    rm "$1"
    s=$(deleg_counters)
    set -- $s
    echo -n " after client 1's rm: $7 held"
    (($7 == 0))
}

# The server's log lines on file id $1, counted (the recall's CB_RECALL and its answer).
deleg_log() {
    sed 's/\x1b\[[0-9;]*m//g' /tmp/pnfs.log | grep -E "fileid=$1( |$)" |
        sed -E 's/.* (INFO|WARN|ERROR) [a-z_:]+: //; s/ ?(clientid|fileid)=[0-9]+//g' |
        sort | uniq -c | tr -s ' ' | tr '\n' ';'
}

# Issue 7's interop scenario, writer still open (RFC 8881 section 10.4): client 1 opens a new
# file read-write, gets a write delegation and writes to it with no fsync (none of the bytes
# reaches the server's disk). Client 2 opens the file for reading: the MDS answers its OPEN
# NFS4ERR_DELAY and recalls client 1's delegation (CB_RECALL), client 1 returns it
# (DELEGRETURN) and client 2's retried OPEN succeeds. Client 2 gets no read delegation: client
# 1 still has the file open for write. The counters over this, as deltas: write delegations
# granted 1, read 0, recalled 1, returned 1, revoked 0, OPENs delayed >= 1. Then client 1
# closes, and client 2's next open reads client 1's bytes (close-to-open).
#
# What client 2's first open reads is reported, not required: section 10.4.4 says a holder
# whose file is still open flushes its modified data on a recall, but Linux (6.1) returns the
# delegation without writing its dirty pages (nfs_end_delegation_return: no writeback; older
# kernels started one in nfs_async_inode_return_delegation), so client 2 may read the file as
# the server had it.
deleg_recall_open() {
    local f=$M/deleg/open size=$(((2 << 20) + 12345)) b m a s i ino w1 w2 first want
    mkdir -p "$M/deleg"
    rm -f /tmp/deleg.ready /tmp/deleg.go
    # Whatever happens, the holder lets go of the file.
    trap 'touch /tmp/deleg.go' EXIT
    b=$(deleg_baseline)
    python3 "$H/delegtest.py" hold "$f" "$size" "$SRC/deleg.open" /tmp/deleg.ready \
        /tmp/deleg.go >/tmp/deleg.out 2>&1 &
    local holder=$!
    for ((i = 0; i < 600; i++)); do
        [[ -e /tmp/deleg.ready ]] && break
        kill -0 "$holder" 2>/dev/null || break
        sleep 0.1
    done
    [[ -e /tmp/deleg.ready ]] || { echo "client 1's holder did not write: $(cat /tmp/deleg.out)"; return 1; }
    ino=$(cat /tmp/deleg.ready)
    want=$(sha "$SRC/deleg.open")
    # Client 1 holds a write delegation, and its bytes are only in its page cache.
    m=$(deleg_counters)
    w1=$(server_bytes "$ino")
    s=($m)
    echo -n "c1 wrote $size B, open: $(deleg_deltas "$b" "$m"), held ${s[6]}; server disk $w1 B;"
    [[ $(deleg_deltas "$b" "$m") == "granted write 1 read 0,"* && ${s[6]} == 1 ]] ||
        { echo " want one write delegation"; return 1; }
    ((w1 == 0)) || { echo " c1 wrote back before c2 opened: nothing left to flush"; return 1; }
    c2 cp "$C2M/deleg/open" /tmp/deleg.first
    a=$(deleg_counters)
    w2=$(server_bytes "$ino")
    first="$(size /tmp/deleg.first) B"
    [[ $(sha /tmp/deleg.first) == "$want" ]] && first+=" (c1's bytes)"
    echo -n " c2's first open read $first, server disk $w2 B;"
    touch /tmp/deleg.go
    wait "$holder" || { echo " client 1's holder: $(cat /tmp/deleg.out)"; return 1; }
    expect_eq "c2's open after c1's close" "$(c2 sha256sum "$C2M/deleg/open" | cut -d' ' -f1)" "$want"
    echo -n " after c1's close c2 reads c1's bytes; log: $(deleg_log "$ino")"
    deleg_cleanup "$f"
    echo "; $(deleg_deltas "$b" "$a")"
    [[ $(deleg_deltas "$b" "$a") == "granted write 1 read 0, recalled 1, returned 1, revoked 0,"* ]]
    s=($a) m=($b)
    ((s[5] - m[5] >= 1))
}

# The same with client 1's file closed when client 2 opens it: client 1 writes a new file and
# closes it, keeping its write delegation (a Linux client holding one starts the write-back at
# close and does not wait for it); client 2's open recalls it (NFS4ERR_DELAY, CB_RECALL), client
# 1 flushes what is left and returns it, and client 2 reads client 1's bytes (section 10.4.4:
# a file not open at the recall has all its modified data flushed first). Client 2's retried
# OPEN gets a read delegation (nobody has the file open for write). Deltas: write delegations
# granted 1, read 1, recalled 1, returned 1, revoked 0, OPENs delayed >= 1.
deleg_recall_closed() {
    local f=$M/deleg/closed size=$(((3 << 20) + 4321)) b m a s ino w1 w2
    mkdir -p "$M/deleg"
    b=$(deleg_baseline)
    head -c "$size" /dev/urandom >"$SRC/deleg.closed"
    cp "$SRC/deleg.closed" "$f"
    ino=$(stat -c %i "$f")
    m=$(deleg_counters)
    w1=$(server_bytes "$ino")
    s=($m)
    echo -n "c1 wrote $size B, closed: $(deleg_deltas "$b" "$m"), held ${s[6]}; server disk $w1 B;"
    [[ $(deleg_deltas "$b" "$m") == "granted write 1 read 0,"* && ${s[6]} == 1 ]] ||
        { echo " want one write delegation, still held after the close"; return 1; }
    expect_eq "c2 reads" "$(c2 sha256sum "$C2M/deleg/closed" | cut -d' ' -f1)" "$(sha "$SRC/deleg.closed")"
    a=$(deleg_counters)
    w2=$(server_bytes "$ino")
    echo -n " c2 reads c1's bytes, server disk $w2 B; log: $(deleg_log "$ino")"
    deleg_cleanup "$f"
    echo "; $(deleg_deltas "$b" "$a")"
    [[ $(deleg_deltas "$b" "$a") == "granted write 1 read 1, recalled 1, returned 1, revoked 0,"* ]]
    s=($a) m=($b)
    ((s[5] - m[5] >= 1))
}

# --- 13. RPC-over-RDMA (RDMA=1: soft-RoCE, servers.sh rdma_up) --------------------------------

# The transport of the mount on $1 in the mountstats on stdin ("xprt: rdma ..." or "xprt: tcp").
xprt_of() { awk -v mnt="$1" '/^device / { inmnt = ($5 == mnt); next } inmnt && $1 == "xprt:" { print $2; exit }'; }

# RDMA without NFS, over rxe0: rping (RDMA CM, a SEND and an RDMA READ and WRITE per ping) from
# RDMA_ADDR2 to a server on RDMA_ADDR, then ib_write_bw (perftest; RDMA WRITEs of 64 KiB for
# 2 s) for the raw bandwidth of the emulation, the ceiling of what NFS can get over it.
rdma_verbs() {
    local spid bw
    timeout 30 rping -s -a "$RDMA_ADDR" -p 7471 -C 5 >/tmp/rping.s 2>&1 &
    spid=$!
    sleep 0.5
    timeout 30 rping -c -a "$RDMA_ADDR" -I "$RDMA_ADDR2" -p 7471 -C 5 -v >/tmp/rping.c 2>&1 ||
        { echo "rping failed: $(tr '\n' ' ' </tmp/rping.c) server: $(tr '\n' ' ' </tmp/rping.s)"; kill "$spid"; return 1; }
    wait "$spid" || true
    echo -n "rping $RDMA_ADDR2 -> $RDMA_ADDR: $(grep -c '^ping data' /tmp/rping.c) pings; "
    timeout 60 ib_write_bw -d rxe0 -D 2 -p 7472 >/tmp/bw.s 2>&1 &
    spid=$!
    sleep 0.5
    timeout 60 ib_write_bw -d rxe0 -D 2 -p 7472 "$RDMA_ADDR" >/tmp/bw.c 2>&1 ||
        { echo "ib_write_bw failed: $(tail -n 5 /tmp/bw.c | tr '\n' ' ')"; kill "$spid"; return 1; }
    wait "$spid" || true
    # The result line: bytes, iterations, peak MB/s, average MB/s, Mpps.
    bw=$(awk '$1 == 65536 && NF == 5 { print $4 }' /tmp/bw.c)
    [[ -n $bw ]] || { echo "no result from ib_write_bw: $(tail -n 5 /tmp/bw.c | tr '\n' ' ')"; return 1; }
    echo "ib_write_bw rxe0: $bw MB/s (64 KiB RDMA WRITEs, 2 s)"
}

# Both clients' mounts are RPC-over-RDMA: /proc/mounts says proto=rdma,port=20049 and their
# mountstats "xprt: rdma". With knfsd, the server lists two clients, c1 and c2.
rdma_xprt() {
    local who opts xprt
    for who in c1 c2; do
        if [[ $who == c1 ]]; then
            opts=$(grep " $M " /proc/mounts | cut -d' ' -f4)
            xprt=$(xprt_of "$M" </proc/self/mountstats)
        else
            opts=$(c2 grep " $C2M " /proc/mounts | cut -d' ' -f4)
            xprt=$(c2 cat /proc/self/mountstats | xprt_of "$C2M")
        fi
        [[ $opts == *proto=rdma,port=20049,* ]] || { echo "$who's mount options: $opts"; return 1; }
        expect_eq "$who's transport in mountstats" "$xprt" rdma
        echo -n "$who: xprt rdma, $(grep -o 'rsize=[0-9]*,wsize=[0-9]*' <<<"$opts"), addr=${opts##*addr=}; "
    done
    if [[ $SERVER == knfsd ]]; then
        echo -n "knfsd's clients: $(grep -h '^name:' /proc/fs/nfsd/clients/*/info | cut -d'"' -f2 | tr '\n' ';')"
    fi
}

# Sequential 64 MiB on client 1's mount with O_DIRECT in 1 MiB blocks: fio writes (fsync at
# the end), then reads everything back verifying a checksum in every block. The figures go to
# /tmp/fio-seq.<transport>; once both transports have run, the ratios rdma/tcp. Soft-RoCE is
# software emulation (under TCG at that): the figures show that bulk transfers work and how
# the two transports compare here, not how fast RDMA is.
fio_seq() {
    local x w r
    x=$(xprt_of "$M" </proc/self/mountstats)
    fio --name=seq --filename="$M/seq.dat" --size=64M --rw=write --bs=1M --ioengine=psync \
        --direct=1 --end_fsync=1 --verify=crc32c --do_verify=1 \
        --output-format=terse --terse-version=3 >/tmp/fio.seq
    rm -f "$M/seq.dat"
    w=$(awk -F';' '{ print $48 }' /tmp/fio.seq) r=$(awk -F';' '{ print $7 }' /tmp/fio.seq)
    [[ -n $w && -n $r ]]
    echo "$w $r" >"/tmp/fio-seq.$x"
    echo -n "$x: write $w KiB/s, verify read $r KiB/s"
    if [[ -f /tmp/fio-seq.tcp && -f /tmp/fio-seq.rdma ]]; then
        read -r w r </tmp/fio-seq.tcp
        echo -n "; tcp: write $w KiB/s, read $r KiB/s; rdma/tcp:"
        awk -v tw="$w" -v tr="$r" '{ printf " write %.2f, read %.2f", $1 / tw, $2 / tr }' /tmp/fio-seq.rdma
    fi
    echo
}

# --- the checks every client of every server runs, in order -------------------------------------

# Sizes, trees, names, attributes, locks within and between clients, close-to-open both ways,
# fsync: what workload.sh (the kernel client in the guest) and host/mount-workload.sh (`pnfs
# mount`) both run; each goes on with checks of its own.
file_checks() {
    check write_read_0B write_read 0
    check write_read_1B write_read 1
    check write_read_4095B write_read 4095
    check write_read_1MiB_plus_1 write_read 1048577
    check write_read_64MiB write_read 67108864
    check deep_tree deep_tree
    check "many_files_${MANY_FILES:-2000}" many_files
    check rename_within_dir rename_within_dir
    check rename_across_dirs rename_across_dirs
    check rename_over_existing rename_over_existing
    check hard_links hard_links
    check symlinks symlinks
    check unlink_open_file unlink_open_file
    check chmod chmod_check
    check chown chown_check
    check utimes utimes_check
    check truncate_grow_shrink truncate_check
    check flock_locks flock_locks
    check fcntl_byte_range_locks fcntl_locks
    check fcntl_locks_two_clients fcntl_locks_two_clients
    check close_to_open_c1_to_c2 cto_c1_to_c2
    check close_to_open_c2_to_c1 cto_c2_to_c1
    check fsync_fdatasync fsync_check
}
