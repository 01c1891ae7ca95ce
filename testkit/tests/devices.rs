//! The MDS's device registry against real data servers over loopback: each data server runs
//! its control service (and, once registered, its NFS service) on a tokio runtime of its own,
//! so shutting that runtime down drops every socket, as the death of its process would.

use std::sync::Arc;
use std::time::Duration;

use mds::{Config, Mds};
use nfs_proto::control::ClusterKey;
use pfs_core::ObjectStore;
use testkit::loopback::ds::*;

const LEASE: u32 = 30;

/// A configuration with `n` data servers on free loopback ports under `dir`.
fn config(dir: &std::path::Path, n: u16) -> Config {
    cluster_config(dir, n, LEASE)
}

fn ring_ids(mds: &Mds) -> Vec<u32> {
    mds.devices().ring().servers.iter().map(|s| s.id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_servers_come_up_go_down_when_killed_and_come_back_registered_again() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 3);
    let ds: Vec<DsProc> = (1..=3).map(|id| DsProc::start(&cfg, id, &SECRET)).collect();
    let mds = Mds::open(cfg.clone()).unwrap();
    assert!(ring_ids(&mds).is_empty(), "nothing is up before start");
    let epoch = mds.store().boot_epoch() as u16;
    let gen0 = mds.devices().generation();
    assert_eq!(
        gen0 >> 16,
        u32::from(epoch),
        "generations start from the boot epoch"
    );
    mds.devices().start();

    until("three data servers up", || ring_ids(&mds) == [1, 2, 3]).await;
    let gen_up = mds.devices().generation();
    assert_eq!(gen_up, gen0 + 3, "each arrival moves the generation");
    assert_eq!(mds.devices().ring().generation, gen_up);
    for (i, d) in ds.iter().enumerate() {
        assert_eq!(d.service.registered_epoch(), Some(epoch));
        assert!(
            d.start.data_server().is_some(),
            "REGISTER started its NFS side"
        );
        let st = mds.devices().status(i as u16 + 1).unwrap();
        assert!(st.up && st.last_error.is_none());
        assert_eq!(st.boot_verifier, Some(d.service.boot_verifier()));
        assert_eq!(st.write_verifier, Some(d.store.verifier()), "from REGISTER");
        assert!(mds.devices().control(i as u16 + 1).is_some());
    }
    // The data server's NFS side answers at its configured address once registered.
    let nfs2 = cfg.cluster.data_server(2).unwrap().addresses[0];
    tokio::net::TcpStream::connect(nfs2).await.unwrap();
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(page.contains("pnfs_data_servers{state=\"up\"} 3"), "{page}");

    // Kill data server 2.
    let mut ds = ds;
    let old_verifier = ds[1].service.boot_verifier();
    let old_write_verifier = ds[1].store.verifier();
    ds.remove(1).kill();
    let took = until("data server 2 down", || ring_ids(&mds) == [1, 3]).await;
    assert!(took < Duration::from_secs(5), "noticed after {took:?}");
    let gen_down = mds.devices().generation();
    assert_eq!(gen_down, gen_up + 1);
    let st = mds.devices().status(2).unwrap();
    assert!(!st.up);
    assert!(st.last_error.is_some());
    assert!(mds.devices().control(2).is_none());
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(
        page.contains("pnfs_data_servers{state=\"down\"} 1"),
        "{page}"
    );

    // Start it again over the same directory: a new process, a new boot verifier.
    let again = DsProc::start(&cfg, 2, &SECRET);
    until("data server 2 up again", || ring_ids(&mds) == [1, 2, 3]).await;
    assert_eq!(mds.devices().generation(), gen_down + 1);
    let st = mds.devices().status(2).unwrap();
    assert_eq!(st.boot_verifier, Some(again.service.boot_verifier()));
    assert_ne!(st.boot_verifier, Some(old_verifier));
    assert_eq!(st.write_verifier, Some(again.store.verifier()));
    assert_ne!(st.write_verifier, Some(old_write_verifier));
    assert_eq!(mds.devices().write_verifier(2), st.write_verifier);
    assert!(st.registrations >= 2);
    assert_eq!(again.service.registered_epoch(), Some(epoch));
    assert!(again.start.data_server().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_with_another_secret_stays_down_and_the_error_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 1);
    let wrong = *b"another secret, another cluster!";
    let ds = DsProc::start(&cfg, 1, &wrong);
    let mds = Mds::open(cfg.clone()).unwrap();
    let gen0 = mds.devices().generation();
    mds.devices().start();
    until("a failed attempt", || {
        mds.devices()
            .status(1)
            .and_then(|s| s.last_error)
            .is_some_and(|e| e.contains("REGISTER"))
    })
    .await;
    let st = mds.devices().status(1).unwrap();
    assert!(!st.up);
    let e = st.last_error.unwrap();
    assert!(e.contains("cluster secret"), "{e}");
    assert!(mds.devices().ring().servers.is_empty());
    assert_eq!(mds.devices().generation(), gen0, "no membership change");
    assert_eq!(ds.service.registered_epoch(), None);
    assert!(ds.start.data_server().is_none());
}

