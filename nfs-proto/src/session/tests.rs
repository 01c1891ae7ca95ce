//! A client table and a server table wired together over a lossy, reordering network: no
//! request ever executes twice, and every reply a client accepts is the reply of its
//! request's one execution.

use std::collections::HashMap;

use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::nfs4::{NfsStat4, SequenceResOk};

#[derive(Clone, Debug)]
enum Step {
    /// The client starts a new request if a slot is free.
    Issue,
    /// One request in flight reaches the server.
    DeliverRequest(usize),
    /// The network delivers a request twice (a transport-level retransmission).
    Duplicate(usize),
    /// The server finishes one request in progress, caching the reply or not.
    Finish(usize, bool),
    /// One reply in flight reaches the client.
    DeliverReply(usize),
    /// The connection breaks: everything in flight is lost and the client re-sends every
    /// outstanding request on a new connection.
    LoseConnection,
    /// The server asks for a different number of slots.
    SetTarget(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Issue),
        5 => any::<usize>().prop_map(Step::DeliverRequest),
        1 => any::<usize>().prop_map(Step::Duplicate),
        4 => (any::<usize>(), prop::bool::weighted(0.8)).prop_map(|(i, c)| Step::Finish(i, c)),
        5 => any::<usize>().prop_map(Step::DeliverReply),
        1 => Just(Step::LoseConnection),
        1 => (0u32..6).prop_map(Step::SetTarget),
    ]
}

/// A request on the wire: which logical request it is and the slot fields it carries.
#[derive(Clone, Copy, Debug)]
struct Msg {
    req: u64,
    ticket: SlotTicket,
}

/// A reply on the wire.
#[derive(Clone, Debug)]
struct ReplyMsg {
    req: u64,
    ticket: SlotTicket,
    result: Result<ReplyPieces, SlotError>,
    highest: u32,
    target: u32,
}

const SLOTS: u32 = 4;

struct World {
    client: ClientSlotTable,
    server: ServerSlotTable,
    /// slot -> the logical request outstanding on it at the client.
    outstanding: HashMap<u32, (u64, SlotTicket)>,
    requests: Vec<Msg>,
    replies: Vec<ReplyMsg>,
    /// Requests the server is executing: (request, ticket, connection generation).
    running: Vec<(u64, SlotTicket, u64)>,
    generation: u64,
    next_req: u64,
    executions: HashMap<u64, u32>,
    /// The reply each request's one execution produced.
    produced: HashMap<u64, ReplyPieces>,
    completed: u64,
}

fn digest(req: u64) -> u64 {
    request_digest(&req.to_be_bytes())
}

impl World {
    fn new() -> Self {
        Self {
            client: ClientSlotTable::new(SLOTS),
            server: ServerSlotTable::new(SLOTS),
            outstanding: HashMap::new(),
            requests: Vec::new(),
            replies: Vec::new(),
            running: Vec::new(),
            generation: 0,
            next_req: 0,
            executions: HashMap::new(),
            produced: HashMap::new(),
            completed: 0,
        }
    }

    fn reply(&mut self, req: u64, ticket: SlotTicket, result: Result<ReplyPieces, SlotError>) {
        self.replies.push(ReplyMsg {
            req,
            ticket,
            result,
            highest: self.server.highest_slotid(),
            target: self.server.target_highest_slotid(),
        });
    }

    fn issue(&mut self) {
        if let Some(ticket) = self.client.acquire() {
            let req = self.next_req;
            self.next_req += 1;
            assert!(self
                .outstanding
                .insert(ticket.slotid, (req, ticket))
                .is_none());
            self.requests.push(Msg { req, ticket });
        }
    }

    fn deliver_request(&mut self, m: Msg) {
        let t = m.ticket;
        match self
            .server
            .begin(t.slotid, t.seqid, t.highest_slotid, true, digest(m.req))
        {
            Ok(SlotDecision::Execute) => {
                let n = self.executions.entry(m.req).or_default();
                *n += 1;
                assert_eq!(*n, 1, "request {} executed twice", m.req);
                self.running.push((m.req, t, self.generation));
            }
            Ok(SlotDecision::Replay(r)) => self.reply(m.req, t, Ok(r)),
            Err(e) => self.reply(m.req, t, Err(e)),
        }
    }

    fn finish(&mut self, i: usize, cache: bool) {
        let (req, t, generation) = self.running.remove(i);
        let reply = vec![
            Bytes::from(format!("reply to {req}")),
            Bytes::from(vec![req as u8; 3]),
        ];
        self.produced.insert(req, reply.clone());
        assert!(self.server.finish(t.slotid, reply.clone(), cache));
        if generation == self.generation {
            self.reply(req, t, Ok(reply));
        }
    }

