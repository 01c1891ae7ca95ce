//! One file per operation (as nfs4j and nfs-ganesha keep them), a few files of what related
//! operations share (`attr`, `dir`, `fh`, `io`, `layout`, `open`, `space`, `xattr`), and the
//! MDS's [`OpHandler`]: the op table's dispatch calls its method for each operation (an
//! operation added to `nfs-proto`'s op table answers `NFS4ERR_NOTSUPP` until the MDS writes
//! its method here).

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
pub mod layouterror;
pub mod layoutget;
pub mod layoutreturn;
pub mod layoutstats;
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
        putrootfh::putrootfh(self)
    }

    async fn putpubfh(&mut self) -> PutPubFhRes {
        PutPubFhRes {
            status: putrootfh::putrootfh(self).status,
        }
    }

    async fn putfh(&mut self, a: &PutFhArgs) -> PutFhRes {
        putfh::putfh(self, a)
    }

    async fn getfh(&mut self) -> GetFhRes {
        getfh::getfh(self)
    }

    async fn savefh(&mut self) -> SaveFhRes {
        savefh::savefh(self)
    }

    async fn restorefh(&mut self) -> RestoreFhRes {
        restorefh::restorefh(self)
    }

    async fn lookup(&mut self, a: &LookupArgs) -> LookupRes {
        lookup::lookup(self, a)
    }

    async fn lookupp(&mut self) -> LookupPRes {
        lookupp::lookupp(self)
    }

    async fn secinfo(&mut self, a: &SecInfoArgs) -> SecInfoRes {
        secinfo::secinfo(self, a)
    }

    async fn secinfo_no_name(&mut self, a: &SecInfoNoNameArgs) -> SecInfoNoNameRes {
        secinfo::secinfo_no_name(self, a)
    }

    // Attributes.
    async fn getattr(&mut self, a: &GetAttrArgs) -> GetAttrRes {
        getattr::getattr(self, a).await
    }

    async fn setattr(&mut self, a: &SetAttrArgs) -> SetAttrRes {
        setattr::setattr(self, a).await
    }

    async fn access(&mut self, a: &AccessArgs) -> AccessRes {
        access::access(self, a)
    }

    async fn verify(&mut self, a: &VerifyArgs) -> VerifyRes {
        VerifyRes {
            status: verify::verify(self, &a.obj_attributes, true).await,
        }
    }

    async fn nverify(&mut self, a: &NVerifyArgs) -> NVerifyRes {
        NVerifyRes {
            status: verify::verify(self, &a.obj_attributes, false).await,
        }
    }

    // Directories.
    async fn create(&mut self, a: &CreateArgs) -> CreateRes {
        create::create(self, a).await.into()
    }

    async fn remove(&mut self, a: &RemoveArgs) -> RemoveRes {
        remove::remove(self, a)
            .await
            .map(|cinfo| RemoveResOk { cinfo })
            .into()
    }

    async fn rename(&mut self, a: &RenameArgs) -> RenameRes {
        rename::rename(self, a).await.into()
    }

    async fn link(&mut self, a: &LinkArgs) -> LinkRes {
        link::link(self, a)
            .await
            .map(|cinfo| LinkResOk { cinfo })
            .into()
    }

    async fn readdir(&mut self, a: &ReadDirArgs) -> ReadDirRes {
        readdir::readdir(self, a).await.into()
    }

    async fn readlink(&mut self) -> ReadLinkRes {
        readlink::readlink(self)
    }

    // Open state and locks.
    async fn open(&mut self, a: &OpenArgs) -> OpenRes {
        open::open(self, a).await.into()
    }

    async fn close(&mut self, a: &CloseArgs) -> CloseRes {
        close::close(self, a)
    }

    async fn open_downgrade(&mut self, a: &OpenDowngradeArgs) -> OpenDowngradeRes {
        open_downgrade::open_downgrade(self, a).await
    }

    async fn lock(&mut self, a: &LockArgs) -> LockRes {
        lock::lock(self, a)
    }

    async fn lockt(&mut self, a: &LockTArgs) -> LockTRes {
        lockt::lockt(self, a)
    }

    async fn locku(&mut self, a: &LockUArgs) -> LockURes {
        locku::locku(self, a)
    }

    async fn test_stateid(&mut self, a: &TestStateidArgs) -> TestStateidRes {
        test_stateid::test_stateid(self, a)
    }

    async fn free_stateid(&mut self, a: &FreeStateidArgs) -> FreeStateidRes {
        free_stateid::free_stateid(self, a)
    }

    async fn delegreturn(&mut self, a: &DelegReturnArgs) -> DelegReturnRes {
        delegreturn::delegreturn(self, a)
    }

    async fn delegpurge(&mut self, _: &DelegPurgeArgs) -> DelegPurgeRes {
        delegpurge::delegpurge(self)
    }

    async fn want_delegation(&mut self, a: &WantDelegationArgs) -> WantDelegationRes {
        want_delegation::want_delegation(self, a).into()
    }

    async fn release_lockowner(&mut self, a: &ReleaseLockOwnerArgs) -> ReleaseLockOwnerRes {
        release_lockowner::release_lockowner(self, a)
    }

    // Data.
    async fn read(&mut self, a: &ReadArgs) -> ReadRes {
        read::read(self, a).await.into()
    }

    async fn write(&mut self, a: &WriteArgs) -> WriteRes {
        write::write(self, a).await.into()
    }

    async fn commit(&mut self, a: &CommitArgs) -> CommitRes {
        commit::commit(self, a).await.into()
    }

    async fn allocate(&mut self, a: &AllocateArgs) -> AllocateRes {
        allocate::allocate(self, a).await.into()
    }

    async fn deallocate(&mut self, a: &DeallocateArgs) -> DeallocateRes {
        deallocate::deallocate(self, a).await.into()
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
        copy_notify::copy_notify(self)
    }

    async fn offload_status(&mut self, a: &OffloadStatusArgs) -> OffloadStatusRes {
        offload_status::offload_status(self, a)
    }

    async fn offload_cancel(&mut self, a: &OffloadCancelArgs) -> OffloadCancelRes {
        offload_cancel::offload_cancel(self, a)
    }

    async fn clone(&mut self, a: &CloneArgs) -> CloneRes {
        clone::clone(self, a).await.into()
    }

    // Extended attributes (RFC 8276).
    async fn getxattr(&mut self, a: &GetXattrArgs) -> GetXattrRes {
        getxattr::getxattr(self, a).into()
    }

    async fn setxattr(&mut self, a: &SetXattrArgs) -> SetXattrRes {
        setxattr::setxattr(self, a).await.into()
    }

    async fn listxattrs(&mut self, a: &ListXattrsArgs) -> ListXattrsRes {
        listxattrs::listxattrs(self, a).into()
    }

    async fn removexattr(&mut self, a: &RemoveXattrArgs) -> RemoveXattrRes {
        removexattr::removexattr(self, a).await.into()
    }

    // pNFS file layouts (RFC 8881 chapter 13).
    async fn layoutget(&mut self, a: &LayoutGetArgs) -> LayoutGetRes {
        layoutget::layoutget(self, a).await
    }

    async fn layoutreturn(&mut self, a: &LayoutReturnArgs) -> LayoutReturnRes {
        layoutreturn::layoutreturn(self, a)
    }

    async fn layoutcommit(&mut self, a: &LayoutCommitArgs) -> LayoutCommitRes {
        layoutcommit::layoutcommit(self, a).await.into()
    }

    async fn getdeviceinfo(&mut self, a: &GetDeviceInfoArgs) -> GetDeviceInfoRes {
        getdeviceinfo::getdeviceinfo(self, a)
    }

    async fn getdevicelist(&mut self, a: &GetDeviceListArgs) -> GetDeviceListRes {
        getdevicelist::getdevicelist(self, a).into()
    }

    async fn layouterror(&mut self, a: &LayoutErrorArgs) -> LayoutErrorRes {
        layouterror::layouterror(self, a)
    }

    async fn layoutstats(&mut self, a: &LayoutStatsArgs) -> LayoutStatsRes {
        layoutstats::layoutstats(self, a)
    }
}
