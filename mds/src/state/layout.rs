//! Layout state, sans-IO (RFC 8881 sections 12.5 and 12.5.5): which client holds a layout of
//! which file, under which layout stateid, and the recalls in progress.
//!
//! This server grants whole-file layouts only (offset 0, length all ones: the Linux file
//! layout driver does I/O through the MDS otherwise), so a client's layout of a file is just
//! the set of iomodes it holds (READ, RW) plus the return-on-close flag. There is one layout
//! stateid per client and file (section 12.5.2); its seqid moves on with every LAYOUTGET,
//! every LAYOUTRETURN that leaves something, and every CB_LAYOUTRECALL (section 12.5.3).
//!
//! A request may carry an older seqid than the current one (a LAYOUTGET that crossed a
//! recall): that is fine, as in knfsd; a seqid the server never issued is BAD_STATEID. While a
//! recall of a file is outstanding, new LAYOUTGETs of it get NFS4ERR_RECALLCONFLICT (section
//! 12.5.5.2); a client that does not return in time is fenced: its layout is revoked and the
//! caller tells the data servers to refuse its stateids.
//!
//! Every layout that goes (returned, closed with its file, recalled with nothing to return,
//! revoked, its client gone) is kept in an outbox ([`LayoutTable::take_gone`]) for the
//! fencing task to push to the data servers, which then refuse the DS filehandles handed out
//! under it (`cluster::ds_fh`: a handle is bound to its layout).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use nfs_proto::nfs4::{Layoutiomode4, Layouttype4, NfsStat4, Stateid4};

use super::stateid::{
    next_seqid, CounterExhausted, Holder, Other, StateidError, StateidKind, StateidMinter,
};

/// Why a layout request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Not a layout stateid of this client and file, or a seqid from the future.
    #[error("bad layout stateid")]
    BadStateid,
    /// A layout stateid this server minted in an earlier boot: the layout is gone with that
    /// boot (layouts are not kept across restarts). As an NFS status it is BAD_STATEID: the
    /// Linux client answers STALE_STATEID with lease recovery and then resends the same
    /// stateid, for ever; callers that can do better (LAYOUTCOMMIT, LAYOUTRETURN) match it.
    #[error("layout stateid of an earlier boot")]
    Stale,
    /// A recall of the file is outstanding (RFC 8881 section 12.5.5.2).
    #[error("a recall of this file is in progress")]
    RecallConflict,
    /// `LAYOUTIOMODE4_ANY` in a LAYOUTGET, or another iomode this server does not know.
    #[error("bad iomode")]
    BadIomode,
    /// The per-boot stateid counter ran out.
    #[error("stateid counter exhausted")]
    Exhausted,
    /// A LAYOUTRETURN under a layout stateid whose seqid is older than the layout's
    /// (RFC 8881 section 12.5.3: the client has not seen a LAYOUTGET's reply yet).
    #[error("old layout stateid")]
    OldStateid,
    /// The client holds a layout of this file of another type (one layout per client and
    /// file, RFC 8881 section 12.2.7's "layout" being one type's).
    #[error("the client holds a layout of this file of another type")]
    OtherType,
}

impl From<LayoutError> for NfsStat4 {
    fn from(e: LayoutError) -> Self {
        match e {
            LayoutError::BadStateid | LayoutError::Stale => NfsStat4::NFS4ERR_BAD_STATEID,
            LayoutError::RecallConflict => NfsStat4::NFS4ERR_RECALLCONFLICT,
            LayoutError::BadIomode => NfsStat4::NFS4ERR_BADIOMODE,
            LayoutError::Exhausted => NfsStat4::NFS4ERR_SERVERFAULT,
            LayoutError::OtherType => NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE,
            LayoutError::OldStateid => NfsStat4::NFS4ERR_OLD_STATEID,
        }
    }
}

impl From<CounterExhausted> for LayoutError {
    fn from(_: CounterExhausted) -> Self {
        Self::Exhausted
    }
}

/// The iomodes a client holds for a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Iomodes {
    /// A READ layout.
    pub read: bool,
    /// An RW layout (covers reading too).
    pub rw: bool,
}

