//! The filehandle API (what a FUSE mount is built on): every call by node, on an MDS with
//! three data servers on loopback sockets where the test does I/O (files striped over them),
//! on an MDS alone for a directory of 1,500 entries read page by page; a file renamed and
//! unlinked while open stays readable and writable through its open File and its node; and
//! the errno each failure maps to.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use client::{Client, FileType, Node, OpenOptions, SetAttrs, SetTime};
use mds::Mds;
use nfs_proto::nfs4::NfsStat4;
use testkit::loopback::cluster::{start_cluster, Cluster};

use support::start_mds;

const MIB: usize = 1 << 20;

fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Three data servers, layouts on, and a client that uses them.
async fn striped() -> (Cluster, Arc<Mds>, SocketAddr, Client) {
    let (k, mds, addr) = start_cluster(3, |c| {
        c.lease_time = 10;
        c.cluster.layouts = true;
    })
    .await;
    let c = Client::connect(addr).await.unwrap();
    assert!(c.uses_pnfs(), "the cluster grants file layouts");
    (k, mds, addr, c)
}

fn create_new() -> OpenOptions {
    OpenOptions {
        exclusive: true,
        ..OpenOptions::create()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_call_by_node_on_a_striped_cluster() {
    let (_k, _mds, _addr, c) = striped().await;
    let (root, rmeta) = c.root().await.unwrap();
    assert!(rmeta.is_dir());
    assert_eq!(root.fileid(), rmeta.fileid);
    assert_eq!(c.node_of("/").await.unwrap().0, root);

    // mkdir, lookup, parent.
    let (d, dmeta) = c.mkdir_in(&root, "d", 0o750).await.unwrap();
    assert_eq!(
        (dmeta.file_type, dmeta.mode & 0o777),
        (FileType::Dir, 0o750)
    );
    let (d2, _) = c.lookup_in(&root, "d").await.unwrap();
    assert_eq!(d2, d);
    assert_eq!(c.parent_of(&d).await.unwrap().0, root);
    assert_eq!(c.node_of("/d").await.unwrap().0, d);

    // create (exclusive), striped I/O, open by node.
    let data = pattern(5 * MIB + 4321, 3);
    let f = c.create_in(&d, "f", &create_new()).await.unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    let node = f.node();
    f.close().await.unwrap();
    assert_eq!(c.lookup_in(&d, "f").await.unwrap().0, node);
    let e = c.create_in(&d, "f", &create_new()).await.unwrap_err();
    assert!(e.is(NfsStat4::NFS4ERR_EXIST), "{e}");
    assert_eq!(e.errno(), 17);
    let meta = c.getattr(&node).await.unwrap();
    assert_eq!((meta.size, meta.fileid), (data.len() as u64, node.fileid()));
    let g = c.open_node(&node, &OpenOptions::read()).await.unwrap();
    assert_eq!(g.read_to_end().await.unwrap(), data);
    g.close().await.unwrap();
    let s = c.stats();
    assert!(
        s.ds_bytes_written >= data.len() as u64 && s.ds_bytes_read >= data.len() as u64,
        "the bytes went to the data servers: {s:?}"
    );

    // create with truncate over an existing file.
    let t = c.create_in(&d, "f", &OpenOptions::create()).await.unwrap();
    assert_eq!(t.node(), node);
    t.close().await.unwrap();
    assert_eq!(c.getattr(&node).await.unwrap().size, 0);
    let f = c
        .open_node(&node, &OpenOptions::read_write())
        .await
        .unwrap();
    f.write_at(0, data.clone()).await.unwrap();
    f.close().await.unwrap();

    // setattr: size, mode, times, owner (to the owner it has: any user may).
    let set = |s: SetAttrs| {
        let c = c.clone();
        let node = node.clone();
        async move { c.setattr(&node, &s).await.unwrap() }
    };
    let m = set(SetAttrs {
        size: Some(1000),
        ..SetAttrs::default()
    })
    .await;
    assert_eq!(m.size, 1000);
    let r = c.open_node(&node, &OpenOptions::read()).await.unwrap();
    assert_eq!(r.read_to_end().await.unwrap(), data.slice(..1000));
    r.close().await.unwrap();
    let when = UNIX_EPOCH + Duration::new(1_600_000_000, 500);
    let m = set(SetAttrs {
        mode: Some(0o600),
        mtime: Some(SetTime::At(when)),
        atime: Some(SetTime::At(when)),
        ..SetAttrs::default()
    })
    .await;
    assert_eq!((m.mode & 0o777, m.mtime, m.atime), (0o600, when, when));
    let m = set(SetAttrs {
        mtime: Some(SetTime::ServerNow),
        ..SetAttrs::default()
    })
    .await;
    assert!(m.mtime > when);
    if let (Ok(uid), Ok(gid)) = (m.owner.parse::<u32>(), m.group.parse::<u32>()) {
        let m2 = set(SetAttrs {
            uid: Some(uid),
            gid: Some(gid),
            ..SetAttrs::default()
        })
        .await;
        assert_eq!((m2.owner, m2.group), (m.owner.clone(), m.group.clone()));
    }
    assert_eq!(set(SetAttrs::default()).await.size, 1000);

    // link, symlink, fifo.
    let m = c.link_in(&node, &root, "hard").await.unwrap();
    assert_eq!(m.nlink, 2);
    assert_eq!(c.lookup_in(&root, "hard").await.unwrap().0, node);
    let (l, lm) = c.symlink_in(&d, "ln", "f").await.unwrap();
    assert_eq!(lm.file_type, FileType::Symlink);
    assert_eq!(c.readlink_node(&l).await.unwrap(), "f");
    let (p, pm) = c.mknod_fifo_in(&d, "pipe", 0o640).await.unwrap();
    assert_eq!((pm.file_type, pm.mode & 0o777), (FileType::Fifo, 0o640));
    assert_eq!(c.getattr(&p).await.unwrap().fileid, p.fileid());

    // rename over an existing file, across directories.
    let other = c.create_in(&root, "other", &create_new()).await.unwrap();
    other.close().await.unwrap();
    c.rename_in(&d, "f", &root, "other").await.unwrap();
    assert_eq!(c.lookup_in(&root, "other").await.unwrap().0, node);
    let e = c.lookup_in(&d, "f").await.unwrap_err();
    assert_eq!(e.errno(), 2, "{e}");

    // rmdir: not a directory, not empty, then empty.
    let e = c.rmdir_in(&root, "other").await.unwrap_err();
    assert_eq!(e.errno(), 20, "{e}");
    let e = c.rmdir_in(&root, "d").await.unwrap_err();
    assert_eq!(e.errno(), 39, "{e}");
    for n in ["ln", "pipe"] {
        c.remove_in(&d, n).await.unwrap();
    }
    c.rmdir_in(&root, "d").await.unwrap();
    let e = c.getattr(&d).await.unwrap_err();
    assert_eq!(e.errno(), 116, "a removed directory's node is stale: {e}");
    c.remove_in(&root, "hard").await.unwrap();
    assert_eq!(c.getattr(&node).await.unwrap().nlink, 1);

    // Names that are not names.
    for bad in ["", ".", "..", "a/b"] {
        let e = c.lookup_in(&root, bad).await.unwrap_err();
        assert_eq!(e.errno(), 22, "{bad:?}: {e}");
    }

    let fs = c.statfs(&root).await.unwrap();
    eprintln!("statfs: {fs:?}");
    assert!(fs.max_name >= 255, "{fs:?}");
    assert!(fs.space_free <= fs.space_total && fs.space_avail <= fs.space_total);
    assert!(
        fs.files_free <= fs.files_total || fs.files_total == 0,
        "{fs:?}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_renamed_and_unlinked_while_open_stays_usable_through_its_file_and_node() {
    let (_k, _mds, addr, c) = striped().await;
    let (root, _) = c.root().await.unwrap();
    let (a, _) = c.mkdir_in(&root, "a", 0o755).await.unwrap();
    let (b, _) = c.mkdir_in(&root, "b", 0o755).await.unwrap();
    let first = pattern(3 * MIB, 5);
    let f = c.create_in(&a, "x", &OpenOptions::create()).await.unwrap();
    f.write_at(0, first.clone()).await.unwrap();
    f.fsync().await.unwrap();
    let node = f.node();

    // Renamed: the File writes on, the node opens.
    c.rename_in(&a, "x", &b, "y").await.unwrap();
    let second = pattern(2 * MIB, 6);
    f.write_at(first.len() as u64, second.clone())
        .await
        .unwrap();
    f.fsync().await.unwrap();
    let r = c.open_node(&node, &OpenOptions::read()).await.unwrap();
    let all = r.read_to_end().await.unwrap();
    assert_eq!(all.len(), first.len() + second.len());
    assert_eq!(all.slice(..first.len()), first);
    assert_eq!(all.slice(first.len()..), second);

    // Unlinked: both Files still read and write; a second client sees the name gone.
    c.remove_in(&b, "y").await.unwrap();
    let other = Client::connect(addr).await.unwrap();
    let e = other.stat("/b/y").await.unwrap_err();
    assert_eq!(e.errno(), 2, "{e}");
    f.write_at(0, Bytes::from_static(b"still here"))
        .await
        .unwrap();
    f.fsync().await.unwrap();
    // Read from the server, not a cache: the read cache goes, and bytes are counted.
    r.revalidate().await.unwrap();
    let read = |s: client::Stats| s.ds_bytes_read + s.mds_bytes_read;
    let before = read(c.stats());
    let all = r.read_to_end().await.unwrap();
    assert!(
        read(c.stats()) >= before + all.len() as u64,
        "{:?}",
        c.stats()
    );
    assert_eq!(&all[..10], b"still here");
    assert_eq!(all.slice(first.len()..), second);
    assert_eq!(&f.read_at(0, 10).await.unwrap()[..], b"still here");
    // Another client reaches it by its node too (the filehandle outlives the name).
    let o = other.open_node(&node, &OpenOptions::read()).await.unwrap();
    assert_eq!(&o.read_at(0, 10).await.unwrap()[..], b"still here");
    o.close().await.unwrap();
    assert_eq!(c.getattr(&node).await.unwrap().nlink, 0);
    f.close().await.unwrap();
    r.close().await.unwrap();
    other.shutdown().await;
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readdir_pages_stream_a_directory_of_1500_entries() {
    const N: usize = 1500;
    let dir = tempfile::tempdir().unwrap();
    let (_mds, addr) = start_mds(dir.path(), 10).await;
    let c = Client::connect(addr).await.unwrap();
    let (root, _) = c.root().await.unwrap();
    let (d, _) = c.mkdir_in(&root, "big", 0o755).await.unwrap();
    let names: Vec<String> = (0..N).map(|i| format!("entry-{i:05}")).collect();
    for chunk in names.chunks(50) {
        let made = chunk.iter().map(|n| {
            let (c, d) = (c.clone(), d.clone());
            async move {
                let f = c.create_in(&d, n, &create_new()).await?;
                f.close().await
            }
        });
        for r in futures::future::join_all(made).await {
            r.unwrap();
        }
    }

    let t = std::time::Instant::now();
    let (mut cookie, mut verifier) = (0, [0; 8]);
    let mut seen: Vec<(String, Node)> = Vec::new();
    let mut pages = 0;
    loop {
        let page = c.readdir_page(&d, cookie, verifier, 8 << 10).await.unwrap();
        pages += 1;
        assert!(page.entries.len() < N, "a page is not the whole directory");
        verifier = page.verifier;
        for e in page.entries {
            let meta = e.meta.expect("attributes with each entry");
            let node = e.node.expect("a filehandle with each entry");
            assert_eq!(
                (meta.file_type, node.fileid()),
                (FileType::File, meta.fileid)
            );
            cookie = e.cookie;
            seen.push((e.name, node));
        }
        if page.eof {
            break;
        }
    }
    eprintln!("{N} entries in {pages} pages of 8 KiB in {:?}", t.elapsed());
    assert!(pages >= 5, "{pages} pages");
    let mut got: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    got.sort_unstable();
    got.dedup();
    assert_eq!(got, names.iter().map(String::as_str).collect::<Vec<_>>());
    let (name, node) = &seen[N / 2];
    assert_eq!(&c.lookup_in(&d, name).await.unwrap().0, node);

    // Continuing from a cookie in the middle gives the rest.
    let (mid_cookie, mid_verifier) = {
        let p = c.readdir_page(&d, 0, [0; 8], 8 << 10).await.unwrap();
        let last = p.entries.last().unwrap();
        (last.cookie, p.verifier)
    };
    let rest = c
        .readdir_page(&d, mid_cookie, mid_verifier, 8 << 10)
        .await
        .unwrap();
    assert!(!rest.entries.is_empty());

    // The path API reads the same directory in full.
    assert_eq!(c.readdir("/big").await.unwrap().len(), N);
    c.shutdown().await;
}

/// OPs of one kind the server answered NFS4_OK (its metrics page).
fn ops_ok(mds: &Mds, op: &str) -> u64 {
    let page = mds::net::metrics::render(mds, std::time::Instant::now());
    let (name, kind) = ("pnfs_ops_total{", format!("op=\"{op}\""));
    page.lines()
        .filter(|l| l.starts_with(name) && l.contains(&kind) && l.contains("status=\"ok\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opens_by_node_under_a_delegation_send_nothing_and_a_rename_gives_it_back_first() {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_mds(dir.path(), 10).await;
    let w = Client::connect(addr).await.unwrap();
    let (root, _) = w.root().await.unwrap();
    let f = w.create_in(&root, "hot", &create_new()).await.unwrap();
    f.write_at(0, pattern(10_000, 9)).await.unwrap();
    let node = f.node();
    f.close().await.unwrap();
    w.shutdown().await;

    let c = Client::connect(addr).await.unwrap();
    let f = c.open_node(&node, &OpenOptions::read()).await.unwrap();
    f.close().await.unwrap();
    assert_eq!(c.stats().delegations, 1, "{:?}", c.stats());
    let opens = ops_ok(&mds, "OP_OPEN");
    for _ in 0..50 {
        let f = c.open_node(&node, &OpenOptions::read()).await.unwrap();
        assert_eq!(
            f.read_at(0, 10).await.unwrap(),
            pattern(10_000, 9).slice(..10)
        );
        f.close().await.unwrap();
    }
    assert_eq!(
        ops_ok(&mds, "OP_OPEN"),
        opens,
        "a re-open by node sent OPEN"
    );
    assert_eq!(c.stats().delegated_opens, 50);

    // The holder renames it: the delegation goes back first, so the server has nothing to
    // recall and the rename does not wait for one.
    let t = std::time::Instant::now();
    c.rename_in(&root, "hot", &root, "cold").await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let s = c.stats();
    assert_eq!(
        (s.delegations_returned, s.delegations_recalled),
        (1, 0),
        "{s:?}"
    );
    assert_eq!(c.lookup_in(&root, "cold").await.unwrap().0, node);
    c.shutdown().await;
}
