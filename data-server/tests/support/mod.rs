//! The data server's test support: starts a DS in the test's runtime with its objects under a
//! temporary directory and the keys of a made-up MDS, reached over in-process duplex streams
//! (no socket, no port: `start.rs` keeps the real ones, where binding them is the point). The
//! test plays the MDS: it mints stateids and DS filehandles with the same derived keys. The
//! client is testkit's ([`Ds::client`] sets up a session as the Linux client does with a DS).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nfs_proto::transport::{Conn, NoCalls};
use nfs_server::{Service, StreamServer};
use testkit::cluster::{client_addr, ds_nfs_addr};
use testkit::{Client, Setup};

use cluster::ds_fh::{DsFh, DsFhCodec};
use cluster::stateid::{Holder, StateidKind, StateidMinter};
use data_server::{DataServer, DsKeys, DsOptions};
use nfs_proto::nfs4::*;

/// The made-up MDS's server key.
pub(crate) const SERVER_KEY: [u8; 32] = [0x42; 32];
/// The made-up MDS's boot epoch.
pub(crate) const MDS_EPOCH: u16 = 7;

/// The keys the made-up MDS hands its DSs in boot `epoch`.
pub(crate) fn keys(epoch: u16) -> DsKeys {
    DsKeys::derive(&SERVER_KEY, epoch)
}

/// A running data server and its object directory.
pub(crate) struct Ds {
    pub ds: Arc<DataServer>,
    /// The synthetic address it serves at (it labels connections; nothing listens there).
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    /// Serves its connections; its drop stops the lease reaper.
    server: StreamServer<Service<DataServer>>,
}

impl Ds {
    /// A new in-process connection to it, from a client address of its own.
    pub(crate) fn stream(&self) -> tokio::io::DuplexStream {
        self.stream_from(client_addr())
    }

    /// A new in-process connection to it from `peer`.
    pub(crate) fn stream_from(&self, peer: SocketAddr) -> tokio::io::DuplexStream {
        stream_to(&self.server, peer, self.addr)
    }

    /// A new connection that answers no calls (no session yet).
    pub(crate) fn connect(&self) -> Conn {
        testkit::client::start_conn(self.stream(), self.addr, client_addr(), Arc::new(NoCalls))
    }

    /// The session a Linux client sets up with a data server, for `owner`.
    pub(crate) async fn client(&self, owner: &str) -> Client {
        Client::over(
            self.stream(),
            self.addr,
            Arc::new(NoCalls),
            &Setup::data_server(owner),
        )
        .await
    }
}

/// A new in-process connection to `server` from `peer` to `local` (synthetic addresses):
/// the server's end is served on a task of its own, which ends when the caller's end drops.
pub(crate) fn stream_to<H: nfs_proto::transport::CallHandler>(
    server: &StreamServer<H>,
    peer: SocketAddr,
    local: SocketAddr,
) -> tokio::io::DuplexStream {
    let (client, end) = tokio::io::duplex(1 << 20);
    tokio::spawn(server.serve(end, peer, local));
    client
}

/// Starts DS `id` with a fresh object directory and the given lease.
pub(crate) async fn start_ds(id: u32, lease: Duration) -> Ds {
    start_ds_in(id, lease, tempfile::tempdir().expect("tempdir")).await
}

/// Starts DS `id` over an existing object directory (for restart tests).
pub(crate) async fn start_ds_in(id: u32, lease: Duration, dir: tempfile::TempDir) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    start_ds_with(opts, dir).await
}

/// Starts DS `id` with a fresh object directory and the given lease on `clock` (its leases
/// and reaper run on it: tests move a [`ManualClock`](nfs_server::ManualClock) on).
pub(crate) async fn start_ds_on(id: u32, lease: Duration, clock: nfs_server::SharedClock) -> Ds {
    let opts = DsOptions {
        lease_time: lease,
        ..DsOptions::new(id)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let objects = Arc::new(pfs_core::LocalStore::open(dir.path()).expect("object store"));
    let ds = DataServer::with_clock(opts, keys(MDS_EPOCH), objects, clock).expect("open ds");
    serve(id, ds, dir).await
}

/// Starts a DS with these options over `dir`.
pub(crate) async fn start_ds_with(opts: DsOptions, dir: tempfile::TempDir) -> Ds {
    let id = opts.id;
    let ds = DataServer::open_local(opts, keys(MDS_EPOCH), dir.path()).expect("open ds");
    serve(id, ds, dir).await
}

/// Serves `ds` over in-process streams (as `serve_on` would its TCP connections: the same
/// limits, reply budget and lease reaper), at the synthetic address of its id.
async fn serve(id: u32, ds: Arc<DataServer>, dir: tempfile::TempDir) -> Ds {
    let id = u16::try_from(id).expect("a data server id of 16 bits");
    Ds {
        server: StreamServer::for_role(ds.clone()),
        ds,
        addr: ds_nfs_addr(id),
        dir,
    }
}

/// The client id the made-up MDS gave the test client: its stateids and layouts are this
/// client's.
pub(crate) const CLIENT: u64 = 0x5eed;

/// The MDS side of the test: mints stateids and DS filehandles.
pub(crate) struct Mds {
    pub minter: StateidMinter,
    pub fh: DsFhCodec,
}

/// The test client's state of `fileid`.
pub(crate) fn holder(fileid: u64) -> Holder {
    Holder {
        clientid: CLIENT,
        fileid,
    }
}

impl Mds {
    /// The made-up MDS in boot `epoch`.
    pub(crate) fn new(epoch: u16) -> Self {
        let k = keys(epoch);
        Self {
            minter: StateidMinter::new(k.stateid_key, epoch),
            fh: DsFhCodec::new(k.fh_key),
        }
    }

    /// A fresh layout stateid's `other` for the test client's layout of `fileid` (clones of
    /// a minter share its counter, so `&self` will do).
    pub(crate) fn layout_stateid(&self, fileid: u64) -> cluster::stateid::Other {
        self.minter
            .clone()
            .mint(StateidKind::Layout, 0, holder(fileid))
            .unwrap()
    }

    /// The DS filehandle of object `stripe` of `fileid` under `layout`, READ or RW.
    pub(crate) fn ds_fh_under(
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
    pub(crate) fn open_stateid(&mut self, fileid: u64, access: u8) -> Stateid4 {
        Stateid4 {
            seqid: 0,
            other: self
                .minter
                .mint(StateidKind::Open, access, holder(fileid))
                .unwrap(),
        }
    }

    /// The DS filehandle of object `stripe` of `fileid` under a new RW layout of it.
    pub(crate) fn ds_fh(&self, fileid: u64, stripe: u16) -> NfsFh4 {
        self.ds_fh_under(fileid, stripe, self.layout_stateid(fileid), true)
    }
}
