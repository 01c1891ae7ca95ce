//! NFSv4.2 operations (RFC 7862 section 15, XDR of RFC 7863): space reservation (ALLOCATE,
//! DEALLOCATE), server-side copy (COPY, COPY_NOTIFY, OFFLOAD_CANCEL, OFFLOAD_STATUS), IO_ADVISE,
//! pNFS error and statistics reporting (LAYOUTERROR, LAYOUTSTATS), sparse files (READ_PLUS,
//! SEEK), WRITE_SAME and CLONE.

use bytes::Bytes;

use super::v40::StableHow4;
use crate::nfs4::consts::*;
use crate::nfs4::types::*;
use crate::xdr::{Utf8String, Xdr};
use crate::xdr_enum;

// ---------------------------------------------------------------------------------------------
// Supporting types (RFC 7862 section 13)
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `netloc_type4`: how a [`Netloc4`] names a server (RFC 7862 section 4.6).
    #[doc(alias = "netloc_type4")]
    pub struct NetlocType4 {
        NL4_NAME = 1,
        NL4_URL = 2,
        NL4_NETADDR = 3,
    }
}

/// A server location for inter-server copy (RFC 7862 section 4.6).
#[doc(alias = "netloc4")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Xdr)]
pub enum Netloc4 {
    /// A DNS name or address literal (`nl_name`).
    #[xdr(case = NetlocType4::NL4_NAME)]
    Name(Utf8String),
    /// A URL (`nl_url`).
    #[xdr(case = NetlocType4::NL4_URL)]
    Url(Utf8String),
    /// A network id and universal address (`nl_addr`).
    #[xdr(case = NetlocType4::NL4_NETADDR)]
    Netaddr(Netaddr4),
}

/// `copy_from_auth_priv`: RPCSEC_GSSv3 privilege a client asserts to the copy source (RFC
/// 7862 section 4.9.1.1).
#[doc(alias = "copy_from_auth_priv")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyFromAuthPriv {
    /// The secret shared between source and destination (`secret4`).
    pub cfap_shared_secret: Utf8String,
    /// The destination server.
    pub cfap_destination: Netloc4,
    /// The NFSv4 user name the user principal maps to.
    pub cfap_username: Utf8String,
}

/// `copy_to_auth_priv`: RPCSEC_GSSv3 privilege a client asserts to the copy destination (RFC
/// 7862 section 4.9.1.1).
#[doc(alias = "copy_to_auth_priv")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyToAuthPriv {
    /// Equal to `cfap_shared_secret`.
    pub ctap_shared_secret: Utf8String,
    /// The source server's locations.
    pub ctap_source: Vec<Netloc4>,
    /// The NFSv4 user name the user principal maps to.
    pub ctap_username: Utf8String,
}

/// `copy_confirm_auth_priv`: RPCSEC_GSSv3 privilege the destination asserts to the source
/// (RFC 7862 section 4.9.1.1).
#[doc(alias = "copy_confirm_auth_priv")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyConfirmAuthPriv {
    /// `GSS_GetMIC()` of the shared secret.
    pub ccap_shared_secret_mic: Bytes,
    /// The NFSv4 user name the user principal maps to.
    pub ccap_username: Utf8String,
}

/// `write_response4`: the outcome of a COPY or WRITE_SAME (RFC 7862 section 15.2.3).
#[doc(alias = "write_response4")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct WriteResponse4 {
    /// For an asynchronous operation, the stateid CB_OFFLOAD will report on (at most one).
    #[xdr(max = 1)]
    pub wr_callback_id: Vec<Stateid4>,
    /// Bytes written (so far).
    pub wr_count: Length4,
    /// How far the data was committed.
    pub wr_committed: StableHow4,
    /// The write verifier, for a later COMMIT.
    pub wr_writeverf: Verifier4,
}

/// `copy_requirements4`: whether a copy is consecutive and synchronous (RFC 7862 section
/// 15.2.3).
#[doc(alias = "copy_requirements4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct CopyRequirements4 {
    /// The copy proceeds (or must proceed) in order from the start.
    pub cr_consecutive: bool,
    /// The copy completes (or must complete) before the reply.
    pub cr_synchronous: bool,
}