#[tokio::test]
async fn an_mds_without_data_servers_has_an_empty_ring_and_needs_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 0);
    cfg.cluster.secret = None;
    let mds = Mds::open(cfg).unwrap();
    mds.devices().start();
    assert!(mds.devices().ring().servers.is_empty());
    assert_eq!(mds.devices().counts(), (0, 0));
    assert!(!dir.path().join(mds::config::SECRET_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_registered_by_someone_else_is_registered_again_on_the_same_connection() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 1);
    let ds = DsProc::start(&cfg, 1, &SECRET);
    let mds = Mds::open(cfg.clone()).unwrap();
    let epoch = mds.store().boot_epoch() as u16;
    mds.devices().start();
    until("up", || ring_ids(&mds) == [1]).await;
    let generation = mds.devices().generation();

    // Another MDS boot (another epoch) registers the data server behind our back.
    let other = mds::pnfs::dsctl::DsControl::connect(
        cfg.cluster.data_server(1).unwrap().control_addr().unwrap(),
        1,
        Arc::new(ClusterKey::from_secret(&SECRET)),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    other
        .register(&mds::pnfs::dsctl::Registration {
            ds_id: 1,
            lease_time: LEASE,
            keys: cluster::keys::DsKeys::derive(&[7; 32], epoch.wrapping_add(1)),
        })
        .await
        .unwrap();
    assert_eq!(ds.service.registered_epoch(), Some(epoch.wrapping_add(1)));

    // The next HEALTH shows the other epoch: the registry hands over its keys again, and the
    // data server never left the ring.
    until("registered again", || {
        ds.service.registered_epoch() == Some(epoch)
            && mds
                .devices()
                .status(1)
                .is_some_and(|s| s.registrations == 2)
    })
    .await;
    assert_eq!(
        mds.devices().generation(),
        generation,
        "no membership change"
    );
    assert!(mds.devices().status(1).unwrap().up);
}

/// A data server's NFS side that does nothing (the registry only needs the control service).
struct NoNfs;

impl data_server::control::DsTarget for NoNfs {
    fn set_keys(&self, _: &cluster::keys::DsKeys) -> Result<(), data_server::DsError> {
        Ok(())
    }
    fn revoke(&self, _: cluster::stateid::Other, _: data_server::Revoked) {}
    fn forget(&self, _: &cluster::stateid::Other) {}
    fn set_access(&self, _: cluster::stateid::Other, _: u8) {}
    fn close_counters(&self, _: &[(u32, u32)]) {}
    fn op_counts(&self) -> Vec<nfs_proto::control::CtlOpCount> {
        Vec::new()
    }
}

/// Hands each call to the control service of the moment: a data server that restarts
/// behind connections that stay (as through a proxy that reconnects upstream).
struct Swappable(std::sync::Mutex<Arc<data_server::control::ControlService>>);

impl nfs_proto::transport::CallHandler for Swappable {
    fn handle(
        self: Arc<Self>,
        conn: nfs_proto::transport::Conn,
        call: nfs_proto::transport::IncomingCall,
    ) -> nfs_proto::transport::HandlerFuture {
        let service = self.0.lock().unwrap().clone();
        service.handle(conn, call)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_restarted_behind_the_connection_is_registered_again_without_leaving_the_ring(
) {
    use data_server::control::{ControlConfig, ControlService, CONTROL_LIMITS};
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 1);
    let d = cfg.cluster.data_server(1).unwrap().clone();
    let service = || {
        Arc::new(
            ControlService::new(
                ControlConfig {
                    ds_id: 1,
                    lease_time: Duration::from_secs(u64::from(LEASE)),
                    backend: nfs_proto::control::CtlBackend::CTL_BACKEND_NULL,
                    addresses: d.addresses.clone(),
                },
                Arc::new(pfs_core::NullStore::new()),
                Arc::new(NoNfs),
                ClusterKey::from_secret(&SECRET),
            )
            .unwrap(),
        )
    };
    let first = service();
    let swap = Arc::new(Swappable(std::sync::Mutex::new(first.clone())));
    let listener = tokio::net::TcpListener::bind(d.control_addr().unwrap())
        .await
        .unwrap();
    let handler = swap.clone();
    tokio::spawn(async move {
        for id in 1.. {
            let (s, peer) = listener.accept().await.unwrap();
            let local = s.local_addr().unwrap();
            let (_c, run) =
                nfs_proto::transport::start(s, id, peer, local, handler.clone(), CONTROL_LIMITS);
            tokio::spawn(run);
        }
    });
    let mds = Mds::open(cfg.clone()).unwrap();
    let epoch = mds.store().boot_epoch() as u16;
    mds.devices().start();
    until("up", || ring_ids(&mds) == [1]).await;
    let generation = mds.devices().generation();
    assert_eq!(first.registered_epoch(), Some(epoch));

    // It restarts: a new boot nonce and boot verifier, no keys. The registry's next HEALTH
    // is refused as made for the old boot; its client asks HELLO again, and the new boot
    // verifier makes the registry register it again, on the same connection.
    let second = service();
    *swap.0.lock().unwrap() = second.clone();
    until("registered again", || {
        second.registered_epoch() == Some(epoch)
            && mds
                .devices()
                .status(1)
                .is_some_and(|s| s.registrations == 2)
    })
    .await;
    let st = mds.devices().status(1).unwrap();
    assert!(st.up);
    assert_eq!(st.boot_verifier, Some(second.boot_verifier()));
    assert_eq!(
        mds.devices().generation(),
        generation,
        "never marked down: no membership change"
    );
    assert_eq!(
        mds.devices().control(1).and_then(|c| c.boot()),
        Some(second.boot())
    );
}
