//! OPEN (RFC 8881 section 18.16), and the stateid helpers the other open-state operations
//! (CLOSE, OPEN_DOWNGRADE, LOCK, LOCKT, LOCKU, TEST_STATEID, FREE_STATEID, DELEGRETURN,
//! DELEGPURGE, WANT_DELEGATION, RELEASE_LOCKOWNER: a file each) share.
//!
//! The glue between the COMPOUND context (current filehandle and stateid, the caller, the
//! session's client), the grace period, the metadata store (OPEN's create and truncation) and
//! the sans-IO [`StateTable`](crate::state::open::StateTable), which owns the share
//! reservation, seqid and lock rules. The table's lock is never held across an `.await`.
//!
//! ```text
//!  OPEN: claim ──> file (lookup / create [+ stripe set of a directory's layout policy])
//!        ──> type + permission checks
//!        ──> StateTable::open (share reservation) ──> truncate (UNCHECKED4, size 0)
//!        ──> current fh = file, current stateid = open stateid
//! ```

use crate::compound::Ctx;
use crate::ops::fh::check_component;
use crate::state::deleg::{DelegType, Need};
use crate::state::open::{delegation_body, DelegOffer, OpenShare};
use crate::state::stateid::resolve_current;
use crate::store::{CreateHow, CreateSpec, Inode, NewFileExtras, NewObject, SetAttrs, StoreError};
use nfs_proto::nfs4::*;
use pfs_core::ObjectId;

use tracing::info;

/// The mode of a file OPEN creates when the client gives none (EXCLUSIVE4 carries no
/// attributes; the Linux client follows it with a SETATTR of the mode).
const DEFAULT_CREATE_MODE: u32 = 0o644;

/// The set-gid bit of a directory: files made in it take the directory's group (BSD rule).
const S_ISGID: u32 = 0o2000;

/// May the current client change the size of `fileid` under `stateid` (SETATTR of size,
/// RFC 8881 section 18.30.3)? An open (or lock) stateid needs write access; the anonymous
/// stateid is checked against share reservations.
pub fn check_size_change(ctx: &Ctx, fileid: u64, stateid: &Stateid4) -> Result<(), NfsStat4> {
    let clientid = ctx.client()?;
    let stateid = crate::state::stateid::resolve_current(stateid, ctx.cstateid.as_ref())?;
    ctx.mds
        .tables()
        .opens()
        .check_io(clientid, fileid, &stateid, crate::state::open::Io::Write)
        .map_err(NfsStat4::from)
}

/// The error for an operation on regular-file data (OPEN, READ, WRITE, COMMIT, LOCK) whose
/// object is of another type: RFC 8881 sections 18.16.3 and 18.22.3 give NFS4ERR_ISDIR for a
/// directory and NFS4ERR_SYMLINK for a symbolic link; for other types NFSv4.1 has
/// NFS4ERR_WRONG_TYPE (NFSv4.0 used NFS4ERR_SYMLINK for them, RFC 7530 section 16.16.6; knfsd
/// makes the same split).
pub(crate) fn regular_file(inode: &Inode) -> Result<(), NfsStat4> {
    match inode.ftype {
        NfsFtype4::NF4REG => Ok(()),
        NfsFtype4::NF4DIR => Err(NfsStat4::NFS4ERR_ISDIR),
        NfsFtype4::NF4LNK => Err(NfsStat4::NFS4ERR_SYMLINK),
        _ => Err(NfsStat4::NFS4ERR_WRONG_TYPE),
    }
}

/// The grace-period rule for new state (RFC 8881 section 8.4.2): a reclaim (OPEN with
/// CLAIM_PREVIOUS, LOCK with `reclaim`) needs the grace period and a client of the previous
/// boot that has not sent RECLAIM_COMPLETE (else NFS4ERR_NO_GRACE); any other new open or
/// lock waits for the grace period to end and for the client's own RECLAIM_COMPLETE
/// (NFS4ERR_GRACE, section 18.51.3).
pub(super) fn check_grace(ctx: &Ctx, clientid: u64, reclaim: bool) -> Result<(), NfsStat4> {
    let now = ctx.mds.core().now();
    let st = ctx.mds.core().state();
    if reclaim {
        let owner = st
            .clients
            .get(clientid)
            .map(|r| r.ownerid().clone())
            .unwrap_or_default();
        st.grace.check_reclaim(clientid, &owner, now)?;
    } else {
        st.grace.check_new_lock(clientid, now)?;
    }
    Ok(())
}

