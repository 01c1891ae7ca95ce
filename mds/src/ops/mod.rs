//! One file per operation (as nfs4j and nfs-ganesha keep them), a few files of what related
//! operations share (`attr`, `dir`, `fh`, `io`, `layout`, `open`, `space`, `xattr`), and the
//! exhaustive dispatch that maps each `NfsArgop4` to its function (adding an operation to `nfs-proto`'s op table makes this match
//! fail to compile until it is handled here).

pub mod access;
pub mod allocate;
pub mod attr;
pub mod clone;
pub mod close;
pub mod commit;
pub mod copy;
pub mod copy_notify;
pub mod create;
pub mod deallocate;
pub mod delegpurge;
pub mod delegreturn;
pub mod dir;
pub mod fh;
pub mod free_stateid;
pub mod getattr;
pub mod getdeviceinfo;
pub mod getdevicelist;
pub mod getfh;
pub mod getxattr;
pub mod io;
pub mod layout;
pub mod layoutcommit;
pub mod layoutget;
pub mod layoutreturn;
pub mod link;
pub mod listxattrs;
pub mod lock;
pub mod lockt;
pub mod locku;
pub mod lookup;
pub mod lookupp;
pub mod offload_cancel;
pub mod offload_status;
pub mod open;
pub mod open_downgrade;
pub mod putfh;
pub mod putrootfh;
pub mod read;
pub mod read_plus;
pub mod readdir;
pub mod readlink;
pub mod release_lockowner;
pub mod remove;
pub mod removexattr;
pub mod rename;
pub mod restorefh;
pub mod savefh;
pub mod secinfo;
pub mod seek;
pub mod setattr;
pub mod setxattr;
pub mod space;
pub mod test_stateid;
pub mod verify;
pub mod want_delegation;
pub mod write;
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
        A::PutRootFh => R::PutRootFh(putrootfh::putrootfh(ctx)),
        A::PutPubFh => R::PutPubFh(PutPubFhRes {
            status: putrootfh::putrootfh(ctx).status,
        }),
        A::PutFh(a) => R::PutFh(putfh::putfh(ctx, a)),
        A::GetFh => R::GetFh(getfh::getfh(ctx)),
        A::SaveFh => R::SaveFh(savefh::savefh(ctx)),
        A::RestoreFh => R::RestoreFh(restorefh::restorefh(ctx)),
        A::Lookup(a) => R::Lookup(lookup::lookup(ctx, a)),
        A::LookupP => R::LookupP(lookupp::lookupp(ctx)),
        A::SecInfo(a) => R::SecInfo(secinfo::secinfo(ctx, a)),
        A::SecInfoNoName(a) => R::SecInfoNoName(secinfo::secinfo_no_name(ctx, a)),
        // Attributes.
        A::GetAttr(a) => R::GetAttr(getattr::getattr(ctx, a).await),
        A::SetAttr(a) => R::SetAttr(setattr::setattr(ctx, a).await),
        A::Access(a) => R::Access(access::access(ctx, a)),
        A::Verify(a) => R::Verify(VerifyRes {
            status: verify::verify(ctx, &a.obj_attributes, true).await,
        }),
        A::NVerify(a) => R::NVerify(NVerifyRes {
            status: verify::verify(ctx, &a.obj_attributes, false).await,
        }),
        // Directories.
        A::Create(a) => R::Create(create::create(ctx, a).await),
        A::Remove(a) => R::Remove(remove::remove(ctx, a).await),
        A::Rename(a) => R::Rename(rename::rename(ctx, a).await),
        A::Link(a) => R::Link(link::link(ctx, a).await),
        A::ReadDir(a) => R::ReadDir(readdir::readdir(ctx, a).await),
        A::ReadLink => R::ReadLink(readlink::readlink(ctx)),
        A::OpenAttr(_) => R::OpenAttr(OpenAttrRes {
            status: NfsStat4::NFS4ERR_NOTSUPP,
        }),
        // Open state and locks.
        A::Open(a) => R::Open(open::open(ctx, a).await),
        A::Close(a) => R::Close(close::close(ctx, a)),
        A::OpenDowngrade(a) => R::OpenDowngrade(open_downgrade::open_downgrade(ctx, a).await),
        A::Lock(a) => R::Lock(lock::lock(ctx, a)),
        A::LockT(a) => R::LockT(lockt::lockt(ctx, a)),
        A::LockU(a) => R::LockU(locku::locku(ctx, a)),
        A::TestStateid(a) => R::TestStateid(test_stateid::test_stateid(ctx, a)),
        A::FreeStateid(a) => R::FreeStateid(free_stateid::free_stateid(ctx, a)),
        A::DelegReturn(a) => R::DelegReturn(delegreturn::delegreturn(ctx, a)),
        A::DelegPurge(_) => R::DelegPurge(delegpurge::delegpurge(ctx)),
        A::WantDelegation(a) => R::WantDelegation(want_delegation::want_delegation(ctx, a)),
        A::ReleaseLockOwner(a) => R::ReleaseLockOwner(release_lockowner::release_lockowner(ctx, a)),
        // Data.
        A::Read(a) => R::Read(read::read(ctx, a).await),
        A::Write(a) => R::Write(write::write(ctx, a).await),
        A::Commit(a) => R::Commit(commit::commit(ctx, a).await),
        A::Allocate(a) => R::Allocate(allocate::allocate(ctx, a).await),
        A::Deallocate(a) => R::Deallocate(deallocate::deallocate(ctx, a).await),
        A::ReadPlus(a) => R::ReadPlus(read_plus::read_plus(ctx, a).await),
        A::Seek(a) => R::Seek(seek::seek(ctx, a).await),
        // Server-side copy (RFC 7862).
        A::Copy(a) => R::Copy(copy::copy(ctx, a).await),
        A::CopyNotify(_) => R::CopyNotify(copy_notify::copy_notify(ctx)),
        A::OffloadStatus(a) => R::OffloadStatus(offload_status::offload_status(ctx, a)),
        A::OffloadCancel(a) => R::OffloadCancel(offload_cancel::offload_cancel(ctx, a)),
        A::Clone(a) => R::Clone(clone::clone(ctx, a).await),
        // Extended attributes (RFC 8276).
        A::GetXattr(a) => R::GetXattr(getxattr::getxattr(ctx, a)),
        A::SetXattr(a) => R::SetXattr(setxattr::setxattr(ctx, a).await),
        A::ListXattrs(a) => R::ListXattrs(listxattrs::listxattrs(ctx, a)),
        A::RemoveXattr(a) => R::RemoveXattr(removexattr::removexattr(ctx, a).await),
        // NFSv4.0 only: not valid in minor version 1 and later (RFC 8881 section 15.2).
        A::OpenConfirm(_) | A::Renew(_) | A::SetClientId(_) | A::SetClientIdConfirm(_) => {
            error_result(op.opnum(), NfsStat4::NFS4ERR_NOTSUPP)
        }
        // pNFS file layouts (RFC 8881 chapter 13).
        A::LayoutGet(a) => R::LayoutGet(layoutget::layoutget(ctx, a).await),
        A::LayoutReturn(a) => R::LayoutReturn(layoutreturn::layoutreturn(ctx, a)),
        A::LayoutCommit(a) => R::LayoutCommit(layoutcommit::layoutcommit(ctx, a).await),
        A::GetDeviceInfo(a) => R::GetDeviceInfo(getdeviceinfo::getdeviceinfo(ctx, a)),
        A::GetDeviceList(a) => R::GetDeviceList(getdevicelist::getdevicelist(ctx, a)),
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
