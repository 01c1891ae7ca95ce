//! COMPOUND processing (RFC 8881 sections 15.2, 16.2 and 2.10.6): the per-request context
//! (current and saved filehandle and stateid, the caller, the session), the rules about what
//! may come first, the op dispatch, and the reply.

use std::sync::Arc;

use bytes::Bytes;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::{AcceptStat, Credential};
use nfs_proto::transport::{Conn, Reply};
use nfs_proto::xdr::{Decoder, Encoder, Utf8String, Xdr};
use tracing::{debug, info_span, Instrument};

use crate::exports::{Place, PSEUDO_EXPORT};
use crate::ops;
use crate::server::Mds;
use crate::store::Inode;

/// The caller, as AUTH_SYS describes it (after root squashing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// User id.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Supplementary groups.
    pub gids: Vec<u32>,
}

/// The anonymous user (AUTH_NONE, squashed root).
pub const NOBODY: u32 = 65534;

impl User {
    /// The user a credential names.
    pub fn from_credential(cred: &Credential) -> Self {
        match cred {
            Credential::Sys(p) => Self {
                uid: p.uid,
                gid: p.gid,
                gids: p.gids.clone(),
            },
            _ => Self {
                uid: NOBODY,
                gid: NOBODY,
                gids: Vec::new(),
            },
        }
    }

    /// Whether the user is in group `gid`.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.gids.contains(&gid)
    }
}

/// A resolved filehandle: which export and which object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fh {
    /// Export id.
    pub export: u16,
    /// File id.
    pub fileid: u64,
    /// Generation (a handle of another generation is stale).
    pub generation: u32,
}

/// State carried from one operation to the next within a COMPOUND.
pub struct Ctx {
    /// The server.
    pub mds: Arc<Mds>,
    /// The connection the request came on.
    pub conn: Conn,
    /// The caller as the credential names it.
    pub cred_user: User,
    /// The caller as the current filehandle's export sees it (root squashed or not).
    pub user: User,
    /// Whether the current filehandle's export is read-only for this caller (the pseudo file
    /// system always is).
    pub read_only: bool,
    /// The export whose rule `user` and `read_only` reflect.
    pub access_export: Option<u16>,
    /// 1 or 2.
    pub minor: u32,
    /// The client of the session named by SEQUENCE.
    pub clientid: Option<u64>,
    /// The session named by SEQUENCE.
    pub sessionid: Option<Sessionid4>,
    /// Current filehandle.
    pub cfh: Option<Fh>,
    /// Saved filehandle.
    pub sfh: Option<Fh>,
    /// Current stateid (RFC 8881 section 16.2.3.1.2).
    pub cstateid: Option<Stateid4>,
    /// Saved stateid.
    pub sstateid: Option<Stateid4>,
}

impl Ctx {
    /// The current filehandle, or NFS4ERR_NOFILEHANDLE.
    pub fn fh(&self) -> Result<Fh, NfsStat4> {
        self.cfh.ok_or(NfsStat4::NFS4ERR_NOFILEHANDLE)
    }

    /// The current object's attributes (NFS4ERR_STALE if it is gone); a pseudo-fs node's
    /// are made up (see [`Mds::pseudo_inode`]).
    pub fn inode(&self) -> Result<Inode, NfsStat4> {
        self.inode_of(self.fh()?)
    }

    /// The attributes of the object `fh` names (a pseudo-fs node's made up).
    pub fn inode_of(&self, fh: Fh) -> Result<Inode, NfsStat4> {
        if fh.export == PSEUDO_EXPORT {
            return self
                .mds
                .pseudo_inode(fh.fileid)
                .ok_or(NfsStat4::NFS4ERR_STALE);
        }
        Ok(self.mds.store.getattr_checked(fh.fileid, fh.generation)?)
    }

    /// Where the current filehandle stands in the joined tree, if at a pseudo node or an
    /// export root (the places where LOOKUP and LOOKUPP may cross between file systems).
    pub fn place(&self) -> Option<Place> {
        let fh = self.cfh?;
        if fh.export == PSEUDO_EXPORT {
            return self
                .mds
                .exports
                .pseudo_by_fileid(fh.fileid)
                .map(Place::Pseudo);
        }
        (self.mds.export_root_fileid(fh.export) == Some(fh.fileid))
            .then_some(Place::Export(fh.export))
    }

