//! NFSv4 wire constants: status codes, operation numbers, object types and limits
//! (RFC 8881 section 18 and 16.2; RFC 7862 section 11).

use crate::xdr_enum;

/// `NFS4_FHSIZE`: the largest filehandle.
pub const NFS4_FHSIZE: u32 = 128;
/// `NFS4_VERIFIER_SIZE`.
pub const NFS4_VERIFIER_SIZE: usize = 8;
/// `NFS4_OTHER_SIZE`: the `other` field of a stateid.
pub const NFS4_OTHER_SIZE: usize = 12;
/// `NFS4_OPAQUE_LIMIT`: owners, ids and other opaque identifiers.
pub const NFS4_OPAQUE_LIMIT: u32 = 1024;
/// `NFS4_SESSIONID_SIZE`.
pub const NFS4_SESSIONID_SIZE: usize = 16;
/// `NFS4_DEVICEID4_SIZE`.
pub const NFS4_DEVICEID4_SIZE: usize = 16;
/// `NFS4_INT64_MAX`.
pub const NFS4_INT64_MAX: i64 = i64::MAX;
/// `NFS4_UINT64_MAX`.
pub const NFS4_UINT64_MAX: u64 = u64::MAX;
/// `NFS4_INT32_MAX`.
pub const NFS4_INT32_MAX: i32 = i32::MAX;
/// `NFS4_UINT32_MAX`.
pub const NFS4_UINT32_MAX: u32 = u32::MAX;
/// `NFS4_MAXFILELEN`.
pub const NFS4_MAXFILELEN: u64 = u64::MAX;
/// `NFS4_MAXFILEOFF`.
pub const NFS4_MAXFILEOFF: u64 = u64::MAX - 1;

/// ONC RPC program number of NFS.
pub const NFS4_PROGRAM: u32 = 100003;
/// NFS version 4 (all minor versions).
pub const NFS_V4: u32 = 4;
/// NFSv4 procedure NULL.
pub const NFSPROC4_NULL: u32 = 0;
/// NFSv4 procedure COMPOUND.
pub const NFSPROC4_COMPOUND: u32 = 1;
/// Callback program version of NFSv4.1 (the program number is the client's choice).
pub const NFS_CB_VERSION: u32 = 1;
/// Callback procedure CB_NULL.
pub const CB_NULL: u32 = 0;
/// Callback procedure CB_COMPOUND.
pub const CB_COMPOUND: u32 = 1;

