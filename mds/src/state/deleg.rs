//! Delegation state, sans-IO (RFC 8881 sections 10.2 to 10.5): which client holds a read or
//! write delegation of which file, the recalls in progress and the delegations revoked
//! because their holder did not return them in time.
//!
//! ```text
//!   OPEN (policy in StateTable::delegation_for) ──> grant ──> Held
//!   conflicting OPEN / REMOVE / RENAME / LINK / SETATTR / anonymous I/O of another client
//!        ──> conflicts() ──> recall(): Held ──> Recalled { deadline }  (caller sends CB_RECALL,
//!                                                                       answers NFS4ERR_DELAY)
//!   DELEGRETURN ───────────────────────────────> gone (returned)
//!   deadline passed (expired_recalls) ─────────> Revoked: NFS4ERR_DELEG_REVOKED until
//!                                                FREE_STATEID; SEQUENCE says
//!                                                SEQ4_STATUS_RECALLABLE_STATE_REVOKED
//!   holder restarts (carry_over) ──────────────> Prev { deadline }: still conflicts, awaits
//!                                                OPEN CLAIM_DELEGATE_PREV / CLAIM_DELEG_PREV_FH
//!                                                (reclaim_prev: a fresh stateid), DELEGPURGE
//!                                                or the deadline (gone)
//! ```
//!
//! Delegations are not kept across a server restart: a client reclaims them with OPEN
//! CLAIM_PREVIOUS naming the delegation type (section 10.2.1), and the reclaim is granted
//! like a new delegation. Delegation stateids come from a minter of their own, so that the
//! open and lock counters the data servers keep as runs of closed counters have no gaps.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use nfs_proto::nfs4::{NfsFh4, NfsStat4, Stateid4};

use super::stateid::{
    check_seqid, classify, CounterExhausted, Holder, Other, StateidError, StateidKind,
    StateidMinter,
};

/// The two kinds of file delegation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelegType {
    /// Others may read; the holder opens for reading and caches data and attributes.
    Read,
    /// No other client has the file open; the holder may also write and extend it locally.
    Write,
}

impl DelegType {
    /// The stateid's access byte (as the data servers check it): read, or read and write.
    fn access(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Write => 3,
        }
    }

    /// The label of the operator's counters.
    pub fn label(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// Where a delegation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Held, not recalled.
    Held,
    /// CB_RECALL is under way; revoked if not returned by the deadline.
    Recalled { deadline: Instant },
    /// Revoked: detached from its file, kept until the client frees it (section 8.2.4).
    Revoked,
    /// Its holder restarted (section 10.2.1): kept for the new client instance to reclaim
    /// until the deadline. Its old stateid is dead; nobody can be sent a recall for it.
    Prev { deadline: Instant },
}

impl Phase {
    /// Left by a restarted holder for its new instance to reclaim.
    fn awaits_reclaim(self) -> bool {
        matches!(self, Self::Prev { .. })
    }
}

/// What the server learnt from CB_GETATTR of a write delegation (section 10.4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reported {
    /// The change attribute the holder reported last (`None`: never asked).
    change: Option<u64>,
    /// The change value the server presented for the holder's modifications, if any.
    presented: Option<u64>,
    /// The size the holder reported with it.
    size: u64,
}

#[derive(Clone, Debug)]
struct Delegation {
    clientid: u64,
    file: u64,
    kind: DelegType,
    /// The file's handle, for CB_RECALL.
    fh: NfsFh4,
    /// The server's change attribute when the delegation was granted: a holder that has not
    /// modified the file reports it back in CB_GETATTR.
    granted_change: u64,
    phase: Phase,
    reported: Reported,
}

/// One CB_RECALL to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecallOrder {
    /// The holder.
    pub clientid: u64,
    /// The file.
    pub file: u64,
    /// The delegation stateid to recall.
    pub stateid: Stateid4,
    /// The file's handle.
    pub fh: NfsFh4,
}

/// A delegation revoked because its holder did not return it in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevokedDeleg {
    /// The holder.
    pub clientid: u64,
    /// The file.
    pub file: u64,
    /// The delegation stateid's `other`.
    pub other: Other,
}

