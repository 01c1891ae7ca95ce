//! The COMPOUND builder and typed access to a reply.
//!
//! A test names its operations, `Compound::new().putfh(&fh).read(stateid, 0, 4096)`, and the
//! [`Client`](crate::Client) puts SEQUENCE in front from its session and slot. The reply's
//! accessors ([`Reply`]) find an operation's result by type and panic with a message that names
//! the operation, its status and where the COMPOUND stopped, so a failing test says what
//! failed without a debugger.

use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::layout_files::Nfsv41FileLayout4;
use nfs_proto::nfs4::*;

use crate::ops::{self, Opened};

/// The operations of one COMPOUND after its SEQUENCE, and its minor version.
#[derive(Clone, Debug, PartialEq)]
pub struct Compound {
    ops: Vec<NfsArgop4>,
    minor: u32,
}

impl Default for Compound {
    fn default() -> Self {
        Self::new()
    }
}

impl From<Compound> for Vec<NfsArgop4> {
    fn from(c: Compound) -> Self {
        c.ops
    }
}

impl Compound {
    /// An empty COMPOUND in minor version 1 (SEQUENCE alone once sent).
    pub fn new() -> Self {
        Self {
            ops: Vec::new(),
            minor: 1,
        }
    }

    /// In minor version `minor` (2 for the NFSv4.2 operations).
    pub fn minor(mut self, minor: u32) -> Self {
        self.minor = minor;
        self
    }

    /// The minor version it will be sent in.
    pub fn minor_version(&self) -> u32 {
        self.minor
    }

    /// The operations so far.
    pub fn ops(&self) -> &[NfsArgop4] {
        &self.ops
    }

    /// Any operation, as built by the test.
    pub fn op(mut self, op: NfsArgop4) -> Self {
        self.ops.push(op);
        self
    }

    /// Several operations, as built by the test.
    pub fn extend(mut self, ops: impl IntoIterator<Item = NfsArgop4>) -> Self {
        self.ops.extend(ops);
        self
    }

    /// PUTROOTFH.
    pub fn putrootfh(self) -> Self {
        self.op(NfsArgop4::PutRootFh)
    }

    /// PUTFH of `fh`.
    pub fn putfh(self, fh: &NfsFh4) -> Self {
        self.op(ops::putfh(fh))
    }

    /// PUTROOTFH and a LOOKUP per component of `path`.
    pub fn path(self, path: &str) -> Self {
        self.putrootfh().extend(ops::lookups(path))
    }

    /// LOOKUP of one component.
    pub fn lookup(self, name: &str) -> Self {
        self.op(ops::lookup(name))
    }

    /// GETFH.
    pub fn getfh(self) -> Self {
        self.op(NfsArgop4::GetFh)
    }

    /// SAVEFH.
    pub fn savefh(self) -> Self {
        self.op(NfsArgop4::SaveFh)
    }

    /// RESTOREFH.
    pub fn restorefh(self) -> Self {
        self.op(NfsArgop4::RestoreFh)
    }

    /// GETATTR of `bits` (`FATTR4_*` numbers).
    pub fn getattr(self, bits: &[u32]) -> Self {
        self.op(ops::getattr_op(bits))
    }

    /// SETATTR of `attrs` under `stateid`.
    pub fn setattr(self, stateid: Stateid4, attrs: &FileAttrs) -> Self {
        self.op(ops::setattr_op(stateid, attrs))
    }

    /// OPEN (create, UNCHECKED4, `mode`) of `name` in the current directory by open-owner
    /// `who`, with these share bits.
    pub fn open_create(self, name: &str, mode: u32, access: u32, deny: u32, who: &str) -> Self {
        self.op(ops::open_op(
            ops::by_name(name),
            ops::unchecked(mode),
            access,
            deny,
            who,
        ))
    }

    /// OPEN (no create) of `name` in the current directory by open-owner `who`.
    pub fn open_existing(self, name: &str, access: u32, deny: u32, who: &str) -> Self {
        self.op(ops::open_op(
            ops::by_name(name),
            Openflag4::NoCreate,
            access,
            deny,
            who,
        ))
    }

    /// CLOSE of an open stateid.
    pub fn close(self, stateid: Stateid4) -> Self {
        self.op(ops::close_op(stateid))
    }

    /// READ of `count` bytes at `offset`.
    pub fn read(self, stateid: Stateid4, offset: u64, count: u32) -> Self {
        self.op(ops::read_op(stateid, offset, count))
    }

    /// WRITE of `data` at `offset`.
    pub fn write(
        self,
        stateid: Stateid4,
        offset: u64,
        stable: StableHow4,
        data: impl AsRef<[u8]>,
    ) -> Self {
        self.op(ops::write_op(stateid, offset, stable, data))
    }

