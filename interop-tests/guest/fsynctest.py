"""fsync and fdatasync checks, run by workload.sh in the guest.

    fsynctest.py PATH C2PID C2PATH

Writes PATH on client 1 and, after each fsync/fdatasync and while the file is still open,
checks that client 2 (nsenter into its namespaces) reads exactly those bytes from the server.
"""

import hashlib
import os
import subprocess
import sys

path, c2pid, c2path = sys.argv[1:4]


def client2_sha():
    out = subprocess.run(["nsenter", "-t", c2pid, "-n", "-m", "-u", "--", "sha256sum", c2path],
                         check=True, capture_output=True, text=True).stdout
    return out.split()[0]


data = os.urandom(2 * 1024 * 1024 + 3)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, data)
os.fsync(fd)
if client2_sha() != hashlib.sha256(data).hexdigest():
    sys.exit("client 2 does not see the data after fsync")
print("fsync: client 2 sees", len(data), "bytes")

more = os.urandom(100000)
os.pwrite(fd, more, 1000)
old_sha = hashlib.sha256(data).hexdigest()
data = data[:1000] + more + data[1000 + len(more):]
os.fdatasync(fd)
seen = client2_sha()
if seen != hashlib.sha256(data).hexdigest():
    what = "the old content" if seen == old_sha else "neither the old nor the new content"
    # Both clients share the guest's kernel: dropping its caches tells a stale cache on
    # client 2 from data the server does not have.
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    after = client2_sha() == hashlib.sha256(data).hexdigest()
    sys.exit(f"client 2 does not see the rewrite after fdatasync: it sees {what}; "
             f"after dropping caches it {'does' if after else 'still does not'}")
print("fdatasync: client 2 sees the rewrite")
os.close(fd)
