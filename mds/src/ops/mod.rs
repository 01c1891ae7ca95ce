//! One function per operation, grouped by concern, and the MDS's [`OpHandler`]: the op
//! table's dispatch calls its method for each operation (an operation added to `nfs-proto`'s
//! op table answers `NFS4ERR_NOTSUPP` until the MDS writes its method here).

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

use crate::compound::Ctx;

/// The MDS's operations: the op table's dispatch ([`nfs_proto::nfs4::dispatch`]) runs each
/// operation's method here. What the MDS does not offer (NFSv4.0-only operations, OPENATTR,
/// directory delegations, SSV, IO_ADVISE, LAYOUTERROR, LAYOUTSTATS, WRITE_SAME) keeps the
/// trait's `NFS4ERR_NOTSUPP`; SEQUENCE and the session operations are run by the shared
/// COMPOUND engine ([`nfs_server::compound`]) and never reach the role. Operations written as
/// a `Result` become their result type through the conversion the op table generates.
impl OpHandler for Ctx {
    // Filehandles and names.
    async fn putrootfh(&mut self) -> PutRootFhRes {
        fh::putrootfh(self)
    }

    async fn putpubfh(&mut self) -> PutPubFhRes {
        PutPubFhRes {
            status: fh::putrootfh(self).status,
        }
    }

    async fn putfh(&mut self, a: &PutFhArgs) -> PutFhRes {
        fh::putfh(self, a)
    }

    async fn getfh(&mut self) -> GetFhRes {
        fh::getfh(self)
    }

    async fn savefh(&mut self) -> SaveFhRes {
        fh::savefh(self)
    }

    async fn restorefh(&mut self) -> RestoreFhRes {
        fh::restorefh(self)
    }

    async fn lookup(&mut self, a: &LookupArgs) -> LookupRes {
        fh::lookup(self, a)
    }

    async fn lookupp(&mut self) -> LookupPRes {
        fh::lookupp(self)
    }

    async fn secinfo(&mut self, a: &SecInfoArgs) -> SecInfoRes {
        fh::secinfo(self, a)
    }

    async fn secinfo_no_name(&mut self, a: &SecInfoNoNameArgs) -> SecInfoNoNameRes {
        fh::secinfo_no_name(self, a)
    }

    // Attributes.
    async fn getattr(&mut self, a: &GetAttrArgs) -> GetAttrRes {
        attr::getattr(self, a).await
    }

    async fn setattr(&mut self, a: &SetAttrArgs) -> SetAttrRes {
        attr::setattr(self, a).await
    }

    async fn access(&mut self, a: &AccessArgs) -> AccessRes {
        attr::access(self, a)
    }

    async fn verify(&mut self, a: &VerifyArgs) -> VerifyRes {
        VerifyRes {
            status: attr::verify(self, &a.obj_attributes, true).await,
        }
    }

    async fn nverify(&mut self, a: &NVerifyArgs) -> NVerifyRes {
        NVerifyRes {
            status: attr::verify(self, &a.obj_attributes, false).await,
        }
    }

    // Directories.
    async fn create(&mut self, a: &CreateArgs) -> CreateRes {
        dir::create(self, a).await.into()
    }

    async fn remove(&mut self, a: &RemoveArgs) -> RemoveRes {
        dir::remove(self, a)
            .await
            .map(|cinfo| RemoveResOk { cinfo })
            .into()
    }

    async fn rename(&mut self, a: &RenameArgs) -> RenameRes {
        dir::rename(self, a).await.into()
    }

    async fn link(&mut self, a: &LinkArgs) -> LinkRes {
        dir::link(self, a)
            .await
            .map(|cinfo| LinkResOk { cinfo })
            .into()
    }

    async fn readdir(&mut self, a: &ReadDirArgs) -> ReadDirRes {
        dir::readdir(self, a).await.into()
    }

    async fn readlink(&mut self) -> ReadLinkRes {
        dir::readlink(self)
    }

    // Open state and locks.
    async fn open(&mut self, a: &OpenArgs) -> OpenRes {
        open::open(self, a).await.into()
    }

    async fn close(&mut self, a: &CloseArgs) -> CloseRes {
        open::close(self, a)
    }

    async fn open_downgrade(&mut self, a: &OpenDowngradeArgs) -> OpenDowngradeRes {
        open::open_downgrade(self, a).await
    }

