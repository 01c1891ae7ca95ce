//! Arguments and results of the control procedures.

use bytes::Bytes;

use crate::nfs4::Netaddr4;
use crate::xdr::{Encoder, Xdr};
use crate::xdr_enum;

/// Most entries of any list in a control call or reply (objects, sizes, files, stateids):
/// 16384 stateids are 192 KiB, well inside one RPC record. Longer lists go in several calls.
pub const MAX_CTL_LIST: u32 = 16384;
/// Most addresses a data server reports: `MAX_DS_ADDRESSES` of the MDS configuration, each over
/// TCP and over RDMA.
pub const MAX_CTL_ADDRS: u32 = 16;
/// Longest netid or universal address string in a [`Netaddr4`] of a REGISTER reply.
pub const MAX_CTL_ADDR_LEN: u32 = 128;
/// Most data one READ or WRITE carries: 1 MiB, the MDS's default `limits.max_io`. The MDS
/// cuts its I/O through the data servers into calls of at most this much whatever its own
/// `max_io`, so one call's record stays within [`MAX_CTL_RECORD`].
pub const MAX_CTL_IO: u32 = 1 << 20;
/// Largest RPC record either side of the control protocol accepts: a READ or WRITE of
/// [`MAX_CTL_IO`] plus room for the RPC header, the credential, the other arguments and the
/// reply MAC (all under 1 KiB); the longest lists ([`MAX_CTL_LIST`] stateids, 192 KiB) fit
/// too. Larger records close the connection before anything is allocated for them.
pub const MAX_CTL_RECORD: u32 = MAX_CTL_IO + (64 << 10);

xdr_enum! {
    /// Procedure numbers of [`super::PNFS_CTL_PROGRAM`] version 1.
    pub struct CtlProc {
        /// Authenticated ping: void arguments, void results.
        CTLPROC_NULL = 0,
        /// The MDS hands a data server its keys and epoch; the data server answers with who
        /// it is ([`RegisterArgs`], [`RegisterRes`]).
        CTLPROC_REGISTER = 1,
        /// Sizes of objects ([`ObjectSizeArgs`], [`ObjectSizeRes`]).
        CTLPROC_OBJECT_SIZE = 2,
        /// Sets the sizes of a file's objects ([`TruncateArgs`], [`CtlStatusRes`]).
        CTLPROC_TRUNCATE = 3,
        /// Deletes every object of files ([`RemoveArgs`], [`RemoveRes`]).
        CTLPROC_REMOVE = 4,
        /// Revokes and forgets stateids ([`RevokeArgs`], [`CtlStatusRes`]).
        CTLPROC_REVOKE = 5,
        /// Load and free space ([`HealthRes`]; void arguments).
        CTLPROC_HEALTH = 6,
        /// New share access of open stateids after OPEN upgrades and downgrades
        /// ([`SetAccessArgs`], [`CtlStatusRes`]).
        CTLPROC_SET_ACCESS = 7,
        /// Reads an object, for I/O through the MDS ([`CtlReadArgs`], [`CtlReadRes`]).
        CTLPROC_READ = 8,
        /// Writes an object, for I/O through the MDS ([`CtlWriteArgs`], [`CtlWriteRes`]).
        CTLPROC_WRITE = 9,
        /// Makes earlier unstable writes to an object durable ([`CtlCommitArgs`],
        /// [`CtlCommitRes`]).
        CTLPROC_COMMIT = 10,
        /// Which data server and which of its boots answers ([`HelloRes`]; void arguments):
        /// the boot nonce every other call's credential must name. The one call a data
        /// server takes whatever target and boot its credential names, since it changes
        /// nothing and tells only what the data server would say to any holder of the secret.
        CTLPROC_HELLO = 11,
        /// Where files end, as the MDS last recorded it, so a data server can answer READ
        /// at a file's end itself ([`SizeHintArgs`], [`CtlStatusRes`]).
        CTLPROC_SIZE_HINT = 12,
        /// Reserves space in an object, growing it if the range ends past its size
        /// ([`CtlSpaceArgs`], [`CtlStatusRes`]); durable before the reply.
        CTLPROC_ALLOCATE = 13,
        /// Makes a range of an object read as zeros, its blocks freed where the file system
        /// can ([`CtlSpaceArgs`], [`CtlDeallocateRes`]); durable before the reply.
        CTLPROC_DEALLOCATE = 14,
        /// Where the next data or hole of an object starts ([`CtlSeekArgs`], [`CtlSeekRes`]).
        CTLPROC_SEEK = 15,
        /// Sizes and allocated bytes of objects ([`ObjectSpaceArgs`], [`ObjectSpaceRes`]).
        CTLPROC_OBJECT_SPACE = 18,
        /// Copies a byte range of one object into another on the same data server, durably
        /// (server-side COPY, RFC 7862 section 15.2): [`CtlCopyArgs`], [`CtlCopyRes`].
        CTLPROC_COPY = 16,
        /// Shares a byte range of one object into another on the same data server by
        /// reflink (CLONE, RFC 7862 section 15.13): [`CtlCopyArgs`], [`CtlStatusRes`]
        /// (`CTL_NOTSUPP` where the backend cannot).
        CTLPROC_CLONE = 17,
    }
}