xdr_enum! {
    /// `nfsstat4`: the status of an operation or a COMPOUND (RFC 8881 section 15, RFC 7862
    /// section 11.1, RFC 8276 for the xattr codes).
    pub struct NfsStat4 {
        NFS4_OK = 0,
        NFS4ERR_PERM = 1,
        NFS4ERR_NOENT = 2,
        NFS4ERR_IO = 5,
        NFS4ERR_NXIO = 6,
        NFS4ERR_ACCESS = 13,
        NFS4ERR_EXIST = 17,
        NFS4ERR_XDEV = 18,
        NFS4ERR_NOTDIR = 20,
        NFS4ERR_ISDIR = 21,
        NFS4ERR_INVAL = 22,
        NFS4ERR_FBIG = 27,
        NFS4ERR_NOSPC = 28,
        NFS4ERR_ROFS = 30,
        NFS4ERR_MLINK = 31,
        NFS4ERR_NAMETOOLONG = 63,
        NFS4ERR_NOTEMPTY = 66,
        NFS4ERR_DQUOT = 69,
        NFS4ERR_STALE = 70,
        NFS4ERR_BADHANDLE = 10001,
        NFS4ERR_BAD_COOKIE = 10003,
        NFS4ERR_NOTSUPP = 10004,
        NFS4ERR_TOOSMALL = 10005,
        NFS4ERR_SERVERFAULT = 10006,
        NFS4ERR_BADTYPE = 10007,
        NFS4ERR_DELAY = 10008,
        NFS4ERR_SAME = 10009,
        NFS4ERR_DENIED = 10010,
        NFS4ERR_EXPIRED = 10011,
        NFS4ERR_LOCKED = 10012,
        NFS4ERR_GRACE = 10013,
        NFS4ERR_FHEXPIRED = 10014,
        NFS4ERR_SHARE_DENIED = 10015,
        NFS4ERR_WRONGSEC = 10016,
        NFS4ERR_CLID_INUSE = 10017,
        NFS4ERR_RESOURCE = 10018,
        NFS4ERR_MOVED = 10019,
        NFS4ERR_NOFILEHANDLE = 10020,
        NFS4ERR_MINOR_VERS_MISMATCH = 10021,
        NFS4ERR_STALE_CLIENTID = 10022,
        NFS4ERR_STALE_STATEID = 10023,
        NFS4ERR_OLD_STATEID = 10024,
        NFS4ERR_BAD_STATEID = 10025,
        NFS4ERR_BAD_SEQID = 10026,
        NFS4ERR_NOT_SAME = 10027,
        NFS4ERR_LOCK_RANGE = 10028,
        NFS4ERR_SYMLINK = 10029,
        NFS4ERR_RESTOREFH = 10030,
        NFS4ERR_LEASE_MOVED = 10031,
        NFS4ERR_ATTRNOTSUPP = 10032,
        NFS4ERR_NO_GRACE = 10033,
        NFS4ERR_RECLAIM_BAD = 10034,
        NFS4ERR_RECLAIM_CONFLICT = 10035,
        NFS4ERR_BADXDR = 10036,
        NFS4ERR_LOCKS_HELD = 10037,
        NFS4ERR_OPENMODE = 10038,
        NFS4ERR_BADOWNER = 10039,
        NFS4ERR_BADCHAR = 10040,
        NFS4ERR_BADNAME = 10041,
        NFS4ERR_BAD_RANGE = 10042,
        NFS4ERR_LOCK_NOTSUPP = 10043,
        NFS4ERR_OP_ILLEGAL = 10044,
        NFS4ERR_DEADLOCK = 10045,
        NFS4ERR_FILE_OPEN = 10046,
        NFS4ERR_ADMIN_REVOKED = 10047,
        NFS4ERR_CB_PATH_DOWN = 10048,
        NFS4ERR_BADIOMODE = 10049,
        NFS4ERR_BADLAYOUT = 10050,
        NFS4ERR_BAD_SESSION_DIGEST = 10051,
        NFS4ERR_BADSESSION = 10052,
        NFS4ERR_BADSLOT = 10053,
        NFS4ERR_COMPLETE_ALREADY = 10054,
        NFS4ERR_CONN_NOT_BOUND_TO_SESSION = 10055,
        NFS4ERR_DELEG_ALREADY_WANTED = 10056,
        NFS4ERR_BACK_CHAN_BUSY = 10057,
        NFS4ERR_LAYOUTTRYLATER = 10058,
        NFS4ERR_LAYOUTUNAVAILABLE = 10059,
        NFS4ERR_NOMATCHING_LAYOUT = 10060,
        NFS4ERR_RECALLCONFLICT = 10061,
        NFS4ERR_UNKNOWN_LAYOUTTYPE = 10062,
        NFS4ERR_SEQ_MISORDERED = 10063,
        NFS4ERR_SEQUENCE_POS = 10064,
        NFS4ERR_REQ_TOO_BIG = 10065,
        NFS4ERR_REP_TOO_BIG = 10066,
        NFS4ERR_REP_TOO_BIG_TO_CACHE = 10067,
        NFS4ERR_RETRY_UNCACHED_REP = 10068,
        NFS4ERR_UNSAFE_COMPOUND = 10069,
        NFS4ERR_TOO_MANY_OPS = 10070,
        NFS4ERR_OP_NOT_IN_SESSION = 10071,
        NFS4ERR_HASH_ALG_UNSUPP = 10072,
        NFS4ERR_CLIENTID_BUSY = 10074,
        NFS4ERR_PNFS_IO_HOLE = 10075,
        NFS4ERR_SEQ_FALSE_RETRY = 10076,
        NFS4ERR_BAD_HIGH_SLOT = 10077,
        NFS4ERR_DEADSESSION = 10078,
        NFS4ERR_ENCR_ALG_UNSUPP = 10079,
        NFS4ERR_PNFS_NO_LAYOUT = 10080,
        NFS4ERR_NOT_ONLY_OP = 10081,
        NFS4ERR_WRONG_CRED = 10082,
        NFS4ERR_WRONG_TYPE = 10083,
        NFS4ERR_DIRDELEG_UNAVAIL = 10084,
        NFS4ERR_REJECT_DELEG = 10085,
        NFS4ERR_RETURNCONFLICT = 10086,
        NFS4ERR_DELEG_REVOKED = 10087,
        NFS4ERR_PARTNER_NOTSUPP = 10088,
        NFS4ERR_PARTNER_NO_AUTH = 10089,
        NFS4ERR_UNION_NOTSUPP = 10090,
        NFS4ERR_OFFLOAD_DENIED = 10091,
        NFS4ERR_WRONG_LFS = 10092,
        NFS4ERR_BADLABEL = 10093,
        NFS4ERR_OFFLOAD_NO_REQS = 10094,
        NFS4ERR_NOXATTR = 10095,
        NFS4ERR_XATTR2BIG = 10096,
    }
}

impl NfsStat4 {
    /// True for `NFS4_OK`.
    pub fn is_ok(self) -> bool {
        self == Self::NFS4_OK
    }
}

