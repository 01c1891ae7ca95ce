use nfs_proto::rpc::AuthStat;

use super::registration::describe;
use super::*;

#[test]
fn before_start_every_data_server_is_down_and_the_ring_is_empty_at_the_epochs_generation() {
    let d = Devices::new(
        ClusterConfig::default(),
        Some(&[1; 32]),
        DsKeys::derive(&[2; 32], 5),
        90,
        DevicesOptions::default(),
        nfs_server::ManualClock::new().shared(),
    );
    assert_eq!(d.generation(), 5 << 16);
    assert_eq!(d.ring().generation, 5 << 16);
    assert!(d.ring().servers.is_empty());
    assert_eq!(d.counts(), (0, 3));
    let st = d.statuses();
    assert_eq!(st.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(st.iter().all(|s| !s.up && s.last_error.is_some()));
    assert_eq!(st[0].control, Some("127.0.0.1:20591".parse().unwrap()));
    assert!(d.control(1).is_none());
}

#[test]
fn a_refused_credential_is_explained_as_a_secret_or_clock_mismatch() {
    let bad = describe(&CtlError::Denied(AuthStat::AUTH_BADCRED));
    assert!(bad.contains("cluster secret"), "{bad}");
    let stale = describe(&CtlError::Denied(AuthStat::AUTH_REJECTEDVERF));
    assert!(stale.contains("clocks"), "{stale}");
    let boot = describe(&CtlError::Denied(AuthStat::AUTH_REJECTEDCRED));
    assert!(boot.contains("restarting"), "{boot}");
}
