"""The processes of the server-restart scenario (restart.sh), run in the guest.

    restarttest.py writer DIR NAME LOG STOP         small files, each written, fsynced, closed
    restarttest.py appender FILE LOG STOP           one file kept open, appended and fsynced
    restarttest.py hold FILE START LEN READY RELEASE DONE
                                                    holds an fcntl write lock until RELEASE exists
    restarttest.py trylock FILE START LEN           one F_SETLK write lock: prints ok | denied
    restarttest.py verify LOG...                    checks every fsynced state recorded in LOGs

Writers record a state only after fsync returned: one line `PATH SIZE SHA256 TIME` per fsync in
LOG (a local file, written and flushed before the next write goes to NFS). A state in the log
is a promise the server made: `verify` checks, after the run, that the first SIZE bytes of PATH
have that checksum. Writers stop at the top of their loop once STOP exists, so a file's last
logged state is its final content. Any error (EIO, a short write, ...) ends the process with a
traceback and a non-zero status, which restart.sh reports.
"""

import errno
import fcntl
import hashlib
import os
import sys
import time

CHUNK = 64 * 1024


def record(log, path, size, digest):
    log.write(f"{path} {size} {digest} {time.time():.3f}\n")
    log.flush()


def writer(directory, name, log_path, stop):
    """Writes files of 64 KiB to 512 KiB in 64 KiB writes, fsyncs and closes each."""
    os.makedirs(directory, exist_ok=True)
    with open(log_path, "a") as log:
        i = 0
        while not os.path.exists(stop):
            path = os.path.join(directory, f"{name}.{i:04d}")
            size = CHUNK * (1 + i % 8)
            data = os.urandom(size)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            for off in range(0, size, CHUNK):
                if os.write(fd, data[off:off + CHUNK]) != CHUNK:
                    sys.exit(f"{path}: short write at {off}")
            os.fsync(fd)
            record(log, path, size, hashlib.sha256(data).hexdigest())
            os.close(fd)
            i += 1


def appender(path, log_path, stop):
    """Keeps one file open for the whole run (its open must be reclaimed across a restart),
    appending 64 KiB and fsyncing each time."""
    whole = hashlib.sha256()
    size = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with open(log_path, "a") as log:
        while not os.path.exists(stop):
            data = os.urandom(CHUNK)
            if os.write(fd, data) != CHUNK:
                sys.exit(f"{path}: short write at {size}")
            size += CHUNK
            whole.update(data)
            os.fsync(fd)
            record(log, path, size, whole.hexdigest())
    os.close(fd)


def hold(path, start, length, ready, release, done):
    """Takes an fcntl write lock on LEN bytes from START, says so in READY, and holds it (and
    the open file) until RELEASE exists; then writes `locked by <hostname>` at START (through
    the lock stateid, reclaimed if the server restarted meanwhile), fsyncs, unlocks and says so
    in DONE."""
    start, length = int(start), int(length)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, length, start)
    with open(ready, "w") as f:
        f.write(f"locked {time.time():.3f}\n")
    while not os.path.exists(release):
        time.sleep(0.2)
    os.pwrite(fd, f"locked by {os.uname().nodename}".encode(), start)
    os.fsync(fd)
    fcntl.lockf(fd, fcntl.LOCK_UN, length, start)
    with open(done, "w") as f:
        f.write(f"unlocked {time.time():.3f}\n")
    os.close(fd)


def trylock(path, start, length):
    """One non-blocking write lock attempt (F_SETLK) on LEN bytes from START; prints ok (and
    unlocks) or denied."""
    start, length = int(start), int(length)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, length, start)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            print("denied", errno.errorcode[e.errno])
            return
        raise
    fcntl.lockf(fd, fcntl.LOCK_UN, length, start)
    os.close(fd)
    print("ok")


def verify(logs):
    """Checks every recorded state; prints `STATES FILES` and exits non-zero on a mismatch.
    Each file is read once and its states checked in order of size, with one running hash (an
    appended file has hundreds of states: hashing each prefix anew would take minutes)."""
    states = {}
    for log_path in logs:
        with open(log_path) as log:
            for line in log:
                path, size, digest, _ = line.split()
                states.setdefault(path, []).append((int(size), digest))
    bad = []
    for path, recorded in states.items():
        with open(path, "rb") as f:
            content = f.read()
        running, done = hashlib.sha256(), 0
        for size, digest in sorted(recorded):
            running.update(content[done:size])
            done = size
            if len(content) < size or running.hexdigest() != digest:
                bad.append(f"{path}: first {size} bytes differ (file has {len(content)})")
        # Writers stop right after a recorded fsync: a file's last state is its whole content.
        if len(content) != done:
            bad.append(f"{path}: {len(content)} bytes, last fsynced state {done}")
    print(sum(map(len, states.values())), len(states))
    if bad:
        sys.exit("; ".join(bad[:5]) + f" ({len(bad)} bad)")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "verify":
        verify(args)
    else:
        {"writer": writer, "appender": appender, "hold": hold, "trylock": trylock}[cmd](*args)


main()
