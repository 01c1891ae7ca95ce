//! OPEN, CLOSE, locks, READ, WRITE and COMMIT on the in-memory cluster (RFC 8881 sections
//! 18.2, 18.3, 18.10-18.12, 18.16, 18.18, 18.22, 18.32, and 8.4.2 for the grace period).

use bytes::Bytes;
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

// ---------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_write_and_read_back_a_mebibyte_and_a_byte_with_every_stable_how() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("data").await;
        let f = open_in_root(&mut c, "big", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
        let content = Bytes::from(pattern((1 << 20) + 1));
        let piece = 200_000;
        let hows = [
            StableHow4::UNSTABLE4,
            StableHow4::DATA_SYNC4,
            StableHow4::FILE_SYNC4,
        ];
        let mut offset = 0;
        let mut i = 0;
        while offset < content.len() {
            let end = (offset + piece).min(content.len());
            let how = hows[i % 3];
            let r = c
                .call(vec![
                    putfh(&f.fh),
                    write_op(f.stateid, offset as u64, how, content.slice(offset..end)),
                ])
                .await;
            let w = write_res(&r);
            assert_eq!(w.count as usize, end - offset);
            assert!(w.committed.0 >= how.0, "committed at least what was asked");
            offset = end;
            i += 1;
        }
        let r = c.call(vec![putfh(&f.fh), commit_op(0, 0)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert_eq!(fileid_of(&mut c, &f.fh).await.1, content.len() as u64);

        let mut got = Vec::new();
        loop {
            let r = c
                .call(vec![
                    putfh(&f.fh),
                    read_op(f.stateid, got.len() as u64, 300_000),
                ])
                .await;
            let rd = read_res(&r);
            got.extend_from_slice(&rd.data);
            if rd.eof {
                break;
            }
            assert!(!rd.data.is_empty(), "a read before eof returns data");
        }
        assert_eq!(got.len(), content.len());
        assert!(got == content[..], "data read back is what was written");
        // Past the end: empty and eof.
        let r = c
            .call(vec![putfh(&f.fh), read_op(f.stateid, 5 << 20, 10)])
            .await;
        let rd = read_res(&r);
        assert!(rd.eof && rd.data.is_empty());
    })
    .await;
}

#[tokio::test]
async fn write_verifier_is_the_same_for_two_writes_and_a_commit() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("verf").await;
        let f = open_in_root(&mut c, "v", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
        let w1 = write_res(
            &c.call(vec![
                putfh(&f.fh),
                write_op(
                    f.stateid,
                    0,
                    StableHow4::UNSTABLE4,
                    Bytes::from_static(b"one"),
                ),
            ])
            .await,
        );
        let w2 = write_res(
            &c.call(vec![
                putfh(&f.fh),
                write_op(
                    f.stateid,
                    3,
                    StableHow4::UNSTABLE4,
                    Bytes::from_static(b"two"),
                ),
            ])
            .await,
        );
        let r = c.call(vec![putfh(&f.fh), commit_op(0, 6)]).await;
        let Some(NfsResop4::Commit(CommitRes::Ok(cm))) = r.resarray.last() else {
            panic!("COMMIT failed: {r:?}")
        };
        assert_eq!(w1.writeverf, w2.writeverf);
        assert_eq!(w1.writeverf, cm.writeverf);
    })
    .await;
}

#[tokio::test]
async fn open_then_write_with_the_current_stateid_in_one_compound() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("current").await;
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(
                    by_name("cur"),
                    unchecked(0o644),
                    OPEN4_SHARE_ACCESS_BOTH,
                    0,
                    "o1",
                ),
                write_op(
                    Stateid4::CURRENT,
                    0,
                    StableHow4::FILE_SYNC4,
                    Bytes::from_static(b"hello"),
                ),
                read_op(Stateid4::CURRENT, 0, 100),
                close_op(Stateid4::CURRENT),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let Some(NfsResop4::Read(ReadRes::Ok(rd))) = r.resarray.get(4) else {
            panic!("{r:?}")
        };
        assert_eq!(&rd.data[..], b"hello");
        assert!(rd.eof);
    })
    .await;
}