/// What an operation of another client needs of a file's delegations (section 10.4.4 and
/// 10.2: a read delegation lets others read; a write delegation lets nobody else in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Reading data or opening for read: only write delegations conflict.
    Read,
    /// Writing data, opening for write, or changing the file's metadata or names: every
    /// delegation conflicts.
    Write,
}

/// The operator's delegation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DelegCounts {
    /// Read delegations granted.
    pub granted_read: u64,
    /// Write delegations granted.
    pub granted_write: u64,
    /// Delegations recalled (CB_RECALL ordered).
    pub recalled: u64,
    /// Delegations returned with DELEGRETURN.
    pub returned: u64,
    /// Delegations revoked (recall not answered in time).
    pub revoked: u64,
    /// Read delegations held now.
    pub held_read: u64,
    /// Write delegations held now.
    pub held_write: u64,
}

/// The size and change a GETATTR of another client must present for a file under a write
/// delegation whose holder modified it (section 10.4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Presented {
    /// The holder's size.
    pub size: u64,
    /// A change value larger than any the server presented before the modification.
    pub change: u64,
}

/// Every delegation of this boot.
#[derive(Debug)]
pub struct DelegTable {
    minter: StateidMinter,
    delegs: HashMap<Other, Delegation>,
    by_file: HashMap<u64, BTreeSet<Other>>,
    by_client: HashMap<u64, HashSet<Other>>,
    /// How many revoked delegations each client has not freed (SEQUENCE asks on every call).
    revoked_by_client: HashMap<u64, u32>,
    /// The delegations given a deadline (recalled, or awaiting reclaim): the deadline task
    /// looks at these each tick, not at every delegation held (100,000 files held under
    /// delegations made each tick a scan of them all, under this table's lock). One that
    /// left those phases (returned, revoked, reclaimed) is dropped when next looked at.
    timed: HashSet<Other>,
    counts: DelegCounts,
}

impl DelegTable {
    /// An empty table minting delegation stateids with `minter`.
    pub fn new(minter: StateidMinter) -> Self {
        Self {
            minter,
            delegs: HashMap::new(),
            by_file: HashMap::new(),
            by_client: HashMap::new(),
            revoked_by_client: HashMap::new(),
            timed: HashSet::new(),
            counts: DelegCounts::default(),
        }
    }

    /// The counters, with the delegations held now.
    pub fn counts(&self) -> DelegCounts {
        let mut c = self.counts;
        for d in self.delegs.values().filter(|d| d.phase != Phase::Revoked) {
            match d.kind {
                DelegType::Read => c.held_read += 1,
                DelegType::Write => c.held_write += 1,
            }
        }
        c
    }

    /// Whether `stateid` is a delegation stateid (by its kind byte; the MAC is checked when
    /// it is used).
    pub fn is_delegation_stateid(stateid: &Stateid4) -> bool {
        StateidKind::of(&stateid.other) == Some(StateidKind::Delegation)
    }

    fn stateid(other: Other) -> Stateid4 {
        // A delegation's seqid stays 1: nothing changes it in NFSv4.1 (section 8.2.2 moves
        // the seqid on OPEN, OPEN_DOWNGRADE, LOCK and LOCKU only).
        Stateid4 { seqid: 1, other }
    }

    /// The unrevoked delegation `clientid` holds on `file`, if any.
    pub fn held_by(&self, clientid: u64, file: u64) -> Option<(Stateid4, DelegType)> {
        self.live_on(file)
            .find(|(_, d)| d.clientid == clientid && !d.phase.awaits_reclaim())
            .map(|(o, d)| (Self::stateid(*o), d.kind))
    }

    fn live_on(&self, file: u64) -> impl Iterator<Item = (&Other, &Delegation)> {
        self.by_file
            .get(&file)
            .into_iter()
            .flatten()
            .filter_map(|o| self.delegs.get(o).map(|d| (o, d)))
            .filter(|(_, d)| d.phase != Phase::Revoked)
    }

    /// Whether a client other than `clientid` holds (or is returning, or may still reclaim
    /// after a restart) a delegation of `file` that conflicts with `need`.
    pub fn conflicts(&self, file: u64, clientid: u64, need: Need) -> bool {
        self.live_on(file).any(|(_, d)| {
            d.clientid != clientid && (need == Need::Write || d.kind == DelegType::Write)
        })
    }

