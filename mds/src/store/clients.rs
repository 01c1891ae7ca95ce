//! Confirmed client records, kept so that a restarted server knows who may reclaim state
//! (RFC 8881 section 8.4.2.1: the server must be able to tell, after a restart, which clients
//! held state before it).
//!
//! Two tables: `clients` (client id -> record) and its index `client_owners` (owner -> the
//! client id of that owner's record), so that persisting a confirmation, which replaces the
//! owner's earlier record, reads and writes a handful of B-tree entries whatever the number of
//! clients. (It used to decode every record to find the owner's: with thousands of clients
//! each CREATE_SESSION cost milliseconds in the single commit thread.)
//!
//! `client_owners` was added after format 1 was fixed; a store written without it (or by a
//! binary that did not keep it) gets it rebuilt at open ([`sync_owner_index`]), so the
//! format version did not change.

use std::collections::BTreeMap;

use bytes::Bytes;
use redb::{ReadableTable, Table};

use super::commit::Txn;
use super::schema::{decode_client, encode_client, CLIENTS, CLIENT_OWNERS};
use super::StoreError;

/// A confirmed client as persisted: written when EXCHANGE_ID's client is confirmed
/// (CREATE_SESSION), removed on DESTROY_CLIENTID or lease expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRecord {
    /// The `clientid4` this boot gave it (its high 16 bits are that boot's epoch).
    pub clientid: u64,
    /// `co_ownerid`: what identifies the client across its own restarts.
    pub owner: Bytes,
    /// `co_verifier`: changes when the client restarts.
    pub verifier: [u8; 8],
    /// The principal that created it (reclaims must come from the same one).
    pub principal: String,
    /// The server boot in which the record was written.
    pub boot_epoch: u64,
}

/// Writes `c` and drops the other record of the same owner, found through `client_owners`: a
/// confirmation replaces the client's record of an earlier boot (or of an earlier incarnation
/// in this boot), whose state is either reclaimed under the new client id or gone. Left
/// behind, an old record would make the owner a client of the previous boot at every later
/// restart, even after it destroyed its client id: allowed to reclaim state it no longer
/// holds, and waited for by every grace period. O(log n) in the number of records.
pub(super) fn put(tx: &Txn<'_>, c: &ClientRecord) -> Result<(), StoreError> {
    let mut owners = tx.open(CLIENT_OWNERS)?;
    let mut t = tx.open(CLIENTS)?;
    let indexed = owners.read().get(&c.owner[..])?.map(|g| g.value());
    // The record the index names, if it is really this owner's (one decode).
    let replaced = match indexed.filter(|&id| id != c.clientid) {
        Some(id) => match t.read().get(id)? {
            Some(g) if decode_client(id, g.value())?.owner == c.owner => Some(id),
            _ => None,
        },
        None => None,
    };
    let mut w = t.write();
    if let Some(id) = replaced {
        w.remove(id)?;
    }
    w.insert(c.clientid, &encode_client(c)[..])?;
    owners.write().insert(&c.owner[..], c.clientid)?;
    Ok(())
}

/// Removes the records of `owners` written before boot `epoch`; returns how many went. Runs
/// once per boot (at the end of the grace period), so it scans the table: that also catches
/// a second record of one owner that an older binary might have left.
pub(super) fn remove_owners_before(
    tx: &Txn<'_>,
    owners: &[Bytes],
    epoch: u64,
) -> Result<usize, StoreError> {
    let mut index = tx.open(CLIENT_OWNERS)?;
    let mut t = tx.open(CLIENTS)?;
    let gone: Vec<ClientRecord> = list(t.read())?
        .into_iter()
        .filter(|r| r.boot_epoch < epoch && owners.contains(&r.owner))
        .collect();
    if !gone.is_empty() {
        let indexed: Vec<bool> = gone
            .iter()
            .map(|r| is_indexed(index.read(), r))
            .collect::<Result<_, _>>()?;
        let mut w = t.write();
        for r in &gone {
            w.remove(r.clientid)?;
        }
        let mut iw = index.write();
        for (r, indexed) in gone.iter().zip(indexed) {
            if indexed {
                iw.remove(&r.owner[..])?;
            }
        }
    }
    Ok(gone.len())
}

/// Whether `client_owners` names `r` as its owner's record.
fn is_indexed<T: ReadableTable<&'static [u8], u64>>(
    index: &T,
    r: &ClientRecord,
) -> Result<bool, StoreError> {
    Ok(index.get(&r.owner[..])?.map(|g| g.value()) == Some(r.clientid))
}

/// Removes the record of `clientid` (and its owner's index entry); false if there was none.
pub(super) fn remove(tx: &Txn<'_>, clientid: u64) -> Result<bool, StoreError> {
    let mut index = tx.open(CLIENT_OWNERS)?;
    let mut t = tx.open(CLIENTS)?;
    let Some(rec) = t
        .read()
        .get(clientid)?
        .map(|g| decode_client(clientid, g.value()))
        .transpose()?
    else {
        return Ok(false);
    };
    let indexed = is_indexed(index.read(), &rec)?;
    t.write().remove(clientid)?;
    if indexed {
        index.write().remove(&rec.owner[..])?;
    }
    Ok(true)
}

pub(super) fn list<T: ReadableTable<u64, &'static [u8]>>(
    t: &T,
) -> Result<Vec<ClientRecord>, StoreError> {
    let mut out = Vec::new();
    for r in t.range::<u64>(..)? {
        let (k, v) = r?;
        out.push(decode_client(k.value(), v.value())?);
    }
    Ok(out)
}

/// Makes `client_owners` name, for each owner in `records` (the whole `clients` table), its
/// newest record (client ids grow from boot to boot), and nothing else. Called at open: the
/// index is missing in a store written before it existed, and a binary that did not know it
/// may have written `clients` since. True if it had to be rewritten.
pub(super) fn sync_owner_index(
    records: &[ClientRecord],
    index: &mut Table<'_, &'static [u8], u64>,
) -> Result<bool, StoreError> {
    let mut want: BTreeMap<&[u8], u64> = BTreeMap::new();
    for r in records {
        let id = want.entry(&r.owner[..]).or_insert(r.clientid);
        *id = (*id).max(r.clientid);
    }
    let mut have: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for e in index.iter()? {
        let (k, v) = e?;
        have.insert(k.value().to_vec(), v.value());
    }
    let same = have.len() == want.len()
        && have
            .iter()
            .zip(&want)
            .all(|((hk, hv), (wk, wv))| hk[..] == **wk && hv == wv);
    if same {
        return Ok(false);
    }
    index.retain(|_, _| false)?;
    for (owner, id) in want {
        index.insert(owner, id)?;
    }
    Ok(true)
}
