//! Open-owners and lock-owners (RFC 8881 sections 2.4.2 and 9.1.1).
//!
//! An owner is named by the client that made it and an opaque string the client chose. The
//! `clientid` inside a request's `open_owner4`/`lock_owner4` is not trusted: RFC 8881 sections
//! 18.10.3 and 18.11.3 say the server MUST ignore it and take the client from the session, so
//! every call here is given the session's client id. In NFSv4.1 owners carry no sequence
//! number (sessions give exactly-once semantics), so an owner is only a name and the set of
//! states it holds: one stateid per (owner, file).

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use nfs_proto::nfs4::StateOwner4;

use super::stateid::Other;

/// An open-owner or lock-owner: the session's client and the client's opaque name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct OwnerKey {
    /// The client that owns it (from the session, never from the request body).
    pub clientid: u64,
    /// The owner string, opaque to the server.
    pub owner: Bytes,
}

impl OwnerKey {
    /// The owner named in a request, attributed to the session's client.
    pub fn from_request(clientid: u64, owner: &StateOwner4) -> Self {
        Self {
            clientid,
            owner: owner.owner.clone(),
        }
    }

    /// The wire form, with the real client id (as LOCK4denied must carry it, RFC 8881 section
    /// 18.10.3).
    pub fn to_wire(&self) -> StateOwner4 {
        StateOwner4 {
            clientid: self.clientid,
            owner: self.owner.clone(),
        }
    }
}

/// The stateids of one family of owners (all open-owners, or all lock-owners), one per
/// (owner, file).
#[derive(Default, Debug)]
pub struct OwnerIndex {
    by_owner_file: HashMap<(OwnerKey, u64), Other>,
    files_of: HashMap<OwnerKey, BTreeSet<u64>>,
}

impl OwnerIndex {
    /// The owner's stateid for `file`, if it has state there.
    pub fn get(&self, owner: &OwnerKey, file: u64) -> Option<Other> {
        self.by_owner_file.get(&(owner.clone(), file)).copied()
    }

    /// Records the owner's stateid for `file`.
    pub fn insert(&mut self, owner: OwnerKey, file: u64, other: Other) {
        self.files_of.entry(owner.clone()).or_default().insert(file);
        self.by_owner_file.insert((owner, file), other);
    }

    /// Forgets the owner's stateid for `file`; an owner with no state left is forgotten too.
    pub fn remove(&mut self, owner: &OwnerKey, file: u64) -> Option<Other> {
        let other = self.by_owner_file.remove(&(owner.clone(), file))?;
        if let Some(files) = self.files_of.get_mut(owner) {
            files.remove(&file);
            if files.is_empty() {
                self.files_of.remove(owner);
            }
        }
        Some(other)
    }

    /// Forgets the owner's stateid for `file` only if it is `other`; says whether it was.
    pub fn remove_if(&mut self, owner: &OwnerKey, file: u64, other: &Other) -> bool {
        if self.get(owner, file).as_ref() == Some(other) {
            self.remove(owner, file);
            true
        } else {
            false
        }
    }

    /// The owner's stateids, by file.
    pub fn states_of(&self, owner: &OwnerKey) -> Vec<(u64, Other)> {
        self.files_of
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|&f| self.get(owner, f).map(|o| (f, o)))
            .collect()
    }

    /// Whether the owner holds any state.
    pub fn knows(&self, owner: &OwnerKey) -> bool {
        self.files_of.contains_key(owner)
    }

    /// Number of (owner, file) states.
    pub fn len(&self) -> usize {
        self.by_owner_file.len()
    }

    /// Whether no owner holds state.
    pub fn is_empty(&self) -> bool {
        self.by_owner_file.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(c: u64, s: &'static str) -> OwnerKey {
        OwnerKey {
            clientid: c,
            owner: Bytes::from_static(s.as_bytes()),
        }
    }

    #[test]
    fn request_clientid_is_replaced_by_the_session_client() {
        let wire = StateOwner4 {
            clientid: 999,
            owner: Bytes::from_static(b"o"),
        };
        let k = OwnerKey::from_request(5, &wire);
        assert_eq!(k.clientid, 5);
        assert_eq!(k.to_wire().clientid, 5);
    }

    #[test]
    fn same_name_of_two_clients_is_two_owners() {
        let mut ix = OwnerIndex::default();
        ix.insert(owner(1, "a"), 10, [1; 12]);
        assert_eq!(ix.get(&owner(2, "a"), 10), None);
        assert_eq!(ix.get(&owner(1, "a"), 10), Some([1; 12]));
    }

    #[test]
    fn owner_is_forgotten_with_its_last_state() {
        let mut ix = OwnerIndex::default();
        ix.insert(owner(1, "a"), 10, [1; 12]);
        ix.insert(owner(1, "a"), 11, [2; 12]);
        assert_eq!(ix.states_of(&owner(1, "a")).len(), 2);
        assert_eq!(ix.remove(&owner(1, "a"), 10), Some([1; 12]));
        assert!(ix.knows(&owner(1, "a")));
        ix.remove(&owner(1, "a"), 11);
        assert!(!ix.knows(&owner(1, "a")));
        assert!(ix.is_empty());
    }
}