xdr_enum! {
    /// Status of a control procedure. The object store's errors keep their `nfsstat4`
    /// numbers (`nfs_server::io::store_status`), so `CtlStat(store_status(&err).0)` is the
    /// status of a failed store call; the control protocol's own start at `0x4000_0000`.
    pub struct CtlStat {
        /// Success.
        CTL_OK = 0,
        /// A hard I/O error in the object store.
        CTL_IO = 5,
        /// Arguments that are well-formed XDR but make no sense (a size list naming one
        /// stripe twice, say).
        CTL_INVAL = 22,
        /// A size beyond the store's maximum object size.
        CTL_FBIG = 27,
        /// The store is out of space.
        CTL_NOSPC = 28,
        /// The store is read-only.
        CTL_ROFS = 30,
        /// Quota exhausted.
        CTL_DQUOT = 69,
        /// The store cannot do this.
        CTL_NOTSUPP = 10004,
        /// REGISTER for a data server id that is not this one: the MDS's configuration points
        /// at the wrong address.
        CTL_WRONG_ID = 0x4000_0001,
        /// A call that needs the MDS's keys or epoch before any REGISTER.
        CTL_NOT_REGISTERED = 0x4000_0002,
        /// REVOKE or SET_ACCESS for an MDS epoch other than the registered one (the MDS
        /// restarted and registers again first).
        CTL_STALE_EPOCH = 0x4000_0003,
        /// REGISTER with a lease time other than the data server's: clients give their DS
        /// sessions the MDS's lease, so the two must agree (the configurations differ).
        CTL_LEASE_MISMATCH = 0x4000_0004,
    }
}

xdr_enum! {
    /// A data server's object store backend, as it reports it.
    pub struct CtlBackend {
        /// Objects as private files (dense packing).
        CTL_BACKEND_LOCAL = 1,
        /// Sizes only.
        CTL_BACKEND_NULL = 2,
        /// Byte ranges of one shared file per file id (sparse packing).
        CTL_BACKEND_SHARED = 3,
    }
}

/// The `other` field of a stateid (RFC 8881 section 8.2.2): what revocations name.
pub type StateOther = [u8; 12];

/// Declares `union X switch (CtlStat status) { case CTL_OK: Ok; default: void; }`.
macro_rules! ctl_res {
    ($(#[$meta:meta])* pub enum $name:ident => $ok:ty) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Debug, Xdr)]
        pub enum $name {
            /// `CTL_OK` and its result.
            #[xdr(case = CtlStat::CTL_OK)]
            Ok($ok),
            /// Any other status.
            #[xdr(default)]
            Err(CtlStat),
        }

        impl $name {
            /// The status.
            pub fn status(&self) -> CtlStat {
                match self {
                    Self::Ok(_) => CtlStat::CTL_OK,
                    Self::Err(s) => *s,
                }
            }
        }
    };
}

/// REGISTER arguments: what a data server needs to check I/O on its own (docs/design.md,
/// "pNFS plan"). The two keys travel sealed ([`super::ClusterKey::seal`] with the call's
/// stamp and purpose `b"register keys"`, stateid key first), so they never cross the network
/// in the clear; the call MAC covers the sealed bytes.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RegisterArgs {
    /// The id the MDS's configuration gives the data server at this control address.
    pub ds_id: u32,
    /// The MDS's boot epoch (a `u16` on the wire of stateids): stateids of other epochs are
    /// stale, and a new epoch empties the revocation set.
    pub mds_epoch: u32,
    /// The MDS's lease time in seconds: a data server's lease must equal it.
    pub lease_time: u32,
    /// The key of stateid MACs, sealed.
    pub sealed_stateid_key: [u8; 32],
    /// The key of data server filehandle MACs, sealed.
    pub sealed_fh_key: [u8; 32],
}

