//! Refusals on the NFS port are logged at a bounded rate: a few lines per peer address and kind
//! of refusal, however often a peer reconnects and is refused.
//!
//! A binary of its own with one test and a process-wide subscriber: a subscriber set for one
//! thread only (`set_default`) misses events when another test thread meets the same `warn!`
//! first while it is being installed (tracing caches each call site's interest; CI saw no line
//! at all once).

use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mds::config::{Access, ClientRule, ExportConfig};
use nfs_proto::nfs4::*;
use nfs_proto::rpc::AuthStat;
use testkit::cluster::Cluster;
use testkit::prelude::*;

/// Every log line of the process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn install_for_the_process(&self) {
        let w = self.clone();
        let sub = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || w.clone())
            .finish();
        tracing::subscriber::set_global_default(sub).expect("the only subscriber");
    }

    fn lines_with(&self, needle: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

fn exchange_id() -> NfsArgop4 {
    NfsArgop4::ExchangeId(ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: Bytes::from_static(b"x"),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    })
}

#[tokio::test]
async fn repeated_refusals_of_one_peer_are_logged_at_a_bounded_rate() {
    let log = Captured::default();
    log.install_for_the_process();
    // Only 10.0.0.0/8 may use this server: a client of the cluster (TEST-NET-2) gets
    // AUTH_TOOWEAK.
    let s = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .configure(|cfg| {
            cfg.exports = vec![ExportConfig {
                id: 1,
                path: "/".into(),
                pseudo: "/".into(),
                clients: vec![ClientRule {
                    network: "10.0.0.0/8".into(),
                    access: Access::Rw,
                    root_squash: false,
                }],
                delegations: None,
            }];
        })
        .start()
        .await;
    // Over several connections, as a peer that reconnects: the budget is per address.
    for _ in 0..4 {
        let conn = s.conn();
        for _ in 0..25 {
            let r = null_call(&conn, rpcsec_gss(1, &[])).await;
            assert_eq!(denied(r), AuthStat::AUTH_BADCRED);
            let r = compound_as(&conn, auth_sys(0), 1, vec![exchange_id()]).await;
            assert_eq!(denied(r), AuthStat::AUTH_TOOWEAK);
        }
    }
    let cred = log.lines_with("RPC credential refused");
    assert_eq!(
        cred.len(),
        nfs_server::refusals::BURST as usize,
        "{cred:#?}"
    );
    let client_ip = testkit::cluster::client_addr().ip().to_string();
    assert!(
        cred[0].contains(&client_ip) && cred[0].contains("RPCSEC_GSS"),
        "{cred:#?}"
    );
    assert!(cred[0].contains("AUTH_BADCRED"), "{cred:#?}");
    // The other kind of refusal has its own budget.
    let tooweak = log.lines_with("no export admits it");
    assert_eq!(
        tooweak.len(),
        nfs_server::refusals::BURST as usize,
        "{tooweak:#?}"
    );
}
