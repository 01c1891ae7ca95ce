//! Protocol state of the MDS, sans-IO: opens, locks, delegations, orphans and layouts. Clients, sessions, leases
//! and grace are shared with the data servers and live in [`nfs_server::state`]; so does the
//! stateid format (the DSs check the stateids the MDS mints), re-exported here as
//! [`stateid`].

pub mod copies;
pub mod deleg;
pub mod layout;
pub mod lock;
pub mod open;
pub mod orphan;
pub mod owner;
pub mod recall;
pub use cluster::stateid;