/// What a data server says of itself in answer to REGISTER.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RegisterOk {
    /// Its configured id (the same as asked, or the call fails with `CTL_WRONG_ID`).
    pub ds_id: u32,
    /// Differs on every start of the data server process: when it changes, the data server
    /// has lost its revocations and access changes, which the MDS sends again.
    pub boot_verifier: [u8; 8],
    /// Its object store's current write verifier.
    pub write_verifier: [u8; 8],
    /// Its object store backend.
    pub backend: CtlBackend,
    /// The addresses its NFS service answers at, as it is configured (`tcp`/`tcp6` universal
    /// addresses); the MDS compares them with its own view and notifies clients of changes.
    #[xdr(max = MAX_CTL_ADDRS)]
    pub addresses: Vec<CtlAddr>,
    /// Its object store's identity (`pfs_core::ObjectStore::identity`): another one than
    /// the MDS recorded means the objects it put there are gone (a replaced disk or node).
    pub store_id: [u8; 16],
}

xdr_enum! {
    /// How a data server made a DEALLOCATE range read as zeros (`pfs_core::Deallocated`).
    pub struct CtlDeallocated {
        /// Nothing to do: the range lay past the object's end, or the store keeps no data.
        CTL_DEALLOC_NOTHING = 0,
        /// The blocks were freed (`fallocate(PUNCH_HOLE)`).
        CTL_DEALLOC_PUNCHED = 1,
        /// Zeros were written (the file system cannot punch holes); the space stays used.
        CTL_DEALLOC_ZEROED = 2,
    }
}

xdr_enum! {
    /// What SEEK looks for; the numbers are `data_content4`'s (RFC 7862 section 15.10).
    pub struct CtlSeekWhat {
        /// The next byte holding data (`SEEK_DATA`).
        CTL_SEEK_DATA = 0,
        /// The next byte in a hole (`SEEK_HOLE`; the object's end counts as one).
        CTL_SEEK_HOLE = 1,
    }
}

/// A network address with bounded strings (a [`Netaddr4`] whose fields a hostile peer cannot
/// make long).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct CtlAddr {
    /// `tcp` or `tcp6`.
    #[xdr(max = MAX_CTL_ADDR_LEN)]
    pub netid: crate::xdr::Utf8String,
    /// Universal address (RFC 5665), e.g. `127.0.0.1.80.11` for port 20491.
    #[xdr(max = MAX_CTL_ADDR_LEN)]
    pub uaddr: crate::xdr::Utf8String,
}

impl From<Netaddr4> for CtlAddr {
    fn from(a: Netaddr4) -> Self {
        CtlAddr {
            netid: a.na_r_netid,
            uaddr: a.na_r_addr,
        }
    }
}

impl From<CtlAddr> for Netaddr4 {
    fn from(a: CtlAddr) -> Self {
        Netaddr4 {
            na_r_netid: a.netid,
            na_r_addr: a.uaddr,
        }
    }
}

ctl_res! {
    /// REGISTER results.
    pub enum RegisterRes => RegisterOk
}

/// What a data server answers HELLO with: the [`super::DsBoot`] to sign calls for.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct HelloOk {
    /// Its configured id (the MDS checks it is the one it meant).
    pub ds_id: u32,
    /// Its boot nonce: random, drawn at each start of its control service.
    pub boot: super::BootNonce,
}

ctl_res! {
    /// HELLO results.
    pub enum HelloRes => HelloOk
}

/// One object: a file id and a stripe index (`pfs_core::ObjectId`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct CtlObject {
    /// File id.
    pub file: u64,
    /// Stripe index.
    pub stripe: u32,
}

/// OBJECT_SIZE arguments: objects whose sizes the MDS needs (GETATTR of a file with write
/// layouts outstanding, LAYOUTCOMMIT checks).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ObjectSizeArgs {
    /// The objects; a missing one has size 0.
    #[xdr(max = MAX_CTL_LIST)]
    pub objects: Vec<CtlObject>,
}

/// OBJECT_SIZE results: one size per object asked, in order.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ObjectSizeOk {
    /// Sizes in bytes.
    #[xdr(max = MAX_CTL_LIST)]
    pub sizes: Vec<u64>,
}

ctl_res! {
    /// OBJECT_SIZE results.
    pub enum ObjectSizeRes => ObjectSizeOk
}

/// The size one stripe's object must have.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct StripeSize {
    /// Stripe index.
    pub stripe: u32,
    /// Size in bytes (`layouts::StripeMap::object_size` of the new file size).
    pub size: u64,
}

/// TRUNCATE arguments: the sizes of one file's objects on this data server, durable before
/// the reply (SETATTR of size is synchronous).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct TruncateArgs {
    /// File id.
    pub file: u64,
    /// One entry per stripe held here; a stripe may appear once.
    #[xdr(max = MAX_CTL_LIST)]
    pub sizes: Vec<StripeSize>,
    /// The file's change attribute on the MDS when the truncate was planned: the data server
    /// forgets where the file ends and takes no [`ObjectEnd`] of this version or older (one
    /// sent before the truncate and delivered after it would tell the old end).
    pub version: u64,
}

