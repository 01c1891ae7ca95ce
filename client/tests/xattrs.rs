//! User extended attributes by filehandle (RFC 8276, in NFSv4.2 COMPOUNDs) against a real
//! MDS: on a file and a directory, every SETXATTR mode and the errno of each refusal, a
//! 64 KiB value, 500 names listed page by page, a second client, an MDS restart, symbolic
//! links and fifos; and on an MDS with three data servers, on a file striped over them.

mod support;

use std::time::Duration;

use bytes::Bytes;
use client::{Client, Error, Node, OpenOptions, XattrSet, MAX_XATTR_NAME, MAX_XATTR_VALUE};
use nfs_proto::nfs4::NfsStat4;
use testkit::loopback::cluster::start_cluster;

use support::{mds_config, start_mds};

const ENODATA: i32 = 61;
const EEXIST: i32 = 17;
const E2BIG: i32 = 7;
const ERANGE: i32 = 34;
const ENOSPC: i32 = 28;
const EPERM: i32 = 1;

fn value(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect::<Vec<u8>>()
        .into()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Every call and every mode on `node`, which has the attributes `existing` (listed in this
/// order), as `setfattr`/`getfattr` would use them, and the errno of each refusal. Adds
/// `user.kept` = "kept".
async fn every_call_on(c: &Client, node: &Node, existing: &[&str]) {
    assert_eq!(c.listxattrs(node).await.unwrap(), existing);
    let e = c.getxattr(node, "missing").await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_NOXATTR), "{e}");
    assert_eq!(e.errno(), ENODATA);

    // Either creates, then replaces.
    let before = c.getattr(node).await.unwrap();
    c.setxattr(node, "color", "blue".into(), XattrSet::Either)
        .await
        .unwrap();
    assert_eq!(&c.getxattr(node, "color").await.unwrap()[..], b"blue");
    let after = c.getattr(node).await.unwrap();
    assert_ne!(
        after.change, before.change,
        "SETXATTR moves the change attribute"
    );
    c.setxattr(node, "color", "green".into(), XattrSet::Either)
        .await
        .unwrap();
    assert_eq!(&c.getxattr(node, "color").await.unwrap()[..], b"green");

    // Create only: new names yes, an existing one is EEXIST and keeps its value.
    c.setxattr(node, "kept", "kept".into(), XattrSet::Create)
        .await
        .unwrap();
    let e = c
        .setxattr(node, "color", "red".into(), XattrSet::Create)
        .await
        .unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_EXIST), "{e}");
    assert_eq!(e.errno(), EEXIST);
    assert_eq!(&c.getxattr(node, "color").await.unwrap()[..], b"green");

    // Replace only: an existing name yes, a missing one is ENODATA and stays missing.
    c.setxattr(node, "color", "red".into(), XattrSet::Replace)
        .await
        .unwrap();
    assert_eq!(&c.getxattr(node, "color").await.unwrap()[..], b"red");
    let e = c
        .setxattr(node, "shape", "round".into(), XattrSet::Replace)
        .await
        .unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_NOXATTR), "{e}");
    assert_eq!(e.errno(), ENODATA);
    assert_eq!(
        c.getxattr(node, "shape").await.unwrap_err().errno(),
        ENODATA
    );

    // An empty value is a value.
    c.setxattr(node, "empty", Bytes::new(), XattrSet::Create)
        .await
        .unwrap();
    assert!(c.getxattr(node, "empty").await.unwrap().is_empty());

    // A value of XATTR_SIZE_MAX round-trips; one byte more is E2BIG before it is sent.
    let big = value(MAX_XATTR_VALUE, 7);
    c.setxattr(node, "big", big.clone(), XattrSet::Either)
        .await
        .unwrap();
    assert_eq!(c.getxattr(node, "big").await.unwrap(), big);
    let e = c
        .setxattr(node, "big", value(MAX_XATTR_VALUE + 1, 8), XattrSet::Either)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::XattrTooBig { .. }), "{e}");
    assert_eq!(e.errno(), E2BIG);
    assert_eq!(c.getxattr(node, "big").await.unwrap(), big, "unchanged");

    // A name of 250 bytes (255 with `user.`) is the longest; longer is ERANGE.
    let longest = "n".repeat(MAX_XATTR_NAME);
    c.setxattr(node, &longest, "l".into(), XattrSet::Create)
        .await
        .unwrap();
    assert_eq!(&c.getxattr(node, &longest).await.unwrap()[..], b"l");
    let too_long = "n".repeat(MAX_XATTR_NAME + 1);
    let e = c.getxattr(node, &too_long).await.unwrap_err();
    assert!(matches!(e, Error::XattrNameTooLong { len: 251 }), "{e}");
    assert_eq!(e.errno(), ERANGE);
    assert_eq!(c.getxattr(node, "").await.unwrap_err().errno(), 22);

    // Names in the order the server keeps (creation), without `user.`.
    let mut all = existing.to_vec();
    all.extend(["color", "kept", "empty", "big", longest.as_str()]);
    assert_eq!(c.listxattrs(node).await.unwrap(), all);

    // Remove; a second removal, and a get of the removed name, are ENODATA.
    for name in ["color", "empty", "big", longest.as_str()] {
        c.removexattr(node, name).await.unwrap();
    }
    let e = c.removexattr(node, "color").await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_NOXATTR), "{e}");
    assert_eq!(e.errno(), ENODATA);
    assert_eq!(
        c.getxattr(node, "color").await.unwrap_err().errno(),
        ENODATA
    );
    let mut all = existing.to_vec();
    all.push("kept");
    assert_eq!(c.listxattrs(node).await.unwrap(), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xattrs_of_a_file_and_a_directory_on_an_mds() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    assert!(c.supports_xattrs().await.unwrap());
    assert!(c.supports_xattrs().await.unwrap(), "cached");
    let (root, _) = c.root().await.unwrap();
    let (d, _) = c.mkdir_in(&root, "d", 0o755).await.unwrap();
    let f = c.create_in(&d, "f", &OpenOptions::create()).await.unwrap();
    f.write_at(0, "data".into()).await.unwrap();
    let file = f.node();
    f.close().await.unwrap();

    every_call_on(&c, &file, &[]).await;
    every_call_on(&c, &d, &[]).await;

    // A second client (another client id and session) sees the same attributes.
    let c2 = Client::connect(addr).await.unwrap();
    let (d2, _) = c2.lookup_in(&root, "d").await.unwrap();
    let (f2, _) = c2.lookup_in(&d2, "f").await.unwrap();
    for n in [&d2, &f2] {
        assert_eq!(c2.listxattrs(n).await.unwrap(), ["kept"]);
        assert_eq!(&c2.getxattr(n, "kept").await.unwrap()[..], b"kept");
    }
    c2.setxattr(&f2, "from-c2", "2".into(), XattrSet::Create)
        .await
        .unwrap();
    assert_eq!(&c.getxattr(&file, "from-c2").await.unwrap()[..], b"2");
    // The file's data is untouched.
    let g = c.open_node(&file, &OpenOptions::read()).await.unwrap();
    assert_eq!(&g.read_at(0, 100).await.unwrap()[..], b"data");
    g.close().await.unwrap();
    // Removing the file takes its attributes along (a new file of that name has none).
    c.remove_in(&d, "f").await.unwrap();
    let f = c.create_in(&d, "f", &OpenOptions::create()).await.unwrap();
    assert!(c.listxattrs(&f.node()).await.unwrap().is_empty());
    f.close().await.unwrap();
    c2.shutdown().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_names_are_listed_across_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let (root, _) = c.root().await.unwrap();
    let f = c
        .create_in(&root, "many", &OpenOptions::create())
        .await
        .unwrap();
    let node = f.node();
    f.close().await.unwrap();
    // 500 names of 60 bytes: 32,000 bytes of LISTXATTRS reply, two pages of 16 KiB at
    // least; 33,000 bytes as listxattr(2) lays them out, within XATTR_LIST_MAX.
    let names: Vec<String> = (0..500)
        .map(|i| format!("attribute-{i:04}-{}", "x".repeat(45)))
        .collect();
    assert!(names.iter().all(|n| n.len() == 60));
    for (i, n) in names.iter().enumerate() {
        c.setxattr(&node, n, Bytes::from(i.to_string()), XattrSet::Create)
            .await
            .unwrap();
    }
    let before = c.stats().xattr_list_pages;
    let listed = c.listxattrs(&node).await.unwrap();
    let pages = c.stats().xattr_list_pages - before;
    assert_eq!(listed, names, "every name once, in creation order");
    assert!(pages >= 2, "{pages} LISTXATTRS pages");
    for i in [0, 250, 499] {
        assert_eq!(
            c.getxattr(&node, &names[i]).await.unwrap(),
            Bytes::from(i.to_string())
        );
    }
    // Every other name removed: the listing (cookies are kept per name) has the rest.
    for n in names.iter().step_by(2) {
        c.removexattr(&node, n).await.unwrap();
    }
    let rest: Vec<String> = names.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(c.listxattrs(&node).await.unwrap(), rest);
    c.shutdown().await;
}

