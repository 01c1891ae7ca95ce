//! The Rust client against a server we did not write: nfs-ganesha from Debian (VFS export on
//! loopback). It gives no file layouts, so the client does its I/O through the server.

mod client_suite;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use client::{Client, OpenOptions, Seek, XattrSet};
use interop_tests::peers::Ganesha;
use nfs_proto::nfs4::NfsStat4;

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

/// Debian's ganesha 4.3 (VFS export) has no user extended attributes: `xattr_support` is
/// false, and every RFC 8276 operation, on the pseudo root, the export or a file in it, is
/// NFS4ERR_NOTSUPP, which the client reports as EOPNOTSUPP (what a FUSE mount then answers
/// `getfattr`/`setfattr` with), and the session goes on working.
#[test]
fn ganesha_has_no_user_xattrs_and_they_are_eopnotsupp() {
    let Some(g) = Ganesha::start_or_skip("xattrs on ganesha") else {
        return;
    };
    client_suite::rt().block_on(async {
        let c = Client::connect(g.addr()).await.unwrap();
        assert!(!c.supports_xattrs().await.unwrap());
        let (root, _) = c.root().await.unwrap();
        let (export, _) = c.node_of(g.pseudo_path()).await.unwrap();
        let f = c
            .create_in(&export, "xattrs", &OpenOptions::create())
            .await
            .unwrap();
        f.write_at(0, "data".into()).await.unwrap();
        let file = f.node();
        f.close().await.unwrap();
        for node in [&root, &export, &file] {
            let errors = [
                c.listxattrs(node).await.unwrap_err(),
                c.getxattr(node, "a").await.unwrap_err(),
                c.setxattr(node, "a", "1".into(), XattrSet::Either)
                    .await
                    .unwrap_err(),
                c.setxattr(node, "a", "1".into(), XattrSet::Create)
                    .await
                    .unwrap_err(),
                c.removexattr(node, "a").await.unwrap_err(),
            ];
            for e in errors {
                assert!(e.is(NfsStat4::NFS4ERR_NOTSUPP), "{node:?}: {e}");
                assert!(e.is_unsupported());
                assert_eq!(e.errno(), 95, "EOPNOTSUPP");
            }
        }
        // Nothing reached the exported file, and the session still serves I/O.
        let host = g.export_dir().join("xattrs");
        assert_eq!(std::fs::read(&host).unwrap(), b"data");
        let r = c.open_node(&file, &OpenOptions::read()).await.unwrap();
        assert_eq!(&r.read_at(0, 10).await.unwrap()[..], b"data");
        r.close().await.unwrap();
        c.shutdown().await;
    });
}

/// Debian's ganesha 4.3 (VFS export on the host's file system) has ALLOCATE, DEALLOCATE and
/// SEEK of NFSv4.2, passed to `fallocate(2)` and `lseek(2)` of the exported file: ALLOCATE
/// grows the file with zeros and the space is used on the host, DEALLOCATE frees it and
/// leaves zeros, SEEK answers the host file system's data and holes (ext4 counts the
/// allocated, never written range as a hole; a file system may count it as data) and,
/// at or past the end, no offset (`None`: ENXIO).
#[test]
fn ganesha_allocates_punches_holes_and_seeks() {
    let Some(g) = Ganesha::start_or_skip("space operations on ganesha") else {
        return;
    };
    const MIB: u64 = 1 << 20;
    client_suite::rt().block_on(async {
        let c = Client::connect(g.addr()).await.unwrap();
        let host = g.export_dir().join("space");
        let used = || std::fs::metadata(&host).unwrap().blocks() * 512;
        let data = client_suite::chunk(7, 0, 3 * MIB as usize);
        let f = c
            .create(&format!("{}/space", g.pseudo_path()), 0o644)
            .await
            .unwrap();
        // Buffered, not flushed: ALLOCATE sends them first.
        f.write_at(0, data.clone()).await.unwrap();
        f.allocate(0, 5 * MIB).await.unwrap();
        assert_eq!(f.size(), 5 * MIB);
        let m = f.metadata().await.unwrap();
        assert_eq!(m.size, 5 * MIB);
        assert!(m.space_used >= 5 * MIB, "{m:?}");
        assert_eq!(std::fs::metadata(&host).unwrap().len(), 5 * MIB);
        assert!(used() >= 5 * MIB, "{} B used on the host", used());
        let all = f.read_to_end().await.unwrap();
        assert_eq!(all.slice(..3 * MIB as usize), data);
        assert!(all[3 * MIB as usize..].iter().all(|&b| b == 0));

        f.deallocate(MIB, MIB).await.unwrap();
        assert_eq!(f.size(), 5 * MIB);
        assert!(
            used() <= 4 * MIB,
            "{} B used on the host after the punch",
            used()
        );
        assert_eq!(f.metadata().await.unwrap().space_used, used());
        let all = f.read_to_end().await.unwrap();
        assert_eq!(all.len() as u64, 5 * MIB);
        assert_eq!(all.slice(..MIB as usize), data.slice(..MIB as usize));
        assert!(all[MIB as usize..2 * MIB as usize].iter().all(|&b| b == 0));
        assert_eq!(
            all.slice(2 * MIB as usize..3 * MIB as usize),
            data.slice(2 * MIB as usize..)
        );

        assert_eq!(f.seek(0, Seek::Data).await.unwrap(), Some(0));
        assert_eq!(f.seek(0, Seek::Hole).await.unwrap(), Some(MIB));
        assert_eq!(f.seek(MIB + 5, Seek::Hole).await.unwrap(), Some(MIB + 5));
        assert_eq!(f.seek(MIB + 5, Seek::Data).await.unwrap(), Some(2 * MIB));
        // The allocated, never written range: a hole on ext4 (data on some file systems).
        let hole = f.seek(2 * MIB, Seek::Hole).await.unwrap();
        assert!(
            matches!(hole, Some(x) if x == 3 * MIB || x == 5 * MIB),
            "{hole:?}"
        );
        let data_after = f.seek(3 * MIB, Seek::Data).await.unwrap();
        assert!(data_after.is_none_or(|x| x == 3 * MIB), "{data_after:?}");
        for off in [5 * MIB, 6 * MIB] {
            assert_eq!(f.seek(off, Seek::Data).await.unwrap(), None, "{off}");
            assert_eq!(f.seek(off, Seek::Hole).await.unwrap(), None, "{off}");
        }
        f.close().await.unwrap();
        c.shutdown().await;
    });
}