    /// Applies the access rule of `export` for this caller (RFC 8881 section 3.2 leaves the
    /// policy to the server; as knfsd, a client matching no rule of an export may not enter
    /// it: NFS4ERR_ACCESS). Called whenever the current filehandle may move to another export.
    pub fn enter(&mut self, export: u16) -> Result<(), NfsStat4> {
        if self.access_export == Some(export) {
            return Ok(());
        }
        let mut user = self.cred_user.clone();
        let read_only = if export == PSEUDO_EXPORT {
            true
        } else {
            let rule = self
                .mds
                .exports
                .rule(export, self.conn.peer().ip())
                .ok_or(NfsStat4::NFS4ERR_ACCESS)?;
            if rule.root_squash && user.uid == 0 {
                user = User {
                    uid: NOBODY,
                    gid: NOBODY,
                    gids: Vec::new(),
                };
            }
            rule.read_only
        };
        self.user = user;
        self.read_only = read_only;
        self.access_export = Some(export);
        Ok(())
    }

    /// Moves the current filehandle to a place of the joined tree (a pseudo node or an
    /// export's root), entering its export.
    pub fn set_place(&mut self, place: Place) -> Result<(), NfsStat4> {
        match place {
            Place::Pseudo(node) => {
                self.enter(PSEUDO_EXPORT)?;
                self.cfh = Some(Fh {
                    export: PSEUDO_EXPORT,
                    fileid: self.mds.exports.pseudo_fileid_of(node),
                    generation: 0,
                });
                self.cstateid = None;
            }
            Place::Export(id) => {
                self.enter(id)?;
                let inode = self.mds.export_root(id)?;
                self.set_fh(id, &inode);
            }
        }
        Ok(())
    }

    /// The current object, which must be a directory (NFS4ERR_NOTDIR).
    pub fn dir(&self) -> Result<Inode, NfsStat4> {
        let i = self.inode()?;
        if i.is_dir() {
            Ok(i)
        } else if i.ftype == NfsFtype4::NF4LNK {
            Err(NfsStat4::NFS4ERR_SYMLINK)
        } else {
            Err(NfsStat4::NFS4ERR_NOTDIR)
        }
    }

    /// Fails with NFS4ERR_ROFS when the export is read-only for this caller.
    pub fn writable(&self) -> Result<(), NfsStat4> {
        if self.read_only {
            Err(NfsStat4::NFS4ERR_ROFS)
        } else {
            Ok(())
        }
    }

    /// The client of the session, which SEQUENCE guarantees for every later op.
    pub fn client(&self) -> Result<u64, NfsStat4> {
        self.clientid.ok_or(NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)
    }

    /// Sets the current filehandle to an object.
    pub fn set_fh(&mut self, export: u16, inode: &Inode) {
        self.cfh = Some(Fh {
            export,
            fileid: inode.fileid,
            generation: inode.generation,
        });
        self.cstateid = None;
    }

    /// Whether the caller may do `want` (ACCESS4_* bits) on `inode`, by Unix mode bits.
    pub fn allowed(&self, inode: &Inode, want: u32) -> u32 {
        ops::attr::mode_access(inode, &self.user, want)
    }
}

/// Operations that may come first in a COMPOUND without SEQUENCE, alone (RFC 8881 section
/// 2.10.6.4 and each op's description).
fn allowed_without_sequence(op: &NfsArgop4) -> bool {
    matches!(
        op,
        NfsArgop4::ExchangeId(_)
            | NfsArgop4::CreateSession(_)
            | NfsArgop4::DestroySession(_)
            | NfsArgop4::BindConnToSession(_)
            | NfsArgop4::DestroyClientId(_)
    )
}

/// An error result for any operation: the op's result with only `status` set. The result types
/// differ in shape, but every one encodes a non-OK status as the status word followed by at
/// most a few zero-filled words (SETATTR's empty bitmap, say), so decoding that form gives the
/// right typed value without a hand-written table.
pub fn error_result(op: NfsOpnum4, status: NfsStat4) -> NfsResop4 {
    let mut e = Encoder::new();
    e.put_u32(op.0);
    e.put_u32(status.0);
    e.put_raw(&[0; 32]);
    NfsResop4::decode(&mut Decoder::new(e.into_bytes())).unwrap_or(NfsResop4::Illegal(IllegalRes {
        status: NfsStat4::NFS4ERR_OP_ILLEGAL,
    }))
}

