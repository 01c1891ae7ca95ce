//! One function per operation, grouped by concern, and the exhaustive dispatch that maps each
//! `NfsArgop4` to its function (adding an operation to `nfs-proto`'s op table makes this match
//! fail to compile until it is handled here).

pub mod attr;
pub mod clone;
pub mod copy;
pub mod dir;
pub mod fh;
pub mod io;
pub mod layout;
pub mod open;
pub mod read_plus;
pub mod seek;
pub mod space;
pub mod xattr;

use nfs_proto::nfs4::*;

use crate::compound::{error_result, Ctx};

/// Runs one operation. SEQUENCE and the session operations are run by the shared COMPOUND
/// engine ([`nfs_server::compound`]) and never reach this function; they are listed so that
/// the match stays exhaustive.
pub async fn dispatch(ctx: &mut Ctx, op: &NfsArgop4) -> NfsResop4 {
    use NfsArgop4 as A;
    use NfsResop4 as R;
    match op {
        // Sessions and clients: run by the engine before the role is asked.
        A::ExchangeId(_)
        | A::CreateSession(_)
        | A::DestroySession(_)
        | A::BindConnToSession(_)
        | A::BackchannelCtl(_)
        | A::DestroyClientId(_)
        | A::ReclaimComplete(_)
        | A::Sequence(_) => error_result(op.opnum(), NfsStat4::NFS4ERR_SERVERFAULT),
        // Filehandles and names.
        A::PutRootFh => R::PutRootFh(fh::putrootfh(ctx)),
        A::PutPubFh => R::PutPubFh(PutPubFhRes {
            status: fh::putrootfh(ctx).status,
        }),
        A::PutFh(a) => R::PutFh(fh::putfh(ctx, a)),
        A::GetFh => R::GetFh(fh::getfh(ctx)),
        A::SaveFh => R::SaveFh(fh::savefh(ctx)),
        A::RestoreFh => R::RestoreFh(fh::restorefh(ctx)),
        A::Lookup(a) => R::Lookup(fh::lookup(ctx, a)),
        A::LookupP => R::LookupP(fh::lookupp(ctx)),
        A::SecInfo(a) => R::SecInfo(fh::secinfo(ctx, a)),
        A::SecInfoNoName(a) => R::SecInfoNoName(fh::secinfo_no_name(ctx, a)),
        // Attributes.
        A::GetAttr(a) => R::GetAttr(attr::getattr(ctx, a).await),
        A::SetAttr(a) => R::SetAttr(attr::setattr(ctx, a).await),
        A::Access(a) => R::Access(attr::access(ctx, a)),
        A::Verify(a) => R::Verify(VerifyRes {
            status: attr::verify(ctx, &a.obj_attributes, true).await,
        }),
        A::NVerify(a) => R::NVerify(NVerifyRes {
            status: attr::verify(ctx, &a.obj_attributes, false).await,
        }),
        // Directories.
        A::Create(a) => R::Create(dir::create(ctx, a).await),
        A::Remove(a) => R::Remove(dir::remove(ctx, a).await),
        A::Rename(a) => R::Rename(dir::rename(ctx, a).await),
        A::Link(a) => R::Link(dir::link(ctx, a).await),
        A::ReadDir(a) => R::ReadDir(dir::readdir(ctx, a).await),
        A::ReadLink => R::ReadLink(dir::readlink(ctx)),
        A::OpenAttr(_) => R::OpenAttr(OpenAttrRes {
            status: NfsStat4::NFS4ERR_NOTSUPP,
        }),
        // Open state and locks.
        A::Open(a) => R::Open(open::open(ctx, a).await),
        A::Close(a) => R::Close(open::close(ctx, a)),
        A::OpenDowngrade(a) => R::OpenDowngrade(open::open_downgrade(ctx, a).await),
        A::Lock(a) => R::Lock(open::lock(ctx, a)),
        A::LockT(a) => R::LockT(open::lockt(ctx, a)),
        A::LockU(a) => R::LockU(open::locku(ctx, a)),
        A::TestStateid(a) => R::TestStateid(open::test_stateid(ctx, a)),
        A::FreeStateid(a) => R::FreeStateid(open::free_stateid(ctx, a)),
        A::DelegReturn(a) => R::DelegReturn(open::delegreturn(ctx, a)),
        A::DelegPurge(_) => R::DelegPurge(open::delegpurge(ctx)),
        A::WantDelegation(a) => R::WantDelegation(open::want_delegation(ctx, a)),
        A::ReleaseLockOwner(a) => R::ReleaseLockOwner(open::release_lockowner(ctx, a)),
        // Data.
        A::Read(a) => R::Read(io::read(ctx, a).await),
        A::Write(a) => R::Write(io::write(ctx, a).await),
        A::Commit(a) => R::Commit(io::commit(ctx, a).await),
        A::Allocate(a) => R::Allocate(space::allocate(ctx, a).await),
        A::Deallocate(a) => R::Deallocate(space::deallocate(ctx, a).await),
        A::ReadPlus(a) => R::ReadPlus(read_plus::read_plus(ctx, a).await),
        A::Seek(a) => R::Seek(seek::seek(ctx, a).await),
        // Server-side copy (RFC 7862).
        A::Copy(a) => R::Copy(copy::copy(ctx, a).await),
        A::CopyNotify(_) => R::CopyNotify(copy::copy_notify(ctx)),
        A::OffloadStatus(a) => R::OffloadStatus(copy::offload_status(ctx, a)),
        A::OffloadCancel(a) => R::OffloadCancel(copy::offload_cancel(ctx, a)),
        A::Clone(a) => R::Clone(clone::clone(ctx, a).await),
        // Extended attributes (RFC 8276).
        A::GetXattr(a) => R::GetXattr(xattr::getxattr(ctx, a)),
        A::SetXattr(a) => R::SetXattr(xattr::setxattr(ctx, a).await),
        A::ListXattrs(a) => R::ListXattrs(xattr::listxattrs(ctx, a)),
        A::RemoveXattr(a) => R::RemoveXattr(xattr::removexattr(ctx, a).await),
        // NFSv4.0 only: not valid in minor version 1 and later (RFC 8881 section 15.2).
        A::OpenConfirm(_) | A::Renew(_) | A::SetClientId(_) | A::SetClientIdConfirm(_) => {
            error_result(op.opnum(), NfsStat4::NFS4ERR_NOTSUPP)
        }
        // pNFS file layouts (RFC 8881 chapter 13).
        A::LayoutGet(a) => R::LayoutGet(layout::layoutget(ctx, a).await),
        A::LayoutReturn(a) => R::LayoutReturn(layout::layoutreturn(ctx, a)),
        A::LayoutCommit(a) => R::LayoutCommit(layout::layoutcommit(ctx, a).await),
        A::GetDeviceInfo(a) => R::GetDeviceInfo(layout::getdeviceinfo(ctx, a)),
        A::GetDeviceList(a) => R::GetDeviceList(layout::getdevicelist(ctx, a)),
        // Not offered yet: the rest of pNFS, directory delegations, SSV, NFSv4.2 extras.
        A::GetDirDelegation(_)
        | A::SetSsv(_)
        | A::IoAdvise(_)
        | A::LayoutError(_)
        | A::LayoutStats(_)
        | A::WriteSame(_) => error_result(op.opnum(), NfsStat4::NFS4ERR_NOTSUPP),
        A::Illegal | A::Unknown(_) => R::Illegal(IllegalRes {
            status: NfsStat4::NFS4ERR_OP_ILLEGAL,
        }),
    }
}
