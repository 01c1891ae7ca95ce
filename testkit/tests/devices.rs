//! The MDS's device registry against the data servers of the in-memory cluster: each data
//! server's control service (and, once registered, its NFS service) is reached over
//! in-process streams through relay tasks, so killing it closes every connection at both
//! ends, as the death of its process would.

use std::sync::Arc;
use std::time::Duration;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use mds::config::{ClusterConfig, DataServerConfig};
use mds::pnfs::devices::DevicesOptions;
use mds::pnfs::dsconnect::{ConnectFuture, Connected, DsConnector};
use mds::{Config, Mds, MdsOptions, MetadataStore};
use nfs_proto::control::ClusterKey;
use pfs_core::CrashSimStore;
use testkit::cluster::{ds_control_addr, ds_nfs_addr, Cluster, StoreKind, SECRET};

const LEASE: u32 = 30;

/// `n` data servers, the MDS's device registry not started yet.
async fn cluster(n: u16, f: impl FnOnce(&mut Config) + 'static) -> Cluster {
    Cluster::builder()
        .data_servers(n)
        .lease(LEASE)
        .configure(f)
        .registry_stopped()
        .start()
        .await
}

fn ring_ids(mds: &Mds) -> Vec<u32> {
    mds.devices().ring().servers.iter().map(|s| s.id).collect()
}