    /// Whether any client but `clientid` holds a delegation of `file`.
    pub fn held_by_others(&self, file: u64, clientid: u64) -> bool {
        self.conflicts(file, clientid, Need::Write)
    }

    /// Starts recalling the delegations of `file` that conflict with `need` for `clientid`
    /// (section 10.4.4): those not yet recalled get a deadline `timeout` from `now` and are
    /// returned as CB_RECALLs to send. Empty when none conflicts, or every conflicting one is
    /// being recalled already; [`conflicts`](Self::conflicts) says whether the caller must
    /// still wait.
    pub fn recall(
        &mut self,
        file: u64,
        clientid: u64,
        need: Need,
        now: Instant,
        timeout: Duration,
    ) -> Vec<RecallOrder> {
        let others: Vec<Other> = self
            .live_on(file)
            .filter(|(_, d)| {
                d.clientid != clientid
                    && d.phase == Phase::Held
                    && (need == Need::Write || d.kind == DelegType::Write)
            })
            .map(|(o, _)| *o)
            .collect();
        let mut orders = Vec::with_capacity(others.len());
        for other in others {
            let d = self.delegs.get_mut(&other).expect("indexed delegation");
            d.phase = Phase::Recalled {
                deadline: now + timeout,
            };
            self.timed.insert(other);
            self.counts.recalled += 1;
            orders.push(RecallOrder {
                clientid: d.clientid,
                file: d.file,
                stateid: Self::stateid(other),
                fh: d.fh.clone(),
            });
        }
        orders
    }

    /// Grants `clientid` a delegation of `file` (the policy is the caller's). `change` is the
    /// file's change attribute now.
    pub fn grant(
        &mut self,
        clientid: u64,
        file: u64,
        fh: NfsFh4,
        kind: DelegType,
        change: u64,
    ) -> Result<Stateid4, CounterExhausted> {
        let other = self.minter.mint(
            StateidKind::Delegation,
            kind.access(),
            Holder {
                clientid,
                fileid: file,
            },
        )?;
        self.delegs.insert(
            other,
            Delegation {
                clientid,
                file,
                kind,
                fh,
                granted_change: change,
                phase: Phase::Held,
                reported: Reported::default(),
            },
        );
        self.by_file.entry(file).or_default().insert(other);
        self.by_client.entry(clientid).or_default().insert(other);
        match kind {
            DelegType::Read => self.counts.granted_read += 1,
            DelegType::Write => self.counts.granted_write += 1,
        }
        Ok(Self::stateid(other))
    }

    /// Finds this client's delegation a stateid names, in the order of section 8.2: special
    /// values, MAC, boot epoch, existence and owner, revocation, seqid.
    fn resolve(&self, clientid: u64, stateid: &Stateid4) -> Result<&Delegation, StateidError> {
        if classify(stateid)?.is_some() {
            return Err(StateidError::Bad);
        }
        let fields = self.minter.fields(&stateid.other)?;
        if fields.kind != StateidKind::Delegation {
            return Err(StateidError::Bad);
        }
        let d = self.delegs.get(&stateid.other).ok_or(StateidError::Bad)?;
        if d.clientid != clientid {
            return Err(StateidError::Bad);
        }
        match d.phase {
            Phase::Revoked => return Err(StateidError::DelegRevoked),
            // The stateid of a client instance that is gone.
            Phase::Prev { .. } => return Err(StateidError::Bad),
            Phase::Held | Phase::Recalled { .. } => {}
        }
        check_seqid(stateid.seqid, 1)?;
        Ok(d)
    }

    /// The delegation a stateid names must be this client's, live and of `file` (OPEN with
    /// CLAIM_DELEGATE_CUR or CLAIM_DELEG_CUR_FH, I/O under a delegation stateid).
    pub fn check(
        &self,
        clientid: u64,
        file: u64,
        stateid: &Stateid4,
    ) -> Result<DelegType, StateidError> {
        let d = self.resolve(clientid, stateid)?;
        if d.file != file {
            return Err(StateidError::Bad);
        }
        Ok(d.kind)
    }

    /// DELEGRETURN (section 18.6): the client gives the delegation back; afterwards its
    /// stateid is bad. A revoked delegation answers `NFS4ERR_DELEG_REVOKED` (the client frees
    /// it with FREE_STATEID).
    pub fn delegreturn(
        &mut self,
        clientid: u64,
        file: u64,
        stateid: &Stateid4,
    ) -> Result<(), StateidError> {
        self.check(clientid, file, stateid)?;
        self.remove(&stateid.other);
        self.counts.returned += 1;
        Ok(())
    }