/// Where a file ends in one of its objects, as the MDS recorded it at change attribute
/// `version` (docs/design.md, "End of file on the data servers").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct ObjectEnd {
    /// The object.
    pub object: CtlObject,
    /// The file's change attribute the size was read at; a data server keeps the newest.
    pub version: u64,
    /// The file's end in this object's offsets (`layouts::StripeMap::object_size` of the
    /// file size).
    pub end: u64,
    /// Object offsets below this are the same file offsets (the first stripe unit of index
    /// 0 under dense packing; everything with one stripe): a client judges a READ's `eof`
    /// from the offset it sent, so only there may a data server say `eof`.
    pub same_offsets_below: u64,
}

/// SIZE_HINT arguments: where files end in objects held here. Advisory: a data server that
/// does not know (never told, restarted, forgot) sends the client to the MDS instead.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct SizeHintArgs {
    /// The hints.
    #[xdr(max = MAX_CTL_LIST)]
    pub ends: Vec<ObjectEnd>,
}

/// A result that is only a status (TRUNCATE, REVOKE, SET_ACCESS).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlStatusRes {
    /// The status.
    pub status: CtlStat,
}

/// ALLOCATE and DEALLOCATE arguments: a byte range of one object (object offsets: the MDS
/// cut the file range with the file's stripe map). Both are durable before the reply.
/// ALLOCATE of a range ending past the object's end grows the object (as `fallocate` mode
/// 0); DEALLOCATE ignores the part past the end and never changes the size. A range whose
/// end overflows or passes the store's largest object is `CTL_FBIG`; an empty one does
/// nothing.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlSpaceArgs {
    /// The object.
    pub object: CtlObject,
    /// Object offset of the range.
    pub offset: u64,
    /// Its length in bytes.
    pub length: u64,
}

/// DEALLOCATE results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlDeallocateOk {
    /// How it was done.
    pub how: CtlDeallocated,
}

ctl_res! {
    /// DEALLOCATE results.
    pub enum CtlDeallocateRes => CtlDeallocateOk
}

/// SEEK arguments (`pfs_core::ObjectStore::seek`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlSeekArgs {
    /// The object (a missing one is empty).
    pub object: CtlObject,
    /// Object offset to look from.
    pub offset: u64,
    /// Data or hole; another value is `CTL_INVAL`.
    pub what: CtlSeekWhat,
}

/// SEEK results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlSeekOk {
    /// Whether there is such a byte at or after the offset and before the object's end.
    /// Not found: the offset is at or past the end (both kinds), or only holes follow
    /// (data).
    pub found: bool,
    /// Where it starts (object offset; 0 when not found). A hole found may start at the
    /// object's size (its virtual hole at the end).
    pub offset: u64,
}

ctl_res! {
    /// SEEK results.
    pub enum CtlSeekRes => CtlSeekOk
}

/// OBJECT_SPACE arguments: objects whose sizes and allocated bytes the MDS needs (GETATTR
/// of `space_used`, and of `size` while write layouts are out).
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ObjectSpaceArgs {
    /// The objects; a missing one has size 0 and takes no space.
    #[xdr(max = MAX_CTL_LIST)]
    pub objects: Vec<CtlObject>,
}

/// The size and storage of one object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct CtlObjectSpace {
    /// Size in bytes.
    pub size: u64,
    /// Bytes of storage it takes (`pfs_core::ObjectStore::space_used`).
    pub allocated: u64,
}

/// OBJECT_SPACE results: one entry per object asked, in order.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct ObjectSpaceOk {
    /// The objects' figures.
    #[xdr(max = MAX_CTL_LIST)]
    pub objects: Vec<CtlObjectSpace>,
}

ctl_res! {
    /// OBJECT_SPACE results.
    pub enum ObjectSpaceRes => ObjectSpaceOk
}

/// REMOVE arguments: files whose objects go, every stripe held here, durably. Removing a
/// file with no objects here succeeds, so the MDS's durable removal queue may retry.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RemoveArgs {
    /// File ids.
    #[xdr(max = MAX_CTL_LIST)]
    pub files: Vec<u64>,
}

/// REMOVE results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct RemoveOk {
    /// Objects removed (0 for files with none here).
    pub objects_removed: u64,
}

ctl_res! {
    /// REMOVE results.
    pub enum RemoveRes => RemoveOk
}