/// Runs one COMPOUND.
pub async fn process(mds: Arc<Mds>, conn: Conn, cred: Credential, args: Bytes) -> Reply {
    let raw = args.clone();
    let (args, bad_op) = match Compound4Args::decode_partial(&mut Decoder::new(args)) {
        Ok(a) => a,
        Err(_) => return Reply::Accepted(AcceptStat::GarbageArgs),
    };
    let tag = args.tag.clone();
    if !(1..=2).contains(&args.minorversion) {
        return encode_reply(Compound4Res {
            status: NfsStat4::NFS4ERR_MINOR_VERS_MISMATCH,
            tag,
            resarray: Vec::new(),
        });
    }
    // A client that no export admits may not use the server at all.
    if !mds.exports.any_allowed(conn.peer().ip()) {
        return Reply::Denied(nfs_proto::rpc::RejectedReply::AuthError(
            nfs_proto::rpc::AuthStat::AUTH_TOOWEAK,
        ));
    }
    let user = User::from_credential(&cred);
    let mut ctx = Ctx {
        mds: mds.clone(),
        conn,
        cred_user: user.clone(),
        user,
        read_only: true,
        access_export: None,
        minor: args.minorversion,
        clientid: None,
        sessionid: None,
        cfh: None,
        sfh: None,
        cstateid: None,
        sstateid: None,
    };
    let nops = args.argarray.len() + usize::from(bad_op.is_some());
    let mut resarray = Vec::with_capacity(nops);
    let mut slot = None;
    let span = info_span!("compound", ops = nops, tag = %tag);
    async {
        for (i, op) in args.argarray.iter().enumerate() {
            let opnum = op.opnum();
            // An undefined operation is OP_ILLEGAL wherever it stands, even first (RFC 8881
            // section 15.2; pynfs COMP5).
            let res = if let NfsArgop4::Unknown(_) | NfsArgop4::Illegal = op {
                NfsResop4::Illegal(IllegalRes {
                    status: NfsStat4::NFS4ERR_OP_ILLEGAL,
                })
            } else if i == 0 && !matches!(op, NfsArgop4::Sequence(_)) {
                if !allowed_without_sequence(op) {
                    error_result(opnum, NfsStat4::NFS4ERR_OP_NOT_IN_SESSION)
                } else if nops > 1 {
                    error_result(opnum, NfsStat4::NFS4ERR_NOT_ONLY_OP)
                } else {
                    ops::dispatch(&mut ctx, op).await
                }
            } else if i > 0 && matches!(op, NfsArgop4::Sequence(_)) {
                error_result(opnum, NfsStat4::NFS4ERR_SEQUENCE_POS)
            } else if i == 0 {
                let NfsArgop4::Sequence(s) = op else {
                    unreachable!("checked above")
                };
                match ops::session::sequence(&mut ctx, s, &raw, nops) {
                    Ok(ops::session::SequenceStart::Replay(pieces)) => {
                        return Some(pieces);
                    }
                    Ok(ops::session::SequenceStart::Go(res, s)) => {
                        slot = Some(s);
                        NfsResop4::Sequence(res)
                    }
                    Err(status) => error_result(opnum, status),
                }
            } else {
                ops::dispatch(&mut ctx, op).await
            };
            let status = res.status();
            debug!(op = ?opnum, status = ?status);
            mds.counters.op(opnum, status);
            resarray.push(res);
            if !status.is_ok() {
                return None;
            }
        }
        if let Some(bad) = bad_op {
            let status = if bad.op == NfsOpnum4::OP_ILLEGAL || bad.op.name().is_none() {
                NfsStat4::NFS4ERR_OP_ILLEGAL
            } else {
                NfsStat4::NFS4ERR_BADXDR
            };
            resarray.push(if status == NfsStat4::NFS4ERR_OP_ILLEGAL {
                NfsResop4::Illegal(IllegalRes { status })
            } else {
                error_result(bad.op, status)
            });
        }
        None
    }
    .instrument(span)
    .await
    .map_or_else(
        || {
            let status = resarray.last().map_or(NfsStat4::NFS4_OK, |r| r.status());
            let reply = Compound4Res {
                status,
                tag,
                resarray,
            };
            let pieces = encode_pieces(&reply);
            if let Some(s) = slot {
                ops::session::finish(&ctx, s, &pieces);
            }
            Reply::Success(pieces)
        },
        Reply::Success,
    )
}

fn encode_pieces(res: &Compound4Res) -> Vec<Bytes> {
    let mut e = Encoder::new();
    res.encode(&mut e);
    e.into_pieces()
}

fn encode_reply(res: Compound4Res) -> Reply {
    Reply::Success(encode_pieces(&res))
}

/// An empty tag, for replies built outside a request.
pub fn no_tag() -> Utf8String {
    Utf8String::default()
}