xdr_enum! {
    /// `data_content4`: data or hole, for READ_PLUS and SEEK (RFC 7862 section 15.10).
    #[doc(alias = "data_content4")]
    pub struct DataContent4 {
        NFS4_CONTENT_DATA = 0,
        NFS4_CONTENT_HOLE = 1,
    }
}

/// `data4`: a run of file data (RFC 7862 section 15.10).
#[doc(alias = "data4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Data4 {
    /// File offset of the data.
    pub d_offset: Offset4,
    /// The data.
    #[xdr(payload)]
    pub d_data: Bytes,
}

/// `data_info4`: a range of a file, e.g. a hole (RFC 7862 section 15.10).
#[doc(alias = "data_info4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct DataInfo4 {
    /// Start of the range.
    pub di_offset: Offset4,
    /// Length of the range.
    pub di_length: Length4,
}

/// `app_data_block4`: the pattern WRITE_SAME replicates (RFC 7862 section 15.12).
#[doc(alias = "app_data_block4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AppDataBlock4 {
    /// File offset of the first block.
    pub adb_offset: Offset4,
    /// Size of each block.
    pub adb_block_size: Length4,
    /// Number of blocks to write.
    pub adb_block_count: Length4,
    /// Offset within each block of the block number, if any.
    pub adb_reloff_blocknum: Length4,
    /// Block number of the first block.
    pub adb_block_num: Count4,
    /// Offset within each block of the pattern.
    pub adb_reloff_pattern: Length4,
    /// The pattern written into every block.
    #[xdr(payload)]
    pub adb_pattern: Bytes,
}

/// `device_error4`: one error a client saw on a storage device (RFC 7862 section 15.6).
#[doc(alias = "device_error4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct DeviceError4 {
    /// The device.
    pub de_deviceid: Deviceid4,
    /// The error it returned.
    pub de_status: NfsStat4,
    /// The operation that failed.
    pub de_opnum: NfsOpnum4,
}

/// `io_info4`: an operation and byte count (RFC 7862 section 15.7).
#[doc(alias = "io_info4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct IoInfo4 {
    /// Number of operations.
    pub ii_count: u64,
    /// Number of bytes.
    pub ii_bytes: u64,
}

/// `IO_ADVISE4_NORMAL`: bit number in an IO_ADVISE hint bitmap (`IO_ADVISE_type4`, RFC 7862
/// section 15.5).
pub const IO_ADVISE4_NORMAL: u32 = 0;
/// `IO_ADVISE4_SEQUENTIAL`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_SEQUENTIAL: u32 = 1;
/// `IO_ADVISE4_SEQUENTIAL_BACKWARDS`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_SEQUENTIAL_BACKWARDS: u32 = 2;
/// `IO_ADVISE4_RANDOM`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_RANDOM: u32 = 3;
/// `IO_ADVISE4_WILLNEED`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_WILLNEED: u32 = 4;
/// `IO_ADVISE4_WILLNEED_OPPORTUNISTIC`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_WILLNEED_OPPORTUNISTIC: u32 = 5;
/// `IO_ADVISE4_DONTNEED`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_DONTNEED: u32 = 6;
/// `IO_ADVISE4_NOREUSE`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_NOREUSE: u32 = 7;
/// `IO_ADVISE4_READ`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_READ: u32 = 8;
/// `IO_ADVISE4_WRITE`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_WRITE: u32 = 9;
/// `IO_ADVISE4_INIT_PROXIMITY`: bit number in an IO_ADVISE hint bitmap.
pub const IO_ADVISE4_INIT_PROXIMITY: u32 = 10;

// ---------------------------------------------------------------------------------------------
// ALLOCATE (59)
// ---------------------------------------------------------------------------------------------

/// ALLOCATE arguments (RFC 7862 section 15.1): reserve space for a range of the current file.
#[doc(alias = "ALLOCATE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct AllocateArgs {
    /// An open, lock or delegation stateid.
    pub aa_stateid: Stateid4,
    /// Start of the range.
    pub aa_offset: Offset4,
    /// Length of the range.
    pub aa_length: Length4,
}

