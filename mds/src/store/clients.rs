//! Confirmed client records, kept so that a restarted server knows who may reclaim state
//! (RFC 8881 section 8.4.2.1: the server must be able to tell, after a restart, which clients
//! held state before it).

use bytes::Bytes;
use redb::ReadableTable;

use super::commit::Txn;
use super::schema::{decode_client, encode_client, CLIENTS};
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

/// Writes `c` and drops every other record of the same owner: a confirmation replaces the
/// client's records of earlier boots (and of an earlier incarnation in this boot), whose state
/// is either reclaimed under the new client id or gone. Left behind, an old record would make
/// the owner a client of the previous boot at every later restart, even after it destroyed its
/// client id: allowed to reclaim state it no longer holds, and waited for by every grace period.
pub(super) fn put(tx: &Txn<'_>, c: &ClientRecord) -> Result<(), StoreError> {
    let mut t = tx.open(CLIENTS)?;
    let replaced: Vec<u64> = list(t.read())?
        .into_iter()
        .filter(|r| r.owner == c.owner && r.clientid != c.clientid)
        .map(|r| r.clientid)
        .collect();
    let w = t.write();
    for id in replaced {
        w.remove(id)?;
    }
    w.insert(c.clientid, &encode_client(c)[..])?;
    Ok(())
}

/// Removes the records of `owners` written before boot `epoch`; returns how many went.
pub(super) fn remove_owners_before(
    tx: &Txn<'_>,
    owners: &[Bytes],
    epoch: u64,
) -> Result<usize, StoreError> {
    let mut t = tx.open(CLIENTS)?;
    let gone: Vec<u64> = list(t.read())?
        .into_iter()
        .filter(|r| r.boot_epoch < epoch && owners.contains(&r.owner))
        .map(|r| r.clientid)
        .collect();
    if !gone.is_empty() {
        let w = t.write();
        for id in &gone {
            w.remove(*id)?;
        }
    }
    Ok(gone.len())
}

pub(super) fn remove(tx: &Txn<'_>, clientid: u64) -> Result<bool, StoreError> {
    let mut t = tx.open(CLIENTS)?;
    if t.read().get(clientid)?.is_none() {
        return Ok(false);
    }
    t.write().remove(clientid)?;
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