/// Truncates the data object of a file without a stripe set, in the MDS's own store (after
/// the store recorded the new size): OPEN's truncate and SETATTR of the size. A striped
/// file's objects are truncated on its data servers instead, before the store records the
/// size ([`crate::pnfs::dsobjects::plan_truncate`]).
///
/// While the MDS grants layouts, a file whose own object holds nothing keeps nothing there:
/// its new size is metadata only (reads through the MDS fill the range with zeros), and the
/// file gets its stripe set at its first WRITE or LAYOUTGET. Extending the MDS's object
/// instead would make the file "hold data on the MDS" and lose it its layouts for good
/// (fio sizes its file with ftruncate before it writes: it did all its I/O through the MDS).
pub(super) async fn truncate_data(ctx: &Ctx, fileid: u64, size: u64) -> Result<(), NfsStat4> {
    // The size recorded just before may be a deferred commit: durable first, so a crash
    // cannot leave the old size over data already cut.
    ctx.mds.store().sync().await?;
    let data = ctx.mds.data().clone();
    let layouts = ctx.mds.cfg().cluster.grants_layouts();
    nfs_server::io::blocking(move || {
        let id = ObjectId::whole(fileid);
        if layouts && data.size(id)? == 0 {
            return Ok(());
        }
        data.truncate(id, size)
    })
    .await
}

/// The file an OPEN claim resolved to, and what the reply says about it.
struct Target {
    export: u16,
    inode: Inode,
    cinfo: ChangeInfo4,
    attrset: Bitmap4,
    /// This OPEN created the file (or is a retransmitted exclusive create of it): its owner
    /// may open it whatever the mode says (RFC 8881 section 18.16.3: a file created with
    /// mode 0444 is still opened for writing by its creator).
    created: bool,
    /// UNCHECKED4 with size 0 on an existing file: truncate once the open is granted.
    truncate: bool,
}

/// A checked `createhow4`: the store's create mode, the attributes to apply and their bits.
struct CreatePlan {
    how: CreateHow,
    attrs: SetAttrs,
    mask: Bitmap4,
}

impl CreatePlan {
    /// RFC 8881 section 18.16.3: UNCHECKED4 and GUARDED4 carry any settable attributes;
    /// EXCLUSIVE4 none (the verifier is kept beside the file, not in its times, so `attrset`
    /// is empty and the client's follow-up SETATTR is plain); EXCLUSIVE4_1 only attributes in
    /// `suppattr_exclcreat` (else NFS4ERR_INVAL).
    fn parse(how: &Createhow4) -> Result<Self, NfsStat4> {
        let (how, fattr) = match how {
            Createhow4::Unchecked(f) => (CreateHow::Unchecked, Some(f)),
            Createhow4::Guarded(f) => (CreateHow::Guarded, Some(f)),
            Createhow4::Exclusive(v) => (CreateHow::Exclusive(*v), None),
            Createhow4::Exclusive41(c) => (CreateHow::Exclusive(c.cva_verf), Some(&c.cva_attrs)),
        };
        let (attrs, mask) = match fattr {
            Some(f) => crate::ops::setattr::to_setattrs(f)?,
            None => (SetAttrs::default(), Bitmap4::new()),
        };
        if matches!(how, CreateHow::Exclusive(_)) && attrs.size.is_some() {
            return Err(NfsStat4::NFS4ERR_INVAL);
        }
        Ok(Self { how, attrs, mask })
    }
}