crate::nfs_status_res! {
    /// ALLOCATE result (RFC 7862 section 15.1).
    #[doc(alias = "ALLOCATE4res")]
    pub struct AllocateRes
}

// ---------------------------------------------------------------------------------------------
// COPY (60)
// ---------------------------------------------------------------------------------------------

/// COPY arguments (RFC 7862 section 15.2): copy from the saved filehandle's file to the current
/// filehandle's file.
#[doc(alias = "COPY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyArgs {
    /// Stateid for reading the source.
    pub ca_src_stateid: Stateid4,
    /// Stateid for writing the destination.
    pub ca_dst_stateid: Stateid4,
    /// Source offset.
    pub ca_src_offset: Offset4,
    /// Destination offset.
    pub ca_dst_offset: Offset4,
    /// Bytes to copy (0: to the end of the source).
    pub ca_count: Length4,
    /// The client wants the copy done in order.
    pub ca_consecutive: bool,
    /// The client wants the copy done before the reply.
    pub ca_synchronous: bool,
    /// For an inter-server copy, where the source is; empty for an intra-server copy.
    pub ca_source_server: Vec<Netloc4>,
}

/// COPY success result (RFC 7862 section 15.2).
#[doc(alias = "COPY4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyResOk {
    /// What was written.
    pub cr_response: WriteResponse4,
    /// How the copy was done.
    pub cr_requirements: CopyRequirements4,
}

/// COPY result (RFC 7862 section 15.2).
#[doc(alias = "COPY4res")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum CopyRes {
    /// `NFS4_OK` and its result.
    #[xdr(case = NfsStat4::NFS4_OK)]
    Ok(CopyResOk),
    /// `NFS4ERR_OFFLOAD_NO_REQS`: the server cannot meet the requested requirements; what it
    /// could do instead.
    #[xdr(case = NfsStat4::NFS4ERR_OFFLOAD_NO_REQS)]
    OffloadNoReqs(CopyRequirements4),
    /// Any other error status.
    #[xdr(default)]
    Err(NfsStat4),
}

/// An operation written as a `Result` answers with its result body or its error result
/// ([`CopyRes::error`]).
impl From<Result<CopyResOk, NfsStat4>> for CopyRes {
    fn from(r: Result<CopyResOk, NfsStat4>) -> Self {
        match r {
            Ok(ok) => Self::Ok(ok),
            Err(status) => Self::error(status),
        }
    }
}

impl CopyRes {
    /// The operation's status.
    pub fn status(&self) -> NfsStat4 {
        match self {
            Self::Ok(_) => NfsStat4::NFS4_OK,
            Self::OffloadNoReqs(_) => NfsStat4::NFS4ERR_OFFLOAD_NO_REQS,
            Self::Err(s) => *s,
        }
    }

