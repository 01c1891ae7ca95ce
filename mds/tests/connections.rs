//! Connections the MDS closes on its own: idle ones that no session holds (knfsd ages out idle
//! temporary transports the same way), never those bound to a session.

use std::time::Duration;

use mds::Config;
use nfs_proto::nfs4::*;
use testkit::prelude::*;

#[tokio::test]
async fn an_idle_connection_without_a_session_is_closed_and_one_with_a_session_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_with(Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        grace_time: 0,
        limits: mds::config::Limits {
            idle_timeout: 1,
            ..Default::default()
        },
        cluster: mds::config::ClusterConfig {
            data_servers: Vec::new(),
            ..Default::default()
        },
        ..Config::default()
    })
    .await;
    // Never sent anything.
    let silent = connect(addr).await;
    // EXCHANGE_ID only: a client, but no session on this connection.
    let exchanged = connect(addr).await;
    let ex = ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: bytes::Bytes::from_static(b"idle-exchanged"),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    };
    let r = compound_on(&exchanged, 0, 1, vec![NfsArgop4::ExchangeId(ex)])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    // CREATE_SESSION on this connection binds it.
    let mut bound = Client::new(addr, "idle-bound").await;
    // A connection that only SEQUENCEs on the session (bound implicitly, RFC 8881 section
    // 2.10.3.1) is kept too.
    let second = connect(addr).await;
    let seq = bound.sequence();
    let r = compound_on(&second, 0, 1, vec![seq]).await.unwrap();
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");

    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(
        silent.is_closed(),
        "a silent connection outlives the idle timeout"
    );
    assert!(
        exchanged.is_closed(),
        "a connection without a session outlives the idle timeout"
    );
    assert!(
        !second.is_closed(),
        "a connection bound by SEQUENCE was closed"
    );
    assert!(!bound.conn.is_closed(), "a session's connection was closed");
    let r = bound.call(vec![NfsArgop4::PutRootFh]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}
