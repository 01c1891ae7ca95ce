//! Server-side copy and clone of local objects: `copy_file_range(2)` over the source's data
//! extents (found with `SEEK_DATA`/`SEEK_HOLE`), holes punched in the destination, and
//! reflink with the `FICLONERANGE` ioctl.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{FallocateFlags, SeekFrom};
use rustix::io::Errno;

use super::{bump, LocalStore};
use crate::error::{Result, StoreError};
use crate::id::ObjectId;
use crate::store::{copy_count, range_end, write_zeros};

/// Most bytes one `copy_file_range` call is asked for: the kernel copies in its own pieces
/// anyway, and a bounded call keeps one copy from holding a thread in the kernel for long.
const COPY_CHUNK: usize = 16 << 20;
/// Buffer of the read/write fallback, for file systems where `copy_file_range` is refused.
const FALLBACK_CHUNK: usize = 1 << 20;

/// `struct file_clone_range` of `<linux/fs.h>`, the argument of `FICLONERANGE`.
#[repr(C)]
#[derive(Debug)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

/// `FICLONERANGE` = `_IOW(0x94, 13, struct file_clone_range)`.
const FICLONERANGE: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::write::<FileCloneRange>(0x94, 13);

/// Shares `[src_off, src_off + len)` of `src` into `dst` at `dst_off` with `FICLONERANGE`.
#[allow(unsafe_code)]
fn ficlonerange(
    src: &OwnedFd,
    dst: &OwnedFd,
    src_off: u64,
    dst_off: u64,
    len: u64,
) -> rustix::io::Result<()> {
    let arg = FileCloneRange {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset: src_off,
        src_length: len,
        dest_offset: dst_off,
    };
    // SAFETY: FICLONERANGE is `_IOW(0x94, 13, struct file_clone_range)` and `FileCloneRange`
    // is that struct's exact `repr(C)` layout (four 64-bit fields); the kernel only reads it,
    // and `src_fd` is an open descriptor that outlives the call.
    unsafe {
        let call = rustix::ioctl::Setter::<FICLONERANGE, FileCloneRange>::new(arg);
        rustix::ioctl::ioctl(dst.as_fd(), call)
    }
}

/// Where the next data at or after `pos` starts (`end` if none before it).
fn next_data(fd: &OwnedFd, pos: u64, end: u64) -> Result<u64> {
    match rustix::fs::seek(fd, SeekFrom::Data(pos)) {
        Ok(at) => Ok(at.min(end)),
        Err(Errno::NXIO) => Ok(end),
        // No SEEK_DATA: the whole file counts as data.
        Err(Errno::INVAL) | Err(Errno::OPNOTSUPP) => Ok(pos),
        Err(e) => Err(StoreError::from_errno("lseek SEEK_DATA", e, pos, 0)),
    }
}

/// Where the data starting at `pos` ends (`end` at most).
fn next_hole(fd: &OwnedFd, pos: u64, end: u64) -> Result<u64> {
    match rustix::fs::seek(fd, SeekFrom::Hole(pos)) {
        Ok(at) => Ok(at.min(end)),
        Err(Errno::NXIO) | Err(Errno::INVAL) | Err(Errno::OPNOTSUPP) => Ok(end),
        Err(e) => Err(StoreError::from_errno("lseek SEEK_HOLE", e, pos, 0)),
    }
}