impl Iomodes {
    fn is_empty(self) -> bool {
        !self.read && !self.rw
    }
}

/// A recall in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Recall {
    deadline: Instant,
}

#[derive(Clone, Debug)]
struct Layout {
    clientid: u64,
    fileid: u64,
    /// Its type (a recall names it).
    layout_type: Layouttype4,
    seqid: u32,
    /// The seqid the last LAYOUTGET gave (a recall moves `seqid` on, not this).
    granted: u32,
    modes: Iomodes,
    return_on_close: bool,
    recall: Option<Recall>,
}

/// One CB_LAYOUTRECALL to send: the layout stateid carries the seqid the recall moved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecallOrder {
    /// The client to call back.
    pub clientid: u64,
    /// The file.
    pub fileid: u64,
    /// The layout stateid to put in the recall.
    pub stateid: Stateid4,
    /// The layout's type (`clora_type`).
    pub layout_type: Layouttype4,
}

/// A layout taken away from a client that did not return it in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revoked {
    /// The client.
    pub clientid: u64,
    /// The file.
    pub fileid: u64,
    /// Its layout stateid's `other`.
    pub other: Other,
}

/// Every layout the MDS has handed out.
#[derive(Debug)]
pub struct LayoutTable {
    minter: StateidMinter,
    layouts: HashMap<Other, Layout>,
    by_key: HashMap<(u64, u64), Other>,
    by_file: HashMap<u64, HashSet<Other>>,
    by_client: HashMap<u64, HashSet<Other>>,
    /// The layouts being recalled: the deadline task looks at these each tick, not at every
    /// layout out. One no longer recalled (returned, granted again) is dropped when next
    /// looked at.
    recalled: HashSet<Other>,
    /// Layouts gone since the fencing task last took them, once it is started
    /// ([`LayoutTable::push_gone_to`]); before that nothing would drain them.
    gone: Vec<Other>,
    waker: Option<Arc<Notify>>,
}

impl LayoutTable {
    /// An empty table minting layout stateids with `minter`.
    pub fn new(minter: StateidMinter) -> Self {
        Self {
            minter,
            layouts: HashMap::new(),
            by_key: HashMap::new(),
            by_file: HashMap::new(),
            by_client: HashMap::new(),
            recalled: HashSet::new(),
            gone: Vec::new(),
            waker: None,
        }
    }

    /// From now on, keeps every layout that goes for [`take_gone`](Self::take_gone) and wakes
    /// `waker` (the fencing task's).
    pub fn push_gone_to(&mut self, waker: Arc<Notify>) {
        self.waker = Some(waker);
    }

    /// The layout stateids gone since the last call, for the data servers to refuse.
    pub fn take_gone(&mut self) -> Vec<Other> {
        std::mem::take(&mut self.gone)
    }

    fn stateid(l: &Layout, other: Other) -> Stateid4 {
        Stateid4 {
            seqid: l.seqid,
            other,
        }
    }

    /// The layout a layout stateid names, for this client and file, at a seqid the server
    /// issued (older ones are accepted, RFC 8881 section 12.5.3).
    fn check(
        &self,
        clientid: u64,
        fileid: u64,
        stateid: &Stateid4,
    ) -> Result<&Layout, LayoutError> {
        let Some(l) = self.layouts.get(&stateid.other) else {
            return Err(match self.minter.fields(&stateid.other) {
                Err(StateidError::Stale) => LayoutError::Stale,
                _ => LayoutError::BadStateid,
            });
        };
        if l.clientid != clientid || l.fileid != fileid || stateid.seqid > l.seqid {
            return Err(LayoutError::BadStateid);
        }
        Ok(l)
    }

    /// The iomodes held under a layout stateid of this client and file (LAYOUTCOMMIT checks
    /// that it covers RW); `BadStateid` as for any other use of it.
    pub fn modes(
        &self,
        clientid: u64,
        fileid: u64,
        stateid: &Stateid4,
    ) -> Result<Iomodes, LayoutError> {
        Ok(self.check(clientid, fileid, stateid)?.modes)
    }

