//! The server's side of a session: the fore channel slot table with its reply cache
//! (RFC 8881 section 2.10.6.1 and 2.10.6.2) and the client record's single CREATE_SESSION slot
//! (RFC 8881 section 18.36.4).

use std::fmt;

use bytes::Bytes;

use crate::nfs4::{NfsStat4, Sequenceid4, Slotid4};

/// A cached COMPOUND reply: the encoded header and the payload slices, as written to the wire.
pub type ReplyPieces = Vec<Bytes>;

/// Why SEQUENCE (or CB_SEQUENCE) refuses a request at the slot table (RFC 8881 section
/// 2.10.6.1). Each converts into the status SEQUENCE returns.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SlotError {
    /// The slot id is not below the table size.
    BadSlot,
    /// `sa_highest_slotid` is above the table's size.
    BadHighSlot,
    /// A retry of a request that is still being executed.
    Delay,
    /// A retry of a request whose reply was not cached.
    RetryUncachedRep,
    /// A sequence id that is neither the last one (retry) nor the next one (new request).
    SeqMisordered,
    /// The last sequence id with a request that differs from the one it claims to retry.
    SeqFalseRetry,
}

impl SlotError {
    /// The status SEQUENCE returns for this refusal.
    pub fn status(self) -> NfsStat4 {
        match self {
            Self::BadSlot => NfsStat4::NFS4ERR_BADSLOT,
            Self::BadHighSlot => NfsStat4::NFS4ERR_BAD_HIGH_SLOT,
            Self::Delay => NfsStat4::NFS4ERR_DELAY,
            Self::RetryUncachedRep => NfsStat4::NFS4ERR_RETRY_UNCACHED_REP,
            Self::SeqMisordered => NfsStat4::NFS4ERR_SEQ_MISORDERED,
            Self::SeqFalseRetry => NfsStat4::NFS4ERR_SEQ_FALSE_RETRY,
        }
    }
}

impl From<SlotError> for NfsStat4 {
    fn from(e: SlotError) -> Self {
        e.status()
    }
}

impl fmt::Display for SlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.status();
        write!(f, "slot refused: {}", s.name().unwrap_or("unknown status"))
    }
}

impl std::error::Error for SlotError {}

/// What to do with a request that passed the slot checks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SlotDecision<R = ReplyPieces> {
    /// A new request: execute it, then call [`ServerSlotTable::finish`]. The slot is in use
    /// until then.
    Execute,
    /// A retry of a completed request whose reply was cached: send this reply again, never
    /// re-execute.
    Replay(R),
}

/// A digest of a request's bytes, for the optional false-retry check.
///
/// Computed over the COMPOUND arguments (everything after the RPC call header and
/// credential, which may legitimately differ between a request and its retry). Arguments up
/// to 16 KiB are hashed whole; of longer ones (a WRITE's payload) the length and the first
/// and last 4 KiB, which hold every operation and argument
/// but the bulk of the payload. RFC 8881 section 2.10.6.1.3.1 permits but does not oblige
/// the check (knfsd compares nothing but the slot's sequence id), and a client that reuses a
/// sequence id for another request breaks the protocol: what the check must catch are other
/// operations or other arguments, not a WRITE's bytes in the middle. Hashing them all cost
/// 5 % of a data server's CPU on 1 MiB writes even with XXH3 (SipHash cost 43 %). The digest
/// lives only as long as the reply cache, in one process, and no peer gains by forging a
/// collision (it could only make its own request look like its own retry), so a fast
/// non-cryptographic hash does.
pub fn request_digest(compound_args: &[u8]) -> u64 {
    use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};
    let len = compound_args.len();
    if len <= DIGEST_WHOLE {
        return xxh3_64(compound_args);
    }
    let head = xxh3_64_with_seed(&compound_args[..DIGEST_EDGE], len as u64);
    xxh3_64_with_seed(&compound_args[len - DIGEST_EDGE..], head)
}

/// Arguments up to this size are digested whole ([`request_digest`]).
const DIGEST_WHOLE: usize = 16 << 10;
/// Of longer arguments, the bytes digested at each end ([`request_digest`]).
const DIGEST_EDGE: usize = 4 << 10;

#[derive(Clone, Debug)]
enum SlotState<R> {
    /// Never used since the slot was created (or dropped by shrinking): seqid is 0 and the
    /// first request must carry 1.
    Fresh,
    /// A request is being executed.
    InProgress,
    /// The last request completed; `None` when its reply was not cached.
    Done(Option<R>),
}

