//! fallocate, lseek's SEEK_DATA and SEEK_HOLE, and copy_file_range: NFSv4.2's ALLOCATE,
//! DEALLOCATE, SEEK and COPY (RFC 7862), as the Linux client maps them: a hole punched with
//! KEEP_SIZE is DEALLOCATE, any other mode but KEEP_SIZE is EOPNOTSUPP, the rest ALLOCATE
//! (`nfs42_fallocate`); a copy within the mount moves no byte through this client.

use client::Seek;
use fuser::{Errno, FileHandle};

use super::{errno, Shared};

impl Shared {
    pub(crate) async fn fallocate(
        &self,
        fh: FileHandle,
        offset: u64,
        len: u64,
        mode: i32,
    ) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let o = self.open_file(fh)?;
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        if mode == punch {
            o.file.deallocate(offset, len).await.map_err(errno)
        } else if mode & !libc::FALLOC_FL_KEEP_SIZE != 0 {
            Err(Errno::EOPNOTSUPP)
        } else {
            o.file.allocate(offset, len).await.map_err(errno)
        }
    }

    /// SEEK_DATA, SEEK_HOLE (the kernel answers the other whences itself).
    pub(crate) async fn lseek(
        &self,
        fh: FileHandle,
        offset: i64,
        whence: i32,
    ) -> Result<i64, Errno> {
        let what = match whence {
            libc::SEEK_DATA => Seek::Data,
            libc::SEEK_HOLE => Seek::Hole,
            _ => return Err(Errno::EINVAL),
        };
        let offset = u64::try_from(offset).map_err(|_| Errno::ENXIO)?;
        let o = self.open_file(fh)?;
        match o.file.seek(offset, what).await.map_err(errno)? {
            Some(at) => i64::try_from(at).map_err(|_| Errno::EOVERFLOW),
            None => Err(Errno::ENXIO),
        }
    }

    /// copy_file_range(2) between two files of the mount: the server copies. A server that
    /// cannot is EOPNOTSUPP, and the kernel copies through the page cache instead.
    pub(crate) async fn copy_range(
        &self,
        (from, off_in): (FileHandle, u64),
        (to, off_out): (FileHandle, u64),
        len: u64,
    ) -> Result<u32, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let src = self.open_file(from)?;
        let dst = self.open_file(to)?;
        // (The reply counts in 32 bits; the kernel asks for less than 4 GiB at a time.)
        let len = len.min(u64::from(u32::MAX) & !0xfff);
        match src.file.copy_to(off_in, &dst.file, off_out, len).await {
            Ok(c) => Ok(c.bytes as u32),
            Err(e) if e.is_no_server_copy() => Err(Errno::EOPNOTSUPP),
            Err(e) => Err(errno(e)),
        }
    }
}
