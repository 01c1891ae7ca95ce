//! The control protocol between the MDS and its data servers: ONC RPC over TCP, program
//! [`PNFS_CTL_PROGRAM`] version [`PNFS_CTL_VERSION`], authenticated with the cluster secret.
//!
//! ```text
//!   MDS (caller, node 0)                                   data server (control service)
//!     REGISTER  {ds id, epoch, lease, sealed keys} ───────> checks id, keeps keys, empties
//!               <──────────── {id, boot verifier, write verifier, backend, addresses}
//!     REVOKE    {epoch, revoke[(other, why)], forget[]} ─> stateid checks (before reply)
//!     SET_ACCESS {epoch, [(other, access)]} ──────────────> stateid checks (before reply)
//!     OBJECT_SIZE {objects[]} / TRUNCATE {file, sizes[]} / REMOVE {files[]} ──> object store
//!     HEALTH    ─────────────────────────────────────────> space, load, uptime
//!     READ / WRITE / COMMIT {object, offset, ...} ───────> object store (I/O through the
//!               <──────────── {data} / {count, committed, verifier} / {verifier}     MDS)
//! ```
//!
//! The MDS connects to each data server's control address and makes every call; a data
//! server only answers. REGISTER is the first call on every connection, so a data server
//! that restarts gets the keys it needs to check stateids and filehandles (docs/design.md,
//! "pNFS plan") as soon as the MDS reconnects, and the MDS learns of the restart from the
//! changed boot verifier and sends its revocations and access changes again.
//!
//! # Authentication
//! Every call carries an [`AUTH_PNFS_CTL`] credential, a [`CtlCred`]: the calling node, its
//! clock in milliseconds, a nonce, and a MAC, keyed BLAKE3 under a key derived from the
//! cluster secret, over
//! `"pnfs-ctl call v1" || version || node || time || nonce || prog || vers || proc ||
//! len(args) || args`. The data server checks the MAC (constant time), that the caller is the
//! MDS (node 0), and then freshness with a [`ReplayGuard`]: the timestamp must be within
//! [`MAX_CLOCK_SKEW_MS`] of its clock and (time, node, nonce) not seen before; seen calls are
//! remembered only while they could still pass the time check, so replays are refused and
//! memory is bounded. Failures are MSG_DENIED / AUTH_ERROR: TOOWEAK for another flavor,
//! BADCRED for a bad MAC or layout, REJECTEDVERF for a stale or replayed call.
//!
//! The RPC xid is not under the MAC: the transport picks it after the credential is made.
//! The nonce does its job (uniqueness), and a reply is bound to its call through the call's
//! MAC instead of the xid: a SUCCESS reply's body is `results || MAC`, with the MAC over
//! `"pnfs-ctl reply v1" || call MAC || len(results) || results`. A client accepts results
//! only when that MAC verifies ([`ClusterKey::open_reply`]), so a reply forged, altered or
//! moved to another call is refused ([`CtlAuthError::BadReply`]). Error replies (AUTH_ERROR,
//! GARBAGE_ARGS, ...) carry no MAC; forging one achieves no more than cutting the
//! connection would.
//!
//! The keys REGISTER hands over are sealed: XORed with a BLAKE3 XOF keystream under a
//! second derived key, over the call's (node, time, nonce), which no two calls share.
//!
//! # Wire types
//! See [`types`]: every list is bounded by [`MAX_CTL_LIST`], READ and WRITE data by
//! [`MAX_CTL_IO`] and records by [`MAX_CTL_RECORD`], every result a union on [`CtlStat`] whose
//! store errors keep their `nfsstat4` numbers.

mod auth;
pub mod types;

pub use auth::{
    unix_ms, CallStamp, ClusterKey, CtlAuthError, CtlCred, ReplayGuard, Stamper, AUTH_PNFS_CTL,
    CTL_AUTH_VERSION, MAC_LEN, MAX_CLOCK_SKEW_MS, MDS_NODE, REPLAY_CACHE_MAX,
};
pub use types::*;

/// The control program's number, in the block RFC 5531's program number assignments leave
/// to local, unregistered use (0x40000000 - 0x5fffffff, "transient"): `@PNF` in ASCII.
pub const PNFS_CTL_PROGRAM: u32 = 0x4050_4e46;
/// The one version of the control program.
pub const PNFS_CTL_VERSION: u32 = 1;
/// The purpose string under which REGISTER seals its keys ([`ClusterKey::seal`]).
pub const REGISTER_SEAL_PURPOSE: &[u8] = b"register keys";