#[derive(Clone, Debug)]
struct Slot<R> {
    seqid: Sequenceid4,
    digest: u64,
    cachethis: bool,
    state: SlotState<R>,
}

impl<R> Slot<R> {
    fn fresh() -> Self {
        Self {
            seqid: 0,
            digest: 0,
            cachethis: false,
            state: SlotState::Fresh,
        }
    }
}

/// The fore channel slot table of one session, with one cached reply per slot (RFC 8881
/// section 2.10.6).
///
/// Drive it with [`begin`](Self::begin) when a SEQUENCE arrives and
/// [`finish`](Self::finish) when the COMPOUND's reply is ready. The rules, in the order they
/// are checked:
///
/// * `slotid` not below the table size: `NFS4ERR_BADSLOT`;
///   `sa_highest_slotid` not below the table size: `NFS4ERR_BAD_HIGH_SLOT`.
/// * The slot is busy: a retry of the request in progress gets `NFS4ERR_DELAY`, anything
///   else `NFS4ERR_SEQ_MISORDERED`.
/// * `seqid` is the slot's last sequence id (a retry): if the request's digest differs from
///   the original's, `NFS4ERR_SEQ_FALSE_RETRY` (the RFC makes this check optional; we do it
///   because replaying another request's reply would be worse); else the cached reply, or
///   `NFS4ERR_RETRY_UNCACHED_REP` if the reply was not cached. A slot that never ran a request
///   has nothing to retry: `NFS4ERR_SEQ_MISORDERED`.
/// * `seqid` is the last one plus one (wrapping at 2^32): a new request, [`SlotDecision::Execute`].
/// * Anything else: `NFS4ERR_SEQ_MISORDERED`.
///
/// A slot starts at sequence id 0, so the first request on it carries 1.
///
/// Shrinking (RFC 8881 section 2.10.6.1): [`Self::set_target_highest_slotid`] lowers
/// `sr_target_highest_slotid`, asking the client to use fewer slots. The enforced `sr_highest_slotid` stays at the table size: a slot above the
/// target may still hold the reply of a request whose client has not seen it yet (its
/// connection broke), and forgetting that slot would turn the client's retry into
/// `NFS4ERR_BADSLOT`, which the client reads as "not executed" and sends again as a new
/// request. Keeping the slots costs at most `max_slots` cached replies, which the session
/// negotiated anyway.
#[derive(Clone, Debug)]
pub struct ServerSlotTable<R = ReplyPieces> {
    slots: Vec<Slot<R>>,
    /// `sr_target_highest_slotid`.
    target: Slotid4,
}

impl<R: Clone> ServerSlotTable<R> {
    /// A table of `max_slots` slots (the negotiated `ca_maxrequests`; at least one slot is
    /// always kept).
    pub fn new(max_slots: u32) -> Self {
        let n = max_slots.max(1);
        Self {
            slots: (0..n).map(|_| Slot::fresh()).collect(),
            target: n - 1,
        }
    }

    /// The number of slots the table was created with (`ca_maxrequests`).
    pub fn max_slots(&self) -> u32 {
        self.slots.len() as u32
    }

    /// `sr_highest_slotid`: the highest slot id the server accepts (the table size minus one).
    pub fn highest_slotid(&self) -> Slotid4 {
        self.max_slots() - 1
    }

    /// `sr_target_highest_slotid`: the highest slot id the server would like the client to use.
    pub fn target_highest_slotid(&self) -> Slotid4 {
        self.target
    }

    /// Asks the client to use fewer (or, up to the table size, more) slots; reported as
    /// `sr_target_highest_slotid` (see the type's documentation).
    pub fn set_target_highest_slotid(&mut self, target: Slotid4) {
        self.target = target.min(self.max_slots() - 1);
    }