/// The server holds an object's names to what listxattr(2) can return (XATTR_LIST_MAX,
/// 64 KiB as `user.<name>\0`): 256 names of 250 bytes fill it, the 257th is ENOSPC, and the
/// full list (64 KiB of names) still comes back whole, in pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_list_is_enospc_and_still_lists() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let (root, _) = c.root().await.unwrap();
    let (d, _) = c.mkdir_in(&root, "full", 0o755).await.unwrap();
    let name = |i: usize| format!("{i:03}{}", "z".repeat(MAX_XATTR_NAME - 3));
    for i in 0..256 {
        c.setxattr(&d, &name(i), Bytes::new(), XattrSet::Create)
            .await
            .unwrap();
    }
    let e = c
        .setxattr(&d, &name(256), Bytes::new(), XattrSet::Create)
        .await
        .unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_NOSPC), "{e}");
    assert_eq!(e.errno(), ENOSPC);
    // Replacing a value adds no name, so it still works.
    c.setxattr(&d, &name(0), "v".into(), XattrSet::Replace)
        .await
        .unwrap();
    let before = c.stats().xattr_list_pages;
    let listed = c.listxattrs(&d).await.unwrap();
    assert_eq!(listed, (0..256).map(name).collect::<Vec<_>>());
    assert!(c.stats().xattr_list_pages - before >= 4);
    c.shutdown().await;
}

