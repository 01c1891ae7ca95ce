//! I/O on a data server over in-process streams: WRITE (every stable_how), READ and COMMIT through a DS
//! filehandle into the object (file id, stripe index), the write verifier, GETATTR, and
//! filehandles that are not this cluster's DS filehandles.

mod support;

use std::time::Duration;

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use pfs_core::ObjectId;
use support::*;
use testkit::prelude::*;

fn write_ok(r: &Compound4Res) -> WriteResOk {
    match r.resarray.last() {
        Some(NfsResop4::Write(WriteRes::Ok(ok))) => *ok,
        _ => panic!("WRITE failed: {r:?}"),
    }
}

fn read_ok(r: &Compound4Res) -> ReadResOk {
    match r.resarray.last() {
        Some(NfsResop4::Read(ReadRes::Ok(ok))) => ok.clone(),
        _ => panic!("READ failed: {r:?}"),
    }
}

/// What the MDS's SIZE_HINT would tell data server `d`: file `file` ends at `end` of its
/// object `stripe`, where object and file offsets differ.
fn tell_end(d: &Ds, file: u64, stripe: u32, end: u64) {
    d.ds.ends().learn(&[nfs_proto::control::ObjectEnd {
        object: nfs_proto::control::CtlObject { file, stripe },
        version: 1,
        end,
        same_offsets_below: 0,
    }]);
}

#[tokio::test]
async fn write_read_commit_round_trip_lands_in_the_named_object() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let sid = mds.open_stateid(0x1234, 3);
    let fh = mds.ds_fh(0x1234, 2);
    let unit: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();

    let w = write_ok(
        &c.call(vec![
            putfh(&fh),
            write_op(sid, 0, StableHow4::UNSTABLE4, &unit),
        ])
        .await,
    );
    assert_eq!(w.count as usize, unit.len());
    let verifier = w.writeverf;
    for (stable, at) in [
        (StableHow4::DATA_SYNC4, 70_000),
        (StableHow4::FILE_SYNC4, 140_000),
    ] {
        let w = write_ok(
            &c.call(vec![putfh(&fh), write_op(sid, at, stable, &unit)])
                .await,
        );
        // Synced either way, and never FILE_SYNC4 from a data server: that would tell the
        // client the MDS knows the new size, and it would skip LAYOUTCOMMIT.
        assert_eq!(w.committed, StableHow4::DATA_SYNC4, "{w:?}");
        assert_eq!(w.writeverf, verifier, "one verifier per DS start");
    }
    let r = c.call(vec![putfh(&fh), commit_op(0, 0)]).await;
    let Some(NfsResop4::Commit(CommitRes::Ok(done))) = r.resarray.last() else {
        panic!("COMMIT failed: {r:?}")
    };
    assert_eq!(done.writeverf, verifier);

    let got = read_ok(&c.call(vec![putfh(&fh), read_op(sid, 69_990, 20)]).await);
    assert_eq!(&got.data[..10], &unit[69_990..]);
    assert_eq!(&got.data[10..], &unit[..10]);
    assert!(!got.eof);
    // Past the object's end a DS cannot tell a hole of the file from its end until the MDS
    // tells it where the file ends (data_server::ends): the client reads through the MDS.
    let r = c.call(vec![putfh(&fh), read_op(sid, 209_000, 4096)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NXIO, "{r:?}");
    // Told (the file ends past this object's end, where offsets differ), the rest is a
    // hole: zeros, and no eof.
    tell_end(&d, 0x1234, 2, 300_000);
    let tail = read_ok(&c.call(vec![putfh(&fh), read_op(sid, 209_000, 4096)]).await);
    assert_eq!(tail.data.len(), 4096);
    assert_eq!(&tail.data[..1000], &unit[69_000..]);
    assert!(tail.data[1000..].iter().all(|&b| b == 0));
    assert!(!tail.eof);

    // The bytes are object (file 0x1234, stripe 2) of the DS's store, and no other.
    let store = d.ds.objects();
    let id = ObjectId {
        file: 0x1234,
        stripe: 2,
    };
    assert_eq!(store.size(id).unwrap(), 210_000);
    assert_eq!(
        store.read(id, 140_000, 70_000).unwrap().data,
        Bytes::from(unit.clone())
    );
    assert_eq!(
        store
            .size(ObjectId {
                file: 0x1234,
                stripe: 0
            })
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn reading_an_object_never_written_reads_zeros() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let sid = mds.open_stateid(77, 1);
    let r = c
        .call(vec![putfh(&mds.ds_fh(77, 0)), read_op(sid, 0, 4096)])
        .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NXIO, "{r:?}");
    tell_end(&d, 77, 0, 1 << 20);
    let got = read_ok(
        &c.call(vec![putfh(&mds.ds_fh(77, 0)), read_op(sid, 0, 4096)])
            .await,
    );
    assert_eq!(got.data.len(), 4096);
    assert!(got.data.iter().all(|&b| b == 0));
    assert!(!got.eof);
}

