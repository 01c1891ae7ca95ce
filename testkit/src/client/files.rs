//! The few-step exchanges every suite repeats (open a file, read its id, get a layout, write
//! and close), each checking its statuses and naming the server in its panics.

use std::net::SocketAddr;
use std::sync::Arc;

use nfs_proto::nfs4::attr::{FileAttrs, FATTR4_FILEID, FATTR4_SIZE};
use nfs_proto::nfs4::*;

use super::{connect_with, CbClient, Client, Setup};
use crate::compound::{Compound, Reply};
use crate::ops::{self, Opened, CURRENT_STATEID};

/// A session whose connection is also its back channel (`CREATE_SESSION4_FLAG_CONN_BACK_CHAN`),
/// served by `cb`, with RECLAIM_COMPLETE sent.
pub async fn client_with_back_channel(addr: SocketAddr, owner: &str, cb: Arc<CbClient>) -> Client {
    client_instance_with_back_channel(addr, owner, [7; 8], cb).await
}

/// [`client_with_back_channel`] as the client instance `verifier` (another verifier: the
/// same client restarted).
pub async fn client_instance_with_back_channel(
    addr: SocketAddr,
    owner: &str,
    verifier: [u8; 8],
    cb: Arc<CbClient>,
) -> Client {
    let conn = connect_with(addr, cb).await;
    let setup = Setup::new(owner).verifier(verifier).back_channel();
    Client::establish(conn, &setup).await
}

/// OPEN of `name` in the root (UNCHECKED4 create, mode 0644) with the given share bits.
pub async fn open_in_root(c: &mut Client, name: &str, access: u32, deny: u32, who: &str) -> Opened {
    let r = c
        .run(
            Compound::new()
                .putrootfh()
                .open_create(name, 0o644, access, deny, who)
                .getfh(),
        )
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    Opened {
        fh: r.getfh(),
        stateid: r.open().stateid,
    }
}

/// The file id and size of `fh`.
pub async fn fileid_of(c: &mut Client, fh: &NfsFh4) -> (u64, u64) {
    let r = c
        .run(
            Compound::new()
                .putfh(fh)
                .getattr(&[FATTR4_FILEID, FATTR4_SIZE]),
        )
        .await;
    let a = r.getattr();
    (a.fileid.unwrap(), a.size.unwrap())
}

/// OPEN (create) of `name` in the root for reading and writing, then LAYOUTGET in the same
/// COMPOUND under the current stateid, as the Linux client sends it.
pub async fn open_and_layoutget(c: &mut Client, name: &str, iomode: Layoutiomode4) -> Compound4Res {
    open_and_layoutget_in(c, "", name, iomode).await
}

/// [`open_and_layoutget`] of `name` in directory `dir` (a path from the root).
pub async fn open_and_layoutget_in(
    c: &mut Client,
    dir: &str,
    name: &str,
    iomode: Layoutiomode4,
) -> Compound4Res {
    open_and_layoutget_of(c, dir, name, iomode, Layouttype4::LAYOUT4_NFSV4_1_FILES).await
}

/// [`open_and_layoutget_in`] with a LAYOUTGET of layout type `layout_type`.
pub async fn open_and_layoutget_of(
    c: &mut Client,
    dir: &str,
    name: &str,
    iomode: Layoutiomode4,
    layout_type: Layouttype4,
) -> Compound4Res {
    let mut get = ops::layoutget_op(iomode, CURRENT_STATEID);
    if let NfsArgop4::LayoutGet(a) = &mut get {
        a.loga_layout_type = layout_type;
    }
    let open = Compound::new()
        .path(dir)
        .open_create(
            name,
            0o644,
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            "owner",
        )
        .getfh()
        .op(get);
    c.run(open).await
}

/// LAYOUTGET RW of `fh` under `stateid`: the DS filehandle of stripe index 0 (an RW layout's
/// handles write; a READ layout's never do).
pub async fn rw_layout_fh(c: &mut Client, fh: &NfsFh4, stateid: Stateid4) -> NfsFh4 {
    let r = c
        .run(
            Compound::new()
                .putfh(fh)
                .layoutget(Layoutiomode4::LAYOUTIOMODE4_RW, stateid),
        )
        .await;
    let (_, body) = r.granted();
    body.nfl_fh_list[0].clone()
}