/// User attributes live on regular files and directories (as on Linux, RFC 8276 section
/// 4): of a symbolic link or a fifo, our MDS lists none, reads none (ENODATA) and lets none
/// be set or removed (NFS4ERR_PERM, EPERM, what Linux answers for `user.*` there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_and_fifos_hold_no_user_xattrs() {
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let (root, _) = c.root().await.unwrap();
    let (link, _) = c.symlink_in(&root, "link", "target").await.unwrap();
    let (fifo, _) = c.mknod_fifo_in(&root, "fifo", 0o644).await.unwrap();
    for node in [&link, &fifo] {
        assert!(c.listxattrs(node).await.unwrap().is_empty());
        assert_eq!(c.getxattr(node, "a").await.unwrap_err().errno(), ENODATA);
        let e = c
            .setxattr(node, "a", "1".into(), XattrSet::Either)
            .await
            .unwrap_err();
        assert!(e.is(NfsStat4::NFS4ERR_PERM), "{e}");
        assert_eq!(e.errno(), EPERM);
        assert_eq!(c.removexattr(node, "a").await.unwrap_err().errno(), EPERM);
    }
    c.shutdown().await;
}

/// Attributes on a file striped over three data servers: they live on the MDS with the
/// file's metadata, beside data the client wrote through its layout, and neither disturbs
/// the other; a second client reads both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xattrs_of_a_striped_file_on_three_data_servers() {
    let (_k, _mds, addr) = start_cluster(3, |c| {
        c.lease_time = 10;
        c.cluster.layouts = true;
    })
    .await;
    let c = Client::connect(addr).await.unwrap();
    assert!(c.uses_pnfs(), "the cluster grants file layouts");
    assert!(c.supports_xattrs().await.unwrap());
    let (root, _) = c.root().await.unwrap();
    let data = value(3 << 20, 1);
    let f = c
        .create_in(&root, "striped", &OpenOptions::create())
        .await
        .unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    let node = f.node();
    // Attributes set while the file is open for writing, with writes in flight.
    c.setxattr(&node, "checksum", "abc".into(), XattrSet::Create)
        .await
        .unwrap();
    f.write_at(data.len() as u64, "tail".into()).await.unwrap();
    f.close().await.unwrap();
    assert!(c.stats().ds_bytes_written >= data.len() as u64);

    every_call_on(&c, &node, &["checksum"]).await;
    let big = value(MAX_XATTR_VALUE, 9);
    c.setxattr(&node, "big", big.clone(), XattrSet::Create)
        .await
        .unwrap();

    let c2 = Client::connect(addr).await.unwrap();
    let (n2, meta) = c2.lookup_in(&root, "striped").await.unwrap();
    assert_eq!(meta.size, data.len() as u64 + 4);
    assert_eq!(
        sorted(c2.listxattrs(&n2).await.unwrap()),
        ["big", "checksum", "kept"]
    );
    assert_eq!(c2.getxattr(&n2, "big").await.unwrap(), big);
    assert_eq!(&c2.getxattr(&n2, "checksum").await.unwrap()[..], b"abc");
    let g = c2.open_node(&n2, &OpenOptions::read()).await.unwrap();
    let back = g.read_at(0, data.len() as u64 + 4).await.unwrap();
    assert_eq!(&back[..data.len()], &data[..]);
    assert_eq!(&back[data.len()..], b"tail");
    g.close().await.unwrap();
    assert!(
        c2.stats().ds_bytes_read >= data.len() as u64,
        "read through the layout"
    );
    c2.shutdown().await;
    c.shutdown().await;
}