    fn remove(&mut self, other: &Other) -> Option<Delegation> {
        let d = self.delegs.remove(other)?;
        if d.phase == Phase::Revoked {
            if let Some(n) = self.revoked_by_client.get_mut(&d.clientid) {
                *n -= 1;
                if *n == 0 {
                    self.revoked_by_client.remove(&d.clientid);
                }
            }
        }
        if let Some(set) = self.by_file.get_mut(&d.file) {
            set.remove(other);
            if set.is_empty() {
                self.by_file.remove(&d.file);
            }
        }
        if let Some(set) = self.by_client.get_mut(&d.clientid) {
            set.remove(other);
            if set.is_empty() {
                self.by_client.remove(&d.clientid);
            }
        }
        Some(d)
    }

    /// Revokes the recalled delegations whose deadline passed (section 10.4.6 via 8.3: the
    /// server may revoke a delegation that is not returned in time). The conflicting
    /// operations may go on; the holder learns of it through SEQUENCE's
    /// `SEQ4_STATUS_RECALLABLE_STATE_REVOKED`.
    pub fn expired_recalls(&mut self, now: Instant) -> Vec<RevokedDeleg> {
        let due = self
            .timed_where(|d| matches!(d.phase, Phase::Recalled { deadline } if deadline <= now));
        due.into_iter()
            .filter_map(|o| {
                self.timed.remove(&o);
                self.revoke(&o)
            })
            .collect()
    }

    /// The delegations of [`DelegTable::timed`] that `pick` chooses, in no order; the ones
    /// no longer recalled or awaiting reclaim leave the set.
    fn timed_where(&mut self, pick: impl Fn(&Delegation) -> bool) -> Vec<Other> {
        let delegs = &self.delegs;
        self.timed.retain(|o| {
            delegs
                .get(o)
                .is_some_and(|d| matches!(d.phase, Phase::Recalled { .. } | Phase::Prev { .. }))
        });
        self.timed
            .iter()
            .filter(|&o| self.delegs.get(o).is_some_and(&pick))
            .copied()
            .collect()
    }

    /// Revokes one delegation now, keeping its entry (detached from its file) so that its
    /// stateid answers `NFS4ERR_DELEG_REVOKED` until freed.
    pub fn revoke(&mut self, other: &Other) -> Option<RevokedDeleg> {
        let d = self.delegs.get_mut(other)?;
        match d.phase {
            Phase::Revoked => return None,
            // Its client never learnt of it: forgotten, not revoked.
            Phase::Prev { .. } => {
                self.remove(other);
                return None;
            }
            Phase::Held | Phase::Recalled { .. } => {}
        }
        d.phase = Phase::Revoked;
        let r = RevokedDeleg {
            clientid: d.clientid,
            file: d.file,
            other: *other,
        };
        if let Some(set) = self.by_file.get_mut(&r.file) {
            set.remove(other);
            if set.is_empty() {
                self.by_file.remove(&r.file);
            }
        }
        self.counts.revoked += 1;
        *self.revoked_by_client.entry(r.clientid).or_default() += 1;
        Some(r)
    }

    /// TEST_STATEID of a delegation stateid (section 18.48): what using it would answer.
    pub fn test_stateid(&self, clientid: u64, stateid: &Stateid4) -> NfsStat4 {
        match self.resolve(clientid, stateid) {
            Ok(_) => NfsStat4::NFS4_OK,
            Err(StateidError::Stale) => NfsStat4::NFS4ERR_BAD_STATEID,
            Err(e) => e.into(),
        }
    }