#[tokio::test]
async fn a_restarted_data_server_has_a_new_write_verifier_and_keeps_committed_data() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let sid = mds.open_stateid(9, 3);
    let fh = mds.ds_fh(9, 1);
    let mut c = d.client("c").await;
    let before = write_ok(
        &c.call(vec![
            putfh(&fh),
            write_op(sid, 0, StableHow4::UNSTABLE4, b"kept"),
        ])
        .await,
    );
    let r = c.call(vec![putfh(&fh), commit_op(0, 0)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    let again = start_ds_in(1, Duration::from_secs(90), d.dir).await;
    let mut c = again.client("c").await;
    let after = write_ok(
        &c.call(vec![
            putfh(&fh),
            write_op(sid, 4, StableHow4::UNSTABLE4, b"!"),
        ])
        .await,
    );
    assert_ne!(
        before.writeverf, after.writeverf,
        "the client must re-send what it wrote unstable and did not see committed"
    );
    // The new process knows no file's end: it learns it again from the MDS.
    tell_end(&again, 9, 1, 10);
    let got = read_ok(&c.call(vec![putfh(&fh), read_op(sid, 0, 10)]).await);
    assert_eq!(&got.data[..5], b"kept!");
    assert_eq!(&got.data[5..], &[0; 5]);
}

#[tokio::test]
async fn a_write_larger_than_max_io_is_cut_short_as_the_rfc_allows() {
    let opts = data_server::DsOptions {
        max_io: 64 << 10,
        ..data_server::DsOptions::new(1)
    };
    let d = start_ds_with(opts, tempfile::tempdir().unwrap()).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let max = d.ds.options().max_io as usize;
    let w = write_ok(
        &c.call(vec![
            putfh(&mds.ds_fh(3, 0)),
            write_op(
                mds.open_stateid(3, 2),
                0,
                StableHow4::FILE_SYNC4,
                vec![1u8; max + 10],
            ),
        ])
        .await,
    );
    assert_eq!(w.count as usize, max);
}

#[tokio::test]
async fn getattr_reports_the_object_size_and_the_few_ds_attributes() {
    let d = start_ds(4, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let fh = mds.ds_fh(21, 3);
    write_ok(
        &c.call(vec![
            putfh(&fh),
            write_op(mds.open_stateid(21, 3), 100, StableHow4::FILE_SYNC4, b"abc"),
        ])
        .await,
    );
    let r = c
        .call(vec![
            putfh(&fh),
            NfsArgop4::GetAttr(GetAttrArgs {
                attr_request: Bitmap4::from_bits([
                    FATTR4_SUPPORTED_ATTRS,
                    FATTR4_TYPE,
                    FATTR4_CHANGE,
                    FATTR4_SIZE,
                    FATTR4_FSID,
                    FATTR4_FILEID,
                    FATTR4_MODE,
                ]),
            }),
        ])
        .await;
    let Some(NfsResop4::GetAttr(GetAttrRes::Ok(ok))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    let a = FileAttrs::from_fattr(&ok.obj_attributes).unwrap();
    assert_eq!(a.size, Some(103));
    assert_eq!(a.r#type, Some(NfsFtype4::NF4REG));
    assert_eq!(a.fileid, Some(21));
    assert_eq!(a.fsid, Some(Fsid4 { major: 4, minor: 1 }));
    assert_eq!(a.change, None, "not supported on a DS");
    assert_eq!(a.mode, None, "not supported on a DS");
    let supported = a.supported_attrs.unwrap();
    assert!(supported.contains(FATTR4_SIZE) && !supported.contains(FATTR4_MODE));
}

#[tokio::test]
async fn a_forged_or_foreign_filehandle_is_badhandle() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let good = mds.ds_fh(5, 0).0.to_vec();
    let mut forged = good.clone();
    forged[11] ^= 1; // another file id under the old MAC
    let mut mds_kind = good.clone();
    mds_kind[1] = 1; // an MDS object handle's kind
    let other_cluster = cluster::ds_fh::DsFhCodec::new([9; 32])
        .encode(cluster::ds_fh::DsFh {
            stripe: 0,
            fileid: 5,
            generation: 1,
            rw: true,
            layout: mds.layout_stateid(5),
            clientid: support::CLIENT,
        })
        .0
        .to_vec();
    for bad in [forged, mds_kind, other_cluster, good[..32].to_vec(), vec![]] {
        let r = c.call(vec![putfh(&NfsFh4(Bytes::from(bad.clone())))]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BADHANDLE, "{bad:?}");
    }
    let r = c.call(vec![putfh(&NfsFh4(Bytes::from(good)))]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn io_without_a_filehandle_is_nofilehandle() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let r = c.call(vec![read_op(mds.open_stateid(1, 1), 0, 10)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOFILEHANDLE);
}

#[tokio::test]
async fn read_plus_sends_holes_in_and_past_the_object_as_holes() {
    let d = start_ds(1, Duration::from_secs(90)).await;
    let mut mds = Mds::new(MDS_EPOCH);
    let mut c = d.client("c").await;
    let sid = mds.open_stateid(0x77, 3);
    let fh = mds.ds_fh(0x77, 1);
    const MIB: u64 = 1 << 20;
    for (at, byte) in [(0, b'a'), (MIB, b'b')] {
        write_ok(
            &c.call(vec![
                putfh(&fh),
                write_op(sid, at, StableHow4::FILE_SYNC4, [byte; 4096]),
            ])
            .await,
        );
    }
    tell_end(&d, 0x77, 1, 2 * MIB);
    let read_plus = |offset| {
        NfsArgop4::ReadPlus(ReadPlusArgs {
            rpa_stateid: sid,
            rpa_offset: offset,
            rpa_count: MIB as u32,
        })
    };
    let contents = |r: &Compound4Res| match r.resarray.last() {
        Some(NfsResop4::ReadPlus(ReadPlusRes::Ok(ok))) => ok.clone(),
        _ => panic!("READ_PLUS failed: {r:?}"),
    };
    let hole = |di_offset, di_length| {
        ReadPlusContent::Hole(DataInfo4 {
            di_offset,
            di_length,
        })
    };
    let data = |d_offset, byte| {
        ReadPlusContent::Data(Data4 {
            d_offset,
            d_data: Bytes::from(vec![byte; 4096]),
        })
    };
    // A hole inside the object (the file system's own), then one past its end (the file
    // goes on to 2 MiB on other data servers' stripes or in holes).
    let got = contents(&c.call_minor(2, vec![putfh(&fh), read_plus(0)]).await);
    assert_eq!(
        got.rpr_contents,
        vec![data(0, b'a'), hole(4096, MIB - 4096)]
    );
    assert!(!got.rpr_eof);
    let got = contents(&c.call_minor(2, vec![putfh(&fh), read_plus(MIB)]).await);
    assert_eq!(
        got.rpr_contents,
        vec![data(MIB, b'b'), hole(MIB + 4096, MIB - 4096)]
    );
    assert!(!got.rpr_eof);
    // NFSv4.2 only.
    let r = c.call(vec![putfh(&fh), read_plus(0)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP);
}