/// The new file's owner, group and mode, with the Unix rules SETATTR applies: only root gives
/// a file to another user, and a group must be one of the caller's (NFS4ERR_PERM).
fn create_spec(ctx: &Ctx, dir: &Inode, plan: &CreatePlan) -> Result<CreateSpec, NfsStat4> {
    let u = &ctx.user;
    let uid = plan.attrs.uid.unwrap_or(u.uid);
    if uid != u.uid && u.uid != 0 {
        return Err(NfsStat4::NFS4ERR_PERM);
    }
    let gid = match plan.attrs.gid {
        Some(g) if g != u.gid && u.uid != 0 && !u.in_group(g) => {
            return Err(NfsStat4::NFS4ERR_PERM)
        }
        Some(g) => g,
        None if dir.mode & S_ISGID != 0 => dir.gid,
        None => u.gid,
    };
    Ok(CreateSpec {
        object: NewObject::Regular(plan.how),
        mode: plan.attrs.mode.unwrap_or(DEFAULT_CREATE_MODE),
        uid,
        gid,
    })
}

/// CLAIM_NULL: `name` in the current directory, created if `create` says so.
async fn open_by_name(
    ctx: &mut Ctx,
    name: &Component4,
    create: Option<&Createhow4>,
) -> Result<Target, NfsStat4> {
    let dir = ctx.dir()?;
    let export = ctx.fh()?.export;
    let name = check_component(name)?;
    if ctx.allowed(&dir, ACCESS4_LOOKUP) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    let existing = match ctx.mds.store().lookup(dir.fileid, name) {
        Ok(i) => Some(i),
        Err(StoreError::NoEnt) => None,
        Err(e) => return Err(e.into()),
    };
    let unchanged = ChangeInfo4 {
        atomic: true,
        before: dir.change,
        after: dir.change,
    };
    let Some(how) = create else {
        return Ok(Target {
            export,
            inode: existing.ok_or(NfsStat4::NFS4ERR_NOENT)?,
            cinfo: unchanged,
            attrset: Bitmap4::new(),
            created: false,
            truncate: false,
        });
    };
    ctx.writable()?;
    let plan = CreatePlan::parse(how)?;
    match (&existing, plan.how) {
        // An existing file is opened as it is: createattrs are not used, except that size 0
        // truncates it (RFC 8881 section 18.16.3).
        (Some(inode), CreateHow::Unchecked) => {
            regular_file(inode)?;
            let truncate = plan.attrs.size == Some(0);
            let mut attrset = Bitmap4::new();
            if truncate {
                attrset.set(attr::FATTR4_SIZE);
            }
            return Ok(Target {
                export,
                inode: inode.clone(),
                cinfo: unchanged,
                attrset,
                created: false,
                truncate,
            });
        }
        (Some(_), CreateHow::Guarded) => return Err(NfsStat4::NFS4ERR_EXIST),
        // Exclusive with an existing name: the store tells a retransmission (same verifier)
        // from a conflict (NFS4ERR_EXIST) and creates nothing.
        (Some(_), CreateHow::Exclusive(_)) => {}
        (None, _) => {
            if ctx.allowed(&dir, ACCESS4_EXTEND) == 0 {
                return Err(NfsStat4::NFS4ERR_ACCESS);
            }
        }
    }
    let spec = create_spec(ctx, &dir, &plan)?;
    let now = ctx.mds.wall_time();
    // Times and size are not part of the create itself, and a new file under a directory
    // with a layout policy of its own gets its stripe set: all in the create's transaction.
    let rest = SetAttrs {
        size: plan.attrs.size.filter(|&s| s != 0),
        atime: plan.attrs.atime,
        mtime: plan.attrs.mtime,
        ..SetAttrs::default()
    };
    let dir_plan = crate::ops::layout::directory_stripe_plan(ctx, export, dir.fileid);
    let placed = dir_plan.is_some();
    // A LAYOUTGET following in this COMPOUND would fix the new file's stripe set (and mark
    // it for an RW layout) in a commit of its own: done here, in the create's.
    let follows = ctx.layout_follows;
    let stripes = dir_plan
        .or_else(|| follows.and_then(|_| crate::ops::layout::export_stripe_plan(ctx, export)));
    let mark_layout_writes = follows == Some(Layoutiomode4::LAYOUTIOMODE4_RW);
    let extras = NewFileExtras {
        attrs: rest.clone(),
        stripes,
        mark_layout_writes,
    };
    let out = ctx
        .mds
        .store()
        .create_file(dir.fileid, name, spec, extras, now)
        .await?;
    let made = out.made;
    let inode = made.inode;
    regular_file(&inode)?;
    let exclusive = matches!(plan.how, CreateHow::Exclusive(_));
    if !made.created && !exclusive {
        // Lost a race with another creator of the name: as if it had existed.
        let truncate = plan.how == CreateHow::Unchecked && plan.attrs.size == Some(0);
        if plan.how == CreateHow::Guarded {
            return Err(NfsStat4::NFS4ERR_EXIST);
        }
        let mut attrset = Bitmap4::new();
        if truncate {
            attrset.set(attr::FATTR4_SIZE);
        }
        return Ok(Target {
            export,
            inode,
            cinfo: made.cinfo,
            attrset,
            created: false,
            truncate,
        });
    }
    if made.created {
        if let Some(size) = rest.size {
            truncate_data(ctx, inode.fileid, size).await?;
        }
        if mark_layout_writes && out.stripes.is_some() {
            ctx.folded_mark = Some(inode.fileid);
        }
        if placed && out.stripes.is_none() {
            crate::ops::layout::warn_unplaced(inode.fileid);
        }
    }
    Ok(Target {
        export,
        inode,
        cinfo: made.cinfo,
        attrset: plan.mask,
        created: true,
        truncate: false,
    })
}

