//! Space and extents of striped files on their data servers: ALLOCATE, DEALLOCATE and SEEK
//! of a file with a stripe set act on its DS objects `{file, stripe index}` through the
//! control protocol, each index's share of the file range cut with the file's stripe map.
//!
//! ```text
//!  file range [offset, end) ─ dense ─> index i: object range
//!                                      [object_size(i, offset), object_size(i, end))
//!                           └ sparse ─> one data server, stripe 0, the file range itself
//!                                      (the shared backend: every index is one file)
//!  ALLOCATE   ─> control ALLOCATE per index with a range, concurrently; when the file grows,
//!               an index with none gets its last byte of the new size allocated, so every
//!               object reaches its share (StripeMap::object_size) of the new size
//!  DEALLOCATE ─> control DEALLOCATE per index with a range, concurrently (each data server
//!               ignores what lies past its object's end) ─> changed if any did something
//!  SEEK       ─> control SEEK of index i at object_size(i, offset), concurrently,
//!               answers turned into file offsets (StripeMap::file_offset) ─> smallest
//! ```
//!
//! Under dense packing index `i`'s bytes below file offset `x` are exactly the first
//! `object_size(i, x)` bytes of its object, in file order, so a file range is one object
//! range per index, whatever its length: no per-unit list, memory bounded for any range.
//!
//! Every data server the operation needs must be up before anything is sent (else
//! NFS4ERR_DELAY, as for I/O through the MDS), and every call durable before the caller
//! records anything: a failed call fails the operation, which the client retries (each
//! procedure is idempotent).

use layouts::{Packing, StripeMap};
use nfs_proto::nfs4::NfsStat4;
use pfs_core::{Deallocated, ObjectId, SeekWhat};

use crate::pnfs::datapath::{admit, concurrently, ctl_status, object, Marks, Striping};
use crate::pnfs::dsctl::DsControl;
use crate::server::Pnfs;
use crate::store::StripeSet;

/// Index `index`'s object range `(start, end)` holding its bytes of file range
/// `[offset, end)` under dense packing (empty when `start == end`).
pub fn dense_object_range(map: &StripeMap, index: u32, offset: u64, end: u64) -> (u64, u64) {
    (map.object_size(index, offset), map.object_size(index, end))
}

/// One control call of a space operation: the data server, its connection and the object
/// range.
struct Target {
    ds: u16,
    ctl: DsControl,
    /// The stripe index the object holds.
    index: u32,
    object: ObjectId,
    offset: u64,
    len: u64,
}

/// The copies a space operation changes, each as (stripe index, window position, data
/// server, connection), checked up before anything is sent: every copy of every stripe
/// index that is not stale; under sparse packing the first copy that is up (one is enough:
/// every index is the same file). A copy of a mirrored stripe that is down while another
/// is up is returned apart, to be marked stale; a stripe with no copy up is NFS4ERR_DELAY.
#[allow(clippy::type_complexity)]
fn servers(
    pnfs: &Pnfs,
    striping: &Striping,
    packing: Packing,
) -> Result<(Vec<(u32, u32, u16, DsControl)>, Vec<u32>), NfsStat4> {
    match packing {
        Packing::Dense => {
            let mut out = Vec::new();
            let mut behind = Vec::new();
            for i in 0..striping.map.count {
                let (up, down) = striping.to_change(pnfs, i)?;
                out.extend(up.into_iter().map(|(pos, ds, c)| (i, pos, ds, c)));
                behind.extend(down);
            }
            Ok((out, behind))
        }
        Packing::Sparse => (0..striping.map.count)
            .find_map(|i| striping.control(pnfs, i).ok())
            .map(|(pos, ds, c)| (vec![(0, pos, ds, c)], Vec::new()))
            .ok_or(NfsStat4::NFS4ERR_DELAY),
    }
}

/// The object ranges a space operation on file range `[offset, end)` touches, and the
/// copies to mark stale once it is done.
fn targets(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    end: u64,
) -> Result<(Striping, Vec<Target>, Vec<u32>), NfsStat4> {
    let striping = Striping::of(pnfs, fileid, set)?;
    let mut out = Vec::new();
    let (copies, behind) = servers(pnfs, &striping, set.packing)?;
    for (index, pos, ds, ctl) in copies {
        let (start, stop) = match set.packing {
            Packing::Dense => dense_object_range(&striping.map, index, offset, end),
            Packing::Sparse => (offset, end),
        };
        out.push(Target {
            ds,
            ctl,
            index,
            object: object(fileid, pos),
            offset: start,
            len: stop - start,
        });
    }
    Ok((striping, out, behind))
}

/// ALLOCATE of file range `[offset, end)` of striped file `fileid`, whose recorded size is
/// `size`: every index's share reserved on its data server, durably, before this returns.
/// When `end > size` the file grows, and every object is made to reach its share of the new
/// size (an index without bytes in the range gets the last byte of its share allocated:
/// `fallocate` grows an object atomically, where a truncate could cut off bytes a client
/// just wrote through a layout).
#[allow(clippy::too_many_arguments)]
pub async fn allocate(
    pnfs: &Pnfs,
    marks: Marks<'_>,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    end: u64,
    size: u64,
) -> Result<(), NfsStat4> {
    let _guard = admit(pnfs, fileid, set)?;
    let (striping, targets, behind) = targets(pnfs, fileid, set, offset, end)?;
    let calls: Vec<_> = targets
        .into_iter()
        .filter_map(|mut t| {
            if t.len == 0 && end > size && set.packing == Packing::Dense {
                let share = striping.map.object_size(t.index, end);
                if share == 0 {
                    return None;
                }
                (t.offset, t.len) = (share - 1, 1);
            }
            (t.len > 0).then_some(t)
        })
        .map(|t| async move {
            t.ctl
                .allocate(t.object, t.offset, t.len)
                .await
                .map_err(|e| ctl_status(t.ds, &e))
        })
        .collect();
    for r in concurrently(calls).await? {
        r?;
    }
    marks.mark(pnfs, fileid, behind).await
}