    /// COMMIT of `count` bytes at `offset`.
    pub fn commit(self, offset: u64, count: u32) -> Self {
        self.op(ops::commit_op(offset, count))
    }

    /// REMOVE of `name` in the current directory.
    pub fn remove(self, name: &str) -> Self {
        self.op(ops::remove_op(name))
    }

    /// LOCK of a range by a new lock-owner `who` under `open`'s stateid.
    pub fn lock(
        self,
        open: &Opened,
        who: &str,
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
    ) -> Self {
        self.op(ops::lock_new(open, who, locktype, offset, length))
    }

    /// LAYOUTGET of the whole file for `iomode`.
    pub fn layoutget(self, iomode: Layoutiomode4, stateid: Stateid4) -> Self {
        self.op(ops::layoutget_op(iomode, stateid))
    }

    /// LAYOUTRETURN of the whole file's layout under `stateid`.
    pub fn layoutreturn(self, iomode: Layoutiomode4, stateid: Stateid4) -> Self {
        self.op(ops::layoutreturn_op(iomode, ops::return_file(stateid)))
    }

    /// LAYOUTCOMMIT of the whole file.
    pub fn layoutcommit(
        self,
        stateid: Stateid4,
        last: Option<u64>,
        mtime: Option<Nfstime4>,
    ) -> Self {
        self.op(ops::layoutcommit_op(stateid, last, mtime))
    }

    /// RECLAIM_COMPLETE of the whole client.
    pub fn reclaim_complete(self) -> Self {
        self.op(ops::reclaim_complete_op())
    }
}

/// Typed access to a COMPOUND reply. Each accessor finds the first result of its operation and
/// panics, naming the operation, its status and the reply, when it is missing or failed.
pub trait Reply {
    /// The reply itself.
    fn reply(&self) -> &Compound4Res;

    /// Asserts the whole COMPOUND succeeded; on failure names the operation that stopped it.
    #[track_caller]
    fn ok(&self) -> &Compound4Res {
        let r = self.reply();
        if r.status != NfsStat4::NFS4_OK {
            let op = r.resarray.last().map(NfsResop4::opnum);
            panic!(
                "COMPOUND failed: {op:?} returned {:?} (result {} of {}): {r:?}",
                r.status,
                r.resarray.len(),
                r.resarray.len()
            );
        }
        r
    }

    /// The status of operation `op`; panics when the COMPOUND stopped before it.
    #[track_caller]
    fn status_of(&self, op: NfsOpnum4) -> NfsStat4 {
        let r = self.reply();
        r.resarray
            .iter()
            .find(|x| x.opnum() == op)
            .map(NfsResop4::status)
            .unwrap_or_else(|| panic!("no {op:?} result ({}): {r:?}", stopped(r)))
    }

    /// The status of the last result (NFS4_OK for an empty reply).
    fn last_status(&self) -> NfsStat4 {
        self.reply()
            .resarray
            .last()
            .map(NfsResop4::status)
            .unwrap_or(NfsStat4::NFS4_OK)
    }

    /// The filehandle of the first GETFH.
    #[track_caller]
    fn getfh(&self) -> NfsFh4 {
        find(self.reply(), NfsOpnum4::OP_GETFH, |x| match x {
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => Some(ok.object.clone()),
            _ => None,
        })
    }

    /// The result of the first OPEN.
    #[track_caller]
    fn open(&self) -> &OpenResOk {
        find(self.reply(), NfsOpnum4::OP_OPEN, |x| match x {
            NfsResop4::Open(OpenRes::Ok(ok)) => Some(ok),
            _ => None,
        })
    }

    /// The result of the first READ.
    #[track_caller]
    fn read(&self) -> &ReadResOk {
        find(self.reply(), NfsOpnum4::OP_READ, |x| match x {
            NfsResop4::Read(ReadRes::Ok(ok)) => Some(ok),
            _ => None,
        })
    }

    /// The result of the first WRITE.
    #[track_caller]
    fn write(&self) -> WriteResOk {
        find(self.reply(), NfsOpnum4::OP_WRITE, |x| match x {
            NfsResop4::Write(WriteRes::Ok(ok)) => Some(*ok),
            _ => None,
        })
    }

    /// The attributes of the first GETATTR, decoded.
    #[track_caller]
    fn getattr(&self) -> FileAttrs {
        let r = self.reply();
        let f = find(r, NfsOpnum4::OP_GETATTR, |x| match x {
            NfsResop4::GetAttr(GetAttrRes::Ok(ok)) => Some(&ok.obj_attributes),
            _ => None,
        });
        FileAttrs::from_fattr(f).unwrap_or_else(|e| panic!("GETATTR reply: {e:?}: {r:?}"))
    }

