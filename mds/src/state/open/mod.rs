//! Open state and the [`StateTable`] façade over opens and byte-range locks (RFC 8881 chapter
//! 9 and sections 8.2, 18.2, 18.16, 18.18, 18.38, 18.48).
//!
//! Sans-IO: the table knows files by id (`u64`) and clients by `clientid4`; the compound layer
//! resolves filehandles, checks grace (reclaims) and the file type, and substitutes the
//! compound's current stateid for the special "current" value before calling in. Nothing here
//! needs the time: leases live with the client records, which call
//! [`StateTable::release_client`] or [`StateTable::revoke_client`] when a lease expires.
//!
//! ```text
//!   open-owner (client, name) ──< open stateid (owner, file) ──< lock stateid (lock-owner, file)
//!                                     │ access/deny                    │ byte ranges
//!                                     v                                v
//!                          file: share reservations          file: LockTable (lock.rs)
//! ```
//!
//! A file whose last link is removed keeps its opens: they stay valid until CLOSE (RFC 8881
//! section 18.25.4 lets the server keep the file while open). The table tells REMOVE whether
//! such an orphan must be kept ([`StateTable::unlinked`]) and lists it when its last open goes
//! ([`StateTable::take_released_orphans`]); see [`super::orphan`].

use std::collections::{BTreeSet, HashMap, HashSet};

use nfs_proto::nfs4::{
    LockDenied, NfsStat4, OpenDelegation4, OpenOwner4, Stateid4, OPEN4_RESULT_LOCKTYPE_POSIX,
    OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
    OPEN4_SHARE_ACCESS_WANT_CANCEL, OPEN4_SHARE_ACCESS_WANT_DELEG_MASK,
    OPEN4_SHARE_ACCESS_WANT_NO_DELEG, OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE,
    OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED, OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
    OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL, OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
    OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_BOTH,
};

use super::deleg::{DelegTable, DelegType};
use super::lock::LockTable;
use super::orphan::{OrphanFate, Orphans};
use super::owner::{OwnerIndex, OwnerKey};
use super::stateid::{
    check_seqid, classify, next_seqid, CounterExhausted, Holder, Other, Special, StateidError,
    StateidKind, StateidMinter,
};

mod offer;
mod queries;
mod revoke;

pub use offer::{delegation_body, no_delegation, DelegOffer};
pub use revoke::{RevokeReason, RevokedState};

/// Why an open or lock operation failed; each variant is one `nfsstat4`, except
/// [`Denied`](Self::Denied) which carries the LOCK4denied body.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum StateError {
    /// The stateid is not acceptable.
    #[error(transparent)]
    Stateid(#[from] StateidError),
    /// OPEN conflicts with another open's share reservation (RFC 8881 section 9.7).
    #[error("share reservation conflict")]
    ShareDenied,
    /// The open does not grant the access the operation needs.
    #[error("the open does not grant this access")]
    OpenMode,
    /// I/O without open state conflicts with a share reservation (RFC 8881 section 8.2.3).
    #[error("I/O conflicts with a share reservation")]
    Locked,
    /// A malformed argument (access or deny bits, lock range, lock type).
    #[error("invalid argument")]
    Inval,
    /// The state still holds byte-range locks.
    #[error("locks held")]
    LocksHeld,
    /// A conflicting byte-range lock, returned as LOCK4denied.
    #[error("conflicting lock")]
    Denied(LockDenied),
    /// A status decided elsewhere (the delegation table's FREE_STATEID answer).
    #[error("{0:?}")]
    Status(NfsStat4),
    /// The operation does not exist in this minor version.
    #[error("operation not supported in this minor version")]
    NotSupp,
    /// Out of stateids for this boot.
    #[error(transparent)]
    Exhausted(#[from] CounterExhausted),
    /// The file is an orphan being deleted (no open held it when its last name went).
    #[error("file is being deleted")]
    Stale,
}

impl From<StateError> for NfsStat4 {
    fn from(e: StateError) -> Self {
        match e {
            StateError::Stateid(s) => s.into(),
            StateError::ShareDenied => NfsStat4::NFS4ERR_SHARE_DENIED,
            StateError::OpenMode => NfsStat4::NFS4ERR_OPENMODE,
            StateError::Locked => NfsStat4::NFS4ERR_LOCKED,
            StateError::Inval => NfsStat4::NFS4ERR_INVAL,
            StateError::LocksHeld => NfsStat4::NFS4ERR_LOCKS_HELD,
            StateError::Denied(_) => NfsStat4::NFS4ERR_DENIED,
            StateError::NotSupp => NfsStat4::NFS4ERR_NOTSUPP,
            StateError::Exhausted(c) => c.into(),
            StateError::Stale => NfsStat4::NFS4ERR_STALE,
            StateError::Status(s) => s,
        }
    }
}

/// The share bits of an OPEN request, checked (RFC 8881 section 18.16.3).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OpenShare {
    /// `OPEN4_SHARE_ACCESS_READ`, `_WRITE` or `_BOTH`.
    pub access: u32,
    /// `OPEN4_SHARE_DENY_NONE` to `_BOTH`.
    pub deny: u32,
    /// The `OPEN4_SHARE_ACCESS_WANT_*` field (`share_access & 0xff00`).
    pub want: u32,
}

