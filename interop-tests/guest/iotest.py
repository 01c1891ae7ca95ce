#!/usr/bin/env python3
"""Issue 18's checks that need system calls the shell has no tool for (run by workload.sh).

  iotest.py pread-eof PATH SOURCE  O_DIRECT preads of PATH (a copy of SOURCE, a local file)
                                   just before, at and past its end
  iotest.py seek PATH              writes a sparse file at PATH (runs of data and holes over
                                   several stripe units) and checks SEEK_DATA and SEEK_HOLE
                                   from many offsets against what was written
  iotest.py copy SRC DST           copies SRC to DST with copy_file_range

Each prints what it saw and exits 1 with the reason when something is not what a local file
system answers.
"""
import errno
import hashlib
import mmap
import os
import sys
import time

MIB = 1 << 20
KIB = 1 << 10


def show(off):
    """An offset in bytes, with its MiB and KiB for the reader."""
    if off < 0:
        return "ENXIO"
    mib, rest = divmod(off, MIB)
    kib, b = divmod(rest, KIB)
    parts = [f"{mib} MiB"] if mib else []
    if kib:
        parts.append(f"{kib} KiB")
    if b or not parts:
        parts.append(f"{b} B")
    return f"{off} ({' + '.join(parts)})"


def drop_caches():
    """Writes back and forgets cached pages, so the next calls go to the server."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def pread_eof(path, source):
    """O_DIRECT preads with a page-aligned buffer: the last byte, then at and past the end.

    The Linux client does not cap O_DIRECT reads at its cached size: what these return is what
    the server answers (bytes and eof)."""
    want = os.path.getsize(source)
    with open(source, "rb") as f:
        f.seek(max(want - 1, 0))
        last = f.read(1)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, MIB)
    bad = []
    try:
        size = os.fstat(fd).st_size
        if size != want:
            bad.append(f"size {size}, want {want}")
        cases = [(want, 0, "at the end"), (want + 1, 0, "1 B past the end"),
                 (want + 3 * MIB + 7, 0, "3 MiB + 7 B past the end")]
        if want:
            cases.insert(0, (want - 1, 1, "at the last byte"))
        for off, n, what in cases:
            got = os.preadv(fd, [buf], off)
            if got != n:
                bad.append(f"pread(1 MiB) {what} (offset {off}) returned {got} bytes, want {n}"
                           + (" (all zeros)" if got and not any(buf[:got]) else ""))
            elif n and buf[:1] != last:
                bad.append(f"pread {what}: byte {buf[:1].hex()}, want {last.hex()}")
        print(f"{len(cases)} O_DIRECT preads at and past {want} B", end="; ")
    finally:
        os.close(fd)
    if bad:
        print("; ".join(bad))
        return 1
    print("the last byte, then 0 bytes at and past the end")
    return 0


# The sparse file of the seek check: runs of data [start, end) at 64 KiB-aligned offsets (so
# the answers are exact on any file system with blocks of at most 64 KiB), holes of at least
# 1 MiB between them, a hole first and a hole last. With the default stripe unit of 1 MiB over
# three data servers, the runs and holes fall in every data server's objects, runs B and D
# cross a stripe unit boundary, and holes cover whole units and whole stripes.
RUNS = [
    (256 * KIB, 448 * KIB),                # A: unit 0
    (MIB + 512 * KIB, 2 * MIB + 256 * KIB),  # B: units 1 and 2
    (5 * MIB, 5 * MIB + 64 * KIB),         # C: unit 5
    (9 * MIB - 128 * KIB, 9 * MIB + 320 * KIB),  # D: units 8 and 9
    (13 * MIB, 14 * MIB),                  # E: unit 13
]
SEEK_SIZE = 16 * MIB + 123


def expect_data(off):
    """Where SEEK_DATA from off lands on a local file system (-1: ENXIO)."""
    if off >= SEEK_SIZE:
        return -1
    for start, end in RUNS:
        if end > off:
            return max(start, off)
    return -1  # only the hole to the end is left


def expect_hole(off):
    """Where SEEK_HOLE from off lands (-1: ENXIO); the end of file is a hole."""
    if off >= SEEK_SIZE:
        return -1
    for start, end in RUNS:
        if start <= off < end:
            return end
    return off


def lseek(fd, off, whence):
    try:
        return os.lseek(fd, off, whence)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return -1
        raise


def seek(path):
    """Writes the sparse file (size first, then the runs from the last to the first, so no
    write extends the file and the server's file system has no reason to preallocate), reads
    the answers fresh from the server, then checks that the holes read as zeros."""
    data = bytearray(SEEK_SIZE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, SEEK_SIZE)
    for start, end in reversed(RUNS):
        chunk = os.urandom(end - start)
        data[start:end] = chunk
        os.pwrite(fd, chunk, start)
    os.fsync(fd)
    os.close(fd)
    drop_caches()

    offsets = {0, 4 * KIB, SEEK_SIZE - 1, SEEK_SIZE, SEEK_SIZE + 1, SEEK_SIZE + 3 * MIB}
    for start, end in RUNS:
        offsets |= {start - 4 * KIB, start - 1, start, start + 4 * KIB, (start + end) // 2,
                    end - 1, end, end + 4 * KIB}
    bad = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in sorted(offsets):
            for whence, name, want in ((os.SEEK_DATA, "SEEK_DATA", expect_data(off)),
                                       (os.SEEK_HOLE, "SEEK_HOLE", expect_hole(off))):
                got = lseek(fd, off, whence)
                if got != want:
                    bad.append(f"{name} from {show(off)} = {show(got)}, want {show(want)}")
    finally:
        os.close(fd)
    print(f"{2 * len(offsets)} seeks over {len(RUNS)} runs of data in a file of {show(SEEK_SIZE)}",
          end="; ")
    if bad:
        print(f"{len(bad)} wrong: " + "; ".join(bad[:6]))
        return 1
    with open(path, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != hashlib.sha256(data).hexdigest():
        print("the contents read back differ from what was written (holes not zeros?)")
        return 1
    print("contents read back intact")
    return 0


def copy(src, dst):
    """copy_file_range of the whole of src, as many calls as the kernel needs."""
    size = os.path.getsize(src)
    t0 = time.monotonic()
    calls = done = 0
    with open(src, "rb") as s, open(dst, "wb") as d:
        while done < size:
            n = os.copy_file_range(s.fileno(), d.fileno(), size - done)
            calls += 1
            if n == 0:
                print(f"copy_file_range returned 0 after {done} of {size} B")
                return 1
            done += n
    print(f"copy_file_range: {done} B in {calls} call(s), {time.monotonic() - t0:.1f} s",
          end="; ")
    return 0


def main(argv):
    cmds = {"pread-eof": (pread_eof, 2), "seek": (seek, 1), "copy": (copy, 2)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) != cmds[argv[1]][1] + 2:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