    /// Whether `stateid` is a layout stateid (by its kind byte): LAYOUTGET then checks it
    /// here; otherwise the caller has checked it as an open, lock or delegation stateid of
    /// this client and file.
    pub fn is_layout_stateid(stateid: &Stateid4) -> bool {
        StateidKind::of(&stateid.other) == Some(StateidKind::Layout)
    }

    /// LAYOUTGET of a whole-file layout (RFC 8881 section 18.43.3): grants `iomode` and
    /// returns the layout stateid with its new seqid. `presented` is the stateid the client
    /// sent: its layout stateid, or (the caller having checked it) open/lock/delegation state
    /// of the file, which is how the first LAYOUTGET gets one.
    pub fn get(
        &mut self,
        clientid: u64,
        fileid: u64,
        presented: &Stateid4,
        iomode: Layoutiomode4,
        return_on_close: bool,
    ) -> Result<Stateid4, LayoutError> {
        let files = Layouttype4::LAYOUT4_NFSV4_1_FILES;
        self.get_of_type(clientid, fileid, presented, iomode, return_on_close, files)
    }

    /// [`LayoutTable::get`] of a layout of type `layout_type`: a client holding the file's
    /// layout of another type is refused ([`LayoutError::OtherType`]).
    pub fn get_of_type(
        &mut self,
        clientid: u64,
        fileid: u64,
        presented: &Stateid4,
        iomode: Layoutiomode4,
        return_on_close: bool,
        layout_type: Layouttype4,
    ) -> Result<Stateid4, LayoutError> {
        let rw = match iomode {
            Layoutiomode4::LAYOUTIOMODE4_READ => false,
            Layoutiomode4::LAYOUTIOMODE4_RW => true,
            _ => return Err(LayoutError::BadIomode),
        };
        if self.recall_pending(fileid) {
            return Err(LayoutError::RecallConflict);
        }
        let existing = self.by_key.get(&(clientid, fileid)).copied();
        let other = if Self::is_layout_stateid(presented) {
            self.check(clientid, fileid, presented)?;
            presented.other
        } else if let Some(o) = existing {
            o
        } else {
            let other = self
                .minter
                .mint(StateidKind::Layout, 0, Holder { clientid, fileid })?;
            self.layouts.insert(
                other,
                Layout {
                    clientid,
                    fileid,
                    layout_type,
                    seqid: 0,
                    granted: 0,
                    modes: Iomodes::default(),
                    return_on_close,
                    recall: None,
                },
            );
            self.by_key.insert((clientid, fileid), other);
            self.by_file.entry(fileid).or_default().insert(other);
            self.by_client.entry(clientid).or_default().insert(other);
            other
        };
        let l = self
            .layouts
            .get_mut(&other)
            .ok_or(LayoutError::BadStateid)?;
        if l.layout_type != layout_type {
            return Err(LayoutError::OtherType);
        }
        if rw {
            l.modes.rw = true;
        } else {
            l.modes.read = true;
        }
        l.return_on_close |= return_on_close;
        l.seqid = next_seqid(l.seqid);
        l.granted = l.seqid;
        Ok(Self::stateid(l, other))
    }