impl OpenShare {
    /// Checks OPEN's `share_access` and `share_deny`: access must be READ, WRITE or BOTH, the
    /// want field one of the defined values, the two "when" flags may be set, deny at most
    /// BOTH; anything else is `NFS4ERR_INVAL`. That includes RFC 9754's flags
    /// (`WANT_DELEG_TIMESTAMPS`, `WANT_OPEN_XOR_DELEGATION`): `open_arguments` does not offer
    /// them, and a server answers an extension flag bit it does not support with INVAL (RFC 8178).
    pub fn parse(share_access: u32, share_deny: u32) -> Result<Self, StateError> {
        let access = share_access & OPEN4_SHARE_ACCESS_BOTH;
        let want = share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
        let when = OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL
            | OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED;
        let known = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_DELEG_MASK | when;
        let want_ok = matches!(
            want,
            OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE
                | OPEN4_SHARE_ACCESS_WANT_READ_DELEG
                | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG
                | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG
                | OPEN4_SHARE_ACCESS_WANT_NO_DELEG
                | OPEN4_SHARE_ACCESS_WANT_CANCEL
        );
        if access == 0 || share_access & !known != 0 || !want_ok {
            return Err(StateError::Inval);
        }
        if share_deny & !OPEN4_SHARE_DENY_BOTH != 0 {
            return Err(StateError::Inval);
        }
        Ok(Self {
            access,
            deny: share_deny,
            want,
        })
    }
}

/// What a successful OPEN gives the compound layer for its OPEN4resok.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OpenGrant {
    /// The open stateid: seqid 1 for a new open, the next seqid (same `other`) for an upgrade.
    pub stateid: Stateid4,
    /// `OPEN4_RESULT_*` flags: POSIX locking; the op layer may add `PRESERVE_UNLINKED`.
    pub rflags: u32,
    /// The delegation answer (none yet).
    pub delegation: OpenDelegation4,
    /// Whether this OPEN upgraded an existing open of the same owner and file.
    pub upgraded: bool,
}

/// The access an I/O operation needs from its stateid.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Io {
    /// READ (and READ-like: the DS proxy path).
    Read,
    /// WRITE, and SETATTR of the size (RFC 8881 section 18.30.4 treats it as a write).
    Write,
}

/// Share reservation of one open-owner on one file.
#[derive(Debug)]
pub(super) struct OpenBody {
    pub(super) owner: OwnerKey,
    pub(super) access: u32,
    pub(super) deny: u32,
    /// The (access, deny) pairs of the OPENs in effect, bit `access * 4 + deny`: OPEN_DOWNGRADE
    /// may only go to a union of some of them (RFC 8881 section 18.18.3).
    pub(super) seen: u16,
    /// Lock stateids derived from this open.
    pub(super) locks: BTreeSet<Other>,
}