    /// How many slots have a request in progress.
    pub fn in_use(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, SlotState::InProgress))
            .count()
    }

    /// Whether the slot has a request in progress.
    pub fn is_in_use(&self, slotid: Slotid4) -> bool {
        self.slots
            .get(slotid as usize)
            .is_some_and(|s| matches!(s.state, SlotState::InProgress))
    }

    /// The `sa_cachethis` of the request in progress on the slot (`None` when none is).
    pub fn cachethis(&self, slotid: Slotid4) -> Option<bool> {
        let s = self.slots.get(slotid as usize)?;
        matches!(s.state, SlotState::InProgress).then_some(s.cachethis)
    }

    /// The slot checks of SEQUENCE (RFC 8881 section 2.10.6.1 and 2.10.6.2; rules in the
    /// type's documentation). On [`SlotDecision::Execute`] the slot is in use until
    /// [`finish`](Self::finish).
    pub fn begin(
        &mut self,
        slotid: Slotid4,
        seqid: Sequenceid4,
        highest_slotid: Slotid4,
        cachethis: bool,
        request_digest: u64,
    ) -> Result<SlotDecision<R>, SlotError> {
        if slotid >= self.max_slots() {
            return Err(SlotError::BadSlot);
        }
        if highest_slotid >= self.max_slots() {
            return Err(SlotError::BadHighSlot);
        }
        let slot = &mut self.slots[slotid as usize];
        let is_retry = seqid == slot.seqid;
        let is_next = seqid == slot.seqid.wrapping_add(1);
        match &slot.state {
            SlotState::InProgress if is_retry => return Err(SlotError::Delay),
            SlotState::InProgress => return Err(SlotError::SeqMisordered),
            SlotState::Done(reply) if is_retry => {
                if request_digest != slot.digest {
                    return Err(SlotError::SeqFalseRetry);
                }
                return match reply {
                    Some(r) => Ok(SlotDecision::Replay(r.clone())),
                    None => Err(SlotError::RetryUncachedRep),
                };
            }
            SlotState::Fresh | SlotState::Done(_) if is_next => {}
            SlotState::Fresh | SlotState::Done(_) => return Err(SlotError::SeqMisordered),
        }
        *slot = Slot {
            seqid,
            digest: request_digest,
            cachethis,
            state: SlotState::InProgress,
        };
        Ok(SlotDecision::Execute)
    }

    /// Ends the request in progress on the slot: keeps `reply` for retries when `cache` is
    /// true, else remembers that the reply was not cached (a retry then gets
    /// `NFS4ERR_RETRY_UNCACHED_REP`). Returns false, and changes nothing, when no request was
    /// in progress on the slot.
    pub fn finish(&mut self, slotid: Slotid4, reply: R, cache: bool) -> bool {
        match self.slots.get_mut(slotid as usize) {
            Some(slot) if matches!(slot.state, SlotState::InProgress) => {
                slot.state = SlotState::Done(cache.then_some(reply));
                true
            }
            _ => false,
        }
    }
}

/// What to do with a CREATE_SESSION that passed the client record's slot check.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CreateSessionDecision<R> {
    /// `csa_sequence` is the record's sequence plus one: create the session, then
    /// [`CreateSessionSlot::record`] the reply.
    Execute,
    /// `csa_sequence` is the record's sequence: a retry; send this cached reply again.
    Replay(R),
}

/// The single-slot reply cache of a client record for CREATE_SESSION (RFC 8881 section
/// 18.36.4).
///
/// The record starts at sequence id 0, so EXCHANGE_ID returns `eir_sequenceid` 1 (see
/// [`next_sequence`](Self::next_sequence)). `csa_sequence` equal to the record's sequence
/// replays the cached reply; the record's sequence plus one (wrapping) is a new request;
/// anything else is `NFS4ERR_SEQ_MISORDERED`, as is a "retry" before any CREATE_SESSION
/// succeeded.
#[derive(Clone, Debug)]
pub struct CreateSessionSlot<R> {
    seqid: Sequenceid4,
    reply: Option<R>,
}

impl<R> Default for CreateSessionSlot<R> {
    fn default() -> Self {
        Self {
            seqid: 0,
            reply: None,
        }
    }
}

impl<R: Clone> CreateSessionSlot<R> {
    /// A slot that has seen no CREATE_SESSION yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sequence id of the last CREATE_SESSION that succeeded (0 before the first).
    pub fn sequence(&self) -> Sequenceid4 {
        self.seqid
    }

    /// `eir_sequenceid`: the `csa_sequence` the next CREATE_SESSION must carry.
    pub fn next_sequence(&self) -> Sequenceid4 {
        self.seqid.wrapping_add(1)
    }

    /// The sequence check of CREATE_SESSION (RFC 8881 section 18.36.4).
    pub fn check(&self, csa_sequence: Sequenceid4) -> Result<CreateSessionDecision<R>, SlotError> {
        if csa_sequence == self.seqid {
            return match &self.reply {
                Some(r) => Ok(CreateSessionDecision::Replay(r.clone())),
                None => Err(SlotError::SeqMisordered),
            };
        }
        if csa_sequence == self.next_sequence() {
            return Ok(CreateSessionDecision::Execute);
        }
        Err(SlotError::SeqMisordered)
    }