    async fn lock(&mut self, a: &LockArgs) -> LockRes {
        open::lock(self, a)
    }

    async fn lockt(&mut self, a: &LockTArgs) -> LockTRes {
        open::lockt(self, a)
    }

    async fn locku(&mut self, a: &LockUArgs) -> LockURes {
        open::locku(self, a)
    }

    async fn test_stateid(&mut self, a: &TestStateidArgs) -> TestStateidRes {
        open::test_stateid(self, a)
    }

    async fn free_stateid(&mut self, a: &FreeStateidArgs) -> FreeStateidRes {
        open::free_stateid(self, a)
    }

    async fn delegreturn(&mut self, a: &DelegReturnArgs) -> DelegReturnRes {
        open::delegreturn(self, a)
    }

    async fn delegpurge(&mut self, _: &DelegPurgeArgs) -> DelegPurgeRes {
        open::delegpurge(self)
    }

    async fn want_delegation(&mut self, a: &WantDelegationArgs) -> WantDelegationRes {
        open::want_delegation(self, a).into()
    }

    async fn release_lockowner(&mut self, a: &ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes {
        open::release_lockowner(self, a)
    }

    // Data.
    async fn read(&mut self, a: &ReadArgs) -> ReadRes {
        io::read(self, a).await.into()
    }

    async fn write(&mut self, a: &WriteArgs) -> WriteRes {
        io::write(self, a).await.into()
    }

    async fn commit(&mut self, a: &CommitArgs) -> CommitRes {
        io::commit(self, a).await.into()
    }

    async fn allocate(&mut self, a: &AllocateArgs) -> AllocateRes {
        space::allocate(self, a).await.into()
    }

    async fn deallocate(&mut self, a: &DeallocateArgs) -> DeallocateRes {
        space::deallocate(self, a).await.into()
    }

    async fn read_plus(&mut self, a: &ReadPlusArgs) -> ReadPlusRes {
        read_plus::read_plus(self, a).await.into()
    }

    async fn seek(&mut self, a: &SeekArgs) -> SeekRes {
        seek::seek(self, a).await.into()
    }

    // Server-side copy (RFC 7862).
    async fn copy(&mut self, a: &CopyArgs) -> CopyRes {
        copy::copy(self, a).await.into()
    }

    async fn copy_notify(&mut self, _: &CopyNotifyArgs) -> CopyNotifyRes {
        copy::copy_notify(self)
    }

    async fn offload_status(&mut self, a: &OffloadStatusArgs) -> OffloadStatusRes {
        copy::offload_status(self, a)
    }

    async fn offload_cancel(&mut self, a: &OffloadCancelArgs) -> OffloadCancelRes {
        copy::offload_cancel(self, a)
    }

    async fn clone(&mut self, a: &CloneArgs) -> CloneRes {
        clone::clone(self, a).await.into()
    }

    // Extended attributes (RFC 8276).
    async fn getxattr(&mut self, a: &GetXattrArgs) -> GetXattrRes {
        xattr::getxattr(self, a).into()
    }

    async fn setxattr(&mut self, a: &SetXattrArgs) -> SetXattrRes {
        xattr::setxattr(self, a).await.into()
    }

    async fn listxattrs(&mut self, a: &ListXattrsArgs) -> ListXattrsRes {
        xattr::listxattrs(self, a).into()
    }

    async fn removexattr(&mut self, a: &RemoveXattrArgs) -> RemoveXattrRes {
        xattr::removexattr(self, a).await.into()
    }

    // pNFS file layouts (RFC 8881 chapter 13).
    async fn layoutget(&mut self, a: &LayoutGetArgs) -> LayoutGetRes {
        layout::layoutget(self, a).await
    }

    async fn layoutreturn(&mut self, a: &LayoutReturnArgs) -> LayoutReturnRes {
        layout::layoutreturn(self, a)
    }

    async fn layoutcommit(&mut self, a: &LayoutCommitArgs) -> LayoutCommitRes {
        layout::layoutcommit(self, a).await.into()
    }

    async fn getdeviceinfo(&mut self, a: &GetDeviceInfoArgs) -> GetDeviceInfoRes {
        layout::getdeviceinfo(self, a)
    }

    async fn getdevicelist(&mut self, a: &GetDeviceListArgs) -> GetDeviceListRes {
        layout::getdevicelist(self, a).into()
    }
}