    /// FREE_STATEID of a delegation stateid (section 18.38): a revoked one is forgotten (the
    /// client acknowledges the loss); a live one is `NFS4ERR_LOCKS_HELD` (DELEGRETURN gives it
    /// back).
    pub fn free_stateid(&mut self, clientid: u64, stateid: &Stateid4) -> Result<(), NfsStat4> {
        match self.resolve(clientid, stateid) {
            Ok(_) => Err(NfsStat4::NFS4ERR_LOCKS_HELD),
            Err(StateidError::DelegRevoked) => {
                self.remove(&stateid.other);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the client has revoked delegations it has not freed (SEQUENCE's
    /// `SEQ4_STATUS_RECALLABLE_STATE_REVOKED`, section 18.46.3).
    pub fn has_revoked(&self, clientid: u64) -> bool {
        self.revoked_by_client.contains_key(&clientid)
    }

    /// Whether the client holds any delegation, revoked or not (DESTROY_CLIENTID answers
    /// NFS4ERR_CLIENTID_BUSY then). Those its previous instance left for it to reclaim do not
    /// count: a client that destroys its client id will not reclaim them (the Linux client
    /// unmounting right after a restart would retry DESTROY_CLIENTID for up to 10 s).
    pub fn client_has_state(&self, clientid: u64) -> bool {
        self.by_client.get(&clientid).is_some_and(|s| {
            s.iter().any(|o| {
                self.delegs
                    .get(o)
                    .is_some_and(|d| !d.phase.awaits_reclaim())
            })
        })
    }

    /// Drops every delegation of a client whose state is released (lease expiry,
    /// DESTROY_CLIENTID, a new incarnation); returns their stateids and files.
    pub fn release_client(&mut self, clientid: u64) -> Vec<(Other, u64)> {
        let others: Vec<Other> = self
            .by_client
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        others
            .into_iter()
            .filter_map(|o| self.remove(&o).map(|d| (o, d.file)))
            .collect()
    }

    /// Every delegation of a client (live or revoked) with its file.
    pub fn client_delegations(&self, clientid: u64) -> Vec<(Other, u64)> {
        let mut v: Vec<(Other, u64)> = self
            .by_client
            .get(&clientid)
            .into_iter()
            .flatten()
            .filter_map(|o| self.delegs.get(o).map(|d| (*o, d.file)))
            .collect();
        v.sort();
        v
    }

    /// A client restarted (section 10.2.1): the live delegations of its previous instance
    /// `old` pass to the new instance `new`, to be reclaimed with CLAIM_DELEGATE_PREV or
    /// CLAIM_DELEG_PREV_FH until `deadline` (at least a lease away: the new instance may
    /// first have to find its cached data on stable storage). Meanwhile they still conflict
    /// with other clients, which wait (NFS4ERR_DELAY) as for a recall; no recall can be sent,
    /// since the new instance does not know their stateids. One being recalled keeps its
    /// recall deadline if that is sooner; revoked ones are dropped with the old instance.
    /// Returns how many passed.
    pub fn carry_over(&mut self, old: u64, new: u64, deadline: Instant) -> usize {
        let others: Vec<Other> = self
            .by_client
            .get(&old)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let mut passed = 0;
        for other in others {
            let live = self
                .delegs
                .get(&other)
                .is_some_and(|d| d.phase != Phase::Revoked);
            if !live {
                self.remove(&other);
                continue;
            }
            let d = self.delegs.get_mut(&other).expect("indexed delegation");
            d.clientid = new;
            // One being recalled keeps its recall deadline: another client waits for it,
            // and the server was taking it back by then anyway.
            let deadline = match d.phase {
                Phase::Recalled { deadline: recall } => recall.min(deadline),
                _ => deadline,
            };
            d.phase = Phase::Prev { deadline };
            self.timed.insert(other);
            d.reported = Reported::default();
            self.by_client.entry(new).or_default().insert(other);
            passed += 1;
        }
        self.by_client.remove(&old);
        passed
    }

    /// The type of the delegation of `file` that `clientid` may reclaim after its restart.
    pub fn prev_kind(&self, clientid: u64, file: u64) -> Option<DelegType> {
        self.prev_on(file, clientid).map(|(_, kind)| kind)
    }

    fn prev_on(&self, file: u64, clientid: u64) -> Option<(Other, DelegType)> {
        self.live_on(file)
            .find(|(_, d)| d.clientid == clientid && d.phase.awaits_reclaim())
            .map(|(o, d)| (*o, d.kind))
    }

    /// OPEN with CLAIM_DELEGATE_PREV or CLAIM_DELEG_PREV_FH, WANT_DELEGATION with
    /// CLAIM_DELEG_PREV_FH: the delegation `clientid`'s previous instance held on `file`
    /// becomes its own again under a fresh stateid (the old one was fenced with the old
    /// instance). `None` when there is none to reclaim (the caller answers
    /// NFS4ERR_RECLAIM_BAD).
    pub fn reclaim_prev(
        &mut self,
        clientid: u64,
        file: u64,
        change: u64,
    ) -> Result<Option<(Stateid4, DelegType)>, CounterExhausted> {
        let Some((old, kind)) = self.prev_on(file, clientid) else {
            return Ok(None);
        };
        let fh = self
            .delegs
            .get(&old)
            .expect("indexed delegation")
            .fh
            .clone();
        // Mint first: an exhausted minter leaves the delegation awaiting its reclaim.
        let stateid = self.grant(clientid, file, fh, kind, change)?;
        self.remove(&old);
        Ok(Some((stateid, kind)))
    }

    /// DELEGPURGE (section 18.5): the client has reclaimed all it will; the delegations its
    /// previous instance held and it did not reclaim are forgotten. Returns how many.
    pub fn purge_prev(&mut self, clientid: u64) -> usize {
        self.forget_prev(|d| d.clientid == clientid).len()
    }

    /// Forgets the delegations awaiting reclaim after a client restart whose deadline passed;
    /// returns their (client id, file).
    pub fn expired_prev(&mut self, now: Instant) -> Vec<(u64, u64)> {
        self.forget_prev(|d| matches!(d.phase, Phase::Prev { deadline } if deadline <= now))
    }

    /// Removes the delegations awaiting reclaim that `pick` chooses; returns their (client
    /// id, file).
    fn forget_prev(&mut self, pick: impl Fn(&Delegation) -> bool) -> Vec<(u64, u64)> {
        let due = self.timed_where(|d| d.phase.awaits_reclaim() && pick(d));
        due.iter()
            .filter_map(|o| self.remove(o).map(|d| (d.clientid, d.file)))
            .collect()
    }

    /// Whether the delegation `other` is still being recalled: neither returned nor revoked
    /// (a CB_RECALL that did not get through is sent again while this holds).
    pub fn recall_pending(&self, other: &Other) -> bool {
        self.delegs
            .get(other)
            .is_some_and(|d| matches!(d.phase, Phase::Recalled { .. }))
    }

    /// Whether a recall of some delegation of `file` is under way: no new delegation of it is
    /// granted meanwhile, or the operation waiting for the recall could wait for ever.
    pub fn recalling(&self, file: u64) -> bool {
        self.live_on(file)
            .any(|(_, d)| matches!(d.phase, Phase::Recalled { .. }))
    }

    /// The holder of a live write delegation of `file` other than `clientid`, for CB_GETATTR
    /// (section 10.4.3): its client id, the delegation's `other` and the file's handle.
    pub fn write_holder(&self, file: u64, clientid: u64) -> Option<(u64, Other, NfsFh4)> {
        self.live_on(file)
            .find(|(_, d)| {
                d.clientid != clientid && d.kind == DelegType::Write && !d.phase.awaits_reclaim()
            })
            .map(|(o, d)| (d.clientid, *o, d.fh.clone()))
    }

    /// Takes the holder's CB_GETATTR answer (`change`, `size`) for the write delegation
    /// `other`, with the server's own change attribute now: the size and change another
    /// client must be shown when the holder has modified the file (section 10.4.3), or `None`
    /// when it has not (the server's own attributes stand). Each newly reported modification
    /// presents a change value above both the server's and the last one presented.
    pub fn reported(
        &mut self,
        other: &Other,
        change: u64,
        size: u64,
        server_change: u64,
    ) -> Option<Presented> {
        let d = self.delegs.get_mut(other)?;
        if d.phase == Phase::Revoked || d.phase.awaits_reclaim() {
            return None;
        }
        let r = &mut d.reported;
        let baseline = r.change.unwrap_or(d.granted_change);
        if change != baseline || r.presented.is_some() {
            let fresh = change != baseline;
            if fresh || r.presented.is_none() {
                let last = r.presented.unwrap_or(0);
                r.presented = Some(last.max(server_change).saturating_add(1));
            }
            r.change = Some(change);
            r.size = size;
            return r.presented.map(|c| Presented {
                size: r.size,
                change: c.max(server_change),
            });
        }
        None
    }
}

#[cfg(test)]
#[path = "deleg_tests.rs"]
mod tests;