/// CLAIM_FH and CLAIM_PREVIOUS: the current filehandle is the file.
fn open_current(ctx: &Ctx) -> Result<Target, NfsStat4> {
    let export = ctx.fh()?.export;
    let inode = ctx.inode()?;
    Ok(Target {
        export,
        inode,
        // There is no directory in these claims: nothing changed, nothing to report.
        cinfo: ChangeInfo4::default(),
        attrset: Bitmap4::new(),
        created: false,
        truncate: false,
    })
}

/// The permission OPEN needs (RFC 8881 section 18.16.3, as Unix `open(2)` would check it):
/// read permission for READ access (execute permission is enough, so that a client can read
/// a program it may only execute, as knfsd allows), write permission for WRITE access
/// (NFS4ERR_ROFS on a read-only export). The owner of a file this OPEN created may open it
/// regardless of the mode it gave the file.
fn check_open_permission(ctx: &Ctx, t: &Target, share: &OpenShare) -> Result<(), NfsStat4> {
    if share.access & OPEN4_SHARE_ACCESS_WRITE != 0 {
        ctx.writable()?;
    }
    if t.created && ctx.user.uid == t.inode.uid {
        return Ok(());
    }
    if share.access & OPEN4_SHARE_ACCESS_READ != 0
        && ctx.allowed(&t.inode, ACCESS4_READ | ACCESS4_EXECUTE) == 0
    {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    if share.access & OPEN4_SHARE_ACCESS_WRITE != 0 && ctx.allowed(&t.inode, ACCESS4_MODIFY) == 0 {
        return Err(NfsStat4::NFS4ERR_ACCESS);
    }
    Ok(())
}

/// OPEN (RFC 8881 section 18.16).
pub async fn open(ctx: &mut Ctx, a: &OpenArgs) -> Result<OpenResOk, NfsStat4> {
    let clientid = ctx.client()?;
    let share = OpenShare::parse(a.share_access, a.share_deny)?;
    let create = match &a.openhow {
        Openflag4::NoCreate => None,
        Openflag4::Create(how) => Some(how),
        Openflag4::Other(_) => return Err(NfsStat4::NFS4ERR_INVAL),
    };
    // Only an open by name can create (knfsd: "this check required by spec").
    if create.is_some() && !matches!(a.claim, OpenClaim4::Null(_)) {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    // An open under a delegation the client holds (CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH):
    // no conflict with that delegation, no grace check (the delegation protects it), and no
    // new delegation.
    let mut under_delegation = None;
    // A reclaim naming the delegation the client held before the restart.
    let mut reclaim_delegation = None;
    // A reclaim of the delegation the client's previous instance held (CLAIM_DELEGATE_PREV,
    // CLAIM_DELEG_PREV_FH).
    let mut prev_claim = false;
    let target = match &a.claim {
        OpenClaim4::Null(name) => {
            ctx.fh()?;
            check_grace(ctx, clientid, false)?;
            open_by_name(ctx, name, create).await?
        }
        OpenClaim4::Fh => {
            ctx.fh()?;
            check_grace(ctx, clientid, false)?;
            open_current(ctx)?
        }
        // Reclaim after a server restart (RFC 8881 sections 8.4.2.1 and 18.16.3). The open
        // table of this boot is empty, so a reclaim is granted like a new open (share
        // conflicts are still checked among the reclaims). A claimed `delegate_type` of READ
        // or WRITE gets that delegation back (section 10.2.1).
        OpenClaim4::Previous(t) => {
            ctx.fh()?;
            check_grace(ctx, clientid, true)?;
            reclaim_delegation = match *t {
                OpenDelegationType4::OPEN_DELEGATE_READ => Some(DelegType::Read),
                OpenDelegationType4::OPEN_DELEGATE_WRITE => Some(DelegType::Write),
                _ => None,
            };
            open_current(ctx)?
        }
        // Opens under a delegation the client holds now (section 10.2.1): the client turns
        // the opens it made locally into server opens before it returns the delegation.
        OpenClaim4::DelegateCur(c) => {
            ctx.fh()?;
            under_delegation = Some(c.delegate_stateid);
            open_by_name(ctx, &c.file, None).await?
        }
        OpenClaim4::DelegCurFh(stateid) => {
            ctx.fh()?;
            under_delegation = Some(*stateid);
            open_current(ctx)?
        }
        // Reclaims of delegations across a client restart (section 10.2.1): the delegations
        // of the client's previous instance wait a lease for it (`DelegTable::carry_over`).
        // No grace check, as under a current delegation: the delegation protects the file.
        OpenClaim4::DelegatePrev(name) => {
            ctx.fh()?;
            prev_claim = true;
            open_by_name(ctx, name, None).await?
        }
        OpenClaim4::DelegPrevFh => {
            ctx.fh()?;
            prev_claim = true;
            open_current(ctx)?
        }
    };
    regular_file(&target.inode)?;
    // Truncation is a write: knfsd refuses it without write access, with NFS4ERR_INVAL.
    if target.truncate && share.access & OPEN4_SHARE_ACCESS_WRITE == 0 {
        return Err(NfsStat4::NFS4ERR_INVAL);
    }
    check_open_permission(ctx, &target, &share)?;
    // A striped file's data servers must all be up to truncate it: checked before the share
    // reservation, so that a data server that is down (NFS4ERR_DELAY) leaves no open behind.
    let ds_truncate = if target.truncate {
        crate::pnfs::dsobjects::plan_truncate(
            ctx.mds.store(),
            ctx.mds.pnfs(),
            target.inode.fileid,
            0,
            target.inode.change,
        )?
    } else {
        None
    };
    let fileid = target.inode.fileid;
    let fh = super::fh::encode_fh(
        ctx,
        crate::compound::Fh {
            export: target.export,
            fileid,
            generation: target.inode.generation,
        },
    );
    // No new delegation while the grace period lasts: a client reclaiming its opens and
    // locks must not find them behind another client's fresh delegation (knfsd waits too).
    // A reclaim gets back only the delegation it names.
    let in_grace = ctx.mds.core().state().grace.in_grace(ctx.mds.core().now());
    let offer_enabled = ctx.mds.delegations_enabled(target.export) && !in_grace;
    let callback_up = offer_enabled && crate::state::recall::callback_up(ctx.mds.core(), clientid);
    // Other clients' delegations that conflict with this open are recalled, and the open
    // waits (RFC 8881 section 10.4.4): reading conflicts with write delegations, writing
    // (or truncating) with all.
    let need = if share.access & OPEN4_SHARE_ACCESS_WRITE != 0 || target.truncate {
        Need::Write
    } else {
        Need::Read
    };
    let (grant, old_access) = {
        let mut opens = ctx.mds.tables().opens();
        if let Some(stateid) = &under_delegation {
            opens
                .delegs
                .check(clientid, fileid, stateid)
                .map_err(NfsStat4::from)?;
        }
        // A file the previous instance held no delegation of is no reclaim (section 18.16.3).
        if prev_claim && opens.delegs.prev_kind(clientid, fileid).is_none() {
            return Err(NfsStat4::NFS4ERR_RECLAIM_BAD);
        }
        if let Some(orders) = crate::state::recall::recall_conflicts(
            ctx.mds.tables(),
            ctx.mds.core(),
            &mut opens,
            fileid,
            clientid,
            need,
        ) {
            drop(opens);
            crate::state::recall::send_recalls(ctx.mds.tables(), ctx.mds.core(), orders);
            return Err(NfsStat4::NFS4ERR_DELAY);
        }
        let owner_open = opens.open_of(clientid, fileid, &a.owner);
        let old = owner_open.and_then(|o| opens.access_family(&o).first().map(|f| f.1));
        let mut grant = opens.open(clientid, fileid, &a.owner, a.share_access, a.share_deny)?;
        grant.delegation = if let Some(kind) = reclaim_delegation {
            let stateid = opens
                .delegs
                .grant(clientid, fileid, fh, kind, target.inode.change)?;
            info!(
                clientid,
                fileid,
                kind = kind.label(),
                "reclaimed delegation"
            );
            delegation_body(kind, stateid)
        } else if prev_claim {
            match opens
                .delegs
                .reclaim_prev(clientid, fileid, target.inode.change)?
            {
                Some((stateid, kind)) => {
                    info!(
                        clientid,
                        fileid,
                        kind = kind.label(),
                        "reclaimed the delegation of a previous client instance"
                    );
                    delegation_body(kind, stateid)
                }
                // Checked above under the same lock.
                None => OpenDelegation4::None,
            }
        } else if under_delegation.is_some() || matches!(a.claim, OpenClaim4::Previous(_)) {
            OpenDelegation4::None
        } else {
            let offer = DelegOffer {
                enabled: offer_enabled,
                callback_up,
                fh: &fh,
                change: target.inode.change,
            };
            opens.offer_delegation(clientid, fileid, &share, offer)?
        };
        (grant, old)
    };
    // An upgrade keeps `other`, whose minted access the data servers would check: they learn
    // the new access before the client can use it there (RFC 8881 section 13.9.1).
    if grant.upgraded {
        let new = ctx
            .mds
            .tables()
            .opens()
            .access_family(&grant.stateid.other)
            .first()
            .map(|f| f.1);
        if new != old_access {
            crate::pnfs::fencing::push_access(
                ctx.mds.store(),
                ctx.mds.tables(),
                ctx.mds.pnfs(),
                target.inode.fileid,
                &grant.stateid.other,
            )
            .await?;
        }
    }
    // After the share reservation, so that a denied OPEN truncates nothing. A striped file's
    // objects go first (their size may be past the recorded one while clients write through
    // layouts), then the store records size 0.
    if target.truncate {
        let striped = ds_truncate.is_some();
        if let Some(t) = ds_truncate {
            let marks = crate::pnfs::datapath::Marks {
                store: ctx.mds.store(),
                export: target.export,
            };
            t.run(ctx.mds.pnfs(), marks).await?;
        }
        let size0 = SetAttrs {
            size: Some(0),
            ..SetAttrs::default()
        };
        let out = ctx
            .mds
            .store()
            .setattr(target.inode.fileid, size0, ctx.mds.wall_time())
            .await?;
        if striped {
            crate::pnfs::dsobjects::hint_ends(
                ctx.mds.namespace(),
                ctx.mds.pnfs(),
                target.inode.fileid,
            );
        } else if out.old_size != 0 {
            truncate_data(ctx, target.inode.fileid, 0).await?;
        }
    }
    if matches!(a.claim, OpenClaim4::Previous(_)) {
        // The operator's evidence that a client got its state back after a restart.
        info!(
            clientid,
            fileid = target.inode.fileid,
            access = a.share_access,
            "reclaimed open"
        );
    }
    ctx.set_fh(target.export, &target.inode);
    if target.truncate
        && crate::pnfs::fencing::striped(ctx.mds.store(), ctx.mds.pnfs(), target.inode.fileid)
    {
        // Other clients' layouts map data that changed under them (RFC 8881 section
        // 12.5.5.1): recalled in the background.
        super::dir::recall_layouts(ctx, target.inode.fileid);
    }
    ctx.cstateid = Some(grant.stateid);
    Ok(OpenResOk {
        stateid: grant.stateid,
        cinfo: target.cinfo,
        rflags: grant.rflags,
        attrset: target.attrset,
        delegation: grant.delegation,
    })
}

/// The stateid argument with the current stateid substituted (RFC 8881 section 16.2.3.1.2).
pub(super) fn current(ctx: &Ctx, stateid: &Stateid4) -> Result<Stateid4, NfsStat4> {
    Ok(resolve_current(stateid, ctx.cstateid.as_ref())?)
}

/// The client's last open of the file closed, or its delegation went: its return-on-close
/// layout goes with the last of them (RFC 8881 section 18.43.3, `logr_return_on_close`). A
/// client holding a delegation keeps its layout after CLOSE: it opens the file again
/// locally under the delegation and goes on writing through the layout (the Linux client
/// returns no layout on close while it holds a delegation, `pnfs_roc`, and returns it with
/// DELEGRETURN); dropping it made that client's LAYOUTCOMMIT fail and lose the size.
/// Also called when a delegation is revoked ([`crate::state::recall::revoke_expired`]).
pub(crate) fn drop_layouts_if_done(
    tables: &crate::server::StateTables,
    clientid: u64,
    fileid: u64,
) {
    let done = {
        let opens = tables.opens_recovered();
        !opens.client_has_open(clientid, fileid) && opens.delegs.held_by(clientid, fileid).is_none()
    };
    if done {
        tables.layouts_recovered().closed(clientid, fileid);
    }
}

/// Stateids of `file` the client is done with (closed, freed, returned): the data servers
/// of a striped file refuse them from now on, batched in the background.
pub(super) fn refuse_on_data_servers(
    ctx: &Ctx,
    file: u64,
    others: impl IntoIterator<Item = crate::pnfs::devices::Other>,
) {
    if crate::pnfs::fencing::striped(ctx.mds.store(), ctx.mds.pnfs(), file) {
        ctx.mds.fencing().queue(
            others
                .into_iter()
                .map(|o| (o, crate::pnfs::dsctl::RevokeReason::Closed)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(ftype: NfsFtype4) -> Inode {
        Inode::for_test(9, ftype, 0o644, 1)
    }

    #[test]
    fn only_regular_files_hold_data_and_other_types_get_the_rfc_8881_codes() {
        assert_eq!(regular_file(&inode(NfsFtype4::NF4REG)), Ok(()));
        assert_eq!(
            regular_file(&inode(NfsFtype4::NF4DIR)),
            Err(NfsStat4::NFS4ERR_ISDIR)
        );
        assert_eq!(
            regular_file(&inode(NfsFtype4::NF4LNK)),
            Err(NfsStat4::NFS4ERR_SYMLINK)
        );
        for t in [
            NfsFtype4::NF4FIFO,
            NfsFtype4::NF4SOCK,
            NfsFtype4::NF4BLK,
            NfsFtype4::NF4CHR,
        ] {
            assert_eq!(regular_file(&inode(t)), Err(NfsStat4::NFS4ERR_WRONG_TYPE));
        }
    }

    #[test]
    fn exclusive4_carries_no_attributes_and_exclusive4_1_refuses_a_size() {
        let p = CreatePlan::parse(&Createhow4::Exclusive([3; 8])).unwrap();
        assert_eq!(p.how, CreateHow::Exclusive([3; 8]));
        assert!(p.mask.is_empty());
        let size = attr::FileAttrs {
            size: Some(0),
            ..Default::default()
        };
        let with_size = Createhow4::Exclusive41(Creatverfattr {
            cva_verf: [1; 8],
            cva_attrs: size.to_fattr(&size.mask()),
        });
        assert_eq!(
            CreatePlan::parse(&with_size).err(),
            Some(NfsStat4::NFS4ERR_INVAL)
        );
        let mode = attr::FileAttrs {
            mode: Some(0o600),
            ..Default::default()
        };
        let with_mode = Createhow4::Exclusive41(Creatverfattr {
            cva_verf: [1; 8],
            cva_attrs: mode.to_fattr(&mode.mask()),
        });
        let p = CreatePlan::parse(&with_mode).unwrap();
        assert_eq!(p.attrs.mode, Some(0o600));
        assert!(p.mask.contains(attr::FATTR4_MODE));
    }
}