#[tokio::test]
async fn read_with_the_stateid_of_a_closed_file_is_a_bad_stateid() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("closed").await;
        let f = open_in_root(&mut c, "c", OPEN4_SHARE_ACCESS_READ, 0, "o1").await;
        let r = c.call(vec![putfh(&f.fh), close_op(f.stateid)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let r = c.call(vec![putfh(&f.fh), read_op(f.stateid, 0, 10)]).await;
        assert!(
            matches!(
                r.status,
                NfsStat4::NFS4ERR_BAD_STATEID | NfsStat4::NFS4ERR_OLD_STATEID
            ),
            "{r:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn write_through_a_read_only_open_is_openmode() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("ro").await;
        let f = open_in_root(&mut c, "r", OPEN4_SHARE_ACCESS_READ, 0, "o1").await;
        let r = c
            .call(vec![
                putfh(&f.fh),
                write_op(
                    f.stateid,
                    0,
                    StableHow4::FILE_SYNC4,
                    Bytes::from_static(b"x"),
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_OPENMODE);
    })
    .await;
}

#[tokio::test]
async fn anonymous_stateid_io_is_refused_while_an_open_denies_it() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut a = s.client("deny-a").await;
        let f = open_in_root(
            &mut a,
            "d",
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_WRITE,
            "o1",
        )
        .await;
        let mut b = s.client("deny-b").await;
        let r = b
            .call(vec![
                putfh(&f.fh),
                write_op(
                    Stateid4::default(),
                    0,
                    StableHow4::FILE_SYNC4,
                    Bytes::from_static(b"x"),
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_LOCKED);
        let r = b
            .call(vec![putfh(&f.fh), read_op(Stateid4::default(), 0, 1)])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "reads are not denied: {r:?}");
    })
    .await;
}

#[tokio::test]
async fn write_and_read_of_a_directory_are_isdir() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("dirio").await;
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                read_op(Stateid4::default(), 0, 1),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_ISDIR);
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(
                    OpenClaim4::Fh,
                    Openflag4::NoCreate,
                    OPEN4_SHARE_ACCESS_READ,
                    0,
                    "o",
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_ISDIR);
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// OPEN
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn guarded_create_of_an_existing_file_is_exist() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("guarded").await;
    open_in_root(&mut c, "g", OPEN4_SHARE_ACCESS_READ, 0, "o1").await;
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("g"),
                Openflag4::Create(Createhow4::Guarded(mode_attrs(0o600))),
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o1",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_EXIST);
    // And without OPEN4_CREATE a missing name is NOENT.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("missing"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o1",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOENT);
}

#[tokio::test]
async fn exclusive4_1_retry_with_the_same_verifier_returns_the_same_file() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("excl").await;
    let how = |verf: [u8; 8]| {
        Openflag4::Create(Createhow4::Exclusive41(Creatverfattr {
            cva_verf: verf,
            cva_attrs: mode_attrs(0o640),
        }))
    };
    let call = |verf| {
        vec![
            NfsArgop4::PutRootFh,
            open_op(by_name("x"), how(verf), OPEN4_SHARE_ACCESS_BOTH, 0, "o1"),
            NfsArgop4::GetFh,
        ]
    };
    let r1 = c.call(call([5; 8])).await;
    assert_eq!(r1.status, NfsStat4::NFS4_OK, "{r1:?}");
    assert!(open_res(&r1).attrset.contains(FATTR4_MODE));
    let cinfo = open_res(&r1).cinfo;
    assert!(
        cinfo.after > cinfo.before,
        "the create changed the directory"
    );
    let r2 = c.call(call([5; 8])).await;
    assert_eq!(r2.status, NfsStat4::NFS4_OK, "{r2:?}");
    assert_eq!(getfh_res(&r1), getfh_res(&r2));
    let r3 = c.call(call([6; 8])).await;
    assert_eq!(r3.status, NfsStat4::NFS4ERR_EXIST);
    // A size is not an attribute an exclusive create may carry.
    let sized = Openflag4::Create(Createhow4::Exclusive41(Creatverfattr {
        cva_verf: [7; 8],
        cva_attrs: fattr(&FileAttrs {
            size: Some(0),
            ..FileAttrs::default()
        }),
    }));
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(by_name("y"), sized, OPEN4_SHARE_ACCESS_BOTH, 0, "o1"),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_INVAL);
}

