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

pub(super) fn put(tx: &Txn<'_>, c: &ClientRecord) -> Result<(), StoreError> {
    let mut t = tx.open(CLIENTS)?;
    t.write().insert(c.clientid, &encode_client(c)[..])?;
    Ok(())
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
