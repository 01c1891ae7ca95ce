//! The client's side of a session: which slot and sequence id the next request uses
//! (RFC 8881 section 2.10.6.1), and what to do with the server's answer.

use crate::nfs4::{NfsStat4, SequenceResOk, Sequenceid4, Slotid4};

/// The slot fields of one SEQUENCE: what the request carries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SlotTicket {
    /// `sa_slotid`.
    pub slotid: Slotid4,
    /// `sa_sequenceid`.
    pub seqid: Sequenceid4,
    /// `sa_highest_slotid`: the highest slot the client has in use, this one included.
    pub highest_slotid: Slotid4,
}

#[derive(Clone, Copy, Debug)]
struct ClientSlot {
    /// The sequence id the next request on this slot carries (1 for a new slot).
    seqid: Sequenceid4,
    in_use: bool,
    /// The server dropped the slot while a request on it was outstanding: start again at
    /// sequence id 1 once it completes.
    dropped: bool,
}

impl ClientSlot {
    const NEW: Self = Self {
        seqid: 1,
        in_use: false,
        dropped: false,
    };
}

/// The client's slot table of one session's fore channel (or the server's table of a back
/// channel: the same rules apply to CB_SEQUENCE).
///
/// [`acquire`](Self::acquire) hands out the lowest free slot at or below both the server's
/// `sr_highest_slotid` and `sr_target_highest_slotid`. When the reply comes,
/// [`complete`](Self::complete) advances the slot's sequence id and applies the server's new
/// limits. When the connection is lost before the reply, [`fail_retry`](Self::fail_retry)
/// keeps the slot and its sequence id so the request is re-sent unchanged (the server then
/// answers from its reply cache instead of executing it twice). A request that was never
/// sent gives its slot back with [`release_unsent`](Self::release_unsent).
///
/// Slots the server drops (a lower `sr_highest_slotid`) start again at sequence id 1, as the
/// server forgets them (RFC 8881 section 2.10.6.1).
#[derive(Clone, Debug)]
pub struct ClientSlotTable {
    slots: Vec<ClientSlot>,
    server_highest: Slotid4,
    target: Slotid4,
}

impl ClientSlotTable {
    /// A table of `max_slots` slots (the `ca_maxrequests` the server granted; at least one).
    pub fn new(max_slots: u32) -> Self {
        let n = max_slots.max(1);
        Self {
            slots: vec![ClientSlot::NEW; n as usize],
            server_highest: n - 1,
            target: n - 1,
        }
    }