#[tokio::test]
async fn unchecked_create_with_size_zero_truncates_an_existing_file() {
    Cluster::alone_and_striped(async |s: &Cluster| {
        let mut c = s.client("trunc").await;
        let f = open_in_root(&mut c, "t", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
        c.call(vec![
            putfh(&f.fh),
            write_op(
                f.stateid,
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(b"0123456789"),
            ),
        ])
        .await;
        assert_eq!(fileid_of(&mut c, &f.fh).await.1, 10);
        let size0 = Openflag4::Create(Createhow4::Unchecked(fattr(&FileAttrs {
            size: Some(0),
            ..FileAttrs::default()
        })));
        // Without write access a truncating open is INVAL.
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(
                    by_name("t"),
                    size0.clone(),
                    OPEN4_SHARE_ACCESS_READ,
                    0,
                    "o2",
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_INVAL);
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(by_name("t"), size0, OPEN4_SHARE_ACCESS_BOTH, 0, "o2"),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        assert!(open_res(&r).attrset.contains(FATTR4_SIZE));
        assert_eq!(fileid_of(&mut c, &f.fh).await.1, 0);
        let r = c.call(vec![putfh(&f.fh), read_op(f.stateid, 0, 10)]).await;
        let rd = read_res(&r);
        assert!(rd.eof && rd.data.is_empty());
    })
    .await;
}

#[tokio::test]
async fn share_deny_conflict_between_two_clients_is_share_denied() {
    let s = Cluster::mds_alone().await;
    let mut a = s.client("share-a").await;
    let mut b = s.client("share-b").await;
    open_in_root(
        &mut a,
        "s",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_WRITE,
        "oa",
    )
    .await;
    let r = b
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("s"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_WRITE,
                0,
                "ob",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_SHARE_DENIED);
    // Reading is not denied.
    let r = b
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("s"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_READ,
                0,
                "ob",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn open_downgrade_to_read_then_write_is_openmode() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("down").await;
    let f = open_in_root(&mut c, "dn", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
    // A second OPEN by the same owner adds READ-only; the downgrade keeps that one.
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("dn"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o1",
            ),
        ])
        .await;
    let up = open_res(&r).stateid;
    assert_eq!(up.other, f.stateid.other);
    assert_eq!(up.seqid, f.stateid.seqid + 1);
    let r = c
        .call(vec![
            putfh(&f.fh),
            NfsArgop4::OpenDowngrade(OpenDowngradeArgs {
                open_stateid: up,
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_READ,
                share_deny: 0,
            }),
            write_op(
                Stateid4::CURRENT,
                0,
                StableHow4::FILE_SYNC4,
                Bytes::from_static(b"x"),
            ),
        ])
        .await;
    assert_eq!(
        status_of(&r, NfsOpnum4::OP_OPEN_DOWNGRADE),
        NfsStat4::NFS4_OK
    );
    assert_eq!(r.status, NfsStat4::NFS4ERR_OPENMODE);
    // The old seqid is now OLD.
    let r = c.call(vec![putfh(&f.fh), read_op(up, 0, 1)]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_OLD_STATEID);
}

#[tokio::test]
async fn open_by_filehandle_of_an_existing_file() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("byfh").await;
    let f = open_in_root(&mut c, "h", OPEN4_SHARE_ACCESS_READ, 0, "o1").await;
    let r = c
        .call(vec![
            putfh(&f.fh),
            open_op(
                OpenClaim4::Fh,
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o2",
            ),
            NfsArgop4::GetFh,
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    assert_eq!(getfh_res(&r), f.fh);
    assert_ne!(open_res(&r).stateid.other, f.stateid.other);
    assert_ne!(open_res(&r).rflags & OPEN4_RESULT_LOCKTYPE_POSIX, 0);
    // Creating is only for opens by name.
    let r = c
        .call(vec![
            putfh(&f.fh),
            open_op(
                OpenClaim4::Fh,
                unchecked(0o644),
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o2",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_INVAL);
}

#[tokio::test]
async fn delegation_claims_are_answered_without_delegations() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("deleg").await;
    let f = open_in_root(&mut c, "dl", OPEN4_SHARE_ACCESS_READ, 0, "o1").await;
    let claim = |claim| {
        vec![
            putfh(&f.fh),
            open_op(claim, Openflag4::NoCreate, OPEN4_SHARE_ACCESS_READ, 0, "o1"),
        ]
    };
    let r = c.call(claim(OpenClaim4::DelegCurFh(f.stateid))).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_BAD_STATEID);
    // No previous instance of this client held a delegation of it.
    let r = c.call(claim(OpenClaim4::DelegPrevFh)).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_RECLAIM_BAD);
    // Outside a grace period a reclaim has no grace.
    let r = c
        .call(claim(OpenClaim4::Previous(
            OpenDelegationType4::OPEN_DELEGATE_NONE,
        )))
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NO_GRACE);
}

#[tokio::test]
async fn owner_may_open_a_file_it_just_created_whatever_the_mode_others_may_not() {
    let s = Cluster::mds_alone().await;
    let mut root = s.client("perm-root").await;
    let r = root
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::default(),
                obj_attributes: mode_attrs(0o777),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let mut u = s.client("perm-user").await;
    u.uid = 1000;
    let r = u
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("mine"),
                unchecked(0o400),
                OPEN4_SHARE_ACCESS_BOTH,
                0,
                "o1",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    // Opening it again for writing is no longer a create: the mode rules.
    let r = u
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("mine"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_WRITE,
                0,
                "o2",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
    let mut other = s.client("perm-other").await;
    other.uid = 1001;
    let r = other
        .call(vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("mine"),
                Openflag4::NoCreate,
                OPEN4_SHARE_ACCESS_READ,
                0,
                "o3",
            ),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
}

// ---------------------------------------------------------------------------------------------
// Locks
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn lock_conflict_between_two_clients_is_denied_with_the_holder_until_unlocked() {
    let s = Cluster::mds_alone().await;
    let mut a = s.client("lock-a").await;
    let mut b = s.client("lock-b").await;
    let fa = open_in_root(&mut a, "l", OPEN4_SHARE_ACCESS_BOTH, 0, "oa").await;
    let fb = open_in_root(&mut b, "l", OPEN4_SHARE_ACCESS_BOTH, 0, "ob").await;
    let r = a
        .call(vec![
            putfh(&fa.fh),
            lock_new(&fa, "la", NfsLockType4::WRITE_LT, 0, 100),
        ])
        .await;
    let la = lock_stateid(&r);
    let r = b
        .call(vec![
            putfh(&fb.fh),
            lock_new(&fb, "lb", NfsLockType4::WRITE_LT, 50, 10),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DENIED);
    let Some(NfsResop4::Lock(LockRes::Denied(d))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    assert_eq!((d.offset, d.length), (0, 100));
    assert_eq!(d.locktype, NfsLockType4::WRITE_LT);
    assert_eq!(&d.owner.owner[..], b"la");
    assert_eq!(d.owner.clientid, a.clientid);
    // LOCKT sees the same.
    let r = b
        .call(vec![
            putfh(&fb.fh),
            NfsArgop4::LockT(LockTArgs {
                locktype: NfsLockType4::READ_LT,
                offset: 99,
                length: 1,
                owner: owner("lb"),
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_DENIED);
    // CLOSE while the lock is held is LOCKS_HELD.
    let r = a.call(vec![putfh(&fa.fh), close_op(fa.stateid)]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_LOCKS_HELD);
    // Unlock, and the other client gets its lock.
    let r = a
        .call(vec![
            putfh(&fa.fh),
            NfsArgop4::LockU(LockUArgs {
                locktype: NfsLockType4::WRITE_LT,
                seqid: 0,
                lock_stateid: la,
                offset: 0,
                length: u64::MAX,
            }),
        ])
        .await;
    let Some(NfsResop4::LockU(LockURes::Ok(la))) = r.resarray.last().cloned() else {
        panic!("LOCKU failed: {r:?}")
    };
    assert_eq!(la.seqid, 2, "LOCKU bumps the seqid LOCK gave");
    let r = b
        .call(vec![
            putfh(&fb.fh),
            lock_new(&fb, "lb", NfsLockType4::WRITE_LT, 50, 10),
        ])
        .await;
    let lb = lock_stateid(&r);
    assert_eq!(lb.seqid, 1);
    // With no locks left, a's lock stateid can be freed and its open closed.
    let Some(NfsResop4::LockU(LockURes::Ok(la2))) = a
        .call(vec![
            putfh(&fa.fh),
            NfsArgop4::LockU(LockUArgs {
                locktype: NfsLockType4::WRITE_LT,
                seqid: 0,
                lock_stateid: la,
                offset: 0,
                length: 1,
            }),
        ])
        .await
        .resarray
        .last()
        .cloned()
    else {
        panic!("second LOCKU")
    };
    let r = a
        .call(vec![NfsArgop4::TestStateid(TestStateidArgs {
            ts_stateids: vec![la2, fa.stateid, lb],
        })])
        .await;
    let Some(NfsResop4::TestStateid(TestStateidRes::Ok(t))) = r.resarray.last() else {
        panic!("{r:?}")
    };
    assert_eq!(
        t.tsr_status_codes,
        vec![
            NfsStat4::NFS4_OK,
            NfsStat4::NFS4_OK,
            NfsStat4::NFS4ERR_BAD_STATEID
        ],
        "another client's stateid is bad"
    );
    let r = a
        .call(vec![NfsArgop4::FreeStateid(FreeStateidArgs {
            fsa_stateid: la2,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = a.call(vec![putfh(&fa.fh), close_op(fa.stateid)]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn release_lockowner_is_not_an_nfsv4_1_operation() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("rlo").await;
    let r = c
        .call(vec![NfsArgop4::ReleaseLockOwner(ReleaseLockOwnerArgs {
            lock_owner: owner("x"),
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOTSUPP);
}

// ---------------------------------------------------------------------------------------------
// Restart: durability and the grace period
// ---------------------------------------------------------------------------------------------

/// A whole server restart: the first MDS (server, connections, reaper) stops, which closes
/// its stores, and a second one, with a grace period, opens the same data directory.
#[tokio::test]
async fn after_a_restart_synced_data_is_intact_and_only_reclaims_are_granted_in_grace() {
    let dir = tempfile::tempdir().unwrap();
    let synced = Bytes::from(pattern(300_000));
    let committed = Bytes::from(pattern(70_000));
    let mut s = Cluster::builder()
        .data_servers(0)
        .lease(60)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .start()
        .await;
    let (fh, verf1) = {
        let mut c = s.client("restart-client").await;
        let f = open_in_root(&mut c, "kept", OPEN4_SHARE_ACCESS_BOTH, 0, "o1").await;
        write_res(
            &c.call(vec![
                putfh(&f.fh),
                write_op(f.stateid, 0, StableHow4::FILE_SYNC4, synced.clone()),
            ])
            .await,
        );
        let w = write_res(
            &c.call(vec![
                putfh(&f.fh),
                write_op(
                    f.stateid,
                    synced.len() as u64,
                    StableHow4::UNSTABLE4,
                    committed.clone(),
                ),
            ])
            .await,
        );
        let r = c.call(vec![putfh(&f.fh), commit_op(0, 0)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        (f.fh, w.writeverf)
    };
    s.restart_mds_with(|cfg| cfg.grace_time = 60).await;
    {
        let mut c = s
            .client_with(&Setup::new("restart-client").reclaiming())
            .await;
        // A new open waits for the grace period.
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(
                    by_name("other"),
                    unchecked(0o644),
                    OPEN4_SHARE_ACCESS_BOTH,
                    0,
                    "o1",
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_GRACE);
        // A client that was not there before has nothing to reclaim.
        let mut stranger = s.client_with(&Setup::new("stranger").reclaiming()).await;
        let r = stranger
            .call(vec![putfh(&fh), reclaim_op(OPEN4_SHARE_ACCESS_READ, "o1")])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_NO_GRACE);
        // The filehandle still resolves and the open is reclaimed.
        let r = c
            .call(vec![putfh(&fh), reclaim_op(OPEN4_SHARE_ACCESS_BOTH, "o1")])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let f = Opened {
            fh: fh.clone(),
            stateid: open_res(&r).stateid,
        };
        // Locks: a new one waits, a reclaim is granted.
        let r = c
            .call(vec![
                putfh(&fh),
                lock_new(&f, "l1", NfsLockType4::WRITE_LT, 0, 10),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_GRACE);
        let NfsArgop4::Lock(mut reclaim) = lock_new(&f, "l1", NfsLockType4::WRITE_LT, 0, 10) else {
            unreachable!()
        };
        reclaim.reclaim = true;
        let r = c.call(vec![putfh(&fh), NfsArgop4::Lock(reclaim)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        // The FILE_SYNC data and the COMMITted data survived.
        let total = synced.len() + committed.len();
        let mut got = Vec::new();
        while got.len() < total {
            let rd = read_res(
                &c.call(vec![
                    putfh(&fh),
                    read_op(f.stateid, got.len() as u64, 200_000),
                ])
                .await,
            );
            got.extend_from_slice(&rd.data);
            if rd.eof {
                break;
            }
        }
        assert_eq!(got.len(), total);
        assert!(got[..synced.len()] == synced[..]);
        assert!(got[synced.len()..] == committed[..]);
        // The write verifier changed with the restart.
        let w = write_res(
            &c.call(vec![
                putfh(&fh),
                write_op(
                    f.stateid,
                    total as u64,
                    StableHow4::UNSTABLE4,
                    Bytes::from_static(b"!"),
                ),
            ])
            .await,
        );
        assert_ne!(w.writeverf, verf1);
        // Once the only previous client completed its reclaims, the grace period is over.
        let r = c
            .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
                rca_one_fs: false,
            })])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
        let r = c
            .call(vec![
                NfsArgop4::PutRootFh,
                open_op(
                    by_name("other"),
                    unchecked(0o644),
                    OPEN4_SHARE_ACCESS_BOTH,
                    0,
                    "o1",
                ),
            ])
            .await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    }
}

/// RFC 8881 section 18.51.3 (pynfs RECC3): a client with a new client ID sends
/// RECLAIM_COMPLETE before its first non-reclaim lock; until then new opens and locks are
/// NFS4ERR_GRACE, with no grace period running.
#[tokio::test]
async fn new_opens_wait_for_the_clients_reclaim_complete() {
    let s = Cluster::mds_alone().await;
    let mut c = s
        .client_with(&Setup::new("no-reclaim-complete").reclaiming())
        .await;
    let create = || {
        vec![
            NfsArgop4::PutRootFh,
            open_op(
                by_name("early"),
                unchecked(0o644),
                OPEN4_SHARE_ACCESS_BOTH,
                0,
                "o1",
            ),
        ]
    };
    let r = c.call(create()).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_GRACE, "{r:?}");
    let r = c
        .call(vec![NfsArgop4::ReclaimComplete(ReclaimCompleteArgs {
            rca_one_fs: false,
        })])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let r = c.call(create()).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}