    /// LAYOUTRETURN of one file (RFC 8881 section 18.44.3, `LAYOUTRETURN4_FILE`): drops
    /// `iomode` (ANY: both). Returns the layout stateid with its new seqid while something is
    /// left, or `None` when the layout is gone (the stateid is then invalid). A return ends a
    /// recall of this client's layout.
    pub fn return_file(
        &mut self,
        clientid: u64,
        fileid: u64,
        stateid: &Stateid4,
        iomode: Layoutiomode4,
    ) -> Result<Option<Stateid4>, LayoutError> {
        self.check(clientid, fileid, stateid)?;
        let other = stateid.other;
        let l = self
            .layouts
            .get_mut(&other)
            .ok_or(LayoutError::BadStateid)?;
        // A return must name the layout at least as its last LAYOUTGET left it (section
        // 12.5.3): an older seqid means a LAYOUTGET's reply is still on its way to the
        // client, whose layout it would return unseen. (A recall's bump is not required: a
        // client returning what it was granted has seen every grant.) Seqid 0 stands for
        // the current one.
        if stateid.seqid != 0 && (stateid.seqid.wrapping_sub(l.granted) as i32) < 0 {
            return Err(LayoutError::OldStateid);
        }
        match iomode {
            Layoutiomode4::LAYOUTIOMODE4_READ => l.modes.read = false,
            Layoutiomode4::LAYOUTIOMODE4_RW => l.modes.rw = false,
            Layoutiomode4::LAYOUTIOMODE4_ANY => l.modes = Iomodes::default(),
            _ => return Err(LayoutError::BadIomode),
        }
        l.recall = None;
        if l.modes.is_empty() {
            self.remove(&other);
            return Ok(None);
        }
        l.seqid = next_seqid(l.seqid);
        Ok(Some(Self::stateid(l, other)))
    }

    /// LAYOUTRETURN of every layout of the client (`LAYOUTRETURN4_ALL`), or of those whose
    /// file `in_fsid` accepts (`LAYOUTRETURN4_FSID`). Returns how many went.
    pub fn return_all(&mut self, clientid: u64, in_fsid: impl Fn(u64) -> bool) -> usize {
        let others: Vec<Other> = self
            .by_client
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let mut n = 0;
        for o in others {
            if self.layouts.get(&o).is_some_and(|l| in_fsid(l.fileid)) {
                self.remove(&o);
                n += 1;
            }
        }
        n
    }

    fn remove(&mut self, other: &Other) -> Option<Layout> {
        let l = self.layouts.remove(other)?;
        if let Some(w) = &self.waker {
            self.gone.push(*other);
            w.notify_one();
        }
        self.by_key.remove(&(l.clientid, l.fileid));
        if let Some(s) = self.by_file.get_mut(&l.fileid) {
            s.remove(other);
            if s.is_empty() {
                self.by_file.remove(&l.fileid);
            }
        }
        if let Some(s) = self.by_client.get_mut(&l.clientid) {
            s.remove(other);
            if s.is_empty() {
                self.by_client.remove(&l.clientid);
            }
        }
        Some(l)
    }

    fn recall_pending(&self, fileid: u64) -> bool {
        self.by_file.get(&fileid).is_some_and(|s| {
            s.iter()
                .any(|o| self.layouts.get(o).is_some_and(|l| l.recall.is_some()))
        })
    }