/// Byte-range lock state of one lock-owner on one file; the ranges live in the file's
/// [`LockTable`].
#[derive(Debug)]
pub(super) struct LockBody {
    pub(super) owner: OwnerKey,
    /// The open stateid it was derived from (open_to_lock_owner).
    pub(super) open: Other,
}

#[derive(Debug)]
pub(super) enum Body {
    Open(OpenBody),
    Lock(LockBody),
}

/// One stateid's state.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) clientid: u64,
    pub(super) file: u64,
    pub(super) seqid: u32,
    /// Revoked state keeps its entry, detached from files and owners, so that its stateid
    /// answers EXPIRED/ADMIN_REVOKED until FREE_STATEID (RFC 8881 section 8.2.4).
    pub(super) revoked: Option<RevokeReason>,
    pub(super) body: Body,
}

impl Entry {
    pub(super) fn kind(&self) -> StateidKind {
        match self.body {
            Body::Open(_) => StateidKind::Open,
            Body::Lock(_) => StateidKind::Lock,
        }
    }
}

/// Per-file state: the live opens and the byte-range locks.
#[derive(Debug, Default)]
pub(super) struct FileState {
    pub(super) opens: BTreeSet<Other>,
    pub(super) locks: LockTable<OwnerKey>,
}

/// All open and byte-range lock state of the server, one boot. The compound layer calls one
/// method per operation with the session's client id and the current file id.
#[derive(Debug)]
pub struct StateTable {
    pub(super) minter: StateidMinter,
    pub(super) states: HashMap<Other, Entry>,
    pub(super) open_owners: OwnerIndex,
    pub(super) lock_owners: OwnerIndex,
    pub(super) files: HashMap<u64, FileState>,
    pub(super) by_client: HashMap<u64, HashSet<Other>>,
    pub(super) orphans: Orphans,
    /// How many revoked open and lock entries wait for FREE_STATEID (SEQUENCE's status flags
    /// look only when there are some).
    revoked_entries: usize,
    /// The delegations: in this table so that OPEN's share reservation and its delegation
    /// decision see one state (no open can slip in between).
    pub delegs: DelegTable,
}

/// The pairs bit of an (access, deny) combination in [`OpenBody::seen`].
fn pair_bit(access: u32, deny: u32) -> u16 {
    1 << ((access & 3) * 4 + (deny & 3))
}

/// Whether (access, deny) is the union of a non-empty subset of the pairs in `seen`.
fn union_of_some(seen: u16, access: u32, deny: u32) -> bool {
    // Only pairs inside the target can be in the subset; their union must hit it exactly.
    let (mut a, mut d, mut any) = (0, 0, false);
    for bit in 0..16u32 {
        if seen & (1 << bit) == 0 {
            continue;
        }
        let (pa, pd) = (bit / 4, bit % 4);
        if pa & !access == 0 && pd & !deny == 0 {
            a |= pa;
            d |= pd;
            any = true;
        }
    }
    any && a == access && d == deny
}

impl StateTable {
    /// Live (not revoked) open and lock stateids, for the operator's counters.
    pub fn live_counts(&self) -> (usize, usize) {
        let live = self.states.values().filter(|e| e.revoked.is_none());
        live.fold((0, 0), |(o, l), e| match e.body {
            Body::Open(_) => (o + 1, l),
            Body::Lock(_) => (o, l + 1),
        })
    }

    /// An empty table minting stateids with `minter` (kinds open and lock).
    pub fn new(minter: StateidMinter) -> Self {
        Self {
            minter: minter.clone(),
            states: HashMap::new(),
            open_owners: OwnerIndex::default(),
            lock_owners: OwnerIndex::default(),
            files: HashMap::new(),
            by_client: HashMap::new(),
            orphans: Orphans::default(),
            revoked_entries: 0,
            delegs: DelegTable::new(minter.clone()),
        }
    }

