//! The Rust client against a server we did not write: nfs-ganesha from Debian (VFS export on
//! loopback). It gives no file layouts, so the client does its I/O through the server.

mod client_suite;

use std::time::Duration;

use interop_tests::peers::Ganesha;

#[test]
fn copies_of_every_size_go_through_ganesha_and_keep_their_sha256() {
    let Some(g) = Ganesha::start_or_skip("copies through ganesha") else {
        return;
    };
    let stats = client_suite::rt().block_on(client_suite::copies_in_and_out_keep_their_sha256(
        g.addr(),
        g.pseudo_path(),
    ));
    let total: u64 = client_suite::SIZES.iter().sum();
    assert_eq!(stats.mds_bytes_written, total, "{stats:?}");
    assert_eq!(stats.ds_bytes_written + stats.ds_bytes_read, 0, "{stats:?}");
    // The bytes are in ganesha's export on this host.
    let on_disk = std::fs::metadata(g.export_dir().join(format!("copy-{}", 256u64 << 20))).unwrap();
    assert_eq!(on_disk.len(), 256 << 20);
}

#[test]
fn list_io_of_a_thousand_extents_round_trips_through_ganesha() {
    let Some(g) = Ganesha::start_or_skip("list I/O through ganesha") else {
        return;
    };
    client_suite::rt().block_on(client_suite::list_io_of_a_thousand_extents_round_trips(
        g.addr(),
        g.pseudo_path(),
    ));
}

#[test]
fn two_clients_of_ganesha_see_each_others_data_and_locks() {
    let Some(g) = Ganesha::start_or_skip("two clients of ganesha") else {
        return;
    };
    client_suite::rt().block_on(client_suite::two_clients_see_each_others_data_and_locks(
        g.addr(),
        g.pseudo_path(),
    ));
}

#[test]
fn a_ganesha_lock_is_released_when_its_holders_process_dies() {
    let Some(g) = Ganesha::start_or_skip("lock release on ganesha") else {
        return;
    };
    client_suite::rt().block_on(
        client_suite::a_lock_is_released_when_its_holders_process_dies(
            g.addr(),
            g.pseudo_path(),
            Duration::from_secs(10),
        ),
    );
}
