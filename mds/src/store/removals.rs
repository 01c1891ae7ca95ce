//! The queue of data server objects to remove (table `ds_removals`): when a striped file's
//! inode is deleted, the data servers that hold its objects are recorded in the same
//! transaction, so a crash between the metadata commit and the data servers' REMOVE leaks
//! nothing; the MDS's removal task ([`crate::pnfs::removals`]) sends REMOVE to each of them and
//! takes each one off the record as it acknowledges, and the record goes with the last one.
//!
//! ```text
//! struct ds_removal_v1 {
//!     uint32_t servers<>;   /* data server ids that have not acknowledged REMOVE yet */
//! };
//! union ds_removal_record switch (uint32_t version) { case 1: ds_removal_v1 v1; };
//! ```
//!
//! The key is the file id. The table was added after format 1 was fixed: opening a store
//! creates it if missing, as for `stripes`, so the format version did not change.

// `#[derive(Xdr)]` also emits a proptest strategy under `cfg(any(test, feature = "arbitrary"))`,
// a feature of nfs-proto that this crate does not declare.
#![allow(unexpected_cfgs)]

use bytes::Bytes;
use nfs_proto::xdr::{from_bytes, to_bytes, Xdr};
use redb::{ReadableTable, ReadableTableMetadata};

use super::commit::{Tbl, Txn};
use super::schema::DS_REMOVALS;
use super::{Pending, Store, StoreError};

/// The most data servers one record may list (the ring's ids are `u16`; a record lists each
/// at most once).
const MAX_SERVERS: usize = 1 << 16;

/// One queued removal: the file whose objects are to go, and the data servers that still
/// hold them (none listed twice, in ascending order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsRemoval {
    /// The deleted file's id (its objects are `(file, stripe)` on each data server).
    pub file: u64,
    /// The data servers that have not acknowledged REMOVE yet.
    pub servers: Vec<u16>,
}

/// Version 1 of a removal record (the key, the file id, is not repeated).
#[derive(Clone, Debug, PartialEq, Xdr)]
struct DsRemovalV1 {
    #[xdr(max = 65536)]
    servers: Vec<u32>,
}

/// A removal record, versioned by its XDR discriminant.
#[derive(Clone, Debug, PartialEq, Xdr)]
enum DsRemovalRecord {
    #[xdr(case = 1u32)]
    V1(DsRemovalV1),
}

fn encode(servers: &[u16]) -> Bytes {
    to_bytes(&DsRemovalRecord::V1(DsRemovalV1 {
        servers: servers.iter().map(|&s| u32::from(s)).collect(),
    }))
}

fn decode(b: &[u8]) -> Result<Vec<u16>, StoreError> {
    const BAD: StoreError = StoreError::Corrupt("data server removal record does not decode");
    let DsRemovalRecord::V1(r) =
        from_bytes::<DsRemovalRecord>(Bytes::copy_from_slice(b)).map_err(|_| BAD)?;
    if r.servers.len() > MAX_SERVERS {
        return Err(BAD);
    }
    r.servers
        .into_iter()
        .map(|s| u16::try_from(s).map_err(|_| BAD))
        .collect()
}

/// Sorted, without repeats.
fn normalise(mut servers: Vec<u16>) -> Vec<u16> {
    servers.sort_unstable();
    servers.dedup();
    servers
}

/// Queues the removal of `file`'s objects from `servers`, for the namespace code that deletes
/// the inode, in the same transaction. Servers already queued for the file stay queued. An
/// empty list queues nothing.
pub(super) fn queue(
    t: &mut Tbl<'_, u64, &'static [u8]>,
    file: u64,
    servers: Vec<u16>,
) -> Result<(), StoreError> {
    let mut all = match t.read().get(file)? {
        Some(v) => decode(v.value())?,
        None => Vec::new(),
    };
    all.extend(servers);
    let all = normalise(all);
    if !all.is_empty() {
        t.write().insert(file, &encode(&all)[..])?;
    }
    Ok(())
}

/// The committer job of [`Store::ds_removals_acknowledged`].
fn acknowledge(tx: &Txn<'_>, ds: u16, files: &[u64]) -> Result<usize, StoreError> {
    let mut t = tx.open(DS_REMOVALS)?;
    // Checks (decoding every record concerned) before the first write.
    let mut changes = Vec::with_capacity(files.len());
    for &file in files {
        let Some(v) = t.read().get(file)? else {
            continue;
        };
        let servers = decode(v.value())?;
        if servers.contains(&ds) {
            let left: Vec<u16> = servers.into_iter().filter(|&s| s != ds).collect();
            changes.push((file, left));
        }
    }
    let mut done = 0;
    for (file, left) in changes {
        if left.is_empty() {
            t.write().remove(file)?;
            done += 1;
        } else {
            t.write().insert(file, &encode(&left)[..])?;
        }
    }
    Ok(done)
}

impl Store {
    /// Up to `limit` queued removals of files with ids from `from` on, in file id order:
    /// files whose inode is gone and whose objects some data servers still hold.
    pub fn ds_removals(&self, from: u64, limit: usize) -> Result<Vec<DsRemoval>, StoreError> {
        let r = self.read()?;
        let t = r.open_table(DS_REMOVALS)?;
        let mut out = Vec::new();
        for e in t.range(from..)?.take(limit) {
            let (k, v) = e?;
            out.push(DsRemoval {
                file: k.value(),
                servers: decode(v.value())?,
            });
        }
        Ok(out)
    }

    /// How many files are queued for removal from data servers.
    pub fn ds_removal_count(&self) -> Result<u64, StoreError> {
        let r = self.read()?;
        Ok(r.open_table(DS_REMOVALS)?.len()?)
    }

    /// Data server `ds` acknowledged REMOVE of `files` (its objects of them are gone, durably):
    /// it comes off their records, and a record with no server left goes, durably before the
    /// result. Returns how many records went. Files not queued, or not queued for `ds`, are
    /// skipped (a repeated acknowledgement after a crash).
    pub fn ds_removals_acknowledged(&self, ds: u16, files: Vec<u64>) -> Pending<usize> {
        self.write(move |tx| acknowledge(tx, ds, &files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_starts_with_its_version_and_lists_the_servers() {
        let b = encode(&[2, 7]);
        assert_eq!(
            &b[..],
            &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 7],
            "version 1, two servers: 2 and 7"
        );
        assert_eq!(decode(&b).unwrap(), [2, 7]);
    }

    #[test]
    fn every_prefix_of_a_record_and_an_unknown_version_are_corrupt() {
        let b = encode(&[1, 2, 3]);
        for n in 0..b.len() {
            assert!(
                matches!(decode(&b[..n]), Err(StoreError::Corrupt(_))),
                "{n}"
            );
        }
        let mut v2 = b.to_vec();
        v2[3] = 2;
        assert!(matches!(decode(&v2), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn a_server_id_above_u16_is_corrupt() {
        let b = to_bytes(&DsRemovalRecord::V1(DsRemovalV1 {
            servers: vec![1, 70_000],
        }));
        assert!(matches!(decode(&b), Err(StoreError::Corrupt(_))));
    }
}
