//! NFSv4.1 (RFC 8881) and NFSv4.2 (RFC 7862): every operation's arguments and results, the
//! COMPOUND and CB_COMPOUND envelopes, callbacks, attributes and the file layout body.
//!
//! Naming: message types drop the RFC's `4` and capitalise by word (`LAYOUTGET4args` is
//! [`LayoutGetArgs`]) and carry the RFC name as a doc alias; data types keep it
//! (`stateid4` is [`Stateid4`]); wire constants keep the RFC spelling
//! (`NfsStat4::NFS4ERR_BADLAYOUT`) so they grep against the RFC.

pub mod consts;
pub mod types;

pub use consts::*;
pub use types::*;
pub mod attr;
pub mod callback;
pub mod compound;
pub mod layout_files;
pub mod layout_flex;
pub mod ops;

pub use callback::*;
pub use compound::*;
pub use ops::*;
