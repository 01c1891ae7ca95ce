//! Refused control calls are logged at a bounded rate per peer address: anyone who reaches
//! the control port can make the data server refuse calls. In a test binary of its own, since
//! it installs a log subscriber for its thread, and tracing caches per call site whether
//! anyone listens: a test running beside it could make that cache say "nobody".
//! Connections are in-process streams labelled with the peer address under test (the budget
//! is keyed by the address a connection reports, which a stream carries as a socket does).

mod support;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use data_server::control::{ControlConfig, ControlService, DsTarget, REFUSAL_LOG_BURST};
use nfs_proto::control::{ClusterKey, CtlBackend, CtlOpCount, PNFS_CTL_PROGRAM};
use nfs_proto::rpc::{AuthStat, OpaqueAuth, RejectedReply};
use nfs_proto::transport::{self, CallError, ConnLimits, NoCalls};
use nfs_server::{ServeLimits, StreamServer};
use testkit::cluster::ds_control_addr;

/// A log sink: the formatted lines, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn refusals_from(&self, ip: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains("control call refused") && l.contains(&format!("peer={ip}:")))
            .count()
    }
}

/// An NFS side that does nothing: only refusals matter here.
struct NoNfs;

impl DsTarget for NoNfs {
    fn set_keys(&self, _: &data_server::DsKeys) -> Result<(), data_server::DsError> {
        Ok(())
    }
    fn revoke(&self, _: [u8; 12], _: data_server::Revoked) {}
    fn forget(&self, _: &[u8; 12]) {}
    fn set_access(&self, _: [u8; 12], _: u8) {}
    fn close_counters(&self, _: &[(u32, u32)]) {}
    fn op_counts(&self) -> Vec<CtlOpCount> {
        Vec::new()
    }
}

/// Makes `n` calls with AUTH_NONE from address `from` (a port of its own) to the control
/// service `server`; each must be refused.
async fn refused_calls(from: &str, server: &StreamServer<ControlService>, n: usize) {
    static PORT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(40_000);
    let port = PORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let local: SocketAddr = format!("{from}:{port}").parse().unwrap();
    let to = ds_control_addr(1);
    let s = support::stream_to(server, local, to);
    let (conn, run) = transport::start(s, 1, to, local, Arc::new(NoCalls), ConnLimits::default());
    tokio::spawn(run);
    for _ in 0..n {
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            conn.call(
                PNFS_CTL_PROGRAM,
                1,
                0,
                OpaqueAuth::none(),
                vec![Bytes::new()],
            ),
        )
        .await
        .expect("an answer");
        assert!(
            matches!(
                r,
                Err(CallError::Denied(RejectedReply::AuthError(
                    AuthStat::AUTH_TOOWEAK
                )))
            ),
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn refused_calls_are_logged_at_a_bounded_rate_per_peer() {
    // This test's runtime has one thread, on which the control service's tasks run too: the
    // subscriber set for the thread sees their events.
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let service = Arc::new(
        ControlService::new(
            ControlConfig {
                ds_id: 1,
                lease_time: Duration::from_secs(90),
                backend: CtlBackend::CTL_BACKEND_NULL,
                addresses: vec![],
                rdma_addresses: vec![],
            },
            Arc::new(pfs_core::NullStore::new()),
            Arc::new(NoNfs),
            ClusterKey::from_secret(&[1; 32]),
        )
        .unwrap(),
    );
    let server = data_server::control::stream_server(service, ServeLimits::default());

    // 50 refusals from one address, over two connections (the budget is the address's).
    refused_calls("127.0.0.1", &server, 25).await;
    refused_calls("127.0.0.1", &server, 25).await;
    assert_eq!(logs.refusals_from("127.0.0.1"), REFUSAL_LOG_BURST as usize);
    // Another address has a budget of its own.
    refused_calls("127.0.0.2", &server, 10).await;
    assert_eq!(logs.refusals_from("127.0.0.2"), REFUSAL_LOG_BURST as usize);
    assert_eq!(logs.refusals_from("127.0.0.1"), REFUSAL_LOG_BURST as usize);
}
