//! Session state machines (RFC 8881 section 2.10), sans-IO: slot tables and the reply cache.
//!
//! ```text
//!   client                                              server
//!   ClientSlotTable::acquire() ──SEQUENCE(slot, seqid)──> ServerSlotTable::begin()
//!        ^                                                 ├─ Execute ─> run ops ─> finish(reply)
//!        |                                                 ├─ Replay(cached reply)
//!        |                                                 └─ Err(SlotError) -> status
//!   complete(&SequenceResOk) <──────── reply ──────────────┘
//!   fail_retry() on a lost connection: same slot, same seqid, so the server replays
//! ```
//!
//! Both sides are plain structs driven by method calls, used by the metadata server, the data
//! servers, and the client library (whose back channel runs the server side for
//! CB_SEQUENCE). [`CreateSessionSlot`] is the one-slot cache a client record keeps for
//! CREATE_SESSION (RFC 8881 section 18.36.4).

mod client;
mod server;
#[cfg(test)]
mod tests;

pub use client::{ClientSlotTable, SlotTicket};
pub use server::{
    request_digest, CreateSessionDecision, CreateSessionSlot, ReplyPieces, ServerSlotTable,
    SlotDecision, SlotError,
};
