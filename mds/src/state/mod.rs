//! Protocol state, sans-IO: clients, sessions, leases, grace, stateids, opens and locks.

pub mod lock;
pub mod open;
pub mod owner;
pub mod stateid;