    /// The result of the operation failing with `status`; `NFS4ERR_OFFLOAD_NO_REQS` offers
    /// neither requirement.
    pub fn error(status: NfsStat4) -> Self {
        debug_assert!(!status.is_ok(), "an error result with NFS4_OK");
        match status {
            NfsStat4::NFS4ERR_OFFLOAD_NO_REQS => Self::OffloadNoReqs(CopyRequirements4::default()),
            s => Self::Err(s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// COPY_NOTIFY (61)
// ---------------------------------------------------------------------------------------------

/// COPY_NOTIFY arguments (RFC 7862 section 15.3): allow a destination server to read the
/// current file for an inter-server copy.
#[doc(alias = "COPY_NOTIFY4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyNotifyArgs {
    /// Stateid for reading the source.
    pub cna_src_stateid: Stateid4,
    /// The destination server.
    pub cna_destination_server: Netloc4,
}

/// COPY_NOTIFY success result (RFC 7862 section 15.3).
#[doc(alias = "COPY_NOTIFY4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct CopyNotifyResOk {
    /// How long the destination has to start the copy.
    pub cnr_lease_time: Nfstime4,
    /// The stateid the destination reads with.
    pub cnr_stateid: Stateid4,
    /// Locations of the source server the destination may use.
    pub cnr_source_server: Vec<Netloc4>,
}

crate::nfs_res! {
    /// COPY_NOTIFY result (RFC 7862 section 15.3).
    #[doc(alias = "COPY_NOTIFY4res")]
    pub enum CopyNotifyRes => CopyNotifyResOk
}

// ---------------------------------------------------------------------------------------------
// DEALLOCATE (62)
// ---------------------------------------------------------------------------------------------

/// DEALLOCATE arguments (RFC 7862 section 15.4): punch a hole in the current file.
#[doc(alias = "DEALLOCATE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct DeallocateArgs {
    /// An open, lock or delegation stateid.
    pub da_stateid: Stateid4,
    /// Start of the range.
    pub da_offset: Offset4,
    /// Length of the range.
    pub da_length: Length4,
}

crate::nfs_status_res! {
    /// DEALLOCATE result (RFC 7862 section 15.4).
    #[doc(alias = "DEALLOCATE4res")]
    pub struct DeallocateRes
}

// ---------------------------------------------------------------------------------------------
// IO_ADVISE (63)
// ---------------------------------------------------------------------------------------------

/// IO_ADVISE arguments (RFC 7862 section 15.5): hints about future I/O to a range of the
/// current file.
#[doc(alias = "IO_ADVISE4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct IoAdviseArgs {
    /// An open, lock or delegation stateid.
    pub iaa_stateid: Stateid4,
    /// Start of the range.
    pub iaa_offset: Offset4,
    /// Length of the range (0: to the end of the file).
    pub iaa_count: Length4,
    /// The hints, as `IO_ADVISE4_*` bit numbers.
    pub iaa_hints: Bitmap4,
}

/// IO_ADVISE success result (RFC 7862 section 15.5).
#[doc(alias = "IO_ADVISE4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct IoAdviseResOk {
    /// The hints the server will act on.
    pub ior_hints: Bitmap4,
}

crate::nfs_res! {
    /// IO_ADVISE result (RFC 7862 section 15.5).
    #[doc(alias = "IO_ADVISE4res")]
    pub enum IoAdviseRes => IoAdviseResOk
}

// ---------------------------------------------------------------------------------------------
// LAYOUTERROR (64)
// ---------------------------------------------------------------------------------------------

/// LAYOUTERROR arguments (RFC 7862 section 15.6): report storage device errors on a layout.
#[doc(alias = "LAYOUTERROR4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct LayoutErrorArgs {
    /// Start of the affected range.
    pub lea_offset: Offset4,
    /// Length of the affected range.
    pub lea_length: Length4,
    /// The layout stateid.
    pub lea_stateid: Stateid4,
    /// The errors.
    pub lea_errors: Vec<DeviceError4>,
}

crate::nfs_status_res! {
    /// LAYOUTERROR result (RFC 7862 section 15.6).
    #[doc(alias = "LAYOUTERROR4res")]
    pub struct LayoutErrorRes
}

// ---------------------------------------------------------------------------------------------
// LAYOUTSTATS (65)
// ---------------------------------------------------------------------------------------------

/// LAYOUTSTATS arguments (RFC 7862 section 15.7): I/O statistics for a layout and device.
#[doc(alias = "LAYOUTSTATS4args")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct LayoutStatsArgs {
    /// Start of the range.
    pub lsa_offset: Offset4,
    /// Length of the range.
    pub lsa_length: Length4,
    /// The layout stateid.
    pub lsa_stateid: Stateid4,
    /// Reads done.
    pub lsa_read: IoInfo4,
    /// Writes done.
    pub lsa_write: IoInfo4,
    /// The device.
    pub lsa_deviceid: Deviceid4,
    /// Layout-type-specific statistics.
    pub lsa_layoutupdate: Layoutupdate4,
}

crate::nfs_status_res! {
    /// LAYOUTSTATS result (RFC 7862 section 15.7).
    #[doc(alias = "LAYOUTSTATS4res")]
    pub struct LayoutStatsRes
}

// ---------------------------------------------------------------------------------------------
// OFFLOAD_CANCEL (66)
// ---------------------------------------------------------------------------------------------

