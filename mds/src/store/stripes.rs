//! The stripe set of each regular file: which window of the data server ring holds its data,
//! with which stripe unit and packing. Fixed when the file first gets a layout and kept for
//! the file's life (table `stripes`, beside the inode record, written by a committer job like
//! every other piece of metadata), so every layout the file is ever given, across restarts of
//! the MDS, names the same data servers and the same DS objects (docs/design.md, "pNFS
//! plan"). A file without a record has no layout yet; its data, if any, is in the MDS's own
//! object store.
//!
//! ```text
//! struct stripes_v1 {
//!     uint32_t unit;        /* stripe unit, bytes */
//!     uint32_t generation;  /* ring generation of the device */
//!     uint32_t count;       /* stripe count = data servers in the window */
//!     uint32_t first;       /* ring position of the window's first data server */
//!     bool     dense;       /* NFL4_UFLG_DENSE packing, else sparse */
//! };
//! struct stripes_v2 {
//!     stripes_v1 v1;        /* count: stripes x mirrors data servers */
//!     uint32_t mirrors;     /* copies of each stripe (flex files mirrors), >= 1 */
//! };
//! union stripes_record switch (uint32_t version) {
//!     case 1: stripes_v1 v1;    /* no mirrors */
//!     case 2: stripes_v2 v2;    /* written only for mirrors > 1 */
//! };
//! ```
//!
//! # Mirrors
//! A mirrored set (flex files, RFC 8435 section 5.1) keeps `mirrors` whole copies of each
//! stripe on distinct data servers of its window: copy `k` of stripe index `i` is object
//! `{file, k * stripes + i}` on the window's server at that position ([`StripeSet::copies`]),
//! so every object of the file is still `{file, position}` on the server at `position`, and
//! removal, which sends every position its REMOVE, needs no change. Copies that missed a
//! write are recorded stale ([`super::stale_copies`]) until re-silvered.
//!
//! The table was added after format 1 was fixed: opening a store creates it if missing, as
//! for the xattr tables, so the format version did not change. Deleting an inode deletes its
//! record ([`remove`], called where the namespace deletes inode records), and queues the
//! removal of the file's objects from its data servers in the same transaction
//! ([`super::removals`]).

// `#[derive(Xdr)]` also emits a proptest strategy under `cfg(any(test, feature = "arbitrary"))`,
// a feature of nfs-proto that this crate does not declare.
#![allow(unexpected_cfgs)]

use bytes::Bytes;
use layouts::{Device, Packing, StripeError, StripeMap};
use nfs_proto::nfs4::NfsFtype4;
use nfs_proto::xdr::{from_bytes, to_bytes, Xdr};
use redb::ReadableTable;

use super::commit::Txn;
use super::ns::Ns;
use super::schema::{load, STRIPES};
use super::{Pending, Store, StoreError};

/// The stripe set of one file, as fixed at its first layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripeSet {
    /// Stripe unit in bytes (`nfl_util` without its flags).
    pub unit: u32,
    /// The window of the data server ring: its generation, stripe count and first server.
    pub device: Device,
    /// Dense (`local`/`null` backends) or sparse (`shared`).
    pub packing: Packing,
    /// Copies of each stripe (1: no mirrors); the window holds `stripes x mirrors` servers.
    pub mirrors: u16,
}

impl StripeSet {
    /// Stripes of the file: its window's servers over its mirrors.
    pub fn stripe_count(&self) -> u16 {
        self.device.count / self.mirrors.max(1)
    }

    /// The offset mapping of a layout of this set: first stripe index 0 and pattern offset 0,
    /// as the MDS always hands out (RFC 8881 section 13.4).
    pub fn map(&self) -> Result<StripeMap, StripeError> {
        StripeMap::new(
            self.unit,
            u32::from(self.stripe_count()),
            0,
            0,
            self.packing,
        )
    }

    /// Whether the set keeps more than one copy of each stripe.
    pub fn is_mirrored(&self) -> bool {
        self.mirrors > 1
    }

    /// The stripe index window position `position` holds a copy of.
    pub fn stripe_of(&self, position: u32) -> u32 {
        position % u32::from(self.stripe_count().max(1))
    }

    /// The window positions (= object stripe numbers) of the copies of stripe index
    /// `index`, mirror 0 first.
    pub fn copies(&self, index: u32) -> impl Iterator<Item = u32> {
        let stripes = u32::from(self.stripe_count());
        (0..u32::from(self.mirrors.max(1))).map(move |k| k * stripes + index)
    }
}

/// Version 1 of a stripe set record (the key, the file id, is not repeated).
#[derive(Clone, Debug, PartialEq, Xdr)]
struct StripesV1 {
    unit: u32,
    generation: u32,
    count: u32,
    first: u32,
    dense: bool,
}

/// Version 2: a mirrored set.
#[derive(Clone, Debug, PartialEq, Xdr)]
struct StripesV2 {
    v1: StripesV1,
    mirrors: u32,
}

/// A stripe set record, versioned by its XDR discriminant.
#[derive(Clone, Debug, PartialEq, Xdr)]
enum StripesRecord {
    #[xdr(case = 1u32)]
    V1(StripesV1),
    #[xdr(case = 2u32)]
    V2(StripesV2),
}

fn encode(s: &StripeSet) -> Bytes {
    let v1 = StripesV1 {
        unit: s.unit,
        generation: s.device.generation,
        count: u32::from(s.device.count),
        first: u32::from(s.device.first),
        dense: s.packing == Packing::Dense,
    };
    // Sets without mirrors keep the version-1 record older binaries read.
    to_bytes(&if s.is_mirrored() {
        StripesRecord::V2(StripesV2 {
            v1,
            mirrors: u32::from(s.mirrors),
        })
    } else {
        StripesRecord::V1(v1)
    })
}

