//! Byte-range locks (fcntl F_GETLK, F_SETLK, F_SETLKW) and flock, on the server: each FUSE
//! lock owner (a process's file table for fcntl, an open file description for flock) is an
//! NFS lock-owner of its own (the library's [`client::File::lock_as`]), so two processes of
//! one mount conflict as two clients would, and a lock holds against every other client.
//!
//! A process's fcntl locks on a file go at any close(2) of it (FUSE flush, with the owner);
//! an flock lock with its open file description (FUSE release). A process killed while
//! waiting in F_SETLKW cannot be answered EINTR through fuser (it does not pass the kernel's
//! interrupts on), so the wait watches the process instead: it stops when the process is
//! gone or dying (SIGKILL pending, which the kernel posts for every fatal signal).

use client::{Conflict, Holder, LockKind};
use fuser::{Errno, FileHandle, ReplyLock};

use super::{errno, lock, Open, Shared};

/// FUSE's end of a lock reaching the end of the file (`OFFSET_MAX`).
const TO_EOF: u64 = i64::MAX as u64;

/// A lock's range in the library's terms: offset and length, 0 to the end of the file.
fn span(start: u64, end: u64) -> Result<(u64, u64), Errno> {
    if end < start {
        return Err(Errno::EINVAL);
    }
    Ok(if end >= TO_EOF {
        (start, 0)
    } else {
        (start, end - start + 1)
    })
}

fn kind_of(typ: i32) -> Result<LockKind, Errno> {
    match typ {
        libc::F_RDLCK => Ok(LockKind::Read),
        libc::F_WRLCK => Ok(LockKind::Write),
        _ => Err(Errno::EINVAL),
    }
}

/// Whether process `pid` is still there and not being killed: SIGKILL pending (bit 9 of
/// SigPnd or ShdPnd in /proc/PID/status) marks a process on its way out.
fn alive(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    !status.lines().any(|l| {
        let pending = l
            .strip_prefix("SigPnd:")
            .or_else(|| l.strip_prefix("ShdPnd:"));
        pending
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

impl Shared {
    /// F_GETLK: the lock in the way of `owner` taking `typ` on `start..=end`, with the pid
    /// of its holder when it is a process of this mount (0 for another client's).
    pub(crate) async fn getlk(
        &self,
        fh: FileHandle,
        owner: u64,
        (start, end): (u64, u64),
        typ: i32,
        reply: ReplyLock,
    ) {
        let r = async {
            let o = self.open_file(fh)?;
            let (offset, len) = span(start, end)?;
            o.file
                .test_lock_as(owner, kind_of(typ)?, offset, len)
                .await
                .map_err(errno)
        }
        .await;
        match r {
            Ok(None) => reply.locked(start, end, libc::F_UNLCK, 0),
            Ok(Some(Conflict {
                kind,
                offset,
                len,
                holder,
            })) => {
                let typ = match kind {
                    LockKind::Read => libc::F_RDLCK,
                    LockKind::Write => libc::F_WRLCK,
                };
                let end = if len == 0 { TO_EOF } else { offset + len - 1 };
                let pid = match holder {
                    Holder::Owner(h) => lock(&self.lockers).get(&h).copied().unwrap_or(0),
                    Holder::Client | Holder::OtherClient => 0,
                };
                reply.locked(offset, end, typ, pid)
            }
            Err(e) => reply.error(e),
        }
    }

    /// F_SETLK and F_SETLKW (`wait`), and flock (the whole file, its open file description
    /// as owner): takes, changes or (F_UNLCK) releases `owner`'s lock on `start..=end`.
    pub(crate) async fn setlk(
        &self,
        fh: FileHandle,
        owner: u64,
        (start, end): (u64, u64),
        typ: i32,
        pid: u32,
        wait: bool,
    ) -> Result<(), Errno> {
        let o = self.open_file(fh)?;
        let (offset, len) = span(start, end)?;
        if typ == libc::F_UNLCK {
            return o.file.unlock_as(owner, offset, len).await.map_err(errno);
        }
        lock(&self.lockers).insert(owner, pid);
        o.file
            .lock_as(owner, kind_of(typ)?, offset, len, wait, || alive(pid))
            .await
            .map_err(errno)?;
        // Granted as the waiter died (between two looks): nobody is left to release it.
        if !alive(pid) {
            let _ = o.file.release_owner(owner).await;
            return Err(Errno::EINTR);
        }
        Ok(())
    }

    /// Releases every lock `owner` holds on `o`'s file (POSIX close, flock release).
    pub(crate) async fn drop_locks(&self, o: &Open, owner: u64) {
        if let Err(e) = o.file.release_owner(owner).await {
            tracing::warn!("releasing the locks of a closed file: {e}");
        }
        lock(&self.lockers).remove(&owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_map_fuse_ends_to_lengths() {
        assert_eq!(span(0, TO_EOF), Ok((0, 0)));
        assert_eq!(span(100, TO_EOF), Ok((100, 0)));
        assert_eq!(span(0, 99), Ok((0, 100)));
        assert_eq!(span(5, 5), Ok((5, 1)));
        assert_eq!(span(6, 5), Err(Errno::EINVAL));
    }

    #[test]
    fn this_process_is_alive_and_a_missing_one_is_not() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX));
    }
}