/// OFFLOAD_CANCEL arguments (RFC 7862 section 15.8): stop an asynchronous copy.
#[doc(alias = "OFFLOAD_CANCEL4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OffloadCancelArgs {
    /// The copy's stateid (`wr_callback_id` of its COPY).
    pub oca_stateid: Stateid4,
}

crate::nfs_status_res! {
    /// OFFLOAD_CANCEL result (RFC 7862 section 15.8).
    #[doc(alias = "OFFLOAD_CANCEL4res")]
    pub struct OffloadCancelRes
}

// ---------------------------------------------------------------------------------------------
// OFFLOAD_STATUS (67)
// ---------------------------------------------------------------------------------------------

/// OFFLOAD_STATUS arguments (RFC 7862 section 15.9): progress of an asynchronous copy.
#[doc(alias = "OFFLOAD_STATUS4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OffloadStatusArgs {
    /// The copy's stateid.
    pub osa_stateid: Stateid4,
}

/// OFFLOAD_STATUS success result (RFC 7862 section 15.9).
#[doc(alias = "OFFLOAD_STATUS4resok")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct OffloadStatusResOk {
    /// Bytes copied so far.
    pub osr_count: Length4,
    /// The copy's final status, present once it has completed.
    #[xdr(max = 1)]
    pub osr_complete: Vec<NfsStat4>,
}

crate::nfs_res! {
    /// OFFLOAD_STATUS result (RFC 7862 section 15.9).
    #[doc(alias = "OFFLOAD_STATUS4res")]
    pub enum OffloadStatusRes => OffloadStatusResOk
}

// ---------------------------------------------------------------------------------------------
// READ_PLUS (68)
// ---------------------------------------------------------------------------------------------

/// READ_PLUS arguments (RFC 7862 section 15.10): read that reports holes.
#[doc(alias = "READ_PLUS4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadPlusArgs {
    /// An open, lock or delegation stateid.
    pub rpa_stateid: Stateid4,
    /// Where to read.
    pub rpa_offset: Offset4,
    /// Most bytes to return.
    pub rpa_count: Count4,
}

/// One piece of a READ_PLUS reply (RFC 7862 section 15.10).
#[doc(alias = "read_plus_content")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub enum ReadPlusContent {
    /// Data (`rpc_data`).
    #[xdr(case = DataContent4::NFS4_CONTENT_DATA)]
    Data(Data4),
    /// A hole (`rpc_hole`).
    #[xdr(case = DataContent4::NFS4_CONTENT_HOLE)]
    Hole(DataInfo4),
    /// A content type this implementation does not know (`default: void`). Left out of
    /// generated test values: every named `DataContent4` has its own arm.
    #[xdr(default, skip_arbitrary)]
    Other(DataContent4),
}

/// READ_PLUS success result, `read_plus_res4` (RFC 7862 section 15.10).
#[doc(alias = "read_plus_res4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct ReadPlusResOk {
    /// The read reached the end of the file.
    pub rpr_eof: bool,
    /// Data and holes, in file order.
    pub rpr_contents: Vec<ReadPlusContent>,
}

crate::nfs_res! {
    /// READ_PLUS result (RFC 7862 section 15.10).
    #[doc(alias = "READ_PLUS4res")]
    pub enum ReadPlusRes => ReadPlusResOk
}

// ---------------------------------------------------------------------------------------------
// SEEK (69)
// ---------------------------------------------------------------------------------------------

/// SEEK arguments (RFC 7862 section 15.11): find the next data or hole.
#[doc(alias = "SEEK4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Xdr)]
pub struct SeekArgs {
    /// An open, lock or delegation stateid.
    pub sa_stateid: Stateid4,
    /// Where to start looking.
    pub sa_offset: Offset4,
    /// Data or hole.
    pub sa_what: DataContent4,
}

/// SEEK success result, `seek_res4` (RFC 7862 section 15.11).
#[doc(alias = "seek_res4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct SeekResOk {
    /// The result is at or past the end of the file.
    pub sr_eof: bool,
    /// Where the data or hole starts.
    pub sr_offset: Offset4,
}

crate::nfs_res! {
    /// SEEK result (RFC 7862 section 15.11).
    #[doc(alias = "SEEK4res")]
    pub enum SeekRes => SeekResOk
}

