//! The data server's test support: starts a DS on a loopback port with its objects under a
//! temporary directory and the keys of a made-up MDS. The test plays the MDS: it mints
//! stateids and DS filehandles with the same derived keys. The client is testkit's
//! (`Client::data_server` sets up a session as the Linux client does with a DS).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::stateid::{Holder, StateidKind, StateidMinter};
use data_server::{DataServer, DsKeys, DsOptions};
use nfs_proto::nfs4::*;

/// The made-up MDS's server key.
pub const SERVER_KEY: [u8; 32] = [0x42; 32];
/// The made-up MDS's boot epoch.
pub const MDS_EPOCH: u16 = 7;

/// The keys the made-up MDS hands its DSs in boot `epoch`.
pub fn keys(epoch: u16) -> DsKeys {
    DsKeys::derive(&SERVER_KEY, epoch)
}

/// A running data server and its object directory.
pub struct Ds {
    pub ds: Arc<DataServer>,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

/// Starts DS `id` on 127.0.0.1 with a fresh object directory and the given lease.
pub async fn start_ds(id: u32, lease: Duration) -> Ds {
    start_ds_in(id, lease, tempfile::tempdir().expect("tempdir")).await
}

/// Starts DS `id` over an existing object directory (for restart tests).
pub async fn start_ds_in(id: u32, lease: Duration, dir: tempfile::TempDir) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    start_ds_with(opts, dir).await
}

/// Starts DS `id` with a fresh object directory and the given lease on `clock` (its leases
/// and reaper run on it: tests move a [`ManualClock`](nfs_server::ManualClock) on).
pub async fn start_ds_on(id: u32, lease: Duration, clock: nfs_server::SharedClock) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let objects = Arc::new(pfs_core::LocalStore::open(dir.path()).expect("object store"));
    let ds = DataServer::with_clock(opts, keys(MDS_EPOCH), objects, clock).expect("open ds");
    serve(ds, dir).await
}

/// Starts a DS with these options over `dir`.
pub async fn start_ds_with(opts: DsOptions, dir: tempfile::TempDir) -> Ds {
    let ds = DataServer::open_local(opts, keys(MDS_EPOCH), dir.path()).expect("open ds");
    serve(ds, dir).await
}

/// Serves `ds` on a loopback port of its own.
async fn serve(ds: Arc<DataServer>, dir: tempfile::TempDir) -> Ds {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ds.clone().serve_on(listener));
    Ds { ds, addr, dir }
}

/// The client id the made-up MDS gave the test client: its stateids and layouts are this
/// client's.
pub const CLIENT: u64 = 0x5eed;

/// The MDS side of the test: mints stateids and DS filehandles.
pub struct Mds {
    pub minter: StateidMinter,
    pub fh: DsFhCodec,
}

/// The test client's state of `fileid`.
pub fn holder(fileid: u64) -> Holder {
    Holder {
        clientid: CLIENT,
        fileid,
    }
}

impl Mds {
    /// The made-up MDS in boot `epoch`.
    pub fn new(epoch: u16) -> Self {
        let k = keys(epoch);
        Self {
            minter: StateidMinter::new(k.stateid_key, epoch),
            fh: DsFhCodec::new(k.fh_key),
        }
    }

    /// A fresh layout stateid's `other` for the test client's layout of `fileid` (clones of
    /// a minter share its counter, so `&self` will do).
    pub fn layout_stateid(&self, fileid: u64) -> cluster::stateid::Other {
        self.minter
            .clone()
            .mint(StateidKind::Layout, 0, holder(fileid))
            .unwrap()
    }

    /// The DS filehandle of object `stripe` of `fileid` under `layout`, READ or RW.
    pub fn ds_fh_under(
        &self,
        fileid: u64,
        stripe: u16,
        layout: cluster::stateid::Other,
        rw: bool,
    ) -> NfsFh4 {
        self.fh.encode(DsFh {
            stripe,
            fileid,
            generation: 1,
            rw,
            layout,
            clientid: CLIENT,
        })
    }

    /// An open stateid of `fileid` with this share access, seqid 0 as a client sends it to
    /// a DS.
    pub fn open_stateid(&mut self, fileid: u64, access: u8) -> Stateid4 {
        Stateid4 {
            seqid: 0,
            other: self
                .minter
                .mint(StateidKind::Open, access, holder(fileid))
                .unwrap(),
        }
    }

    /// The DS filehandle of object `stripe` of `fileid` under a new RW layout of it.
    pub fn ds_fh(&self, fileid: u64, stripe: u16) -> NfsFh4 {
        self.ds_fh_under(fileid, stripe, self.layout_stateid(fileid), true)
    }
}
