"""Client 1's side of workload.sh's deleg_recall check: the holder of a write delegation.

    delegtest.py hold PATH SIZE EXPECTED READY GO

Creates PATH read-write (the OPEN that gets client 1 its write delegation), notes its inode
number, writes SIZE random bytes with no fsync, so that they stay dirty in client 1's page
cache (under a write delegation the client need not send them), saves them to EXPECTED (a
local file) and writes the inode number to READY. It keeps the file open until GO exists,
while client 2 opens the file and the server recalls the delegation. Then it reads the file
through its own descriptor (its bytes must have survived the recall) and closes it, which
writes them to the server (close-to-open).

The inode number comes from fstat before the write: a stat of a file with dirty pages makes
the Linux client write them back first, which would spoil the point.
"""

import os
import sys
import time


def hold(path, size, expected, ready, go):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    ino = os.fstat(fd).st_ino
    data = os.urandom(size)
    written = 0
    while written < size:
        written += os.write(fd, data[written:])
    with open(expected, "wb") as e:
        e.write(data)
    with open(ready + ".tmp", "w") as r:
        r.write(f"{ino}\n")
    os.rename(ready + ".tmp", ready)
    deadline = time.monotonic() + 600
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("no go in 600 s")
        time.sleep(0.05)
    back = b""
    while len(back) < size:
        piece = os.pread(fd, size - len(back), len(back))
        if not piece:
            break
        back += piece
    os.close(fd)
    if back != data:
        sys.exit(f"client 1 reads back {len(back)} bytes, not the {size} it wrote")
    print(f"client 1 reads its {size} bytes back and closes")


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] != "hold":
        sys.exit(__doc__)
    hold(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])