// ---------------------------------------------------------------------------------------------
// WRITE_SAME (70)
// ---------------------------------------------------------------------------------------------

/// WRITE_SAME arguments (RFC 7862 section 15.12): write a pattern into many blocks.
#[doc(alias = "WRITE_SAME4args")]
#[derive(Clone, PartialEq, Eq, Debug, Xdr)]
pub struct WriteSameArgs {
    /// An open, lock or delegation stateid.
    pub wsa_stateid: Stateid4,
    /// How far to commit.
    pub wsa_stable: StableHow4,
    /// The blocks and pattern.
    pub wsa_adb: AppDataBlock4,
}

crate::nfs_res! {
    /// WRITE_SAME result (RFC 7862 section 15.12); the success arm is a [`WriteResponse4`].
    #[doc(alias = "WRITE_SAME4res")]
    pub enum WriteSameRes => WriteResponse4
}

// ---------------------------------------------------------------------------------------------
// CLONE (71)
// ---------------------------------------------------------------------------------------------

/// CLONE arguments (RFC 7862 section 15.13): share blocks of the saved filehandle's file with
/// the current filehandle's file.
#[doc(alias = "CLONE4args")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct CloneArgs {
    /// Stateid for reading the source.
    pub cl_src_stateid: Stateid4,
    /// Stateid for writing the destination.
    pub cl_dst_stateid: Stateid4,
    /// Source offset.
    pub cl_src_offset: Offset4,
    /// Destination offset.
    pub cl_dst_offset: Offset4,
    /// Bytes to clone (0: to the end of the source).
    pub cl_count: Length4,
}

