"""Lock checks between two lock owners (processes), run by workload.sh in the guest.

    locktest.py flock PATH                 flock(2) between two processes of client 1
    locktest.py fcntl PATH                 fcntl byte-range locks between two processes of client 1
    locktest.py fcntl2 PATH C2PID C2PATH   fcntl byte-range locks between client 1 and client 2

Each peer is a separate process (`locktest.py serve PATH`, for client 2 under nsenter) that opens
PATH itself and runs one lock command per line of stdin, answering `ok`, `denied` or an errno
name. Exits non-zero with the first unexpected answer.
"""

import errno
import fcntl
import os
import select
import struct
import subprocess
import sys

DENIED = {errno.EAGAIN, errno.EACCES}


def serve(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    kinds = {"sh": fcntl.LOCK_SH, "ex": fcntl.LOCK_EX, "un": fcntl.LOCK_UN}
    for line in sys.stdin:
        op, *args = line.split()
        try:
            if op == "flock":  # flock KIND [nb]
                fcntl.flock(fd, kinds[args[0]] | (fcntl.LOCK_NB if "nb" in args else 0))
            elif op == "lock":  # lock KIND START LEN [nb]   (sh = read, ex = write, un = unlock)
                flags = kinds[args[0]] | (fcntl.LOCK_NB if "nb" in args else 0)
                if args[0] == "un":
                    flags = fcntl.LOCK_UN
                fcntl.lockf(fd, flags, int(args[2]), int(args[1]))
            elif op == "test":  # test KIND START LEN -> free | held
                ltype = fcntl.F_RDLCK if args[0] == "sh" else fcntl.F_WRLCK
                flock = struct.pack("hhqqi4x", ltype, os.SEEK_SET, int(args[1]), int(args[2]), 0)
                got = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, flock))
                print("free" if got[0] == fcntl.F_UNLCK else "held", flush=True)
                continue
            elif op == "reopen":  # close (dropping every fcntl lock of this process) and open
                os.close(fd)
                fd = os.open(path, os.O_RDWR)
            else:
                raise ValueError(op)
            print("ok", flush=True)
        except OSError as e:
            print("denied" if e.errno in DENIED else errno.errorcode[e.errno], flush=True)


class Peer:
    def __init__(self, name, path, prefix=()):
        self.name = name
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, os.path.abspath(__file__), "serve", path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline().strip() if ready else None

    def expect(self, cmd, want):
        self.send(cmd)
        got = self.answer(60)
        step = f"{self.name}: {cmd} -> {got}, want {want}"
        print(step)
        if got != want:
            sys.exit(f"FAILED at {step}")

    def blocked(self, cmd):
        """Sends a blocking lock request and checks that it waits."""
        self.send(cmd)
        got = self.answer(1.0)
        print(f"{self.name}: {cmd} (blocking) -> {got or 'waits'}")
        if got is not None:
            sys.exit(f"FAILED: {self.name}: {cmd} should wait, got {got}")

    def granted(self, cmd, timeout=60):
        got = self.answer(timeout)
        print(f"{self.name}: {cmd} (blocking) -> {got}")
        if got != "ok":
            sys.exit(f"FAILED: {self.name}: blocked {cmd} not granted after release: {got}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def flock_suite(a, b):
    a.expect("flock ex nb", "ok")
    b.expect("flock sh nb", "denied")  # conflict
    b.expect("flock ex nb", "denied")
    a.expect("flock un", "ok")  # release
    b.expect("flock ex nb", "ok")
    b.expect("flock un", "ok")
    a.expect("flock sh nb", "ok")  # shared with shared
    b.expect("flock sh nb", "ok")
    a.expect("flock ex nb", "denied")  # upgrade refused while the other shares
    b.expect("flock un", "ok")
    a.expect("flock ex nb", "ok")  # upgrade
    b.expect("flock sh nb", "denied")
    b.blocked("flock ex")  # a waiter is woken by the release
    a.expect("flock un", "ok")
    b.granted("flock ex")
    b.expect("flock un", "ok")


def fcntl_suite(a, b):
    a.expect("lock ex 0 100 nb", "ok")
    b.expect("lock ex 50 100 nb", "denied")  # overlapping write lock
    b.expect("lock sh 99 1 nb", "denied")  # read lock on the last locked byte
    b.expect("test ex 0 10", "held")
    b.expect("lock ex 100 100 nb", "ok")  # adjacent range is free
    a.expect("lock un 0 50", "ok")  # split: a keeps [50, 100)
    b.expect("lock ex 0 50 nb", "ok")
    b.expect("lock ex 50 1 nb", "denied")
    a.expect("lock un 0 0", "ok")  # len 0 = to the end of file
    b.expect("test ex 50 50", "free")
    b.expect("lock ex 50 50 nb", "ok")
    b.expect("lock un 0 0", "ok")
    a.expect("lock sh 0 100 nb", "ok")  # read locks share
    b.expect("lock sh 0 100 nb", "ok")
    a.expect("lock ex 0 100 nb", "denied")  # upgrade refused while b reads
    b.expect("lock un 0 0", "ok")
    a.expect("lock ex 0 100 nb", "ok")  # upgrade
    b.expect("lock sh 0 1 nb", "denied")
    a.expect("lock sh 0 100 nb", "ok")  # downgrade
    b.expect("lock sh 0 1 nb", "ok")
    b.expect("lock un 0 0", "ok")
    b.blocked("lock ex 10 10")  # a waiter is woken by the release
    a.expect("lock un 0 0", "ok")
    b.granted("lock ex 10 10")
    a.expect("lock ex 10 1 nb", "denied")
    b.expect("reopen", "ok")  # close releases every fcntl lock
    a.expect("lock ex 10 1 nb", "ok")
    a.expect("lock un 0 0", "ok")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "serve":
        serve(path)
        return
    open(path, "a").close()
    a = Peer("A", path)
    if mode == "fcntl2":
        prefix = ["nsenter", "-t", sys.argv[3], "-n", "-m", "-u", "--"]
        b = Peer("B(client 2)", sys.argv[4], prefix)
    else:
        b = Peer("B", path)
    {"flock": flock_suite, "fcntl": fcntl_suite, "fcntl2": fcntl_suite}[mode](a, b)
    a.close()
    b.close()


main()