/// SETXATTR and REMOVEXATTR reply after their commit: a whole MDS restart (its runtime
/// gone, its store closed and opened again) keeps what they did, and the nodes (persistent
/// filehandles) still name the objects.
#[test]
fn xattrs_survive_an_mds_restart() {
    let dir = tempfile::tempdir().unwrap();
    let big = value(MAX_XATTR_VALUE, 3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (file, d) = rt.block_on(async {
        let (_mds, addr) = start_mds(dir.path(), 10).await;
        let c = Client::connect(addr).await.unwrap();
        let (root, _) = c.root().await.unwrap();
        let (d, _) = c.mkdir_in(&root, "d", 0o755).await.unwrap();
        let f = c.create_in(&d, "f", &OpenOptions::create()).await.unwrap();
        let file = f.node();
        f.close().await.unwrap();
        for (name, v) in [
            ("a", Bytes::from("1")),
            ("b", big.clone()),
            ("c", "3".into()),
        ] {
            c.setxattr(&file, name, v, XattrSet::Create).await.unwrap();
        }
        c.setxattr(&file, "a", "one".into(), XattrSet::Replace)
            .await
            .unwrap();
        c.removexattr(&file, "c").await.unwrap();
        c.setxattr(&d, "on-dir", "yes".into(), XattrSet::Create)
            .await
            .unwrap();
        c.shutdown().await;
        (file, d)
    });
    // The MDS's tasks and connections go with its runtime; its store closes with the last
    // handle, possibly a moment later on another thread.
    rt.shutdown_timeout(Duration::from_secs(10));

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (_mds, addr) = loop {
            match mds::Mds::open(mds_config(dir.path(), 10)) {
                Ok(m) => {
                    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let addr = l.local_addr().unwrap();
                    tokio::spawn(m.clone().serve_on(l));
                    break (m, addr);
                }
                Err(e) if std::time::Instant::now() < deadline => {
                    eprintln!("the store is not closed yet: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("reopening the MDS: {e}"),
            }
        };
        let c = Client::connect(addr).await.unwrap();
        assert_eq!(c.listxattrs(&file).await.unwrap(), ["a", "b"]);
        assert_eq!(&c.getxattr(&file, "a").await.unwrap()[..], b"one");
        assert_eq!(c.getxattr(&file, "b").await.unwrap(), big);
        assert_eq!(c.getxattr(&file, "c").await.unwrap_err().errno(), ENODATA);
        assert_eq!(&c.getxattr(&d, "on-dir").await.unwrap()[..], b"yes");
        // The cookies survive too: a new name lists after the old ones.
        c.setxattr(&file, "d", "4".into(), XattrSet::Create)
            .await
            .unwrap();
        assert_eq!(c.listxattrs(&file).await.unwrap(), ["a", "b", "d"]);
        c.shutdown().await;
    });
}