    /// Records the reply of the CREATE_SESSION with `csa_sequence` that was executed.
    pub fn record(&mut self, csa_sequence: Sequenceid4, reply: R) {
        self.seqid = csa_sequence;
        self.reply = Some(reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Table = ServerSlotTable<&'static str>;

    fn executed(t: &mut Table, slot: u32, seq: u32, digest: u64) {
        assert_eq!(
            t.begin(slot, seq, slot, true, digest),
            Ok(SlotDecision::Execute)
        );
    }

    #[test]
    fn first_request_on_a_new_slot_carries_seqid_1() {
        let mut t = Table::new(4);
        assert_eq!(t.begin(0, 0, 0, true, 1), Err(SlotError::SeqMisordered));
        assert_eq!(t.begin(0, 2, 0, true, 1), Err(SlotError::SeqMisordered));
        executed(&mut t, 0, 1, 1);
        assert!(t.is_in_use(0));
    }

    #[test]
    fn slotid_above_highest_is_badslot() {
        let mut t = Table::new(4);
        assert_eq!(t.begin(4, 1, 0, true, 1), Err(SlotError::BadSlot));
        assert_eq!(t.begin(u32::MAX, 1, 0, true, 1), Err(SlotError::BadSlot));
        assert_eq!(
            NfsStat4::from(SlotError::BadSlot),
            NfsStat4::NFS4ERR_BADSLOT
        );
    }

    #[test]
    fn highest_slotid_beyond_table_is_bad_high_slot() {
        let mut t = Table::new(4);
        assert_eq!(t.begin(0, 1, 4, true, 1), Err(SlotError::BadHighSlot));
    }

    #[test]
    fn retry_of_cached_slot_gets_the_cached_reply() {
        let mut t = Table::new(2);
        executed(&mut t, 1, 1, 7);
        assert!(t.finish(1, "reply one", true));
        assert!(!t.is_in_use(1));
        assert_eq!(
            t.begin(1, 1, 1, true, 7),
            Ok(SlotDecision::Replay("reply one"))
        );
        // and again: a replay does not consume the cached reply
        assert_eq!(
            t.begin(1, 1, 1, true, 7),
            Ok(SlotDecision::Replay("reply one"))
        );
    }

    #[test]
    fn retry_while_original_in_progress_is_delay() {
        let mut t = Table::new(2);
        executed(&mut t, 0, 1, 7);
        assert_eq!(t.begin(0, 1, 0, true, 7), Err(SlotError::Delay));
    }

    #[test]
    fn next_seqid_while_slot_busy_is_misordered() {
        let mut t = Table::new(2);
        executed(&mut t, 0, 1, 7);
        assert_eq!(t.begin(0, 2, 0, true, 8), Err(SlotError::SeqMisordered));
    }

    #[test]
    fn retry_of_uncached_reply_is_retry_uncached_rep() {
        let mut t = Table::new(2);
        executed(&mut t, 0, 1, 7);
        t.finish(0, "not kept", false);
        assert_eq!(t.begin(0, 1, 0, false, 7), Err(SlotError::RetryUncachedRep));
        // the next request is still accepted
        executed(&mut t, 0, 2, 8);
    }

    #[test]
    fn same_seqid_with_different_request_is_false_retry() {
        let mut t = Table::new(2);
        executed(&mut t, 0, 1, 7);
        t.finish(0, "r", true);
        assert_eq!(t.begin(0, 1, 0, true, 99), Err(SlotError::SeqFalseRetry));
        t.finish(0, "x", true); // nothing in progress: ignored
        assert_eq!(t.begin(0, 1, 0, true, 7), Ok(SlotDecision::Replay("r")));
    }

    #[test]
    fn other_seqids_are_misordered() {
        let mut t = Table::new(2);
        executed(&mut t, 0, 1, 1);
        t.finish(0, "r", true);
        for bad in [0, 3, 100, u32::MAX] {
            assert_eq!(
                t.begin(0, bad, 0, true, 1),
                Err(SlotError::SeqMisordered),
                "{bad}"
            );
        }
    }

    #[test]
    fn new_request_replaces_the_cached_reply() {
        let mut t = Table::new(1);
        executed(&mut t, 0, 1, 1);
        t.finish(0, "one", true);
        executed(&mut t, 0, 2, 2);
        t.finish(0, "two", true);
        assert_eq!(t.begin(0, 2, 0, true, 2), Ok(SlotDecision::Replay("two")));
        assert_eq!(t.begin(0, 1, 0, true, 1), Err(SlotError::SeqMisordered));
    }

    #[test]
    fn seqid_wraps_from_max_to_zero() {
        let mut t = Table::new(1);
        t.slots[0] = Slot {
            seqid: u32::MAX,
            digest: 0,
            cachethis: false,
            state: SlotState::Done(Some("last")),
        };
        executed(&mut t, 0, 0, 5);
        t.finish(0, "wrapped", true);
        assert_eq!(
            t.begin(0, 0, 0, true, 5),
            Ok(SlotDecision::Replay("wrapped"))
        );
        executed(&mut t, 0, 1, 6);
    }

    #[test]
    fn finish_without_request_in_progress_is_refused() {
        let mut t = Table::new(1);
        assert!(!t.finish(0, "x", true));
        assert!(!t.finish(9, "x", true));
    }

    #[test]
    fn table_reports_highest_and_target() {
        let t = Table::new(8);
        assert_eq!(t.highest_slotid(), 7);
        assert_eq!(t.target_highest_slotid(), 7);
        assert_eq!(Table::new(0).max_slots(), 1);
    }

    #[test]
    fn lowering_the_target_keeps_slots_above_it_usable() {
        let mut t = Table::new(8);
        executed(&mut t, 6, 1, 1);
        t.finish(6, "six", true);
        t.set_target_highest_slotid(3);
        assert_eq!(t.target_highest_slotid(), 3);
        assert_eq!(t.highest_slotid(), 7);
        // a late retry on a slot above the target still gets its reply
        assert_eq!(t.begin(6, 1, 6, true, 1), Ok(SlotDecision::Replay("six")));
        t.set_target_highest_slotid(7);
        assert_eq!(t.target_highest_slotid(), 7);
    }

    #[test]
    fn target_is_capped_at_table_size() {
        let mut t = Table::new(4);
        t.set_target_highest_slotid(100);
        assert_eq!(t.target_highest_slotid(), 3);
    }

    #[test]
    fn cachethis_of_request_in_progress_is_remembered() {
        let mut t = Table::new(2);
        assert_eq!(t.begin(1, 1, 1, false, 1), Ok(SlotDecision::Execute));
        assert_eq!(t.cachethis(1), Some(false));
        assert_eq!(t.cachethis(0), None);
        assert_eq!(t.in_use(), 1);
    }

    #[test]
    fn request_digest_tells_requests_apart() {
        assert_eq!(request_digest(b"abc"), request_digest(b"abc"));
        assert_ne!(request_digest(b"abc"), request_digest(b"abd"));
        // A long request: its length and both ends count, the middle of the payload not.
        let long = vec![7u8; DIGEST_WHOLE + 1];
        let d = request_digest(&long);
        let mut other = long.clone();
        other[DIGEST_EDGE - 1] = 8;
        assert_ne!(request_digest(&other), d, "the head");
        let mut other = long.clone();
        other[long.len() - DIGEST_EDGE] = 8;
        assert_ne!(request_digest(&other), d, "the tail");
        assert_ne!(request_digest(&long[1..]), d, "the length");
        let mut other = long.clone();
        other[DIGEST_EDGE] = 8;
        assert_eq!(
            request_digest(&other),
            d,
            "the middle of a payload is not hashed"
        );
        // Whole up to the limit.
        let short = vec![7u8; DIGEST_WHOLE];
        let mut other = short.clone();
        other[DIGEST_WHOLE / 2] = 8;
        assert_ne!(request_digest(&other), request_digest(&short));
    }

    #[test]
    fn create_session_first_sequence_is_1() {
        let s = CreateSessionSlot::<&str>::new();
        assert_eq!(s.next_sequence(), 1);
        assert_eq!(s.check(1), Ok(CreateSessionDecision::Execute));
        assert_eq!(
            s.check(0),
            Err(SlotError::SeqMisordered),
            "nothing to replay yet"
        );
        assert_eq!(s.check(2), Err(SlotError::SeqMisordered));
    }

    #[test]
    fn create_session_same_sequence_replays_cached_reply() {
        let mut s = CreateSessionSlot::new();
        s.record(1, "session a");
        assert_eq!(s.sequence(), 1);
        assert_eq!(s.check(1), Ok(CreateSessionDecision::Replay("session a")));
    }

    #[test]
    fn create_session_next_sequence_is_new_and_others_misordered() {
        let mut s = CreateSessionSlot::new();
        s.record(1, "a");
        assert_eq!(s.check(2), Ok(CreateSessionDecision::Execute));
        assert_eq!(s.check(3), Err(SlotError::SeqMisordered));
        assert_eq!(s.check(0), Err(SlotError::SeqMisordered));
        s.record(u32::MAX, "z");
        assert_eq!(s.check(0), Ok(CreateSessionDecision::Execute), "wraps");
    }
}