xdr_enum! {
    /// `nfs_opnum4`: operation numbers of the forward channel (RFC 8881 section 16.2.2,
    /// RFC 7862 section 15.2, RFC 8276 section 8.4 for the xattr operations).
    pub struct NfsOpnum4 {
        OP_ACCESS = 3,
        OP_CLOSE = 4,
        OP_COMMIT = 5,
        OP_CREATE = 6,
        OP_DELEGPURGE = 7,
        OP_DELEGRETURN = 8,
        OP_GETATTR = 9,
        OP_GETFH = 10,
        OP_LINK = 11,
        OP_LOCK = 12,
        OP_LOCKT = 13,
        OP_LOCKU = 14,
        OP_LOOKUP = 15,
        OP_LOOKUPP = 16,
        OP_NVERIFY = 17,
        OP_OPEN = 18,
        OP_OPENATTR = 19,
        OP_OPEN_CONFIRM = 20,
        OP_OPEN_DOWNGRADE = 21,
        OP_PUTFH = 22,
        OP_PUTPUBFH = 23,
        OP_PUTROOTFH = 24,
        OP_READ = 25,
        OP_READDIR = 26,
        OP_READLINK = 27,
        OP_REMOVE = 28,
        OP_RENAME = 29,
        OP_RENEW = 30,
        OP_RESTOREFH = 31,
        OP_SAVEFH = 32,
        OP_SECINFO = 33,
        OP_SETATTR = 34,
        OP_SETCLIENTID = 35,
        OP_SETCLIENTID_CONFIRM = 36,
        OP_VERIFY = 37,
        OP_WRITE = 38,
        OP_RELEASE_LOCKOWNER = 39,
        OP_BACKCHANNEL_CTL = 40,
        OP_BIND_CONN_TO_SESSION = 41,
        OP_EXCHANGE_ID = 42,
        OP_CREATE_SESSION = 43,
        OP_DESTROY_SESSION = 44,
        OP_FREE_STATEID = 45,
        OP_GET_DIR_DELEGATION = 46,
        OP_GETDEVICEINFO = 47,
        OP_GETDEVICELIST = 48,
        OP_LAYOUTCOMMIT = 49,
        OP_LAYOUTGET = 50,
        OP_LAYOUTRETURN = 51,
        OP_SECINFO_NO_NAME = 52,
        OP_SEQUENCE = 53,
        OP_SET_SSV = 54,
        OP_TEST_STATEID = 55,
        OP_WANT_DELEGATION = 56,
        OP_DESTROY_CLIENTID = 57,
        OP_RECLAIM_COMPLETE = 58,
        OP_ALLOCATE = 59,
        OP_COPY = 60,
        OP_COPY_NOTIFY = 61,
        OP_DEALLOCATE = 62,
        OP_IO_ADVISE = 63,
        OP_LAYOUTERROR = 64,
        OP_LAYOUTSTATS = 65,
        OP_OFFLOAD_CANCEL = 66,
        OP_OFFLOAD_STATUS = 67,
        OP_READ_PLUS = 68,
        OP_SEEK = 69,
        OP_WRITE_SAME = 70,
        OP_CLONE = 71,
        OP_GETXATTR = 72,
        OP_SETXATTR = 73,
        OP_LISTXATTRS = 74,
        OP_REMOVEXATTR = 75,
        OP_ILLEGAL = 10044,
    }
}

xdr_enum! {
    /// `nfs_cb_opnum4`: callback operation numbers (RFC 8881 section 20, RFC 7862 section 16).
    pub struct NfsCbOpnum4 {
        OP_CB_GETATTR = 3,
        OP_CB_RECALL = 4,
        OP_CB_LAYOUTRECALL = 5,
        OP_CB_NOTIFY = 6,
        OP_CB_PUSH_DELEG = 7,
        OP_CB_RECALL_ANY = 8,
        OP_CB_RECALLABLE_OBJ_AVAIL = 9,
        OP_CB_RECALL_SLOT = 10,
        OP_CB_SEQUENCE = 11,
        OP_CB_WANTS_CANCELLED = 12,
        OP_CB_NOTIFY_LOCK = 13,
        OP_CB_NOTIFY_DEVICEID = 14,
        OP_CB_OFFLOAD = 15,
        OP_CB_ILLEGAL = 10044,
    }
}

xdr_enum! {
    /// `nfs_ftype4`: file object types.
    pub struct NfsFtype4 {
        NF4REG = 1,
        NF4DIR = 2,
        NF4BLK = 3,
        NF4CHR = 4,
        NF4LNK = 5,
        NF4SOCK = 6,
        NF4FIFO = 7,
        NF4ATTRDIR = 8,
        NF4NAMEDATTR = 9,
    }
}
