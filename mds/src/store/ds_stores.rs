//! The object store each data server last registered with (table `ds_stores`: data server
//! id -> its store's 16-byte identity, `pfs_core::ObjectStore::identity`). A data server that
//! comes back with another store (its disk replaced, its directory emptied, a new node
//! under the old id) holds none of the objects the MDS put there: every copy of a mirrored
//! file on it is marked stale in the same transaction that records the new identity, before
//! the registry counts the data server up, so no layout or read trusts those copies and
//! the re-silver task ([`crate::pnfs::mirrors`]) rebuilds them from the good ones. Stripes
//! of files without mirrors had their only copy there: they are counted and logged (their
//! data is lost; nothing can bring it back).
//!
//! The first identity heard from a data server is recorded as it is: a store from before
//! identities existed still holds what the MDS put there.

use std::collections::BTreeMap;
use std::sync::Arc;

use redb::{ReadableTable, TableDefinition};

use super::commit::Txn;
use super::schema::STRIPES;
use super::stale_copies::STALE_COPIES;
use super::{Pending, Store, StoreError};

/// `ds_stores`: data server id -> the identity of the store it last registered with.
pub(super) const DS_STORES: TableDefinition<u16, &[u8]> = TableDefinition::new("ds_stores");

/// What a data server that registered with a new store lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreReplaced {
    /// The identity recorded before.
    pub was: [u8; 16],
    /// Copies of mirrored files it held, now marked stale: (file id, window position,
    /// export).
    pub stale: Vec<(u64, u32, u16)>,
    /// Files that had a stripe with no other copy there.
    pub lost_files: u64,
}

/// The committer job of [`Store::ds_registered`].
fn registered(
    tx: &Txn<'_>,
    ds: u16,
    id: [u8; 16],
    rings: &BTreeMap<u32, Vec<u16>>,
    export: u16,
) -> Result<Option<StoreReplaced>, StoreError> {
    let mut t = tx.open(DS_STORES)?;
    let was: Option<[u8; 16]> = match t.read().get(ds)? {
        Some(v) => Some(
            v.value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("ds_stores record is not 16 bytes"))?,
        ),
        None => None,
    };
    let replaced = match was {
        Some(was) if was == id => return Ok(None),
        None => None,
        Some(was) => {
            let (copies, lost_files) = copies_on(tx, ds, rings)?;
            let mut stale_t = tx.open(STALE_COPIES)?;
            let mut stale = Vec::new();
            for (fileid, position) in copies {
                // The export a mark of the file names already (the handle clients hold),
                // else the caller's.
                let export = match stale_t
                    .read()
                    .range((fileid, 0)..=(fileid, u32::MAX))?
                    .next()
                {
                    Some(e) => e?.1.value() as u16,
                    None => export,
                };
                if stale_t.read().get((fileid, position))?.is_none() {
                    stale_t
                        .write()
                        .insert((fileid, position), u64::from(export))?;
                }
                stale.push((fileid, position, export));
            }
            Some(StoreReplaced {
                was,
                stale,
                lost_files,
            })
        }
    };
    t.write().insert(ds, &id[..])?;
    Ok(replaced)
}

/// The copies of mirrored files on data server `ds` (file id, window position), and how many
/// files without mirrors have a stripe there, from every stripe set on record and the ring
/// generation it names.
fn copies_on(
    tx: &Txn<'_>,
    ds: u16,
    rings: &BTreeMap<u32, Vec<u16>>,
) -> Result<(Vec<(u64, u32)>, u64), StoreError> {
    let t = tx.open(STRIPES)?;
    let mut copies = Vec::new();
    let mut lost = 0u64;
    for e in t.read().iter()? {
        let (k, v) = e?;
        let set = super::stripes::decode(v.value())?;
        let Some(ids) = rings.get(&set.device.generation).filter(|r| !r.is_empty()) else {
            continue;
        };
        let on: Vec<u32> = (0..u32::from(set.device.count))
            .filter(|&p| ids[(usize::from(set.device.first) + p as usize) % ids.len()] == ds)
            .collect();
        if on.is_empty() {
            continue;
        }
        if set.is_mirrored() {
            copies.extend(on.into_iter().map(|p| (k.value(), p)));
        } else {
            lost += 1;
        }
    }
    Ok((copies, lost))
}

impl Store {
    /// Records that data server `ds` registered with store identity `id`, durably before the
    /// result; `Some` when it had registered with another before: then every copy of a
    /// mirrored file on it (by `rings`, every ring generation's ids) is marked stale in the
    /// same transaction, named with `export` unless the file has a mark already. No commit
    /// when the identity is the one recorded.
    pub fn ds_registered(
        &self,
        ds: u16,
        id: [u8; 16],
        rings: Arc<BTreeMap<u32, Vec<u16>>>,
        export: u16,
    ) -> Pending<Option<StoreReplaced>> {
        self.write(move |tx| registered(tx, ds, id, &rings, export))
    }
}