pub(super) fn decode(b: &[u8]) -> Result<StripeSet, StoreError> {
    const BAD: StoreError = StoreError::Corrupt("stripe set record does not decode");
    let (r, mirrors) = match from_bytes::<StripesRecord>(Bytes::copy_from_slice(b)) {
        Ok(StripesRecord::V1(r)) => (r, 1),
        Ok(StripesRecord::V2(r)) => (r.v1, u16::try_from(r.mirrors).map_err(|_| BAD)?),
        Err(_) => return Err(BAD),
    };
    let count = u16::try_from(r.count).map_err(|_| BAD)?;
    let first = u16::try_from(r.first).map_err(|_| BAD)?;
    if count == 0 || mirrors == 0 || count % mirrors != 0 {
        return Err(BAD);
    }
    Ok(StripeSet {
        unit: r.unit,
        device: Device {
            generation: r.generation,
            count,
            first,
        },
        packing: if r.dense {
            Packing::Dense
        } else {
            Packing::Sparse
        },
        mirrors,
    })
}

/// The committer job of [`Store::fix_stripes`]; `mark_writes` (the epoch) also marks the
/// file as written through an RW layout ([`super::layout_writes`]) in the same transaction.
pub(super) fn fix(
    tx: &Txn<'_>,
    fileid: u64,
    proposed: StripeSet,
    mark_writes: Option<u64>,
) -> Result<StripeSet, StoreError> {
    let mut ns = Ns::open(tx)?;
    let rec = load(ns.inodes.read(), fileid)?;
    if rec.ftype != NfsFtype4::NF4REG {
        return Err(StoreError::Inval("only regular files have stripe sets"));
    }
    let existing = match ns.stripes.get()?.read().get(fileid)? {
        Some(v) => Some(decode(v.value())?),
        None => None,
    };
    let set = match existing {
        Some(set) => set,
        None => {
            ns.stripes
                .get()?
                .write()
                .insert(fileid, &encode(&proposed)[..])?;
            proposed
        }
    };
    if let Some(epoch) = mark_writes {
        super::layout_writes::mark(tx, fileid, epoch)?;
    }
    Ok(set)
}

/// Deletes the stripe set of `fileid`, for the namespace code that deletes the inode record,
/// in the same transaction; returns the set it had, so that the caller can queue the removal
/// of the file's objects from its data servers ([`super::removals`]).
pub(super) fn remove(ns: &mut Ns<'_>, fileid: u64) -> Result<Option<StripeSet>, StoreError> {
    let t = ns.stripes.get()?;
    let mut w = t.write();
    let old = w.remove(fileid)?.map(|v| decode(v.value())).transpose();
    old
}

impl Store {
    /// The stripe set of `fileid`, or `None` if it never had a layout. NFS4ERR_STALE if the
    /// file is gone.
    pub fn stripes(&self, fileid: u64) -> Result<Option<StripeSet>, StoreError> {
        let r = self.read()?;
        load(&r.open_table(super::schema::INODES)?, fileid)?;
        let t = r.open_table(STRIPES)?;
        let v = t.get(fileid)?;
        v.map(|v| decode(v.value())).transpose()
    }

    /// Whether `fileid` has a stripe set: [`Store::stripes`] without reading the inode or
    /// decoding the set (a file's set goes in the transaction that deletes it), for the
    /// CLOSE and DELEGRETURN of every file (issue 22).
    pub fn has_stripes(&self, fileid: u64) -> Result<bool, StoreError> {
        let r = self.read()?;
        let t = r.open_table(STRIPES)?;
        Ok(t.get(fileid)?.is_some())
    }

    /// Fixes the stripe set of regular file `fileid` to `proposed` unless it already has one,
    /// durably before the result, and returns the set in force: the first layout of a file
    /// decides where its data lives, later ones (and the same file after a restart) find it.
    /// Another type is NFS4ERR_INVAL, a file that is gone NFS4ERR_STALE. With `rw` (the
    /// layout being granted is RW) the file is also marked as written through a layout
    /// ([`Store::mark_layout_writes`]), in the same transaction.
    pub fn fix_stripes(&self, fileid: u64, proposed: StripeSet, rw: bool) -> Pending<StripeSet> {
        let mark = rw.then(|| self.boot_epoch());
        self.write(move |tx| fix(tx, fileid, proposed, mark))
    }

    /// Moves empty regular file `fileid` from stripe set `from` to `to`, durably, and returns
    /// the set in force: `to`, or the set it has if that is not `from` or its recorded size is
    /// not 0 (then nothing changes). For a COPY or CLONE into a new file, so that its objects
    /// lie on the source's data servers (`ops::copy`); the caller has checked that no layout
    /// of the file is out and that its objects hold nothing.
    pub fn restripe_empty(
        &self,
        fileid: u64,
        from: StripeSet,
        to: StripeSet,
    ) -> Pending<StripeSet> {
        self.write(move |tx| {
            let mut ns = Ns::open(tx)?;
            let rec = load(ns.inodes.read(), fileid)?;
            let existing = match ns.stripes.get()?.read().get(fileid)? {
                Some(v) => Some(decode(v.value())?),
                None => None,
            };
            match existing {
                Some(set) if set == from && rec.size == 0 => {
                    ns.stripes.get()?.write().insert(fileid, &encode(&to)[..])?;
                    Ok(to)
                }
                Some(set) => Ok(set),
                None => Err(StoreError::Inval("no stripe set to move")),
            }
        })
    }
}