    /// Starts recalling every layout of `fileid` (but `except`'s, e.g. the client whose own
    /// truncate caused it), due back within `timeout` (RFC 8881 section 12.5.5): returns the
    /// CB_LAYOUTRECALLs to send. Layouts already being recalled are not recalled again.
    pub fn recall_file(
        &mut self,
        fileid: u64,
        except: Option<u64>,
        now: Instant,
        timeout: Duration,
    ) -> Vec<RecallOrder> {
        let others: Vec<Other> = self
            .by_file
            .get(&fileid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let mut orders = Vec::new();
        for o in others {
            let Some(l) = self.layouts.get_mut(&o) else {
                continue;
            };
            if Some(l.clientid) == except || l.recall.is_some() {
                continue;
            }
            l.seqid = next_seqid(l.seqid);
            l.recall = Some(Recall {
                deadline: now + timeout,
            });
            self.recalled.insert(o);
            orders.push(RecallOrder {
                clientid: l.clientid,
                fileid,
                stateid: Self::stateid(l, o),
                layout_type: l.layout_type,
            });
        }
        orders.sort_by_key(|r| r.clientid);
        orders
    }

    /// The client answered a recall with NFS4ERR_NOMATCHING_LAYOUT (it holds nothing): the
    /// layout is gone (RFC 8881 section 20.3.4).
    pub fn recall_answered_nothing(&mut self, other: &Other) {
        self.remove(other);
    }

    /// Revokes one layout now (a recall that cannot reach its client: RFC 8881 section
    /// 12.5.5.2 lets the server revoke it), for the caller to fence the client.
    pub fn fence(&mut self, other: &Other) -> Option<Revoked> {
        self.remove(other).map(|l| Revoked {
            clientid: l.clientid,
            fileid: l.fileid,
            other: *other,
        })
    }

    /// Recalls past their deadline: the layouts are revoked (removed) and returned so the
    /// caller fences the clients on the data servers.
    pub fn expired_recalls(&mut self, now: Instant) -> Vec<Revoked> {
        let layouts = &self.layouts;
        self.recalled
            .retain(|o| layouts.get(o).is_some_and(|l| l.recall.is_some()));
        let due: Vec<Other> = self
            .recalled
            .iter()
            .filter(|&o| {
                self.layouts
                    .get(o)
                    .is_some_and(|l| l.recall.is_some_and(|r| r.deadline <= now))
            })
            .copied()
            .collect();
        let mut out: Vec<Revoked> = due
            .into_iter()
            .filter_map(|o| {
                self.remove(&o).map(|l| Revoked {
                    clientid: l.clientid,
                    fileid: l.fileid,
                    other: o,
                })
            })
            .collect();
        out.sort_by_key(|r| (r.clientid, r.fileid));
        out
    }

    /// The client's last open of the file closed: return-on-close layouts go (RFC 8881
    /// section 18.43.3, `logr_return_on_close`). Returns the layout stateid dropped, if any.
    pub fn closed(&mut self, clientid: u64, fileid: u64) -> Option<Other> {
        let other = *self.by_key.get(&(clientid, fileid))?;
        if self.layouts.get(&other)?.return_on_close {
            self.remove(&other);
            return Some(other);
        }
        None
    }

    /// The client is gone (lease expired, destroyed): all its layouts go.
    pub fn client_gone(&mut self, clientid: u64) -> Vec<Other> {
        let others: Vec<Other> = self
            .by_client
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        for o in &others {
            self.remove(o);
        }
        others
    }

    /// Who holds layouts of `fileid`, and which iomodes.
    pub fn holders(&self, fileid: u64) -> Vec<(u64, Iomodes)> {
        let mut v: Vec<(u64, Iomodes)> = self
            .by_file
            .get(&fileid)
            .into_iter()
            .flatten()
            .filter_map(|o| self.layouts.get(o))
            .map(|l| (l.clientid, l.modes))
            .collect();
        v.sort_by_key(|(c, _)| *c);
        v
    }

    /// Whether some client may be writing `fileid` through the data servers (so its size must
    /// be asked of them).
    pub fn has_write_layouts(&self, fileid: u64) -> bool {
        // Without `holders`' list and sort: the settling task asks this of every marked
        // file in its sweep, most of them held open with an RW layout under a delegation.
        self.by_file.get(&fileid).is_some_and(|s| {
            s.iter()
                .any(|o| self.layouts.get(o).is_some_and(|l| l.modes.rw))
        })
    }

    /// Whether `clientid` holds an RW layout of `fileid`.
    pub fn holds_rw(&self, fileid: u64, clientid: u64) -> bool {
        self.by_file
            .get(&fileid)
            .into_iter()
            .flatten()
            .filter_map(|o| self.layouts.get(o))
            .any(|l| l.clientid == clientid && l.modes.rw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_server::{Clock, ManualClock};

    const READ: Layoutiomode4 = Layoutiomode4::LAYOUTIOMODE4_READ;
    const RW: Layoutiomode4 = Layoutiomode4::LAYOUTIOMODE4_RW;
    const ANY: Layoutiomode4 = Layoutiomode4::LAYOUTIOMODE4_ANY;

    fn table() -> LayoutTable {
        LayoutTable::new(StateidMinter::new([9; 32], 3))
    }

    /// An open stateid of the client, as the caller would have checked it (one per client:
    /// the `clientid`-th minted).
    fn open_stateid(clientid: u64) -> Stateid4 {
        let mut m = StateidMinter::new([9; 32], 3);
        let holder = Holder {
            clientid,
            fileid: 0,
        };
        let mut other = m.mint(StateidKind::Open, 3, holder).unwrap();
        for _ in 1..clientid {
            other = m.mint(StateidKind::Open, 3, holder).unwrap();
        }
        Stateid4 { seqid: 1, other }
    }

    #[test]
    fn modes_tells_the_iomodes_held_under_a_layout_stateid_of_this_client_and_file() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), READ, true).unwrap();
        assert_eq!(
            t.modes(1, 10, &a),
            Ok(Iomodes {
                read: true,
                rw: false
            })
        );
        let b = t.get(1, 10, &a, RW, true).unwrap();
        assert!(t.modes(1, 10, &b).unwrap().rw);
        assert_eq!(t.modes(2, 10, &b), Err(LayoutError::BadStateid));
        assert_eq!(t.modes(1, 11, &b), Err(LayoutError::BadStateid));
        let future = Stateid4 {
            seqid: b.seqid + 1,
            ..b
        };
        assert_eq!(t.modes(1, 10, &future), Err(LayoutError::BadStateid));
    }