    fn deliver_reply(&mut self, r: ReplyMsg) {
        // The RPC layer matches a reply to its call; a stale or duplicate reply has no call.
        match self.outstanding.get(&r.ticket.slotid) {
            Some(&(req, t)) if req == r.req && t.seqid == r.ticket.seqid => {}
            _ => return,
        }
        let slot = r.ticket.slotid;
        match r.result {
            Ok(pieces) => {
                assert_eq!(
                    Some(&pieces),
                    self.produced.get(&r.req),
                    "request {} got a reply that is not its own",
                    r.req
                );
                let res = SequenceResOk {
                    sr_slotid: slot,
                    sr_sequenceid: r.ticket.seqid,
                    sr_highest_slotid: r.highest,
                    sr_target_highest_slotid: r.target,
                    ..Default::default()
                };
                assert!(self.client.complete(slot, &res));
                self.outstanding.remove(&slot);
                self.completed += 1;
            }
            Err(SlotError::Delay) => {
                let t = self.client.complete_error(slot, NfsStat4::NFS4ERR_DELAY);
                assert_eq!(t.map(|t| t.seqid), Some(r.ticket.seqid));
                self.requests.push(Msg {
                    req: r.req,
                    ticket: t.unwrap(),
                });
            }
            Err(SlotError::RetryUncachedRep) => {
                assert_eq!(self.executions.get(&r.req), Some(&1));
                self.client
                    .complete_error(slot, NfsStat4::NFS4ERR_RETRY_UNCACHED_REP);
                self.outstanding.remove(&slot);
                self.completed += 1;
            }
            Err(e) => panic!("request {} on its own slot refused with {e:?}", r.req),
        }
    }

    fn lose_connection(&mut self) {
        self.generation += 1;
        self.requests.clear();
        self.replies.clear();
        let mut slots: Vec<_> = self.outstanding.keys().copied().collect();
        slots.sort_unstable();
        for slot in slots {
            let (req, ticket) = self.outstanding[&slot];
            let again = self.client.fail_retry(slot).unwrap();
            assert_eq!((again.slotid, again.seqid), (ticket.slotid, ticket.seqid));
            self.requests.push(Msg { req, ticket: again });
        }
    }

    fn run(&mut self, s: Step) {
        match s {
            Step::Issue => self.issue(),
            Step::DeliverRequest(i) if !self.requests.is_empty() => {
                let m = self.requests.remove(i % self.requests.len());
                self.deliver_request(m);
            }
            Step::Duplicate(i) if !self.requests.is_empty() => {
                let m = self.requests[i % self.requests.len()];
                self.requests.push(m);
            }
            Step::Finish(i, cache) if !self.running.is_empty() => {
                self.finish(i % self.running.len(), cache)
            }
            Step::DeliverReply(i) if !self.replies.is_empty() => {
                let r = self.replies.remove(i % self.replies.len());
                self.deliver_reply(r);
            }
            Step::LoseConnection => self.lose_connection(),
            Step::SetTarget(t) => self.server.set_target_highest_slotid(t),
            _ => {}
        }
    }

    /// Lets the network and the server run until every outstanding request has its answer.
    fn drain(&mut self) {
        for _ in 0..10_000 {
            if !self.running.is_empty() {
                self.finish(0, true);
            } else if !self.requests.is_empty() {
                let m = self.requests.remove(0);
                self.deliver_request(m);
            } else if !self.replies.is_empty() {
                let r = self.replies.remove(0);
                self.deliver_reply(r);
            } else {
                break;
            }
        }
        assert!(
            self.outstanding.is_empty(),
            "unanswered: {:?}",
            self.outstanding
        );
        assert_eq!(self.client.in_use(), 0);
        assert_eq!(self.server.in_use(), 0);
    }
}

proptest! {
    #[test]
    fn no_request_executes_twice_and_replays_are_identical(
        steps in prop::collection::vec(step(), 0..300)
    ) {
        let mut w = World::new();
        for s in steps {
            w.run(s);
        }
        w.drain();
        prop_assert_eq!(w.completed, w.next_req);
        prop_assert!(w.executions.values().all(|&n| n == 1));
        prop_assert_eq!(w.executions.len() as u64, w.next_req);
    }
}

#[test]
fn lost_reply_is_replayed_after_reconnect() {
    let mut w = World::new();
    w.issue();
    w.run(Step::DeliverRequest(0));
    w.run(Step::Finish(0, true));
    w.run(Step::LoseConnection);
    assert_eq!(w.replies.len(), 0);
    w.drain();
    assert_eq!(w.executions[&0], 1);
    assert_eq!(w.completed, 1);
}