/// `b` in lower-case hex (the form of the secret in the configuration).
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_servers_come_up_go_down_when_killed_and_come_back_registered_again() {
    let k = cluster(3, |_| {}).await;
    let mds = k.mds().clone();
    assert!(ring_ids(&mds).is_empty(), "nothing is up before start");
    let epoch = mds.store().boot_epoch() as u16;
    let gen0 = mds.devices().generation();
    assert_eq!(
        gen0 >> 16,
        u32::from(epoch),
        "generations start from the boot epoch"
    );
    mds.devices().start();

    k.until("three data servers up", || ring_ids(&mds) == [1, 2, 3])
        .await;
    let gen_up = mds.devices().generation();
    assert_eq!(gen_up, gen0 + 3, "each arrival moves the generation");
    assert_eq!(mds.devices().ring().generation, gen_up);
    for id in 1..=3 {
        let service = k.control_service(id).expect("running");
        assert_eq!(service.registered_epoch(), Some(epoch));
        assert!(k.data_server(id).is_some(), "REGISTER started its NFS side");
        let st = mds.devices().status(id).unwrap();
        assert!(st.up && st.last_error.is_none());
        assert_eq!(st.boot_verifier, Some(service.boot_verifier()));
        assert_eq!(
            st.write_verifier,
            Some(k.ds_objects(id).verifier()),
            "from REGISTER"
        );
        assert!(mds.devices().control(id).is_some());
    }
    // The data server's NFS side answers at its configured address once registered.
    let nfs2 = k.config().cluster.data_server(2).unwrap().addresses[0];
    k.connect_addr(nfs2).unwrap();
    let page = mds::net::metrics::render(&mds, mds.core().now());
    assert!(page.contains("pnfs_data_servers{state=\"up\"} 3"), "{page}");

    // Kill data server 2. Its process's death is a crash of its store: the next process
    // opens it anew, under a new write verifier.
    let old_verifier = k.control_service(2).unwrap().boot_verifier();
    let old_write_verifier = k.ds_objects(2).verifier();
    k.crash_ds(2);
    tokio::time::timeout(
        Duration::from_secs(5),
        k.until("data server 2 down", || ring_ids(&mds) == [1, 3]),
    )
    .await
    .expect("noticed within 5 s");
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

    // Start it again over the same objects: a new process, a new boot verifier.
    k.restart_ds(2);
    let again = k.control_service(2).unwrap();
    k.until("data server 2 up again", || ring_ids(&mds) == [1, 2, 3])
        .await;
    assert_eq!(mds.devices().generation(), gen_down + 1);
    let st = mds.devices().status(2).unwrap();
    assert_eq!(st.boot_verifier, Some(again.boot_verifier()));
    assert_ne!(st.boot_verifier, Some(old_verifier));
    assert_eq!(st.write_verifier, Some(k.ds_objects(2).verifier()));
    assert_ne!(st.write_verifier, Some(old_write_verifier));
    assert_eq!(mds.devices().write_verifier(2), st.write_verifier);
    assert!(st.registrations >= 2);
    assert_eq!(again.registered_epoch(), Some(epoch));
    assert!(k.data_server(2).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_with_another_secret_stays_down_and_the_error_says_so() {
    // The test kit's data servers all have the cluster's secret: the MDS gets another.
    let wrong = *b"another secret, another cluster!";
    let k = cluster(1, move |c| c.cluster.secret = Some(hex(&wrong))).await;
    let mds = k.mds().clone();
    let gen0 = mds.devices().generation();
    mds.devices().start();
    k.until("a failed attempt", || {
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
    assert_eq!(k.control_service(1).unwrap().registered_epoch(), None);
    assert!(k.data_server(1).is_none());
}

#[tokio::test]
async fn an_mds_without_data_servers_has_an_empty_ring_and_needs_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let k = Cluster::builder()
        .data_servers(0)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .configure(|c: &mut Config| c.cluster.secret = None)
        .registry_stopped()
        .start()
        .await;
    let mds = k.mds();
    mds.devices().start();
    assert!(mds.devices().ring().servers.is_empty());
    assert_eq!(mds.devices().counts(), (0, 0));
    assert!(!dir.path().join(mds::config::SECRET_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_registered_by_someone_else_is_registered_again_on_the_same_connection() {
    let k = cluster(1, |_| {}).await;
    let mds = k.mds().clone();
    let service = k.control_service(1).unwrap();
    let epoch = mds.store().boot_epoch() as u16;
    mds.devices().start();
    k.until("up", || ring_ids(&mds) == [1]).await;
    let generation = mds.devices().generation();

    // Another MDS boot (another epoch) registers the data server behind our back.
    let other = mds::pnfs::dsctl::DsControl::connect_with(
        &*k.connector(),
        k.config()
            .cluster
            .data_server(1)
            .unwrap()
            .control_addr()
            .unwrap(),
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
    assert_eq!(service.registered_epoch(), Some(epoch.wrapping_add(1)));

    // The next HEALTH shows the other epoch: the registry hands over its keys again, and the
    // data server never left the ring.
    k.until("registered again", || {
        service.registered_epoch() == Some(epoch)
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

/// The MDS's way to the control service of the moment: an in-process stream for each
/// connection, served by [`Swappable`].
struct ToSwappable(Arc<Swappable>);

impl DsConnector for ToSwappable {
    fn connect(&self, addr: SocketAddr, _ds_id: u16) -> ConnectFuture<'_> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let local: SocketAddr = "192.0.2.1:1024".parse().unwrap();
        let (near, far) = tokio::io::duplex(1 << 20);
        let (_c, run) = nfs_proto::transport::start(
            far,
            NEXT.fetch_add(1, Ordering::Relaxed),
            local,
            addr,
            self.0.clone(),
            data_server::control::CONTROL_LIMITS,
        );
        tokio::spawn(run);
        Box::pin(async move {
            Ok(Connected {
                stream: Box::new(near),
                local,
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_restarted_behind_the_connection_is_registered_again_without_leaving_the_ring(
) {
    use data_server::control::{ControlConfig, ControlService};
    let mut d = DataServerConfig::new(1, ds_nfs_addr(1));
    d.control = Some(ds_control_addr(1));
    let cfg = Config {
        listen: testkit::cluster::MDS_ADDR,
        data_dir: "/nonexistent/testkit-in-memory".into(),
        lease_time: LEASE,
        grace_time: 0,
        cluster: ClusterConfig {
            secret: Some(hex(&SECRET)),
            data_servers: vec![d.clone()],
            ..ClusterConfig::default()
        },
        ..Config::default()
    };
    let service = || {
        Arc::new(
            ControlService::new(
                ControlConfig {
                    ds_id: 1,
                    lease_time: Duration::from_secs(u64::from(LEASE)),
                    backend: nfs_proto::control::CtlBackend::CTL_BACKEND_NULL,
                    addresses: d.addresses.clone(),
                    rdma_addresses: vec![],
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
    let mds = Mds::open_with(
        cfg,
        MdsOptions {
            metadata: MetadataStore::InMemory,
            objects: Some(Arc::new(CrashSimStore::new())),
            connector: Some(Arc::new(ToSwappable(swap.clone()))),
            // HEALTH every 200 ms: the restart is noticed at the next poll.
            devices: DevicesOptions {
                poll: Duration::from_millis(200),
                backoff_min: Duration::from_millis(5),
                backoff_max: Duration::from_millis(100),
                call_timeout: Duration::from_secs(5),
            },
            clock: None,
        },
    )
    .unwrap();
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

/// Waits (up to 10 s of the runtime's clock) until `f` holds, for an MDS of the test's own.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !f() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out: {what}"));
}