    #[test]
    fn the_first_layoutget_makes_one_layout_stateid_per_client_and_file() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), READ, true).unwrap();
        assert!(LayoutTable::is_layout_stateid(&a));
        assert_eq!(a.seqid, 1);
        // Another LAYOUTGET with the open stateid again finds the same layout stateid.
        let b = t.get(1, 10, &open_stateid(1), RW, true).unwrap();
        assert_eq!((b.other, b.seqid), (a.other, 2));
        // With the layout stateid, even an older seqid.
        let c = t.get(1, 10, &a, READ, true).unwrap();
        assert_eq!((c.other, c.seqid), (a.other, 3));
        // Another file or another client: another stateid.
        assert_ne!(
            t.get(1, 11, &open_stateid(1), READ, true).unwrap().other,
            a.other
        );
        assert_ne!(
            t.get(2, 10, &open_stateid(2), READ, true).unwrap().other,
            a.other
        );
        assert_eq!(
            t.holders(10),
            [
                (
                    1,
                    Iomodes {
                        read: true,
                        rw: true
                    }
                ),
                (
                    2,
                    Iomodes {
                        read: true,
                        rw: false
                    }
                )
            ]
        );
    }

    #[test]
    fn layout_stateids_of_others_or_from_the_future_are_bad() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        let future = Stateid4 { seqid: 9, ..a };
        assert_eq!(
            t.get(1, 10, &future, RW, false),
            Err(LayoutError::BadStateid)
        );
        assert_eq!(t.get(2, 10, &a, RW, false), Err(LayoutError::BadStateid));
        assert_eq!(t.get(1, 11, &a, RW, false), Err(LayoutError::BadStateid));
        assert_eq!(t.get(1, 10, &a, ANY, false), Err(LayoutError::BadIomode));
        assert_eq!(
            t.return_file(1, 10, &future, ANY),
            Err(LayoutError::BadStateid)
        );
    }

    #[test]
    fn returning_part_keeps_the_stateid_and_returning_all_frees_it() {
        let mut t = table();
        t.get(1, 10, &open_stateid(1), READ, false).unwrap();
        let s = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        let left = t.return_file(1, 10, &s, RW).unwrap().expect("READ left");
        assert_eq!((left.other, left.seqid), (s.other, s.seqid + 1));
        assert!(!t.has_write_layouts(10));
        assert_eq!(t.return_file(1, 10, &left, READ).unwrap(), None);
        assert!(t.holders(10).is_empty());
        assert_eq!(
            t.return_file(1, 10, &left, READ),
            Err(LayoutError::BadStateid),
            "a freed layout stateid is bad"
        );
    }

    #[test]
    fn a_return_under_an_older_seqid_is_old_stateid() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        let b = t.get(1, 10, &a, RW, false).unwrap();
        assert_eq!(b.seqid, a.seqid + 1);
        assert_eq!(
            t.return_file(1, 10, &a, ANY),
            Err(LayoutError::OldStateid),
            "the second LAYOUTGET's reply not seen"
        );
        assert_eq!(t.return_file(1, 10, &b, ANY), Ok(None));
        // A recall moves the seqid on; a return under the last granted one is still taken.
        let c = t.get(1, 11, &open_stateid(1), RW, false).unwrap();
        let now = ManualClock::new().now();
        let orders = t.recall_file(11, None, now, Duration::from_secs(5));
        assert_eq!(orders[0].stateid.seqid, c.seqid + 1);
        assert_eq!(t.return_file(1, 11, &c, ANY), Ok(None));
    }

    #[test]
    fn a_layout_keeps_its_type_and_a_recall_names_it() {
        let mut t = table();
        let flex = Layouttype4::LAYOUT4_FLEX_FILES;
        let a = t
            .get_of_type(1, 10, &open_stateid(1), RW, false, flex)
            .unwrap();
        assert_eq!(
            t.get(1, 10, &a, READ, false),
            Err(LayoutError::OtherType),
            "a file layout of a file whose flex files layout the client holds"
        );
        assert!(t.get_of_type(1, 10, &a, READ, false, flex).is_ok());
        let now = ManualClock::new().now();
        let orders = t.recall_file(10, None, now, Duration::from_secs(5));
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].layout_type, flex);
    }

    #[test]
    fn a_recall_bumps_the_seqid_blocks_new_layoutgets_and_ends_with_the_return() {
        let mut t = table();
        let now = ManualClock::new().now();
        let a = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        let b = t.get(2, 10, &open_stateid(2), READ, false).unwrap();
        let orders = t.recall_file(10, Some(2), now, Duration::from_secs(5));
        assert_eq!(
            orders,
            [RecallOrder {
                clientid: 1,
                fileid: 10,
                stateid: Stateid4 {
                    seqid: 2,
                    other: a.other
                },
                layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            }]
        );
        assert!(t
            .recall_file(10, Some(2), now, Duration::from_secs(5))
            .is_empty());
        assert_eq!(
            t.get(2, 10, &b, RW, false),
            Err(LayoutError::RecallConflict)
        );
        assert_eq!(t.return_file(1, 10, &orders[0].stateid, ANY).unwrap(), None);
        assert!(t.get(2, 10, &b, RW, false).is_ok());
        assert!(t.expired_recalls(now + Duration::from_secs(60)).is_empty());
        // The deadline check looks at recalled layouts only; the returned one left them.
        assert!(t.recalled.is_empty());
    }

    #[test]
    fn a_recall_not_answered_in_time_revokes_the_layout() {
        let mut t = table();
        let now = ManualClock::new().now();
        let a = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        t.recall_file(10, None, now, Duration::from_secs(5));
        assert!(t.expired_recalls(now + Duration::from_secs(4)).is_empty());
        assert_eq!(
            t.expired_recalls(now + Duration::from_secs(5)),
            [Revoked {
                clientid: 1,
                fileid: 10,
                other: a.other
            }]
        );
        assert!(t.holders(10).is_empty());
        assert!(
            t.get(1, 10, &open_stateid(1), RW, false).is_ok(),
            "no conflict left"
        );
    }

    #[test]
    fn return_on_close_layouts_go_with_the_last_close_and_all_go_with_the_client() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), READ, true).unwrap();
        t.get(1, 11, &open_stateid(1), READ, false).unwrap();
        t.get(1, 12, &open_stateid(1), READ, false).unwrap();
        assert_eq!(t.closed(1, 10), Some(a.other));
        assert_eq!(t.closed(1, 11), None, "not return-on-close");
        assert_eq!(t.return_all(1, |f| f == 11), 1);
        assert_eq!(t.holders(12).len(), 1);
        assert_eq!(t.client_gone(1).len(), 1);
        assert!(t.holders(12).is_empty());
        assert_eq!(t.return_all(1, |_| true), 0);
    }

    #[test]
    fn nomatching_layout_in_answer_to_a_recall_drops_the_layout() {
        let mut t = table();
        let a = t.get(1, 10, &open_stateid(1), RW, false).unwrap();
        t.recall_file(10, None, ManualClock::new().now(), Duration::from_secs(5));
        t.recall_answered_nothing(&a.other);
        assert!(t.holders(10).is_empty());
    }
}
