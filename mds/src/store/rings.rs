//! Ring generations: which data servers, in which order, each generation of the data server
//! ring had. A stripe set names a window of one generation's ring (`layouts::Device`:
//! generation, count, first position), so the membership of every generation a stripe set
//! may name must outlive configuration changes: adding a data server to the configuration
//! must not move the windows of files striped before, or their data would be read from the
//! wrong servers.
//!
//! Table `rings`: generation (u32) -> XDR `ring_record`; generations start at 1 and grow by
//! one whenever the MDS starts with a data server list (ids, in ring order) other than the
//! newest generation's. Addresses are not recorded: a data server keeps its id when it moves,
//! and its addresses come from the configuration. The order is the ring's: ascending ids,
//! unless failure domains interleave them (`cluster::ClusterConfig::ring_order`); records
//! written before failure domains existed are ascending, which is what the same
//! configuration gives now, so naming no domain adopts no new generation.
//!
//! ```text
//! struct ring_v1 { uint32_t ids<>; };   /* data server ids, in ring order */
//! union ring_record switch (uint32_t version) { case 1: ring_v1 v1; };
//! ```

// `#[derive(Xdr)]` also emits a proptest strategy under `cfg(any(test, feature = "arbitrary"))`,
// a feature of nfs-proto that this crate does not declare.
#![allow(unexpected_cfgs)]

use std::collections::BTreeMap;

use bytes::Bytes;
use nfs_proto::xdr::{from_bytes, to_bytes, Xdr};
use redb::{ReadableTable, TableDefinition};

use super::commit::Txn;
use super::{Pending, Store, StoreError};

/// `rings`: generation -> XDR `ring_record`.
pub(super) const RINGS: TableDefinition<u32, &[u8]> = TableDefinition::new("rings");

/// Most data servers one ring records (the configuration refuses more long before).
const MAX_RING: u32 = 65535;

#[derive(Clone, Debug, PartialEq, Xdr)]
struct RingV1 {
    #[xdr(max = MAX_RING)]
    ids: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Xdr)]
enum RingRecord {
    #[xdr(case = 1u32)]
    V1(RingV1),
}

fn encode(ids: &[u16]) -> Bytes {
    to_bytes(&RingRecord::V1(RingV1 {
        ids: ids.iter().map(|&i| u32::from(i)).collect(),
    }))
}

fn decode(b: &[u8]) -> Result<Vec<u16>, StoreError> {
    const BAD: StoreError = StoreError::Corrupt("ring record does not decode");
    let RingRecord::V1(r) = from_bytes::<RingRecord>(Bytes::copy_from_slice(b)).map_err(|_| BAD)?;
    r.ids
        .into_iter()
        .map(|i| u16::try_from(i).map_err(|_| BAD))
        .collect()
}

/// The committer job of [`Store::adopt_ring`].
fn adopt(tx: &Txn<'_>, ids: &[u16]) -> Result<u32, StoreError> {
    let mut t = tx.open(RINGS)?;
    let newest = match t.read().last()? {
        Some((k, v)) => Some((k.value(), decode(v.value())?)),
        None => None,
    };
    match newest {
        Some((generation, newest)) if newest == ids => Ok(generation),
        newest => {
            let generation = newest.map_or(1, |(g, _)| g + 1);
            t.write().insert(generation, &encode(ids)[..])?;
            Ok(generation)
        }
    }
}

impl Store {
    /// The generation whose ring is `ids` (data server ids, in ring order): the newest one
    /// if it has exactly these in this order, else a new generation recorded durably before
    /// the result.
    pub fn adopt_ring(&self, ids: Vec<u16>) -> Pending<u32> {
        let mut seen = std::collections::HashSet::new();
        let ids: Vec<u16> = ids.into_iter().filter(|&id| seen.insert(id)).collect();
        self.write(move |tx| adopt(tx, &ids))
    }

    /// Every recorded generation's data server ids.
    pub fn rings(&self) -> Result<BTreeMap<u32, Vec<u16>>, StoreError> {
        let r = self.read()?;
        let t = match r.open_table(RINGS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = BTreeMap::new();
        for entry in t.iter()? {
            let (k, v) = entry?;
            out.insert(k.value(), decode(v.value())?);
        }
        Ok(out)
    }
}