    /// Finds the live or revoked state a regular stateid names, checking in the order of RFC
    /// 8881 section 8.2: special values, MAC and client, boot epoch, existence, revocation,
    /// seqid.
    pub(super) fn resolve(&self, clientid: u64, stateid: &Stateid4) -> Result<Other, StateidError> {
        if classify(stateid)?.is_some() {
            return Err(StateidError::Bad);
        }
        self.minter.fields(&stateid.other)?;
        let entry = self.states.get(&stateid.other).ok_or(StateidError::Bad)?;
        if entry.clientid != clientid {
            return Err(StateidError::Bad);
        }
        if let Some(reason) = entry.revoked {
            return Err(reason.error());
        }
        check_seqid(stateid.seqid, entry.seqid)?;
        Ok(stateid.other)
    }

    /// [`resolve`](Self::resolve), and the state must be of `kind` and on `file` (else
    /// `NFS4ERR_BAD_STATEID`: a stateid used with another filehandle or in the wrong operation).
    pub(super) fn resolve_for(
        &self,
        clientid: u64,
        stateid: &Stateid4,
        file: u64,
        kind: StateidKind,
    ) -> Result<Other, StateidError> {
        let other = self.resolve(clientid, stateid)?;
        let entry = &self.states[&other];
        if entry.file != file || entry.kind() != kind {
            return Err(StateidError::Bad);
        }
        Ok(other)
    }

    pub(super) fn open_body(&self, other: &Other) -> Option<&OpenBody> {
        match self.states.get(other).map(|e| &e.body) {
            Some(Body::Open(o)) => Some(o),
            _ => None,
        }
    }

    pub(super) fn open_body_mut(&mut self, other: &Other) -> Option<&mut OpenBody> {
        match self.states.get_mut(other).map(|e| &mut e.body) {
            Some(Body::Open(o)) => Some(o),
            _ => None,
        }
    }

    /// Bumps a state's seqid and returns its new stateid.
    pub(super) fn bump(&mut self, other: &Other) -> Stateid4 {
        let entry = self
            .states
            .get_mut(other)
            .expect("bump of a resolved stateid");
        entry.seqid = next_seqid(entry.seqid);
        Stateid4 {
            seqid: entry.seqid,
            other: *other,
        }
    }

    pub(super) fn insert_entry(&mut self, other: Other, entry: Entry) {
        self.by_client
            .entry(entry.clientid)
            .or_default()
            .insert(other);
        self.states.insert(other, entry);
    }

    /// Whether some open's deny bits (other than `except`) conflict with `access`, or some
    /// open's access with `deny` (RFC 8881 section 9.7).
    fn share_conflict(&self, file: u64, except: Option<&Other>, access: u32, deny: u32) -> bool {
        let Some(fs) = self.files.get(&file) else {
            return false;
        };
        fs.opens
            .iter()
            .filter(|o| Some(*o) != except)
            .filter_map(|o| self.open_body(o))
            .any(|o| access & o.deny != 0 || deny & o.access != 0)
    }

