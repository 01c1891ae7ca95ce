#!/bin/bash
# The interop workload on `pnfs mount` (the bundled client through FUSE), on this host: the
# guest suite's checks (guest/checks.sh) with client 1 and client 2 as two mounts of one
# server by two client processes, then the checks only a FUSE mount has (user xattrs, mmap,
# locks of a killed process, the revalidate ioctl, 10,000 entries). interop-tests/tests/
# mount.rs starts the server and the mounts and parses the report, the guest's format:
#   RUN <name>
#   CHECK <name> PASS|FAIL <milliseconds>ms <detail>
#   WORKLOAD END
#
# Environment: M and C2M (the mounts), SERVER (pnfs or ganesha), PNFS (the pnfs binary),
# SRC (a scratch directory off the mounts), DS_DIRS (our server's data server directories,
# where fallocate_grow finds the objects), ONLY=<regex> (run only the matching checks).
#
# Left out of the guest's list: `sync` (sync(2) reaches no FUSE file system's dirty data:
# the kernel sends FUSE no syncfs, so only fsync and close flush), the mountstats and pNFS
# layout checks (the kernel client's statistics; the test reads the mount's own counters
# instead), CLONE (FUSE has no remap_file_range), and fallocate_keeps_layout (the guest's
# counters page).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/../guest
# shellcheck source=../guest/common.sh
. "$H/common.sh"
# shellcheck source=../guest/checks.sh
. "$H/checks.sh"

# Client 2 is the second mount, in this namespace: the checks' `c2 CMD` runs CMD, and their
# python helpers' `nsenter -t $C2PID` enters this shell's own namespaces.
c2() { "$@"; }
C2PID=$$
# The tar check copies this repository's sources (the same on every machine).
TAR_ROOT=$(cd "$here/../.." && pwd)
TAR_DIRS="client/src mds/src nfs-proto/src docs"

# --- checks of the FUSE mount ------------------------------------------------------------------

# User extended attributes: set, get, list, replace, remove on a file and a directory; client
# 2 sees them; a missing one is ENODATA; XATTR_CREATE on an existing one EEXIST. nfs-ganesha
# 4.3 (VFS) keeps none (RFC 8276's ops are NFS4ERR_NOTSUPP there): then user.* is
# EOPNOTSUPP and a listing is empty, as the Linux client answers on such a server.
user_xattrs() {
    mkdir -p "$M/xattr/d"
    echo x >"$M/xattr/f"
    python3 - "$M/xattr" "$C2M/xattr" "$SERVER" <<'PY'
import errno, os, sys
m, c2, server = sys.argv[1:4]
if server == "ganesha":
    for name in ("f", "d"):
        try:
            os.setxattr(f"{m}/{name}", "user.k1", b"v")
            sys.exit("ganesha: setxattr succeeded")
        except OSError as e:
            assert e.errno == errno.EOPNOTSUPP, e
        assert os.listxattr(f"{m}/{name}") == [], os.listxattr(f"{m}/{name}")
    print("the server keeps no xattrs: EOPNOTSUPP, empty listings")
    sys.exit(0)
for name in ("f", "d"):
    p, q = f"{m}/{name}", f"{c2}/{name}"
    os.setxattr(p, "user.k1", b"value one")
    os.setxattr(p, "user.big", os.urandom(8192))
    os.setxattr(p, "user.k1", b"replaced", os.XATTR_REPLACE)
    try:
        os.setxattr(p, "user.k1", b"x", os.XATTR_CREATE)
        sys.exit(f"{name}: XATTR_CREATE over an existing name succeeded")
    except OSError as e:
        assert e.errno == errno.EEXIST, e
    assert os.getxattr(q, "user.k1") == b"replaced", os.getxattr(q, "user.k1")
    assert sorted(x for x in os.listxattr(q) if x.startswith("user.")) == ["user.big", "user.k1"], os.listxattr(q)
    assert len(os.getxattr(q, "user.big")) == 8192
    os.removexattr(p, "user.k1")
    try:
        os.getxattr(q, "user.k1")
        sys.exit(f"{name}: removed xattr still read by client 2")
    except OSError as e:
        assert e.errno == errno.ENODATA, e
print("set, replace, create-exclusive, list, get on client 2, remove: file and directory")
PY
}