/// DEALLOCATE of file range `[offset, end)` of striped file `fileid`: every index's share
/// reads as zeros on its data server, durably, before this returns (what lies past an
/// object's end is left alone there). Returns whether any data server changed anything.
pub async fn deallocate(
    pnfs: &Pnfs,
    marks: Marks<'_>,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    end: u64,
) -> Result<bool, NfsStat4> {
    let _guard = admit(pnfs, fileid, set)?;
    let (_, targets, behind) = targets(pnfs, fileid, set, offset, end)?;
    let calls: Vec<_> = targets
        .into_iter()
        .filter(|t| t.len > 0)
        .map(|t| async move {
            t.ctl
                .deallocate(t.object, t.offset, t.len)
                .await
                .map_err(|e| ctl_status(t.ds, &e))
        })
        .collect();
    let mut changed = false;
    for r in concurrently(calls).await? {
        changed |= r? != Deallocated::Nothing;
    }
    marks.mark(pnfs, fileid, behind).await?;
    Ok(changed)
}

/// Where the next data or hole of striped file `fileid` at or after file offset `offset`
/// starts, combined over its stripe indices (the caller checked `offset` is below the
/// file's size and clips the answer to it):
///
/// * data: the smallest file offset at or after `offset` that holds data in its stripe's
///   object; `None` when no object holds any there.
/// * hole: the smallest file offset at or after `offset` in a hole of its stripe's object,
///   where everything past an object's end is a hole (`None` never: the caller's size is
///   the virtual hole at the end).
pub async fn seek(
    pnfs: &Pnfs,
    fileid: u64,
    set: &StripeSet,
    offset: u64,
    what: SeekWhat,
) -> Result<Option<u64>, NfsStat4> {
    let striping = Striping::of(pnfs, fileid, set)?;
    let map = striping.map;
    // One copy of each stripe index answers.
    let one: Vec<(u32, u32, u16, DsControl)> = match set.packing {
        Packing::Dense => (0..map.count)
            .map(|i| {
                striping
                    .control(pnfs, i)
                    .map(|(pos, ds, c)| (i, pos, ds, c))
            })
            .collect::<Result<_, _>>()?,
        Packing::Sparse => servers(pnfs, &striping, set.packing)?.0,
    };
    let asks: Vec<_> = one
        .into_iter()
        .map(|(index, pos, ds, ctl)| {
            let at = match set.packing {
                Packing::Dense => map.object_size(index, offset),
                Packing::Sparse => offset,
            };
            (index, pos, ds, ctl, at)
        })
        .collect();
    let calls: Vec<_> = asks
        .iter()
        .map(|(_, pos, ds, ctl, at)| {
            let (ctl, ds, obj, at) = (ctl.clone(), *ds, object(fileid, *pos), *at);
            async move {
                ctl.seek(obj, at, what)
                    .await
                    .map_err(|e| ctl_status(ds, &e))
            }
        })
        .collect();
    let answers = concurrently(calls).await?;
    let mut best: Option<u64> = None;
    for ((index, _, _, _, at), answer) in asks.iter().zip(answers) {
        // An object that ends at or before `at` is all hole from there on.
        let found = match (answer?, what) {
            (Some(o), _) => Some(o),
            (None, SeekWhat::Hole) => Some(*at),
            (None, SeekWhat::Data) => None,
        };
        let Some(o) = found else { continue };
        let file = match set.packing {
            Packing::Dense => map.file_offset(*index, o),
            Packing::Sparse => Some(o),
        };
        if let Some(f) = file.filter(|&f| f >= offset) {
            best = Some(best.map_or(f, |b| b.min(f)));
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_object_ranges_hold_exactly_each_indexs_bytes_of_the_range() {
        let map = StripeMap::new(64, 3, 0, 0, Packing::Dense).unwrap();
        for (offset, end) in [
            (0, 64 * 7 + 5),
            (10, 20),
            (70, 64 * 3 + 1),
            (64, 128),
            (5, 5),
        ] {
            for index in 0..3 {
                let (start, stop) = dense_object_range(&map, index, offset, end);
                let want: Vec<u64> = (offset..end)
                    .filter(|&x| map.index_of(x).unwrap() == index)
                    .map(|x| map.object_offset(x).unwrap())
                    .collect();
                let got: Vec<u64> = (start..stop).collect();
                assert_eq!(got, want, "index {index} of [{offset}, {end})");
            }
        }
    }

    #[test]
    fn a_huge_range_is_one_object_range_per_index() {
        let map = StripeMap::new(1 << 20, 3, 0, 0, Packing::Dense).unwrap();
        let end = i64::MAX as u64;
        let total: u64 = (0..3)
            .map(|i| {
                let (a, b) = dense_object_range(&map, i, 0, end);
                b - a
            })
            .sum();
        assert_eq!(total, end);
    }
}