impl Client {
    /// PUTROOTFH and a LOOKUP per component of `path`, then GETFH: the filehandle of `path`.
    pub async fn lookup_path(&mut self, path: &str) -> NfsFh4 {
        let r = self.run(Compound::new().path(path).getfh()).await;
        assert_eq!(
            r.status,
            NfsStat4::NFS4_OK,
            "{}: PUTROOTFH+LOOKUP {path}: {r:?}",
            self.conn.peer()
        );
        r.getfh()
    }

    /// OPEN (create, UNCHECKED4, mode 0644) of `name` in directory `dir` for reading and
    /// writing: its filehandle and open stateid, and the whole OPEN result for what else a
    /// test wants to see (delegation, flags).
    pub async fn open_create(&mut self, dir: &NfsFh4, name: &str) -> (NfsFh4, Stateid4, OpenResOk) {
        let peer = self.conn.peer();
        let mut open = ops::open_op(
            ops::by_name(name),
            ops::unchecked(0o644),
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            "",
        );
        if let NfsArgop4::Open(a) = &mut open {
            a.owner.clientid = self.clientid;
            a.owner.owner = bytes::Bytes::from_static(b"interop-tests open owner");
        }
        let r = self.run(Compound::new().putfh(dir).op(open).getfh()).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{peer}: OPEN {name}: {r:?}");
        let ok = r.open().clone();
        (r.getfh(), ok.stateid, ok)
    }

    /// WRITE of `data` at `offset` with FILE_SYNC4; checks the count and the stability.
    pub async fn write_sync(&mut self, fh: &NfsFh4, stateid: Stateid4, offset: u64, data: &[u8]) {
        let peer = self.conn.peer();
        let r = self
            .run(
                Compound::new()
                    .putfh(fh)
                    .write(stateid, offset, StableHow4::FILE_SYNC4, data),
            )
            .await;
        let w = r.write();
        assert_eq!(w.count as usize, data.len(), "{peer}: short WRITE");
        assert_eq!(
            w.committed,
            StableHow4::FILE_SYNC4,
            "{peer}: WRITE not FILE_SYNC4"
        );
    }

    /// CLOSE of an open stateid.
    pub async fn close(&mut self, fh: &NfsFh4, stateid: Stateid4) {
        let peer = self.conn.peer();
        let r = self.run(Compound::new().putfh(fh).close(stateid)).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{peer}: CLOSE: {r:?}");
    }

    /// OPEN (create), WRITE FILE_SYNC4 of `data` at 0, CLOSE: one file through the server.
    pub async fn create_and_write(&mut self, dir: &NfsFh4, name: &str, data: &[u8]) {
        let (fh, stateid, _) = self.open_create(dir, name).await;
        self.write_sync(&fh, stateid, 0, data).await;
        self.close(&fh, stateid).await;
    }

    /// GETATTR of `bits` (`FATTR4_*` numbers), decoded.
    pub async fn getattr(&mut self, fh: &NfsFh4, bits: &[u32]) -> FileAttrs {
        self.run(Compound::new().putfh(fh).getattr(bits))
            .await
            .getattr()
    }

    /// The status of a LAYOUTGET (files layout, RW, the whole file, any length, up to 64 KiB
    /// of layout) under an open stateid.
    pub async fn layoutget_status(&mut self, fh: &NfsFh4, stateid: Stateid4) -> NfsStat4 {
        let mut get = ops::layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, stateid);
        if let NfsArgop4::LayoutGet(a) = &mut get {
            a.loga_minlength = 0;
            a.loga_maxcount = 64 << 10;
        }
        self.run(Compound::new().putfh(fh).op(get)).await.status
    }

    /// The status of LOOKUP `name` in directory `dir`.
    pub async fn lookup_status(&mut self, dir: &NfsFh4, name: &str) -> NfsStat4 {
        self.run(Compound::new().putfh(dir).lookup(name))
            .await
            .status
    }
}
