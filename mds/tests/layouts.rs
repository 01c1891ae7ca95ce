//! pNFS file layouts on the MDS (RFC 8881 chapter 13), over loopback sockets. The data
//! servers are configured but need not run for these checks.

mod support;

use bytes::Bytes;
use mds::Config;
use nfs_proto::nfs4::*;
use support::*;

/// A server whose configuration is changed by `f` (from the test defaults).
async fn server_with(f: impl FnOnce(&mut Config)) -> (tempfile::TempDir, std::net::SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        grace_time: 0,
        lease_time: 10,
        ..Config::default()
    };
    f(&mut cfg);
    let (_mds, addr) = start_with(cfg).await;
    (dir, addr)
}

/// The role flags of an EXCHANGE_ID reply.
async fn exchange_id_flags(addr: std::net::SocketAddr) -> u32 {
    let conn = connect(addr).await;
    let ex = ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: Bytes::from_static(b"layouts-test"),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    };
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::ExchangeId(ex)])
        .await
        .unwrap();
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
        panic!("EXCHANGE_ID failed: {r:?}")
    };
    ok.eir_flags & EXCHGID4_FLAG_MASK_PNFS
}

#[tokio::test]
async fn with_layouts_on_the_mds_takes_the_pnfs_mds_role_only() {
    let (_d, addr) = server_with(|c| c.cluster.layouts = true).await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_PNFS_MDS);
}

#[tokio::test]
async fn with_layouts_off_the_mds_takes_the_non_pnfs_role_only() {
    let (_d, addr) = server_with(|c| assert!(!c.cluster.layouts)).await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_NON_PNFS);
}

#[tokio::test]
async fn with_layouts_on_but_no_data_servers_the_mds_is_non_pnfs() {
    let (_d, addr) = server_with(|c| {
        c.cluster.layouts = true;
        c.cluster.data_servers.clear();
    })
    .await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_NON_PNFS);
}
