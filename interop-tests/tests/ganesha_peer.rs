//! nfs-ganesha as a peer: the harness of `interop_tests::peers` starts a real nfs-ganesha that
//! serves NFSv4.1 on loopback, and what a client writes through it lands in the export
//! directory on the host. The Rust client's tests against ganesha build on this.
//!
//! Skipped (with the reason) when nfs-ganesha cannot run here, unless `PNFS_REQUIRE_GANESHA`
//! is set, which makes that a failure.

mod support;

use std::time::Instant;

use interop_tests::peers::{nfs_null, Ganesha, GaneshaOptions};
use nfs_proto::nfs4::attr::{FATTR4_FS_LAYOUT_TYPES, FATTR4_LEASE_TIME};
use nfs_proto::nfs4::{Layouttype4, NfsStat4, OpenDelegation4};
use support::block_on;

/// EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE, PUTROOTFH + LOOKUP of the export's pseudo
/// path + GETFH, OPEN (create), WRITE FILE_SYNC4, CLOSE through ganesha; then the bytes are in
/// the file in `export_dir()` on the host.
#[test]
fn ganesha_serves_an_nfsv41_open_write_close_into_its_export_directory() {
    let t = Instant::now();
    let Some(g) = Ganesha::start_or_skip(
        "ganesha_serves_an_nfsv41_open_write_close_into_its_export_directory",
    ) else {
        return;
    };
    eprintln!(
        "nfs-ganesha on {} answered NULL after {:?} (log {})",
        g.addr(),
        g.startup_time(),
        g.log_file().display()
    );
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    block_on(async {
        let mut c = support::client(g.addr(), "ganesha-peer-write").await;
        let export = c.lookup_path(g.pseudo_path()).await;
        let (fh, stateid, open) = c.open_create(&export, "hello.bin").await;
        assert_eq!(
            open.delegation,
            OpenDelegation4::None,
            "delegations are off by default"
        );
        c.write_sync(&fh, stateid, 0, &data).await;
        // Ganesha 4.3 sets EXCHGID4_FLAG_USE_PNFS_MDS (and _DS) in EXCHANGE_ID even with
        // pnfs_mds off, but offers no layout type and refuses LAYOUTGET: a client must go by
        // fs_layout_types (RFC 8881 section 5.12.1), not by the flags, and do its I/O through
        // the server.
        eprintln!("ganesha's EXCHANGE_ID flags: {:#x}", c.exchange.eir_flags);
        let attrs = c
            .getattr(&export, &[FATTR4_FS_LAYOUT_TYPES, FATTR4_LEASE_TIME])
            .await;
        // The harness's configuration took: the lease of GaneshaOptions::default().
        assert_eq!(
            attrs.lease_time,
            Some(GaneshaOptions::default().lease_lifetime)
        );
        let (asked, got) = (testkit::client::channel(), &c.fore);
        assert!(
            got.ca_maxrequests <= asked.ca_maxrequests
                && got.ca_maxoperations <= asked.ca_maxoperations
                && got.ca_maxrequestsize <= asked.ca_maxrequestsize,
            "ganesha granted more than asked: {got:?}"
        );
        assert_eq!(
            attrs.fs_layout_types.as_deref().unwrap_or_default(),
            &[] as &[Layouttype4],
            "ganesha offers layouts"
        );
        let layoutget = c.layoutget_status(&fh, stateid).await;
        eprintln!("ganesha's LAYOUTGET: {layoutget:?}");
        assert_ne!(layoutget, NfsStat4::NFS4_OK, "ganesha granted a layout");
        c.close(&fh, stateid).await;
        assert_eq!(
            c.lookup_status(&export, "hello.bin").await,
            NfsStat4::NFS4_OK
        );
        assert_eq!(
            c.lookup_status(&export, "absent.bin").await,
            NfsStat4::NFS4ERR_NOENT
        );
    });
    let on_host = std::fs::read(g.export_dir().join("hello.bin")).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\n{}",
            g.export_dir().join("hello.bin").display(),
            g.log_tail()
        )
    });
    assert!(
        on_host == data,
        "the host file differs from what was written"
    );
    eprintln!("whole test: {:?}", t.elapsed());
}

/// Tests run in parallel threads: two instances at once get ports and directories of their
/// own, and a file written through each lands in its own export only.
#[test]
fn two_ganesha_instances_run_at_once_each_with_its_own_port_and_export() {
    let t = Instant::now();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Ganesha::start_or_skip("two_ganesha_instances (a)"));
        let b = s.spawn(|| Ganesha::start_or_skip("two_ganesha_instances (b)"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (Some(a), Some(b)) = (a, b) else {
        return;
    };
    eprintln!(
        "two instances: {} after {:?}, {} after {:?}",
        a.addr(),
        a.startup_time(),
        b.addr(),
        b.startup_time()
    );
    assert_ne!(a.addr(), b.addr());
    assert_ne!(a.export_dir(), b.export_dir());
    assert_ne!(a.pid(), b.pid());
    for g in [&a, &b] {
        nfs_null(g.addr(), std::time::Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{}: {e}", g.addr()));
    }
    block_on(async {
        for (g, name) in [(&a, "only-in-a"), (&b, "only-in-b")] {
            let mut c = support::client(g.addr(), name).await;
            let export = c.lookup_path(g.pseudo_path()).await;
            c.create_and_write(&export, name, name.as_bytes()).await;
        }
    });
    assert_eq!(
        std::fs::read(a.export_dir().join("only-in-a")).unwrap(),
        b"only-in-a"
    );
    assert_eq!(
        std::fs::read(b.export_dir().join("only-in-b")).unwrap(),
        b"only-in-b"
    );
    assert!(!a.export_dir().join("only-in-b").exists());
    assert!(!b.export_dir().join("only-in-a").exists());
    let dir = a.dir().to_owned();
    drop(a);
    assert!(
        !dir.exists(),
        "the temporary directory outlived its instance"
    );
    // The other one still serves after the first is gone.
    nfs_null(b.addr(), std::time::Duration::from_secs(5)).unwrap();
    eprintln!("whole test: {:?}", t.elapsed());
}