crate::nfs_status_res! {
    /// CLONE result (RFC 7862 section 15.13).
    #[doc(alias = "CLONE4res")]
    pub struct CloneRes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{from_bytes, to_bytes, Encoder};

    crate::roundtrip_tests!(
        stable_how4: StableHow4,
        netloc_type4: NetlocType4,
        netloc4: Netloc4,
        copy_from_auth_priv: CopyFromAuthPriv,
        copy_to_auth_priv: CopyToAuthPriv,
        copy_confirm_auth_priv: CopyConfirmAuthPriv,
        write_response4: WriteResponse4,
        copy_requirements4: CopyRequirements4,
        data_content4: DataContent4,
        data4: Data4,
        data_info4: DataInfo4,
        app_data_block4: AppDataBlock4,
        device_error4: DeviceError4,
        io_info4: IoInfo4,
        allocate_args: AllocateArgs,
        allocate_res: AllocateRes,
        copy_args: CopyArgs,
        copy_res_ok: CopyResOk,
        copy_res: CopyRes,
        copy_notify_args: CopyNotifyArgs,
        copy_notify_res_ok: CopyNotifyResOk,
        copy_notify_res: CopyNotifyRes,
        deallocate_args: DeallocateArgs,
        deallocate_res: DeallocateRes,
        io_advise_args: IoAdviseArgs,
        io_advise_res_ok: IoAdviseResOk,
        io_advise_res: IoAdviseRes,
        layout_error_args: LayoutErrorArgs,
        layout_error_res: LayoutErrorRes,
        layout_stats_args: LayoutStatsArgs,
        layout_stats_res: LayoutStatsRes,
        offload_cancel_args: OffloadCancelArgs,
        offload_cancel_res: OffloadCancelRes,
        offload_status_args: OffloadStatusArgs,
        offload_status_res_ok: OffloadStatusResOk,
        offload_status_res: OffloadStatusRes,
        read_plus_args: ReadPlusArgs,
        read_plus_content: ReadPlusContent,
        read_plus_res_ok: ReadPlusResOk,
        read_plus_res: ReadPlusRes,
        seek_args: SeekArgs,
        seek_res_ok: SeekResOk,
        seek_res: SeekRes,
        write_same_args: WriteSameArgs,
        write_same_res: WriteSameRes,
        clone_args: CloneArgs,
        clone_res: CloneRes,
    );

    fn words(ws: &[u32]) -> Bytes {
        let mut e = Encoder::new();
        for w in ws {
            e.put_u32(*w);
        }
        e.into_bytes()
    }

    #[test]
    fn read_plus_reply_with_data_and_hole() {
        // NFS4_OK, eof = 1, two contents: DATA at 0 "abc", HOLE at 4096 of 8192.
        let mut e = Encoder::new();
        for w in [0u32, 1, 2, 0] {
            e.put_u32(w);
        }
        e.put_u64(0);
        e.put_opaque(b"abc");
        e.put_u32(1);
        e.put_u64(4096);
        e.put_u64(8192);
        let b = e.into_bytes();
        assert_eq!(b.len(), 4 * 4 + 8 + 8 + 4 + 8 + 8);
        let res = from_bytes::<ReadPlusRes>(b.clone()).unwrap();
        assert_eq!(
            res,
            ReadPlusRes::Ok(ReadPlusResOk {
                rpr_eof: true,
                rpr_contents: vec![
                    ReadPlusContent::Data(Data4 {
                        d_offset: 0,
                        d_data: Bytes::from_static(b"abc"),
                    }),
                    ReadPlusContent::Hole(DataInfo4 {
                        di_offset: 4096,
                        di_length: 8192,
                    }),
                ],
            })
        );
        assert_eq!(res.status(), NfsStat4::NFS4_OK);
        assert_eq!(to_bytes(&res), b);
    }

    #[test]
    fn read_plus_large_data_is_a_separate_piece() {
        let data = Bytes::from(vec![7u8; 4096]);
        let c = ReadPlusContent::Data(Data4 {
            d_offset: 0,
            d_data: data.clone(),
        });
        let mut e = Encoder::new();
        c.encode(&mut e);
        let pieces = e.into_pieces();
        assert!(pieces.iter().any(|p| p.as_ptr() == data.as_ptr()));
    }

    #[test]
    fn copy_offload_no_reqs_carries_requirements() {
        let b = words(&[10094, 1, 0]);
        let r = from_bytes::<CopyRes>(b.clone()).unwrap();
        assert_eq!(
            r,
            CopyRes::OffloadNoReqs(CopyRequirements4 {
                cr_consecutive: true,
                cr_synchronous: false,
            })
        );
        assert_eq!(r.status(), NfsStat4::NFS4ERR_OFFLOAD_NO_REQS);
        // Any other error is status only.
        let r = from_bytes::<CopyRes>(words(&[10008])).unwrap();
        assert_eq!(r, CopyRes::Err(NfsStat4::NFS4ERR_DELAY));
    }

    #[test]
    fn seek_args_layout() {
        let a = SeekArgs {
            sa_stateid: Stateid4 {
                seqid: 1,
                other: [2; 12],
            },
            sa_offset: 0x1_0000_0000,
            sa_what: DataContent4::NFS4_CONTENT_HOLE,
        };
        let b = to_bytes(&a);
        assert_eq!(
            &b[..],
            &[
                0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, // stateid
                0, 0, 0, 1, 0, 0, 0, 0, // offset
                0, 0, 0, 1, // NFS4_CONTENT_HOLE
            ]
        );
    }

    #[test]
    fn write_response_callback_id_is_at_most_one() {
        // wr_callback_id with two stateids is refused.
        let mut e = Encoder::new();
        e.put_u32(2);
        for _ in 0..2 {
            Stateid4::default().encode(&mut e);
        }
        e.put_u64(0);
        e.put_u32(0);
        e.put_fixed(&[0; 8]);
        let err = from_bytes::<WriteResponse4>(e.into_bytes()).unwrap_err();
        assert_eq!(err.what, "WriteResponse4.wr_callback_id");
    }

    #[test]
    fn unknown_read_plus_content_is_void() {
        let b = words(&[7]);
        let c = from_bytes::<ReadPlusContent>(b.clone()).unwrap();
        assert_eq!(c, ReadPlusContent::Other(DataContent4(7)));
        assert_eq!(to_bytes(&c), b);
    }

    #[test]
    fn netloc_without_arm_is_refused() {
        assert!(from_bytes::<Netloc4>(words(&[4, 0])).is_err());
    }
}