    /// The lock stateid of the first LOCK.
    #[track_caller]
    fn lock_stateid(&self) -> Stateid4 {
        find(self.reply(), NfsOpnum4::OP_LOCK, |x| match x {
            NfsResop4::Lock(LockRes::Ok(ok)) => Some(ok.lock_stateid),
            _ => None,
        })
    }

    /// The result of the first LAYOUTGET, failed or not.
    #[track_caller]
    fn layoutget_res(&self) -> &LayoutGetRes {
        let r = self.reply();
        r.resarray
            .iter()
            .find_map(|op| match op {
                NfsResop4::LayoutGet(res) => Some(res),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no LAYOUTGET result ({}): {r:?}", stopped(r)))
    }

    /// The one files layout a LAYOUTGET granted: (its result, the decoded layout body).
    #[track_caller]
    fn granted(&self) -> (LayoutGetResOk, Nfsv41FileLayout4) {
        let r = self.reply();
        let LayoutGetRes::Ok(ok) = self.layoutget_res() else {
            panic!("LAYOUTGET failed ({}): {r:?}", stopped(r))
        };
        assert_eq!(ok.logr_layout.len(), 1, "{ok:?}");
        let l = &ok.logr_layout[0];
        let body = Nfsv41FileLayout4::from_content(&l.lo_content).expect("layout body decodes");
        (ok.clone(), body)
    }

    /// The result of the SEQUENCE that opens the reply.
    #[track_caller]
    fn sequence(&self) -> &SequenceResOk {
        find(self.reply(), NfsOpnum4::OP_SEQUENCE, |x| match x {
            NfsResop4::Sequence(SequenceRes::Ok(ok)) => Some(ok),
            _ => None,
        })
    }
}

impl Reply for Compound4Res {
    fn reply(&self) -> &Compound4Res {
        self
    }
}

/// Where a reply stopped, for a panic message: the last operation and its status.
fn stopped(r: &Compound4Res) -> String {
    match r.resarray.last() {
        Some(last) => format!("stopped at {:?} with {:?}", last.opnum(), last.status()),
        None => format!("no results, status {:?}", r.status),
    }
}

/// The first result of `op` that `pick` takes, or a panic naming `op`, its status (or its
/// absence) and where the reply stopped.
#[track_caller]
fn find<'a, T>(r: &'a Compound4Res, op: NfsOpnum4, pick: impl Fn(&'a NfsResop4) -> Option<T>) -> T {
    if let Some(t) = r.resarray.iter().find_map(pick) {
        return t;
    }
    match r.resarray.iter().find(|x| x.opnum() == op) {
        Some(res) => panic!("{op:?} failed with {:?}: {r:?}", res.status()),
        None => panic!("no {op:?} result ({}): {r:?}", stopped(r)),
    }
}

/// The first OPEN's result ([`Reply::open`]).
#[track_caller]
pub fn open_res(r: &Compound4Res) -> &OpenResOk {
    r.open()
}

/// The first GETFH's filehandle ([`Reply::getfh`]).
#[track_caller]
pub fn getfh_res(r: &Compound4Res) -> NfsFh4 {
    r.getfh()
}

/// The status of `op` ([`Reply::status_of`]).
#[track_caller]
pub fn status_of(r: &Compound4Res, op: NfsOpnum4) -> NfsStat4 {
    r.status_of(op)
}

/// The status of the last result ([`Reply::last_status`]).
pub fn last_status(r: &Compound4Res) -> NfsStat4 {
    r.last_status()
}

/// The first WRITE's result ([`Reply::write`]).
#[track_caller]
pub fn write_res(r: &Compound4Res) -> WriteResOk {
    r.write()
}

/// The first READ's result ([`Reply::read`]).
#[track_caller]
pub fn read_res(r: &Compound4Res) -> ReadResOk {
    r.read().clone()
}

/// The first LOCK's stateid ([`Reply::lock_stateid`]).
#[track_caller]
pub fn lock_stateid(r: &Compound4Res) -> Stateid4 {
    r.lock_stateid()
}

/// The first LAYOUTGET's result ([`Reply::layoutget_res`]).
#[track_caller]
pub fn layoutget_res(r: &Compound4Res) -> &LayoutGetRes {
    r.layoutget_res()
}

/// The layout a LAYOUTGET granted ([`Reply::granted`]).
#[track_caller]
pub fn granted(r: &Compound4Res) -> (LayoutGetResOk, Nfsv41FileLayout4) {
    r.granted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use nfs_proto::xdr::Utf8String;

    fn reply(status: NfsStat4, resarray: Vec<NfsResop4>) -> Compound4Res {
        Compound4Res {
            status,
            tag: Utf8String::from("t"),
            resarray,
        }
    }

    fn fh(b: &'static [u8]) -> NfsFh4 {
        NfsFh4(Bytes::from_static(b))
    }

    #[test]
    fn the_builder_keeps_the_order_and_the_arguments() {
        let s = ops::CURRENT_STATEID;
        let c = Compound::new()
            .putfh(&fh(b"fh"))
            .open_create(
                "f",
                0o600,
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                "o",
            )
            .getfh()
            .write(s, 8, StableHow4::UNSTABLE4, b"data")
            .close(s);
        let names: Vec<NfsOpnum4> = c.ops().iter().map(NfsArgop4::opnum).collect();
        assert_eq!(
            names,
            [
                NfsOpnum4::OP_PUTFH,
                NfsOpnum4::OP_OPEN,
                NfsOpnum4::OP_GETFH,
                NfsOpnum4::OP_WRITE,
                NfsOpnum4::OP_CLOSE
            ]
        );
        let NfsArgop4::Open(o) = &c.ops()[1] else {
            panic!("{c:?}")
        };
        assert_eq!(o.claim, ops::by_name("f"));
        assert_eq!(o.openhow, ops::unchecked(0o600));
        assert_eq!(o.owner.owner, Bytes::from_static(b"o"));
        let NfsArgop4::Write(w) = &c.ops()[3] else {
            panic!("{c:?}")
        };
        assert_eq!((w.offset, &w.data[..]), (8, &b"data"[..]));
        assert_eq!(c.minor_version(), 1);
        assert_eq!(Compound::new().minor(2).minor_version(), 2);
    }

    #[test]
    fn a_path_is_the_root_and_one_lookup_per_component() {
        let c = Compound::new().path("/a//b/");
        assert_eq!(
            Vec::<NfsArgop4>::from(c),
            vec![NfsArgop4::PutRootFh, ops::lookup("a"), ops::lookup("b")]
        );
        assert!(ops::lookups("/").is_empty());
    }

    #[test]
    fn accessors_find_their_operation_anywhere_in_the_reply() {
        let r = reply(
            NfsStat4::NFS4_OK,
            vec![
                NfsResop4::PutRootFh(PutRootFhRes {
                    status: NfsStat4::NFS4_OK,
                }),
                NfsResop4::GetFh(GetFhRes::Ok(GetFhResOk { object: fh(b"x") })),
                NfsResop4::Write(WriteRes::Ok(WriteResOk {
                    count: 3,
                    committed: StableHow4::FILE_SYNC4,
                    writeverf: [1; 8],
                })),
            ],
        );
        assert_eq!(r.ok().resarray.len(), 3);
        assert_eq!(r.getfh(), fh(b"x"));
        assert_eq!(getfh_res(&r), fh(b"x"));
        assert_eq!(r.write().count, 3);
        assert_eq!(r.status_of(NfsOpnum4::OP_PUTROOTFH), NfsStat4::NFS4_OK);
        assert_eq!(last_status(&r), NfsStat4::NFS4_OK);
    }

    #[test]
    #[should_panic(expected = "OP_OPEN failed with NFS4ERR_NOENT")]
    fn a_failed_operation_is_named_with_its_status() {
        let r = reply(
            NfsStat4::NFS4ERR_NOENT,
            vec![
                NfsResop4::PutRootFh(PutRootFhRes {
                    status: NfsStat4::NFS4_OK,
                }),
                NfsResop4::Open(OpenRes::Err(NfsStat4::NFS4ERR_NOENT)),
            ],
        );
        r.open();
    }

    #[test]
    #[should_panic(expected = "no OP_GETFH result (stopped at OP_LOOKUP with NFS4ERR_NOENT)")]
    fn a_missing_operation_says_where_the_compound_stopped() {
        let r = reply(
            NfsStat4::NFS4ERR_NOENT,
            vec![NfsResop4::Lookup(LookupRes {
                status: NfsStat4::NFS4ERR_NOENT,
            })],
        );
        r.getfh();
    }

    #[test]
    #[should_panic(expected = "COMPOUND failed: Some(OP_LOOKUP) returned NFS4ERR_NOENT")]
    fn ok_names_the_operation_that_stopped_the_compound() {
        let r = reply(
            NfsStat4::NFS4ERR_NOENT,
            vec![NfsResop4::Lookup(LookupRes {
                status: NfsStat4::NFS4ERR_NOENT,
            })],
        );
        r.ok();
    }

    #[test]
    fn last_status_is_the_last_results() {
        let r = reply(
            NfsStat4::NFS4ERR_NOENT,
            vec![
                NfsResop4::PutRootFh(PutRootFhRes {
                    status: NfsStat4::NFS4_OK,
                }),
                NfsResop4::Lookup(LookupRes {
                    status: NfsStat4::NFS4ERR_NOENT,
                }),
            ],
        );
        assert_eq!(r.last_status(), NfsStat4::NFS4ERR_NOENT);
        assert_eq!(
            reply(NfsStat4::NFS4_OK, vec![]).last_status(),
            NfsStat4::NFS4_OK
        );
    }
}