    /// OPEN's share reservation (RFC 8881 sections 9.7 and 18.16): a first OPEN of `file` by
    /// the open-owner creates an open stateid (seqid 1); a further one unites access and deny
    /// with the existing open and bumps its seqid, keeping `other` (section 8.2.2). A conflict
    /// with another owner's open (of any client) is `NFS4ERR_SHARE_DENIED`. The owner's
    /// `clientid` field is ignored for the session's. Grace and CLAIM_* checks are the
    /// caller's.
    pub fn open(
        &mut self,
        clientid: u64,
        file: u64,
        owner: &OpenOwner4,
        share_access: u32,
        share_deny: u32,
    ) -> Result<OpenGrant, StateError> {
        let share = OpenShare::parse(share_access, share_deny)?;
        if self.orphans.is_reaping(file) {
            return Err(StateError::Stale);
        }
        let owner = OwnerKey::from_request(clientid, owner);
        let existing = self.open_owners.get(&owner, file);
        let (access, deny) = match existing.as_ref().and_then(|o| self.open_body(o)) {
            Some(o) => (o.access | share.access, o.deny | share.deny),
            None => (share.access, share.deny),
        };
        if self.share_conflict(file, existing.as_ref(), access, deny) {
            return Err(StateError::ShareDenied);
        }
        let (stateid, upgraded) = match existing {
            Some(other) => {
                let o = self.open_body_mut(&other).expect("indexed open");
                o.access = access;
                o.deny = deny;
                o.seen |= pair_bit(share.access, share.deny);
                (self.bump(&other), true)
            }
            None => {
                let other = self.minter.mint(
                    StateidKind::Open,
                    access as u8,
                    Holder {
                        clientid,
                        fileid: file,
                    },
                )?;
                let body = OpenBody {
                    owner: owner.clone(),
                    access,
                    deny,
                    seen: pair_bit(access, deny),
                    locks: BTreeSet::new(),
                };
                self.insert_entry(
                    other,
                    Entry {
                        clientid,
                        file,
                        seqid: 1,
                        revoked: None,
                        body: Body::Open(body),
                    },
                );
                self.open_owners.insert(owner, file, other);
                self.files.entry(file).or_default().opens.insert(other);
                (Stateid4 { seqid: 1, other }, false)
            }
        };
        Ok(OpenGrant {
            stateid,
            rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
            delegation: no_delegation(share.want),
            upgraded,
        })
    }

    /// Whether a client other than `clientid` has `file` open, and whether one has it open
    /// for writing.
    fn others_open(&self, file: u64, clientid: u64) -> (bool, bool) {
        let Some(fs) = self.files.get(&file) else {
            return (false, false);
        };
        let mut any = false;
        for e in fs.opens.iter().filter_map(|o| self.states.get(o)) {
            if e.clientid == clientid {
                continue;
            }
            any = true;
            if matches!(&e.body, Body::Open(b) if b.access & OPEN4_SHARE_ACCESS_WRITE != 0) {
                return (true, true);
            }
        }
        (any, false)
    }

    /// OPEN_DOWNGRADE (RFC 8881 section 18.18.3): access must be READ, WRITE or BOTH and deny
    /// NONE to BOTH, and together they must be the union of some of the OPENs in effect for
    /// this owner and file (tracked as a set of (access, deny) pairs); else `NFS4ERR_INVAL`.
    /// OPENs not inside the new modes are no longer in effect afterwards. Bumps the seqid.
    pub fn open_downgrade(
        &mut self,
        clientid: u64,
        file: u64,
        stateid: &Stateid4,
        share_access: u32,
        share_deny: u32,
    ) -> Result<Stateid4, StateError> {
        let other = self.resolve_for(clientid, stateid, file, StateidKind::Open)?;
        if !matches!(
            share_access,
            OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WRITE | OPEN4_SHARE_ACCESS_BOTH
        ) || share_deny & !OPEN4_SHARE_DENY_BOTH != 0
        {
            return Err(StateError::Inval);
        }
        let o = self.open_body_mut(&other).expect("resolved open");
        if !union_of_some(o.seen, share_access, share_deny) {
            return Err(StateError::Inval);
        }
        o.access = share_access;
        o.deny = share_deny;
        let mut kept = 0u16;
        for bit in 0..16u32 {
            let (pa, pd) = (bit / 4, bit % 4);
            if o.seen & (1 << bit) != 0 && pa & !share_access == 0 && pd & !share_deny == 0 {
                kept |= 1 << bit;
            }
        }
        o.seen = kept;
        Ok(self.bump(&other))
    }