    /// The number of slots negotiated for the session.
    pub fn max_slots(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The server's last `sr_highest_slotid`.
    pub fn server_highest_slotid(&self) -> Slotid4 {
        self.server_highest
    }

    /// The server's last `sr_target_highest_slotid`.
    pub fn target_highest_slotid(&self) -> Slotid4 {
        self.target
    }

    /// How many slots have a request outstanding.
    pub fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.in_use).count()
    }

    /// The highest slot id with a request outstanding (`sa_highest_slotid`), 0 when none.
    pub fn highest_in_use(&self) -> Slotid4 {
        self.slots.iter().rposition(|s| s.in_use).unwrap_or(0) as Slotid4
    }

    /// The highest slot id new requests may use now.
    fn limit(&self) -> usize {
        self.server_highest
            .min(self.target)
            .min(self.max_slots() - 1) as usize
    }

    fn ticket(&self, slotid: Slotid4) -> SlotTicket {
        SlotTicket {
            slotid,
            seqid: self.slots[slotid as usize].seqid,
            highest_slotid: self.highest_in_use(),
        }
    }

    fn slot_in_use(&mut self, slotid: Slotid4) -> Option<&mut ClientSlot> {
        self.slots.get_mut(slotid as usize).filter(|s| s.in_use)
    }

    /// Takes the lowest free slot the server allows now; `None` when all are busy (wait for
    /// a reply).
    pub fn acquire(&mut self) -> Option<SlotTicket> {
        let limit = self.limit();
        let i = self.slots[..=limit].iter().position(|s| !s.in_use)?;
        self.slots[i].in_use = true;
        Some(self.ticket(i as Slotid4))
    }

    /// The SEQUENCE reply arrived with `NFS4_OK` (whatever the later operations returned):
    /// the slot's next request uses the next sequence id, and the server's
    /// `sr_highest_slotid` / `sr_target_highest_slotid` apply. Returns false, changing
    /// nothing, when the reply does not match the slot's outstanding request.
    pub fn complete(&mut self, slotid: Slotid4, res: &SequenceResOk) -> bool {
        let Some(slot) = self.slot_in_use(slotid) else {
            return false;
        };
        if res.sr_slotid != slotid || res.sr_sequenceid != slot.seqid {
            return false;
        }
        Self::release_advanced(slot);
        self.apply_limits(res.sr_highest_slotid, res.sr_target_highest_slotid);
        true
    }

    /// SEQUENCE itself failed with `status`. For `NFS4ERR_DELAY` (the original request is
    /// still running on the server) the slot stays taken with the same sequence id and the
    /// ticket to re-send later is returned. For `NFS4ERR_RETRY_UNCACHED_REP` and
    /// `NFS4ERR_SEQ_FALSE_RETRY` the server did use this sequence id, so the slot moves on.
    /// Any other error means the slot was not used: it is freed with its sequence id
    /// unchanged.
    pub fn complete_error(&mut self, slotid: Slotid4, status: NfsStat4) -> Option<SlotTicket> {
        let slot = self.slot_in_use(slotid)?;
        match status {
            NfsStat4::NFS4ERR_DELAY => return Some(self.ticket(slotid)),
            NfsStat4::NFS4ERR_RETRY_UNCACHED_REP | NfsStat4::NFS4ERR_SEQ_FALSE_RETRY => {
                Self::release_advanced(slot)
            }
            _ => {
                slot.in_use = false;
                if slot.dropped {
                    *slot = ClientSlot::NEW;
                }
            }
        }
        None
    }

    /// The connection was lost before the reply: the request must be re-sent with the same
    /// slot and sequence id. Returns that ticket (with a fresh `highest_slotid`), or `None`
    /// when the slot had nothing outstanding.
    pub fn fail_retry(&mut self, slotid: Slotid4) -> Option<SlotTicket> {
        self.slot_in_use(slotid)?;
        Some(self.ticket(slotid))
    }

    /// The request was never sent: the slot is free again and its sequence id unchanged.
    pub fn release_unsent(&mut self, slotid: Slotid4) {
        if let Some(slot) = self.slot_in_use(slotid) {
            slot.in_use = false;
            if slot.dropped {
                *slot = ClientSlot::NEW;
            }
        }
    }

    fn release_advanced(slot: &mut ClientSlot) {
        if slot.dropped {
            *slot = ClientSlot::NEW;
        } else {
            slot.seqid = slot.seqid.wrapping_add(1);
            slot.in_use = false;
        }
    }

    fn apply_limits(&mut self, highest: Slotid4, target: Slotid4) {
        let max = self.max_slots() - 1;
        let highest = highest.min(max);
        if highest < self.server_highest {
            for slot in &mut self.slots[highest as usize + 1..=self.server_highest as usize] {
                if slot.in_use {
                    slot.dropped = true;
                } else {
                    *slot = ClientSlot::NEW;
                }
            }
        }
        self.server_highest = highest;
        self.target = target.min(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(t: &SlotTicket, highest: u32, target: u32) -> SequenceResOk {
        SequenceResOk {
            sr_slotid: t.slotid,
            sr_sequenceid: t.seqid,
            sr_highest_slotid: highest,
            sr_target_highest_slotid: target,
            ..Default::default()
        }
    }

    #[test]
    fn acquire_hands_out_lowest_free_slot_starting_at_seqid_1() {
        let mut c = ClientSlotTable::new(3);
        let a = c.acquire().unwrap();
        let b = c.acquire().unwrap();
        assert_eq!((a.slotid, a.seqid, a.highest_slotid), (0, 1, 0));
        assert_eq!((b.slotid, b.seqid, b.highest_slotid), (1, 1, 1));
        assert!(c.complete(0, &ok(&a, 2, 2)));
        let a2 = c.acquire().unwrap();
        assert_eq!((a2.slotid, a2.seqid, a2.highest_slotid), (0, 2, 1));
    }

    #[test]
    fn acquire_returns_none_when_all_slots_busy() {
        let mut c = ClientSlotTable::new(1);
        assert!(c.acquire().is_some());
        assert!(c.acquire().is_none());
        assert_eq!(c.in_use(), 1);
    }

    #[test]
    fn reply_for_another_seqid_is_ignored() {
        let mut c = ClientSlotTable::new(2);
        let a = c.acquire().unwrap();
        let mut res = ok(&a, 1, 1);
        res.sr_sequenceid = 5;
        assert!(!c.complete(0, &res));
        assert!(
            !c.complete(1, &ok(&a, 1, 1)),
            "slot 1 has nothing outstanding"
        );
        assert_eq!(c.in_use(), 1);
    }

    #[test]
    fn lost_connection_resends_same_slot_and_seqid() {
        let mut c = ClientSlotTable::new(2);
        let a = c.acquire().unwrap();
        let r = c.fail_retry(0).unwrap();
        assert_eq!((r.slotid, r.seqid), (a.slotid, a.seqid));
        assert_eq!(c.acquire().unwrap().slotid, 1, "slot 0 stays taken");
        assert!(c.fail_retry(5).is_none());
    }

    #[test]
    fn release_unsent_keeps_the_seqid() {
        let mut c = ClientSlotTable::new(1);
        let a = c.acquire().unwrap();
        c.release_unsent(a.slotid);
        assert_eq!(c.acquire().unwrap().seqid, 1);
    }

    #[test]
    fn delay_keeps_the_slot_for_a_resend() {
        let mut c = ClientSlotTable::new(1);
        let a = c.acquire().unwrap();
        assert_eq!(c.complete_error(0, NfsStat4::NFS4ERR_DELAY), Some(a));
        assert!(c.acquire().is_none());
    }

    #[test]
    fn uncached_retry_and_false_retry_advance_the_seqid() {
        for status in [
            NfsStat4::NFS4ERR_RETRY_UNCACHED_REP,
            NfsStat4::NFS4ERR_SEQ_FALSE_RETRY,
        ] {
            let mut c = ClientSlotTable::new(1);
            c.acquire().unwrap();
            assert_eq!(c.complete_error(0, status), None);
            assert_eq!(c.acquire().unwrap().seqid, 2, "{status:?}");
        }
    }

    #[test]
    fn other_sequence_errors_free_the_slot_unchanged() {
        let mut c = ClientSlotTable::new(1);
        c.acquire().unwrap();
        assert_eq!(c.complete_error(0, NfsStat4::NFS4ERR_SEQ_MISORDERED), None);
        assert_eq!(c.acquire().unwrap().seqid, 1);
    }

    #[test]
    fn target_limits_new_requests() {
        let mut c = ClientSlotTable::new(4);
        let a = c.acquire().unwrap();
        c.complete(0, &ok(&a, 3, 0));
        assert_eq!(c.target_highest_slotid(), 0);
        assert_eq!(c.acquire().unwrap().slotid, 0);
        assert!(c.acquire().is_none());
    }

    #[test]
    fn slots_dropped_by_the_server_restart_at_seqid_1() {
        let mut c = ClientSlotTable::new(4);
        let t: Vec<_> = (0..4).map(|_| c.acquire().unwrap()).collect();
        for x in &t[1..3] {
            assert!(c.complete(x.slotid, &ok(x, 3, 3)));
        }
        // slot 3 still outstanding when the server shrinks to 0
        assert!(c.complete(0, &ok(&t[0], 0, 0)));
        assert_eq!(c.server_highest_slotid(), 0);
        assert!(c.complete(3, &ok(&t[3], 0, 0)));
        let a = c.acquire().unwrap();
        assert!(c.complete(a.slotid, &ok(&a, 3, 3)));
        let again: Vec<_> = (0..4).map(|_| c.acquire().unwrap()).collect();
        assert_eq!(
            again.iter().map(|t| t.seqid).collect::<Vec<_>>(),
            vec![3, 1, 1, 1]
        );
    }

    #[test]
    fn server_limits_beyond_table_are_capped() {
        let mut c = ClientSlotTable::new(2);
        let a = c.acquire().unwrap();
        c.complete(0, &ok(&a, 100, 100));
        assert_eq!(c.server_highest_slotid(), 1);
        assert_eq!(c.target_highest_slotid(), 1);
    }
}