xdr_enum! {
    /// Why the MDS revoked a stateid: the data server answers I/O with it accordingly
    /// (RFC 8881 section 15.1.5).
    pub struct CtlRevokeReason {
        /// Revoked by the administrator, or its client fenced for not returning a layout in
        /// time: `NFS4ERR_ADMIN_REVOKED`.
        CTL_REVOKED_ADMIN = 1,
        /// The client's lease expired on the MDS: `NFS4ERR_EXPIRED`.
        CTL_REVOKED_EXPIRED = 2,
        /// A delegation the MDS revoked: `NFS4ERR_DELEG_REVOKED`.
        CTL_REVOKED_DELEG = 3,
        /// Closed or freed on the MDS (CLOSE, FREE_STATEID): `NFS4ERR_BAD_STATEID`, what the
        /// MDS answers a stateid it no longer has (RFC 8881 section 8.2.4; section 13.9.1
        /// wants I/O on a data server only under valid state).
        CTL_REVOKED_CLOSED = 4,
    }
}

/// One revoked stateid.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct RevokedState {
    /// Its `other` field.
    pub other: StateOther,
    /// Why.
    pub why: CtlRevokeReason,
}

/// REVOKE arguments: stateids the data server must refuse from now on (layouts recalled and
/// not returned in time, fenced clients: the MDS sends a fenced client's stateids as one
/// list, expired leases) and stateids it may forget (freed on the MDS: no client can show
/// them again). The whole call is applied before the reply (forgets first, so a stateid in
/// both lists ends revoked), so the MDS answers the conflicting operation only after the
/// data server refuses the stateids. After a data server restart (new boot verifier) the MDS
/// sends every revocation of its boot again.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct RevokeArgs {
    /// The MDS epoch these stateids belong to (must be the registered one).
    pub mds_epoch: u32,
    /// Stateids to refuse.
    #[xdr(max = MAX_CTL_LIST)]
    pub revoke: Vec<RevokedState>,
    /// `other` fields to forget.
    #[xdr(max = MAX_CTL_LIST)]
    pub forget: Vec<StateOther>,
    /// Counters of open and lock stateids (of `mds_epoch`) closed or freed on the MDS, as
    /// ranges: refused like `CTL_REVOKED_CLOSED` entries, kept by both sides as runs rather
    /// than one entry per stateid (`cluster::counter_set`).
    #[xdr(max = MAX_CTL_LIST)]
    pub closed: Vec<CtlCounterRange>,
}

/// The stateid counters `first..=last` (bytes 4..8 of `other`, `cluster::stateid`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct CtlCounterRange {
    /// The first counter.
    pub first: u32,
    /// The last counter (inclusive).
    pub last: u32,
}

/// The share access of one open stateid, as the MDS now has it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct AccessChange {
    /// Its `other` field (an upgrade or downgrade keeps `other`).
    pub other: StateOther,
    /// `OPEN4_SHARE_ACCESS_READ` (1), `_WRITE` (2) or `_BOTH` (3).
    pub access: u32,
}

/// SET_ACCESS arguments: after an OPEN upgrade or OPEN_DOWNGRADE the stateid's `other` is
/// unchanged, so the access minted into it is stale; the data server checks WRITE against
/// what the MDS says here instead. Applied before the reply.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct SetAccessArgs {
    /// The MDS epoch these stateids belong to (must be the registered one).
    pub mds_epoch: u32,
    /// The changes.
    #[xdr(max = MAX_CTL_LIST)]
    pub changes: Vec<AccessChange>,
}

/// HEALTH results: for placement (stop handing out a full or overloaded data server) and
/// for the operator.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct HealthOk {
    /// The data server's id.
    pub ds_id: u32,
    /// As in [`RegisterOk::boot_verifier`]: a change means the data server restarted and
    /// must be registered again.
    pub boot_verifier: [u8; 8],
    /// The MDS epoch it is registered with; `None` before REGISTER.
    pub mds_epoch: Option<u32>,
    /// Bytes of the store's file system.
    pub space_total: u64,
    /// Free bytes.
    pub space_free: u64,
    /// Bytes available to unprivileged writers.
    pub space_avail: u64,
    /// Inodes.
    pub files_total: u64,
    /// Free inodes.
    pub files_free: u64,
    /// One-minute load average of the host, times 1000 (0 where unknown).
    pub load_milli: u32,
    /// Seconds since the data server started.
    pub uptime_s: u64,
    /// Its NFS operations since it started, by operation and status: the MDS publishes them
    /// (`pnfs_ds_ops_total`), so an operator sees I/O reach the data servers and not the MDS.
    #[xdr(max = MAX_CTL_OP_COUNTS)]
    pub ops: Vec<CtlOpCount>,
    /// Bytes its store copied for COPY calls since it started: the bytes a server-side copy
    /// moved without a client (`pnfs_ds_copy_bytes_total`). CLONE shares blocks and moves
    /// none, so it is not counted.
    pub copy_bytes: u64,
}