    /// CLOSE (RFC 8881 sections 18.2.3 and 18.2.4): releases the share reservation of the
    /// open and the lock stateids derived from it. "The server MUST return failure if any
    /// locks would exist after the CLOSE": this server does not drop locks implicitly, so an
    /// open whose lock-owners still hold ranges is `NFS4ERR_LOCKS_HELD` (the Linux client
    /// unlocks before it closes). Returns the invalid special stateid, as section 18.2.4
    /// recommends, so that a client using CLOSE's stateid finds out.
    pub fn close(
        &mut self,
        clientid: u64,
        file: u64,
        stateid: &Stateid4,
    ) -> Result<Stateid4, StateError> {
        let other = self.resolve_for(clientid, stateid, file, StateidKind::Open)?;
        let locks: Vec<Other> = self
            .open_body(&other)
            .expect("resolved open")
            .locks
            .iter()
            .copied()
            .collect();
        if locks.iter().any(|l| self.lock_state_holds_locks(l)) {
            return Err(StateError::LocksHeld);
        }
        for l in locks {
            self.discard(&l);
        }
        self.discard(&other);
        Ok(Stateid4::INVALID)
    }

    /// The check READ, WRITE and SETATTR(size) make of their stateid on `file` (RFC 8881
    /// sections 8.2.3 and 9.1.2):
    /// - the anonymous stateid, and the bypass stateid for writes, are refused with
    ///   `NFS4ERR_LOCKED` when an open denies that access (the I/O has no share reservation
    ///   of its own);
    /// - the bypass stateid may READ regardless of deny bits (section 8.2.3's "MAY");
    /// - an open or lock stateid must be this client's, current, on this file, and its open
    ///   must grant WRITE for a write (else `NFS4ERR_OPENMODE`); a READ is allowed under a
    ///   write-only open, which section 9.1.2 permits for clients that must read to write
    ///   partial pages;
    /// - the "current" stateid must have been resolved by the caller: here it is bad.
    ///
    /// Byte-range locks are advisory (POSIX) and never block I/O.
    pub fn check_io(
        &self,
        clientid: u64,
        file: u64,
        stateid: &Stateid4,
        io: Io,
    ) -> Result<(), StateError> {
        let denied_bit = match io {
            Io::Read => OPEN4_SHARE_ACCESS_READ,
            Io::Write => OPEN4_SHARE_ACCESS_WRITE,
        };
        match classify(stateid)? {
            Some(Special::Bypass) if io == Io::Read => return Ok(()),
            Some(Special::Anonymous) | Some(Special::Bypass) => {
                return if self.share_conflict(file, None, denied_bit, 0) {
                    Err(StateError::Locked)
                } else {
                    Ok(())
                };
            }
            Some(Special::Current) | Some(Special::Invalid) => return Err(StateidError::Bad.into()),
            None => {}
        }
        // I/O under a delegation stateid (section 10.2): a read delegation reads, a write
        // delegation reads and writes.
        if DelegTable::is_delegation_stateid(stateid) {
            return match self.delegs.check(clientid, file, stateid)? {
                DelegType::Read if io == Io::Write => Err(StateError::OpenMode),
                _ => Ok(()),
            };
        }
        let other = self.resolve(clientid, stateid)?;
        let entry = &self.states[&other];
        if entry.file != file {
            return Err(StateidError::Bad.into());
        }
        let open = match &entry.body {
            Body::Open(o) => o,
            Body::Lock(l) => self.open_body(&l.open).ok_or(StateidError::Bad)?,
        };
        let granted = match io {
            Io::Read => open.access != 0,
            Io::Write => open.access & OPEN4_SHARE_ACCESS_WRITE != 0,
        };
        if granted {
            Ok(())
        } else {
            Err(StateError::OpenMode)
        }
    }

    /// TEST_STATEID (RFC 8881 section 18.48): the status each stateid would get if used, by
    /// this client, with no filehandle and no kind check. Special stateids are always
    /// `NFS4ERR_BAD_STATEID`, and so are stateids of an earlier boot ("any possible
    /// association with a previous instance of the client ... is not considered"). Delegation
    /// stateids are answered by [`DelegTable`]; layout stateids are not in this table and
    /// read as bad: the compound layer sends that kind ([`StateidKind::of`]) to its table.
    pub fn test_stateid(&self, clientid: u64, stateids: &[Stateid4]) -> Vec<NfsStat4> {
        stateids
            .iter()
            .map(|s| {
                if DelegTable::is_delegation_stateid(s) {
                    return self.delegs.test_stateid(clientid, s);
                }
                match self.resolve(clientid, s) {
                    Ok(_) => NfsStat4::NFS4_OK,
                    Err(StateidError::Stale) => NfsStat4::NFS4ERR_BAD_STATEID,
                    Err(e) => e.into(),
                }
            })
            .collect()
    }

