//! The space an object takes: `st_blocks` without the file system's preallocation past the
//! end, found with the `FS_IOC_FIEMAP` ioctl.
//!
//! Blocks past the end are speculative preallocation (XFS gives a 2 MiB file written in order
//! 4 MiB of blocks until its last close, and the descriptor cache keeps objects open), never
//! data: nothing here allocates past the end (ALLOCATE grows the size, DEALLOCATE only
//! frees). Counting them made a file's `space_used` on XFS up to twice its size, and a hole
//! punched in it look as if it freed next to nothing.

use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;

use crate::error::{Result, StoreError};

/// Extents asked for per FIEMAP call; a file with more past its end is counted as its size
/// rounded up to whole blocks, at most.
const EXTENTS: usize = 16;

/// `struct fiemap` of `<linux/fiemap.h>` without its extents: what `FS_IOC_FIEMAP`'s
/// opcode is encoded with.
#[repr(C)]
#[derive(Debug, Default)]
struct FiemapHeader {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

/// `struct fiemap_extent` of `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// A `struct fiemap` with room for [`EXTENTS`] extents after it.
#[repr(C)]
#[derive(Debug, Default)]
struct Fiemap {
    header: FiemapHeader,
    extents: [FiemapExtent; EXTENTS],
}

/// `FS_IOC_FIEMAP` = `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read_write::<FiemapHeader>(b'f', 11);

/// Bytes of storage the open object takes: `st_blocks * 512` less the blocks mapped past its
/// size rounded up to whole blocks. Where FIEMAP is not there (tmpfs) or too many extents lie
/// past the end, the count stops at the rounded-up size instead.
pub(super) fn data_blocks(fd: &OwnedFd, st: &rustix::fs::Stat) -> Result<u64> {
    let used = (st.st_blocks.max(0) as u64).saturating_mul(512);
    let block = (st.st_blksize.max(512) as u64).next_power_of_two();
    let end = (st.st_size.max(0) as u64)
        .div_ceil(block)
        .saturating_mul(block);
    let capped = used.min(end);
    let past = match mapped_past(fd, end) {
        Ok(Some(past)) => past,
        Ok(None) => return Ok(capped),
        Err(Errno::NOTTY | Errno::OPNOTSUPP | Errno::INVAL) => return Ok(capped),
        Err(e) => return Err(StoreError::from_errno("ioctl FS_IOC_FIEMAP", e, end, 0)),
    };
    Ok(used.saturating_sub(past).min(end))
}

/// Bytes mapped at or after `end`; `None` when more extents lie there than one call returns.
#[allow(unsafe_code)]
pub(super) fn mapped_past(fd: &OwnedFd, end: u64) -> rustix::io::Result<Option<u64>> {
    let mut map = Fiemap {
        header: FiemapHeader {
            fm_start: end,
            fm_length: u64::MAX - end,
            fm_extent_count: EXTENTS as u32,
            ..FiemapHeader::default()
        },
        ..Fiemap::default()
    };
    // SAFETY: FS_IOC_FIEMAP is `_IOWR('f', 11, struct fiemap)`; `Fiemap` is that struct's
    // `repr(C)` layout followed by `fm_extent_count` extents of `struct fiemap_extent`'s
    // layout, the room the kernel writes at most; it reads the header and writes the header
    // and up to that many extents.
    unsafe {
        let call = rustix::ioctl::Updater::<FS_IOC_FIEMAP, Fiemap>::new(&mut map);
        rustix::ioctl::ioctl(fd.as_fd(), call)?;
    }
    let mapped = (map.header.fm_mapped_extents as usize).min(EXTENTS);
    if mapped == EXTENTS {
        return Ok(None);
    }
    let past = map.extents[..mapped]
        .iter()
        .map(|e| {
            let start = e.fe_logical.max(end);
            e.fe_logical
                .saturating_add(e.fe_length)
                .saturating_sub(start)
        })
        .fold(0u64, u64::saturating_add);
    Ok(Some(past))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<FiemapHeader>(), 32);
        assert_eq!(std::mem::size_of::<FiemapExtent>(), 56);
        assert_eq!(FS_IOC_FIEMAP as u64 & 0xffff_ffff, 0xC020_660B);
    }
}
