//! Protocol state, sans-IO: clients, sessions, leases, grace, stateids, opens, locks and
//! layouts.

pub mod client;
pub mod grace;
pub mod layout;
pub mod lease;
pub mod lock;
pub mod open;
pub mod orphan;
pub mod owner;
pub mod session;
pub mod stateid;
