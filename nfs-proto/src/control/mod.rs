//! The control protocol between the MDS and its data servers: ONC RPC over TCP, program
//! [`PNFS_CTL_PROGRAM`] version [`PNFS_CTL_VERSION`], authenticated with the cluster secret.
//!
//! ```text
//!   MDS (caller, node 0)                                   data server (control service)
//!     HELLO     ─────────────────────────────────────────> (any target and boot)
//!               <──────────────────────────────────────── {ds id, boot nonce}
//!     REGISTER  {ds id, epoch, lease, sealed keys} ───────> checks id, keeps keys, empties
//!               <── {id, boot verifier, write verifier, backend, addresses, store id}
//!     REVOKE    {epoch, revoke[(other, why)], forget[]} ─> stateid checks (before reply)
//!     SET_ACCESS {epoch, [(other, access)]} ──────────────> stateid checks (before reply)
//!     OBJECT_SIZE {objects[]} / TRUNCATE {file, sizes[]} / REMOVE {files[]} ──> object store
//!     HEALTH    ─────────────────────────────────────────> space, load, uptime
//!     READ / WRITE / COMMIT {object, offset, ...} ───────> object store (I/O through the
//!               <──────────── {data} / {count, committed, verifier} / {verifier}     MDS)
//! ```
//!
//! The MDS connects to each data server's control address and makes every call; a data
//! server only answers. HELLO comes first on every connection (it tells the boot nonce the
//! other calls must name), then REGISTER, so a data server that restarts gets the keys it
//! needs to check stateids and filehandles (docs/design.md, "pNFS plan") as soon as the MDS
//! reconnects, and the MDS learns of the restart from the changed boot verifier and sends its
//! revocations and access changes again.
//!
//! # Authentication
//! Every call carries an [`AUTH_PNFS_CTL`] credential, a [`CtlCred`]: the calling node, the
//! data server the call is for and that data server's boot nonce ([`DsBoot`]), the caller's
//! clock in milliseconds, a nonce, and a MAC, keyed BLAKE3 under a key derived from the
//! cluster secret, over
//! `"pnfs-ctl call v2" || version || node || target || time || nonce || boot || prog || vers
//! || proc || len(args) || args`. The data server checks the MAC (constant time), that the
//! caller is the MDS (node 0), that the call names this data server and this boot of it
//! (but for HELLO), and then freshness with a [`ReplayGuard`]: the timestamp must be within
//! [`MAX_CLOCK_SKEW_MS`] of its clock and (time, node, nonce) not seen before; seen calls are
//! remembered only while they could still pass the time check, so replays are refused and
//! memory is bounded. The replay cache lives in memory and dies with the process; the boot
//! nonce (16 random bytes drawn at every start) is what keeps a call captured before a
//! restart from being accepted after it, and the target id what keeps a call for one data
//! server from being accepted by another that shares the secret. Failures are MSG_DENIED /
//! AUTH_ERROR: TOOWEAK for another flavor, BADCRED for a bad MAC or layout or a call for
//! another data server, REJECTEDCRED for a call for another boot (the MDS then learns the
//! nonce again with HELLO and calls again), REJECTEDVERF for a stale or replayed call.
//!
//! HELLO is exempt from the target and boot check: the MDS cannot know the nonce before
//! asking, and HELLO changes nothing. Its reply is MACed like any other, so the nonce the MDS
//! learns comes from a holder of the secret and answers this very call.
//!
//! The RPC xid is not under the MAC: the transport picks it after the credential is made.
//! The nonce does its job (uniqueness), and a reply is bound to its call through the call's
//! MAC instead of the xid: a SUCCESS reply's body is `results || MAC`, with the MAC over
//! `"pnfs-ctl reply v2" || call MAC || len(results) || results`. A client accepts results
//! only when that MAC verifies ([`ClusterKey::open_reply`]), so a reply forged, altered or
//! moved to another call is refused ([`CtlAuthError::BadReply`]). Error replies (AUTH_ERROR,
//! GARBAGE_ARGS, ...) carry no MAC; forging one achieves no more than cutting the
//! connection would.
//!
//! The keys REGISTER hands over are sealed: XORed with a BLAKE3 XOF keystream under a
//! second derived key, over the call's (node, target, time, nonce, boot), which no two calls
//! share.
//!
//! # Wire types
//! See [`types`]: every list is bounded by [`MAX_CTL_LIST`], READ and WRITE data by
//! [`MAX_CTL_IO`] and records by [`MAX_CTL_RECORD`], every result a union on [`CtlStat`] whose
//! store errors keep their `nfsstat4` numbers.

mod auth;
pub mod types;

pub use auth::{
    unix_ms, BootNonce, CallStamp, ClusterKey, CtlAuthError, CtlCred, DsBoot, ReplayGuard, Stamper,
    AUTH_PNFS_CTL, BOOT_NONCE_LEN, CTL_AUTH_VERSION, MAC_LEN, MAX_CLOCK_SKEW_MS, MDS_NODE,
    REPLAY_CACHE_MAX,
};
pub use types::*;

/// The control program's number, in the block RFC 5531's program number assignments leave
/// to local, unregistered use (0x40000000 - 0x5fffffff, "transient"): `@PNF` in ASCII.
pub const PNFS_CTL_PROGRAM: u32 = 0x4050_4e46;
/// The one version of the control program.
pub const PNFS_CTL_VERSION: u32 = 1;
/// The purpose string under which REGISTER seals its keys ([`ClusterKey::seal`]).
pub const REGISTER_SEAL_PURPOSE: &[u8] = b"register keys";
