//! Arguments and results of every forward-channel operation.
//!
//! * [`v40`]: the operations NFSv4.0 defined (ACCESS .. RELEASE_LOCKOWNER) and WANT_DELEGATION.
//! * [`session`]: NFSv4.1 sessions and state (BACKCHANNEL_CTL .. RECLAIM_COMPLETE).
//! * [`pnfs`]: pNFS (GETDEVICEINFO, GETDEVICELIST, LAYOUTGET, LAYOUTCOMMIT, LAYOUTRETURN) and
//!   GET_DIR_DELEGATION.
//! * [`v42`]: NFSv4.2 (RFC 7862).
//! * [`xattr`]: extended attributes, an NFSv4.2 extension (RFC 8276).

pub mod pnfs;
pub mod session;
pub mod v40;
pub mod v42;
pub mod xattr;

pub use pnfs::*;
pub use session::*;
pub use v40::*;
pub use v42::*;
pub use xattr::*;
