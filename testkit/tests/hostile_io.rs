//! A hostile client against the data servers of a striped cluster, in memory: each
//! attack a security review found (a data server took any valid stateid with any of its
//! filehandles) is replayed and must be refused, with the victim file's bytes untouched.
//!
//! The victim is a root-owned file. The attacker is uid 1000 on a client of its own: it may
//! open the victim for reading (which gives it a READ layout and its DS filehandles), and it
//! has a file of its own open for writing (which gives it a valid write stateid).

use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use mds::Config;
use nfs_proto::nfs4::attr::FileAttrs;
use nfs_proto::nfs4::*;
use testkit::cluster::Cluster;
use testkit::prelude::*;

const VICTIM: &[u8] = b"root's bytes, not to be overwritten";

async fn cluster() -> Cluster {
    Cluster::builder()
        .data_servers(3)
        .configure(|c: &mut Config| {
            c.cluster.layouts = true;
            // The attacks are about layouts and stateids; a delegation would only add recalls.
            c.delegations = false;
        })
        .start()
        .await
}

/// The status of a WRITE (FILE_SYNC) of `data` at offset 0 through DS filehandle `fh` of
/// stripe index 0 of `fileid` under `stateid`, from a fresh data-server client.
async fn ds_io(k: &Cluster, fileid: u64, fh: &NfsFh4, op: NfsArgop4) -> Compound4Res {
    let mds = k.mds();
    let set = mds.store().stripes(fileid).unwrap().expect("a stripe set");
    let ds = mds.stripe_servers(&set).unwrap()[0];
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!("hostile-{}", N.fetch_add(1, Ordering::Relaxed));
    let mut d = k.ds_client(ds, &name).await;
    d.uid = 1000;
    d.call(vec![putfh(fh), op]).await
}

fn ds_write(stateid: Stateid4, data: &'static [u8]) -> NfsArgop4 {
    write_op(
        Stateid4 {
            seqid: 0,
            ..stateid
        },
        0,
        StableHow4::FILE_SYNC4,
        Bytes::from_static(data),
    )
}

/// A READ through a layout just granted, sent again while the data server answers
/// NFS4ERR_NXIO: the LAYOUTGET tells the data servers where the file ends in the
/// background, and until they know they send the client to the MDS.
async fn ds_read_known(k: &Cluster, fileid: u64, fh: &NfsFh4, stateid: Stateid4) -> Compound4Res {
    let last = std::cell::Cell::new(None);
    k.until_async("the data server learns where the file ends", || async {
        let r = ds_io(k, fileid, fh, ds_read(stateid)).await;
        let known = last_status(&r) != NfsStat4::NFS4ERR_NXIO;
        last.set(Some(r));
        known
    })
    .await;
    last.take().expect("read")
}

fn ds_read(stateid: Stateid4) -> NfsArgop4 {
    read_op(
        Stateid4 {
            seqid: 0,
            ..stateid
        },
        0,
        64,
    )
}