impl LocalStore {
    /// [`crate::ObjectStore::copy_range`] for local objects.
    pub(super) fn copy_objects(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<u64> {
        let (src, dst) = (self.naming.key(src), self.naming.key(dst));
        let Some(sfd) = self.file(src, false)? else {
            return Ok(0);
        };
        let count = copy_count(Self::file_size(&sfd)?, src_off, len);
        if count == 0 {
            return Ok(0);
        }
        let dst_end = range_end(dst_off, count, self.opts.max_object_size)?;
        if src == dst && src_off < dst_end && dst_off < src_off + count {
            return Err(StoreError::Io {
                op: "copy_file_range (overlapping ranges of one object)",
                errno: Errno::INVAL,
            });
        }
        let dfd = self.must_create(dst)?;
        let end = src_off + count;
        let at_dst = |p: u64| dst_off + (p - src_off);
        let mut pos = src_off;
        while pos < end {
            let data = next_data(&sfd, pos, end)?;
            if data > pos {
                self.make_hole(dst, &dfd, at_dst(pos), data - pos)?;
            }
            if data >= end {
                break;
            }
            let hole = next_hole(&sfd, data, end)?.max(data + 1).min(end);
            self.copy_extent(&sfd, &dfd, data, at_dst(data), hole - data)?;
            pos = hole;
        }
        if Self::file_size(&dfd)? < dst_end {
            rustix::fs::ftruncate(&*dfd, dst_end)
                .map_err(|e| StoreError::from_errno("ftruncate", e, dst_end, 0))?;
        }
        self.sync(dst, &dfd)?;
        Ok(count)
    }

    /// Copies one data extent with `copy_file_range`, falling back to reads and writes where
    /// the kernel refuses it. A source that shrank under the copy leaves the rest unwritten
    /// (it reads as the hole the source now has there).
    fn copy_extent(
        &self,
        sfd: &OwnedFd,
        dfd: &OwnedFd,
        from: u64,
        to: u64,
        len: u64,
    ) -> Result<()> {
        let (mut off_in, mut off_out) = (from, to);
        let end = from + len;
        while off_in < end {
            let want = ((end - off_in) as usize).min(COPY_CHUNK);
            bump(&self.counts.copy_file_range);
            match rustix::fs::copy_file_range(sfd, Some(&mut off_in), dfd, Some(&mut off_out), want)
            {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(Errno::INTR) => {}
                Err(Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) => {
                    return self.copy_by_buffer(sfd, dfd, off_in, off_out, end - off_in);
                }
                Err(e) => {
                    return Err(StoreError::from_errno(
                        "copy_file_range",
                        e,
                        off_out,
                        want as u64,
                    ))
                }
            }
        }
        Ok(())
    }

    /// The fallback copy: `pread` into one bounded buffer, `pwrite` it out.
    fn copy_by_buffer(
        &self,
        sfd: &OwnedFd,
        dfd: &OwnedFd,
        from: u64,
        to: u64,
        len: u64,
    ) -> Result<()> {
        let mut buf = vec![0u8; (len as usize).min(FALLBACK_CHUNK)];
        let mut done = 0u64;
        while done < len {
            let want = ((len - done) as usize).min(buf.len());
            bump(&self.counts.pread);
            let n = match rustix::io::pread(sfd, &mut buf[..want], from + done) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(StoreError::from_errno("pread", e, from + done, want as u64)),
            };
            let mut put = 0;
            while put < n {
                bump(&self.counts.pwritev);
                match rustix::io::pwrite(dfd, &buf[put..n], to + done + put as u64) {
                    Ok(0) => {
                        return Err(StoreError::Io {
                            op: "pwrite",
                            errno: Errno::IO,
                        })
                    }
                    Ok(m) => put += m,
                    Err(Errno::INTR) => {}
                    Err(e) => return Err(StoreError::from_errno("pwrite", e, to + done, n as u64)),
                }
            }
            done += n as u64;
        }
        Ok(())
    }

    /// Makes `[offset, offset + len)` of the destination read as zeros: a punched hole, or
    /// zeros written where the file system cannot punch. Nothing past the destination's end
    /// needs doing (the final size extension reads as zeros).
    fn make_hole(&self, id: ObjectId, fd: &OwnedFd, offset: u64, len: u64) -> Result<()> {
        let end = (offset + len).min(Self::file_size(fd)?);
        if offset >= end {
            return Ok(());
        }
        let punch = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        match rustix::fs::fallocate(fd, punch, offset, end - offset) {
            Ok(()) => Ok(()),
            Err(Errno::OPNOTSUPP) => write_zeros(self, id, offset, end - offset).map(|_| ()),
            Err(e) => Err(StoreError::from_errno("fallocate", e, offset, len)),
        }
    }

    /// [`crate::ObjectStore::clone_range`] for local objects.
    pub(super) fn clone_objects(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_off: u64,
        dst_off: u64,
        len: u64,
    ) -> Result<()> {
        let (src, dst) = (self.naming.key(src), self.naming.key(dst));
        let Some(sfd) = self.file(src, false)? else {
            return Ok(());
        };
        let count = copy_count(Self::file_size(&sfd)?, src_off, len);
        if count == 0 {
            return Ok(());
        }
        range_end(dst_off, count, self.opts.max_object_size)?;
        let dfd = self.must_create(dst)?;
        match ficlonerange(&sfd, &dfd, src_off, dst_off, count) {
            Ok(()) => self.sync(dst, &dfd),
            Err(Errno::OPNOTSUPP | Errno::XDEV | Errno::INVAL | Errno::NOTTY | Errno::NOSYS) => {
                Err(StoreError::NotSupported)
            }
            Err(e) => Err(StoreError::from_errno(
                "ioctl FICLONERANGE",
                e,
                dst_off,
                count,
            )),
        }
    }
}