# mmap: a read mapping returns the file; a shared writable mapping's stores reach the server
# (msync, then client 2 reads them) and the file's size is kept.
mmap_read_write() {
    mkdir -p "$M/mmap"
    head -c 3145728 /dev/urandom >"$SRC/mmap"
    cp "$SRC/mmap" "$M/mmap/f"
    python3 - "$M/mmap/f" "$SRC/mmap" "$C2M/mmap/f" <<'PY'
import hashlib, mmap, os, sys
path, src, c2 = sys.argv[1:4]
want = open(src, "rb").read()
with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
    assert m[:] == want, "read mapping differs"
patch = os.urandom(5000)
with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
    m[1048000:1053000] = patch
    m[0:4] = b"MMAP"
    m.flush()
want = b"MMAP" + want[4:1048000] + patch + want[1053000:]
got = open(c2, "rb").read()
assert len(got) == len(want), (len(got), len(want))
assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), "client 2 does not read the stores"
print("read mapping of 3 MiB; shared writable stores seen by client 2 after msync")
PY
}

# A process holding an fcntl lock on one file and an flock on another is killed (SIGKILL):
# both are released, and a process on client 2 takes them at once. (Two files: over NFS an
# flock is a whole-file lock of another lock owner, so it would conflict with the same
# process's fcntl lock on the same file, as with the Linux client; nfs(5).)
locks_released_on_exit() {
    local f=$M/lockexit c2f=$C2M/lockexit holder i
    : >"$f"
    : >"$f.flock"
    rm -f /tmp/locked
    python3 - "$f" <<'PY' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
fd2 = os.open(sys.argv[1] + ".flock", os.O_RDWR)
fcntl.flock(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB)
open("/tmp/locked", "w").close()
time.sleep(600)
PY
    holder=$!
    for ((i = 0; i < 300; i++)); do [[ -e /tmp/locked ]] && break; sleep 0.1; done
    [[ -e /tmp/locked ]] || { echo "the holder did not lock"; kill -9 $holder; return 1; }
    python3 - "$c2f" <<'PY' || { kill -9 "$holder"; return 1; }
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fd2 = os.open(sys.argv[1] + ".flock", os.O_RDWR)
for what, f in (("fcntl", lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 10)),
                ("flock", lambda: fcntl.flock(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB))):
    try:
        f()
        sys.exit(f"client 2 took the {what} lock while the holder lives")
    except OSError:
        pass
PY
    kill -9 "$holder"
    wait "$holder" 2>/dev/null || true
    python3 - "$c2f" <<'PY'
import fcntl, os, sys, time
t = time.time()
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
fd2 = os.open(sys.argv[1] + ".flock", os.O_RDWR)
fcntl.flock(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB)
print(f"after kill -9 of the holder, client 2 took both locks in {time.time() - t:.2f} s")
PY
}

# The revalidate ioctl: client 1 reads a file and keeps it open; client 2 rewrites it in place
# (same size) and fsyncs. Through its open descriptor client 1 may still read its cached
# bytes (reported); after ioctl(PNFS_IOC_REVALIDATE) it reads client 2's. Then the same with
# `pnfs revalidate FILE`.
revalidate_ioctl() {
    mkdir -p "$M/reval"
    head -c 1048576 /dev/urandom >"$M/reval/f"
    python3 - "$M/reval/f" "$C2M/reval/f" "$PNFS" <<'PY'
import fcntl, os, subprocess, sys
path, c2, pnfs = sys.argv[1:4]
PNFS_IOC_REVALIDATE = (0xB7 << 8) | 1
fd = os.open(path, os.O_RDONLY)
before = os.pread(fd, 1 << 20, 0)
for round, how in enumerate(("ioctl", "pnfs revalidate")):
    new = os.urandom(1 << 20)
    w = os.open(c2, os.O_WRONLY)
    os.pwrite(w, new, 0)
    os.fsync(w)
    os.close(w)
    stale = os.pread(fd, 1 << 20, 0) == before
    if how == "ioctl":
        fcntl.ioctl(fd, PNFS_IOC_REVALIDATE)
    else:
        subprocess.run([pnfs, "revalidate", path], check=True)
    after = os.pread(fd, 1 << 20, 0)
    assert after == new, f"{how}: still not client 2's bytes after revalidating"
    print(f"{how}: {'stale' if stale else 'already fresh'} before, fresh after;", end=" ")
    before = new
PY
}