    /// FREE_STATEID (RFC 8881 section 18.38): frees a lock stateid that holds no locks, or any
    /// revoked stateid (the client thereby acknowledges the loss). An open stateid, or a lock
    /// stateid with locks, is `NFS4ERR_LOCKS_HELD`. Afterwards the stateid is bad.
    pub fn free_stateid(&mut self, clientid: u64, stateid: &Stateid4) -> Result<(), StateError> {
        if classify(stateid)?.is_some() {
            return Err(StateidError::Bad.into());
        }
        if DelegTable::is_delegation_stateid(stateid) {
            return self
                .delegs
                .free_stateid(clientid, stateid)
                .map_err(StateError::Status);
        }
        self.minter.fields(&stateid.other)?;
        let other = stateid.other;
        let entry = self.states.get(&other).ok_or(StateidError::Bad)?;
        if entry.clientid != clientid {
            return Err(StateidError::Bad.into());
        }
        if entry.revoked.is_some() {
            self.discard(&other);
            return Ok(());
        }
        check_seqid(stateid.seqid, entry.seqid)?;
        match entry.body {
            Body::Open(_) => Err(StateError::LocksHeld),
            Body::Lock(_) if self.lock_state_holds_locks(&other) => Err(StateError::LocksHeld),
            Body::Lock(_) => {
                self.discard(&other);
                Ok(())
            }
        }
    }

    /// Drops every state of a client: DESTROY_CLIENTID of a client without state is a no-op
    /// here, a lease expiry that purges the client, or a new client incarnation (EXCHANGE_ID
    /// with a new verifier). Share reservations and locks are released at once.
    pub fn release_client(&mut self, clientid: u64) {
        let others: Vec<Other> = self
            .by_client
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        for other in others {
            self.discard(&other);
        }
        self.by_client.remove(&clientid);
        self.delegs.release_client(clientid);
    }

    /// Unlinks a live state from files, owners and its open, keeping the entry. Idempotent.
    fn detach(&mut self, other: &Other) {
        let Some(entry) = self.states.get(other) else {
            return;
        };
        if entry.revoked.is_some() {
            return;
        }
        let file = entry.file;
        match &entry.body {
            Body::Open(o) => {
                // Its lock stateids belong to the same client and file: every caller
                // (close, release_client, revoke_client) handles them too.
                let owner = o.owner.clone();
                self.open_owners.remove_if(&owner, file, other);
                if let Some(fs) = self.files.get_mut(&file) {
                    fs.opens.remove(other);
                }
                if !self.file_is_open(file) {
                    self.orphans.last_open_gone(file);
                }
            }
            Body::Lock(l) => {
                let owner = l.owner.clone();
                let open = l.open;
                if self.lock_owners.remove_if(&owner, file, other) {
                    if let Some(fs) = self.files.get_mut(&file) {
                        fs.locks.remove_owner(&owner);
                    }
                }
                if let Some(o) = self.open_body_mut(&open) {
                    o.locks.remove(other);
                }
            }
        }
        if self
            .files
            .get(&file)
            .is_some_and(|f| f.opens.is_empty() && f.locks.is_empty())
        {
            self.files.remove(&file);
        }
    }

    /// Removes a state entirely.
    pub(super) fn discard(&mut self, other: &Other) {
        self.detach(other);
        if let Some(entry) = self.states.remove(other) {
            if entry.revoked.is_some() {
                self.revoked_entries -= 1;
            }
            if let Some(set) = self.by_client.get_mut(&entry.clientid) {
                set.remove(other);
                if set.is_empty() {
                    self.by_client.remove(&entry.clientid);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "open_tests.rs"]
pub(super) mod tests;