/// The most (operation, status) pairs a HEALTH reply carries: a data server serves a dozen
/// operations, each with a few statuses.
pub const MAX_CTL_OP_COUNTS: u32 = 512;

/// How many times a data server answered NFS operation `op` with `status`.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CtlOpCount {
    /// `nfs_opnum4`.
    pub op: u32,
    /// `nfsstat4`.
    pub status: u32,
    /// How many times.
    pub count: u64,
}

ctl_res! {
    /// HEALTH results.
    pub enum HealthRes => HealthOk
}

/// READ arguments: the MDS reads a DS object for a client that does its I/O through the MDS
/// (docs/design.md, "I/O through the MDS"). No stateid: the MDS checked the client's, and the
/// call MAC shows the caller is the MDS.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlReadArgs {
    /// The object.
    pub object: CtlObject,
    /// Object offset (a dense object's offsets are compacted, as in a client's DS READ).
    pub offset: u64,
    /// Bytes wanted; the data server reads at most [`MAX_CTL_IO`].
    pub count: u32,
}

/// READ results.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CtlReadOk {
    /// The data ends at the end of the object. A reply is never short without it: the data
    /// server reads until `count` bytes (at most [`MAX_CTL_IO`]) or the object's end, so
    /// missing bytes are past the object's end, a hole of the file.
    pub eof: bool,
    /// The bytes read (their own piece when encoded, a slice of the record when decoded).
    #[xdr(payload, max = MAX_CTL_IO)]
    pub data: Bytes,
}

ctl_res! {
    /// READ results.
    pub enum CtlReadRes => CtlReadOk
}

/// WRITE arguments: the MDS writes a DS object for a client that does its I/O through the MDS.
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CtlWriteArgs {
    /// The object (made by the write if missing).
    pub object: CtlObject,
    /// Object offset.
    pub offset: u64,
    /// How durable the data must be before the reply: `stable_how4` numbers (0 UNSTABLE4,
    /// 1 DATA_SYNC4, 2 FILE_SYNC4); another value is `CTL_INVAL`.
    pub stable: u32,
    /// The bytes; more than [`MAX_CTL_IO`] does not decode (GARBAGE_ARGS), checked before
    /// anything is allocated.
    #[xdr(payload, max = MAX_CTL_IO)]
    pub data: Bytes,
}

impl CtlWriteArgs {
    /// The encoding of WRITE arguments whose data is the concatenation of `data`, as pieces
    /// that share the `data` buffers (for `Conn::call`, whose signing covers every piece):
    /// the same bytes as encoding a [`CtlWriteArgs`] with the joined data, without joining
    /// it. The MDS uses it to send one object's parts of a client WRITE, which lie apart in
    /// the client's buffer under dense packing, in one call. The caller keeps the total at
    /// most [`MAX_CTL_IO`] (a data server refuses more).
    pub fn encode_gathered(
        object: CtlObject,
        offset: u64,
        stable: u32,
        data: &[Bytes],
    ) -> Vec<Bytes> {
        static PAD: [u8; 3] = [0; 3];
        let len: usize = data.iter().map(Bytes::len).sum();
        let mut e = Encoder::with_capacity(24);
        object.encode(&mut e);
        e.put_u64(offset);
        e.put_u32(stable);
        e.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
        e.put_pieces(data.iter().cloned());
        e.put_pieces([Bytes::from_static(&PAD[..(4 - len % 4) % 4])]);
        e.into_pieces()
    }
}

/// WRITE results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlWriteOk {
    /// Bytes written (all of them: the object store never acknowledges a short write).
    pub count: u32,
    /// How durable they are (`stable_how4`; at least what was asked).
    pub committed: u32,
    /// The object store's write verifier after the write: it changes when unstable data
    /// may have been lost (a restart of the data server, a failed sync).
    pub verifier: [u8; 8],
}

ctl_res! {
    /// WRITE results.
    pub enum CtlWriteRes => CtlWriteOk
}

/// COMMIT arguments: make earlier unstable writes to an object durable.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlCommitArgs {
    /// The object (a missing one commits trivially).
    pub object: CtlObject,
    /// Object offset of the range the MDS cares about.
    pub offset: u64,
    /// Its length; 0 means to the end of the object. The store may sync more, never less.
    pub count: u32,
}