# 10,000 entries in one directory: made on client 1, listed whole by client 2 (readdir and
# `ls -l`), removed. The entries are symbolic links, one CREATE each: what is tested is the
# listing, and a regular file's create costs an OPEN, a CLOSE and their syncs (the create
# rate is measured by `pnfs bench`).
readdir_10000() {
    local d=$M/big10k t
    mkdir "$d"
    t=$(date +%s%N)
    python3 - "$d" <<'PY'
import os, sys
for i in range(10000):
    os.symlink("target", f"{sys.argv[1]}/entry{i:05d}")
PY
    echo -n "made in $((($(date +%s%N) - t) / 1000000)) ms; "
    t=$(date +%s%N)
    expect_eq "entries on client 2" "$(c2 ls -f "$C2M/big10k" | grep -c '^entry')" 10000
    expect_eq "ls -l on client 2" "$(c2 ls -l "$C2M/big10k" | grep -c ' entry')" 10000
    expect_eq "distinct names" "$(ls "$d" | sort -u | wc -l)" 10000
    echo -n "listed three times in $((($(date +%s%N) - t) / 1000000)) ms; "
    t=$(date +%s%N)
    rm -r "$d"
    [[ ! -e $d ]]
    echo "removed in $((($(date +%s%N) - t) / 1000000)) ms"
}

# copy_file_range of 16 MiB within the mount: the server copies (COPY; a server that cannot
# leaves it to the kernel, which copies through the page cache), the copy reads back whole.
copy_file_range_16MiB() {
    mkdir -p "$M/copy"
    head -c 16777216 /dev/urandom >"$SRC/copy"
    cp "$SRC/copy" "$M/copy/src"
    python3 - "$M/copy/src" "$M/copy/dst" <<'PY'
import os, sys
src, dst = sys.argv[1:3]
fi = os.open(src, os.O_RDONLY)
fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
left = os.fstat(fi).st_size
while left:
    n = os.copy_file_range(fi, fo, left)
    if n == 0:
        sys.exit("copy_file_range stopped early")
    left -= n
os.close(fo)
os.close(fi)
PY
    drop_caches
    expect_eq "sha256 of the copy" "$(sha "$M/copy/dst")" "$(sha "$SRC/copy")"
    expect_eq "client 2 reads the copy" "$(c2 sha256sum "$C2M/copy/dst" | cut -d' ' -f1)" "$(sha "$SRC/copy")"
}

statfs_check() {
    local total
    total=$(df -P -k "$M" | awk 'NR == 2 { print $2 }')
    echo "df: $total KiB in all"
    ((total > 0))
}

# --- the suite ---------------------------------------------------------------------------------

export -f $(compgen -A function)
export M C2M H SRC C2PID TAR_ROOT TAR_DIRS PNFS SERVER DS_DIRS

# The checks every client passes (checks.sh).
file_checks
check dd_conv_fsync dd_fsync
check fio_randwrite_verify_64MiB fio_verify
check tar_extract_diff tar_tree
check odirect_dd_1MiB_plus_1 odirect_dd $(((1 << 20) + 1))
check odirect_pread_eof_1MiB_plus_1 odirect_pread $(((1 << 20) + 1))
check fallocate_grow fallocate_grow
check fallocate_punch_hole fallocate_punch
check seek_data_hole seek_data_hole
check copy_file_range_16MiB copy_file_range_16MiB
check user_xattrs user_xattrs
check mmap_read_write mmap_read_write
check locks_released_on_exit locks_released_on_exit
check revalidate_ioctl revalidate_ioctl
check readdir_10000 readdir_10000
check statfs statfs_check
echo "WORKLOAD END"
