//! Protocol state of the MDS, sans-IO: stateids, opens, locks and orphans. Clients, sessions,
//! leases and grace are shared with the data servers and live in [`nfs_server::state`].

pub mod lock;
pub mod open;
pub mod orphan;
pub mod owner;
pub mod stateid;
