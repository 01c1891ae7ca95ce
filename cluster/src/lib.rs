//! What the metadata server and its data servers share about a pNFS cluster, so that a data
//! server is built from this crate, `nfs-server` and `pfs-core`, never from `mds`:
//!
//! ```text
//!  config (the YAML file both read)      keys (what the MDS hands its DSs to check I/O alone)
//!    ├─ Config: listen, limits, exports    └─ DsKeys: stateid key, DS filehandle key, epoch
//!    └─ cluster: data servers, secret,    stateid (the MDS mints; the MDS and DSs check)
//!       layout policy                       └─ counter_set (closed counters, as runs)
//!                                         ds_fh (the MDS makes them for layouts; DSs check)
//! ```
//!
//! The formats are drawn byte by byte in each module (and in `docs/design.md`). What the
//! client shares with the MDS (striping math, devices) is `layouts`, which the client uses
//! without this crate: nothing here is the client's business (it treats stateids and DS
//! filehandles as opaque), and the configuration's limits are the servers' (`nfs-server`).

pub mod config;
pub mod counter_set;
pub mod ds_fh;
pub mod keys;
pub mod stateid;

pub use config::{Config, ConfigError};