/// Root creates `name` with `mode` and writes `VICTIM` at offset 0 through the MDS (which
/// puts it on the data servers), then closes it. Returns its filehandle and file id.
async fn victim(root: &mut Client, name: &str, mode: u32) -> (NfsFh4, u64) {
    let r = root
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name(name),
                unchecked(mode),
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                "root",
            ),
            NfsArgop4::GetFh,
            write_op(
                Stateid4 {
                    seqid: 1,
                    other: [0; 12],
                },
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(VICTIM),
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let fh = getfh_res(&r);
    let open = open_res(&r).stateid;
    let r = root.call(vec![putfh(&fh), close_op(open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let (fileid, _) = fileid_of(root, &fh).await;
    (fh, fileid)
}

/// The first bytes of the file, read through the MDS by root.
async fn contents(root: &mut Client, fh: &NfsFh4) -> Vec<u8> {
    let r = root
        .call(vec![
            putfh(fh),
            read_op(Stateid4::ANONYMOUS, 0, VICTIM.len() as u32),
        ])
        .await;
    read_res(&r).data.to_vec()
}

/// Opens an existing file `name` (no create) with `access` as `c`'s user.
async fn open_existing(c: &mut Client, name: &str, access: u32) -> Compound4Res {
    c.call(vec![
        NfsArgop4::PutRootFh,
        open_op(
            by_name(name),
            Openflag4::NoCreate,
            access,
            OPEN4_SHARE_DENY_NONE,
            "attacker",
        ),
        NfsArgop4::GetFh,
    ])
    .await
}

/// The attacker: uid 1000, with a file of its own open for writing (a valid write stateid
/// of another file). Root makes that file for it (0666) in the root directory, which only
/// root may write.
async fn attacker(root: &mut Client, k: &Cluster, owner: &str) -> (Client, Stateid4) {
    let name = format!("{owner}-own");
    victim(root, &name, 0o666).await;
    let mut a = k.client(owner).await;
    a.uid = 1000;
    let r = open_existing(&mut a, &name, OPEN4_SHARE_ACCESS_BOTH).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    (a, open_res(&r).stateid)
}

/// The attacker opens the victim for reading and takes a READ layout: the DS filehandle of
/// stripe index 0 and the read open's stateid.
async fn read_layout(a: &mut Client, name: &str) -> (NfsFh4, Stateid4) {
    let r = open_existing(a, name, OPEN4_SHARE_ACCESS_READ).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let (fh, open) = (getfh_res(&r), open_res(&r).stateid);
    let r = a
        .call(vec![
            putfh(&fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, open),
        ])
        .await;
    let (_, body) = granted(&r);
    (body.nfl_fh_list[0].clone(), open)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_layout_never_writes_whatever_write_stateid_comes_with_it() {
    let k = cluster().await;
    let mut root = k.client("root").await;
    let (vfh, vid) = victim(&mut root, "victim", 0o644).await;
    let (mut a, own_write) = attacker(&mut root, &k, "same-client").await;
    let (ds_fh, read_open) = read_layout(&mut a, "victim").await;

    // Reading through the READ layout works: that much the MDS allowed.
    let r = ds_read_known(&k, vid, &ds_fh, read_open).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");

    // Its own file's write stateid (same client), then another client's write stateid of the
    // victim itself (root's, as if sniffed): neither is this client's state of this file
    // (the handle names both), and the handle is a READ layout's anyway.
    let r = ds_io(&k, vid, &ds_fh, ds_write(own_write, b"PWNED")).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    let rooted = open_existing(&mut root, "victim", OPEN4_SHARE_ACCESS_BOTH).await;
    let root_write = open_res(&rooted).stateid;
    let r = ds_io(&k, vid, &ds_fh, ds_write(root_write, b"PWNED")).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    // Its read open does not write either (OPENMODE, as on the MDS).
    let r = ds_io(&k, vid, &ds_fh, ds_write(read_open, b"PWNED")).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_OPENMODE, "{r:?}");
    // A COMMIT through a READ layout's handle is refused too.
    let r = ds_io(&k, vid, &ds_fh, commit_op(0, 0)).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PNFS_NO_LAYOUT, "{r:?}");

    // And the MDS gives no RW layout under a read-only open, by the open stateid or by the
    // layout stateid it got.
    let r = a
        .call(vec![
            putfh(&vfh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, read_open),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_OPENMODE, "{r:?}");
    let r = a
        .call(vec![
            putfh(&vfh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, read_open),
        ])
        .await;
    let (got, _) = granted(&r);
    let r = a
        .call(vec![
            putfh(&vfh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, got.logr_stateid),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_OPENMODE, "{r:?}");

    assert_eq!(contents(&mut root, &vfh).await, VICTIM);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_live_rw_layout_of_the_file_writes_and_only_under_the_clients_own_stateid_of_it() {
    let k = cluster().await;
    let mut root = k.client("root").await;
    // Writable by all for now: the attacker may open it for writing and gets an RW layout.
    let (vfh, vid) = victim(&mut root, "shared", 0o666).await;
    let (mut a, own_write) = attacker(&mut root, &k, "closer").await;
    let r = open_existing(&mut a, "shared", OPEN4_SHARE_ACCESS_BOTH).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let rw_open = open_res(&r).stateid;
    let rw_fh = rw_layout_fh(&mut a, &vfh, rw_open).await;
    let r = ds_read_known(&k, vid, &rw_fh, rw_open).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "allowed while open: {r:?}");
    // Even through its live RW layout, only its own stateids of this file are taken: not its
    // other file's, not another client's (root's open of this very file).
    let r = ds_io(&k, vid, &rw_fh, ds_write(own_write, b"PWNED")).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");
    let rooted = open_existing(&mut root, "shared", OPEN4_SHARE_ACCESS_BOTH).await;
    let r = ds_io(
        &k,
        vid,
        &rw_fh,
        ds_write(open_res(&rooted).stateid, b"PWNED"),
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_STATEID, "{r:?}");

    // A READ layout's handles do not write, even with this client's write open of the file.
    let r = a
        .call(vec![
            putfh(&vfh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_READ, rw_open),
        ])
        .await;
    let (held, read_body) = granted(&r);
    let r = ds_io(
        &k,
        vid,
        &read_body.nfl_fh_list[0],
        ds_write(rw_open, b"PWNED"),
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PNFS_NO_LAYOUT, "{r:?}");

    // The layout returned, its handles die on the data servers (pushed in the background, as
    // closed stateids are: soon, and for good), while the open stateid lives on.
    let r = a
        .call(vec![
            putfh(&vfh),
            layoutreturn_op(
                Layoutiomode4::LAYOUTIOMODE4_ANY,
                return_file(held.logr_stateid),
            ),
        ])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let mut reads = 0;
    k.until_async("the returned layout's handle refused", || {
        reads += 1;
        async {
            let r = ds_io(&k, vid, &rw_fh, ds_read(rw_open)).await;
            if last_status(&r) == NfsStat4::NFS4ERR_PNFS_NO_LAYOUT {
                return true;
            }
            assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
            false
        }
    })
    .await;
    let r = ds_io(&k, vid, &rw_fh, ds_write(rw_open, b"PWNED")).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PNFS_NO_LAYOUT, "{r:?}");
    // Nor does it tell the object's size any more.
    let size = NfsArgop4::GetAttr(GetAttrArgs {
        attr_request: Bitmap4::from_bits([nfs_proto::nfs4::attr::FATTR4_SIZE]),
    });
    let r = ds_io(&k, vid, &rw_fh, size).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PNFS_NO_LAYOUT, "{r:?}");
    eprintln!("a returned layout's handles were refused at read {reads}");

    // A new layout works again; then the owner takes write access away and the attacker
    // closes (its layout goes with the last CLOSE: return-on-close), keeping its other file
    // open for a valid write stateid.
    let rw_fh = rw_layout_fh(&mut a, &vfh, rw_open).await;
    let r = ds_read_known(&k, vid, &rw_fh, rw_open).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = root
        .call(vec![
            putfh(&vfh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::ANONYMOUS,
                obj_attributes: fattr(&FileAttrs {
                    mode: Some(0o600),
                    ..FileAttrs::default()
                }),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = a.call(vec![putfh(&vfh), close_op(rw_open)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    k.until_async(
        "the closed layout's handle refused (still reads)",
        || async { ds_io(&k, vid, &rw_fh, ds_read(rw_open)).await.status != NfsStat4::NFS4_OK },
    )
    .await;
    for stateid in [own_write, rw_open] {
        let r = ds_io(&k, vid, &rw_fh, ds_write(stateid, b"PWNED")).await;
        assert_ne!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    }
    // Nor does another file's RW layout open the victim: the attacker's own file's handles
    // name its own objects, and a handle's object is under its MAC.
    let own = open_existing(&mut a, "closer-own", OPEN4_SHARE_ACCESS_BOTH).await;
    let (own_fh, own_open) = (getfh_res(&own), open_res(&own).stateid);
    let r = a
        .call(vec![
            putfh(&own_fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, own_open),
        ])
        .await;
    let (_, own_body) = granted(&r);
    let mut forged = own_body.nfl_fh_list[0].0.to_vec();
    forged[4..12].copy_from_slice(&vid.to_be_bytes());
    let r = ds_io(
        &k,
        vid,
        &NfsFh4(Bytes::from(forged)),
        ds_write(own_open, b"PWNED"),
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BADHANDLE, "{r:?}");

    assert_eq!(contents(&mut root, &vfh).await, VICTIM);
}