/// COMMIT results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlCommitOk {
    /// The object store's write verifier after the commit.
    pub verifier: [u8; 8],
}

ctl_res! {
    /// COMMIT results.
    pub enum CtlCommitRes => CtlCommitOk
}

/// Most bytes one COPY call copies: a longer `count` is `CTL_INVAL`. The MDS cuts a long
/// copy into calls of at most this, so no call holds a connection for minutes and a cancel
/// takes effect between calls.
pub const MAX_CTL_COPY: u64 = 64 << 20;

/// COPY and CLONE arguments: `[src_offset, src_offset + count)` of `src` to `dst` at
/// `dst_offset`, both objects held by the data server called. Like READ and WRITE, no
/// stateid: the MDS checked the client's.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlCopyArgs {
    /// The object read.
    pub src: CtlObject,
    /// The object written (made if missing).
    pub dst: CtlObject,
    /// Object offset in `src`.
    pub src_offset: u64,
    /// Object offset in `dst`.
    pub dst_offset: u64,
    /// Bytes; COPY takes at most [`MAX_CTL_COPY`], CLONE any count.
    pub count: u64,
}

/// COPY results.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct CtlCopyOk {
    /// Bytes copied, durable: `count` clipped to the source object's end (0 at or past it).
    /// The destination grew to `dst_offset + copied` if it was shorter.
    pub copied: u64,
}

ctl_res! {
    /// COPY results.
    pub enum CtlCopyRes => CtlCopyOk
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

    crate::roundtrip_tests!(
        ctl_proc: CtlProc,
        ctl_stat: CtlStat,
        ctl_backend: CtlBackend,
        register_args: RegisterArgs,
        register_res: RegisterRes,
        hello_res: HelloRes,
        ctl_addr: CtlAddr,
        ctl_object: CtlObject,
        ctl_copy_args: CtlCopyArgs,
        ctl_copy_res: CtlCopyRes,
        object_size_args: ObjectSizeArgs,
        object_size_res: ObjectSizeRes,
        truncate_args: TruncateArgs,
        object_end: ObjectEnd,
        size_hint_args: SizeHintArgs,
        ctl_status_res: CtlStatusRes,
        remove_args: RemoveArgs,
        remove_res: RemoveRes,
        revoke_args: RevokeArgs,
        set_access_args: SetAccessArgs,
        ctl_revoke_reason: CtlRevokeReason,
        health_res: HealthRes,
        ctl_read_args: CtlReadArgs,
        ctl_read_res: CtlReadRes,
        ctl_write_args: CtlWriteArgs,
        ctl_write_res: CtlWriteRes,
        ctl_commit_args: CtlCommitArgs,
        ctl_commit_res: CtlCommitRes,
        ctl_deallocated: CtlDeallocated,
        ctl_seek_what: CtlSeekWhat,
        ctl_space_args: CtlSpaceArgs,
        ctl_deallocate_res: CtlDeallocateRes,
        ctl_seek_args: CtlSeekArgs,
        ctl_seek_res: CtlSeekRes,
        object_space_args: ObjectSpaceArgs,
        object_space_res: ObjectSpaceRes,
    );

    #[test]
    fn gathered_write_arguments_encode_as_the_joined_data_would_and_share_its_buffers() {
        let object = CtlObject { file: 9, stripe: 2 };
        // Pieces above and below the size the encoder keeps apart, and odd lengths.
        for lens in [
            &[4096usize, 5000, 3][..],
            &[1],
            &[600, 600],
            &[],
            &[2, 2, 2],
        ] {
            let data: Vec<Bytes> = lens
                .iter()
                .enumerate()
                .map(|(i, &n)| Bytes::from(vec![i as u8 + 1; n]))
                .collect();
            let pieces = CtlWriteArgs::encode_gathered(object, 77, 1, &data);
            let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
            let whole = CtlWriteArgs {
                object,
                offset: 77,
                stable: 1,
                data: Bytes::from(data.concat()),
            };
            assert_eq!(joined, to_bytes(&whole).to_vec(), "{lens:?}");
            assert_eq!(from_bytes::<CtlWriteArgs>(joined.into()).unwrap(), whole);
            for d in data.iter().filter(|d| !d.is_empty()) {
                assert!(
                    pieces.iter().any(|p| p.as_ptr() == d.as_ptr()),
                    "a data piece was copied"
                );
            }
        }
    }

    #[test]
    fn write_data_over_the_maximum_is_refused_before_allocating() {
        let object = CtlObject { file: 1, stripe: 0 };
        let max = CtlWriteArgs {
            object,
            offset: 0,
            stable: 0,
            data: Bytes::from(vec![5u8; MAX_CTL_IO as usize]),
        };
        let b = to_bytes(&max);
        assert!(b.len() <= MAX_CTL_RECORD as usize - 1024);
        assert_eq!(from_bytes::<CtlWriteArgs>(b).unwrap(), max);
        let over = CtlWriteArgs::encode_gathered(
            object,
            0,
            0,
            &[Bytes::from(vec![5u8; MAX_CTL_IO as usize + 1])],
        );
        let over: Vec<u8> = over.iter().flat_map(|p| p.iter().copied()).collect();
        let e = from_bytes::<CtlWriteArgs>(over.into()).unwrap_err();
        assert_eq!(
            e.kind,
            DecodeErrorKind::TooLong {
                len: MAX_CTL_IO + 1,
                max: MAX_CTL_IO
            }
        );
        // A length far beyond the bytes that follow fails on the maximum, not on the input.
        let mut claim = to_bytes(&CtlReadArgs {
            object,
            offset: 0,
            count: 0,
        })
        .to_vec();
        claim.truncate(12 + 8);
        claim.extend_from_slice(&0u32.to_be_bytes());
        claim.extend_from_slice(&u32::MAX.to_be_bytes());
        let e = from_bytes::<CtlWriteArgs>(claim.into()).unwrap_err();
        assert!(matches!(e.kind, DecodeErrorKind::TooLong { .. }), "{e:?}");
    }

    #[test]
    fn a_list_longer_than_the_maximum_is_refused_before_allocating() {
        let mut wire = Vec::new();
        wire.extend_from_slice(&(MAX_CTL_LIST + 1).to_be_bytes());
        wire.extend_from_slice(&vec![0u8; 8 * (MAX_CTL_LIST as usize + 1)]);
        let e = from_bytes::<RemoveArgs>(wire.into()).unwrap_err();
        assert_eq!(
            e.kind,
            DecodeErrorKind::TooLong {
                len: MAX_CTL_LIST + 1,
                max: MAX_CTL_LIST
            }
        );
        // A count the remaining bytes cannot hold fails without reserving that much.
        let e = from_bytes::<RevokeArgs>(
            [&[0u8; 8][..], &1000u32.to_be_bytes()[..], &[0u8; 12][..]]
                .concat()
                .into(),
        )
        .unwrap_err();
        assert!(
            matches!(e.kind, DecodeErrorKind::LengthBeyondInput { .. }),
            "{e:?}"
        );
    }

    #[test]
    fn an_unknown_status_decodes_as_an_error_and_keeps_its_number() {
        let r = from_bytes::<TruncateArgs>(to_bytes(&TruncateArgs {
            file: 1,
            sizes: vec![StripeSize { stripe: 0, size: 9 }],
            version: 3,
        }))
        .unwrap();
        assert_eq!(r.sizes[0].size, 9);
        let res = from_bytes::<RemoveRes>(to_bytes(&0x4000_0099u32)).unwrap();
        assert_eq!(res, RemoveRes::Err(CtlStat(0x4000_0099)));
        assert_eq!(res.status(), CtlStat(0x4000_0099));
        assert_eq!(format!("{:?}", CtlStat::CTL_STALE_EPOCH), "CTL_STALE_EPOCH");
    }

    #[test]
    fn space_procedures_have_their_assigned_numbers_and_fixed_sizes() {
        assert_eq!(
            [
                CtlProc::CTLPROC_ALLOCATE.0,
                CtlProc::CTLPROC_DEALLOCATE.0,
                CtlProc::CTLPROC_SEEK.0,
                CtlProc::CTLPROC_OBJECT_SPACE.0
            ],
            [13, 14, 15, 18]
        );
        let object = CtlObject { file: 1, stripe: 2 };
        let a = CtlSpaceArgs {
            object,
            offset: 3,
            length: 4,
        };
        assert_eq!(to_bytes(&a).len(), 12 + 16);
        let s = CtlSeekArgs {
            object,
            offset: 3,
            what: CtlSeekWhat::CTL_SEEK_HOLE,
        };
        assert_eq!(&to_bytes(&s)[20..], &1u32.to_be_bytes());
        let r = to_bytes(&CtlSeekRes::Ok(CtlSeekOk {
            found: true,
            offset: 9,
        }));
        assert_eq!(r.len(), 4 + 4 + 8);
    }

    #[test]
    fn register_args_take_nineteen_words() {
        let a = RegisterArgs {
            ds_id: 1,
            mds_epoch: 2,
            lease_time: 90,
            sealed_stateid_key: [1; 32],
            sealed_fh_key: [2; 32],
        };
        assert_eq!(to_bytes(&a).len(), 3 * 4 + 64);
    }
}
