//! Tests of the NFSv4.0 operations' arguments and results.

use super::*;
use crate::xdr::{from_bytes, to_bytes};

crate::roundtrip_tests!(
    nfs_lock_type4: NfsLockType4,
    stable_how4: StableHow4,
    createmode4: Createmode4,
    opentype4: Opentype4,
    open_claim_type4: OpenClaimType4,
    access_args: AccessArgs,
    access_res_ok: AccessResOk,
    access_res: AccessRes,
    close_args: CloseArgs,
    close_res: CloseRes,
    commit_args: CommitArgs,
    commit_res_ok: CommitResOk,
    commit_res: CommitRes,
    createtype4: Createtype4,
    create_args: CreateArgs,
    create_res_ok: CreateResOk,
    create_res: CreateRes,
    deleg_purge_args: DelegPurgeArgs,
    deleg_purge_res: DelegPurgeRes,
    deleg_return_args: DelegReturnArgs,
    deleg_return_res: DelegReturnRes,
    get_attr_args: GetAttrArgs,
    get_attr_res_ok: GetAttrResOk,
    get_attr_res: GetAttrRes,
    get_fh_res_ok: GetFhResOk,
    get_fh_res: GetFhRes,
    link_args: LinkArgs,
    link_res_ok: LinkResOk,
    link_res: LinkRes,
    open_to_lock_owner4: OpenToLockOwner4,
    exist_lock_owner4: ExistLockOwner4,
    locker4: Locker4,
    lock_args: LockArgs,
    lock_denied: LockDenied,
    lock_res_ok: LockResOk,
    lock_res: LockRes,
    lock_t_args: LockTArgs,
    lock_t_res: LockTRes,
    lock_u_args: LockUArgs,
    lock_u_res: LockURes,
    lookup_args: LookupArgs,
    lookup_res: LookupRes,
    lookup_p_res: LookupPRes,
    n_verify_args: NVerifyArgs,
    n_verify_res: NVerifyRes,
    creatverfattr: Creatverfattr,
    createhow4: Createhow4,
    openflag4: Openflag4,
    open_claim_delegate_cur4: OpenClaimDelegateCur4,
    open_claim4: OpenClaim4,
    open_args: OpenArgs,
    open_res_ok: OpenResOk,
    open_res: OpenRes,
    open_attr_args: OpenAttrArgs,
    open_attr_res: OpenAttrRes,
    open_confirm_args: OpenConfirmArgs,
    open_confirm_res_ok: OpenConfirmResOk,
    open_confirm_res: OpenConfirmRes,
    open_downgrade_args: OpenDowngradeArgs,
    open_downgrade_res_ok: OpenDowngradeResOk,
    open_downgrade_res: OpenDowngradeRes,
    put_fh_args: PutFhArgs,
    put_fh_res: PutFhRes,
    put_pub_fh_res: PutPubFhRes,
    put_root_fh_res: PutRootFhRes,
    read_args: ReadArgs,
    read_res_ok: ReadResOk,
    read_res: ReadRes,
    read_dir_args: ReadDirArgs,
    entry4: Entry4,
    dirlist4: Dirlist4,
    read_dir_res_ok: ReadDirResOk,
    read_dir_res: ReadDirRes,
    read_link_res_ok: ReadLinkResOk,
    read_link_res: ReadLinkRes,
    remove_args: RemoveArgs,
    remove_res_ok: RemoveResOk,
    remove_res: RemoveRes,
    rename_args: RenameArgs,
    rename_res_ok: RenameResOk,
    rename_res: RenameRes,
    renew_args: RenewArgs,
    renew_res: RenewRes,
    restore_fh_res: RestoreFhRes,
    save_fh_res: SaveFhRes,
    sec_info_args: SecInfoArgs,
    set_attr_args: SetAttrArgs,
    set_attr_res: SetAttrRes,
    cb_client4: CbClient4,
    nfs_client_id4: NfsClientId4,
    set_client_id_args: SetClientIdArgs,
    set_client_id_res_ok: SetClientIdResOk,
    set_client_id_res: SetClientIdRes,
    set_client_id_confirm_args: SetClientIdConfirmArgs,
    set_client_id_confirm_res: SetClientIdConfirmRes,
    verify_args: VerifyArgs,
    verify_res: VerifyRes,
    write_args: WriteArgs,
    write_res_ok: WriteResOk,
    write_res: WriteRes,
    release_lock_owner_args: ReleaseLockOwnerArgs,
    release_lock_owner_res: ReleaseLockOwnerRes,
    deleg_claim4: DelegClaim4,
    want_delegation_args: WantDelegationArgs,
    want_delegation_res: WantDelegationRes,
    illegal_res: IllegalRes,
);

/// Big-endian words to bytes.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_be_bytes()).collect()
}

fn entry(cookie: u64, name: &str) -> Entry4 {
    Entry4 {
        cookie,
        name: name.into(),
        attrs: Fattr4 {
            attrmask: Bitmap4(vec![1 << 4]),
            attr_vals: Bytes::from(vec![0, 0, 0, 0, 0, 0, 0x10, 0]),
        },
    }
}

#[test]
fn readdir_reply_with_three_entries_is_a_value_follows_list() {
    let res = ReadDirRes::Ok(ReadDirResOk {
        cookieverf: [9; 8],
        reply: Dirlist4 {
            entries: vec![entry(3, "a"), entry(4, "bc"), entry(5, "def")],
            eof: true,
        },
    });
    let mut want = words(&[0]); // NFS4_OK
    want.extend([9u8; 8]); // cookieverf
    for (cookie, name) in [(3u32, "a"), (4, "bc"), (5, "def")] {
        want.extend(words(&[1])); // value follows
        want.extend(words(&[0, cookie])); // cookie (hyper)
        want.extend(words(&[name.len() as u32]));
        let mut n = name.as_bytes().to_vec();
        n.resize(4, 0); // names here are shorter than 4 bytes: pad to one word
        want.extend(n);
        want.extend(words(&[1, 1 << 4, 8])); // attrmask<1>, attr_vals<8>
        want.extend([0, 0, 0, 0, 0, 0, 0x10, 0]);
    }
    want.extend(words(&[0])); // no more entries
    want.extend(words(&[1])); // eof
    let got = to_bytes(&res);
    assert_eq!(&got[..], &want[..]);
    assert_eq!(from_bytes::<ReadDirRes>(got).unwrap(), res);

    // The empty list is just the FALSE bool and eof.
    let empty = Dirlist4 {
        entries: vec![],
        eof: false,
    };
    assert_eq!(&to_bytes(&empty)[..], &words(&[0, 0])[..]);
}

#[test]
fn long_directory_listing_decodes_without_recursion() {
    let list = Dirlist4 {
        entries: (0..100_000).map(|i| entry(i, "x")).collect(),
        eof: false,
    };
    let b = to_bytes(&list);
    assert_eq!(from_bytes::<Dirlist4>(b).unwrap(), list);
}

#[test]
fn dirlist_with_a_bad_value_follows_bool_is_refused() {
    let mut b = to_bytes(&Dirlist4 {
        entries: vec![entry(1, "a")],
        eof: true,
    })
    .to_vec();
    b[3] = 2; // the first "value follows" is neither TRUE nor FALSE
    let e = from_bytes::<Dirlist4>(Bytes::from(b)).unwrap_err();
    assert_eq!(e.kind, crate::xdr::DecodeErrorKind::BadBool(2));
    assert_eq!(e.what, "Dirlist4.entries");
}

/// OPEN4args laid out by hand from RFC 8881 section 18.16 / the XDR.
#[test]
fn open_args_with_claim_null_matches_the_rfc_layout() {
    let args = OpenArgs {
        seqid: 7,
        share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner: StateOwner4 {
            clientid: 0x0102_0304_0506_0708,
            owner: Bytes::from_static(b"owner"),
        },
        openhow: Openflag4::Create(Createhow4::Guarded(Fattr4 {
            attrmask: Bitmap4(vec![0, 1 << (33 - 32)]), // FATTR4_MODE
            attr_vals: Bytes::from_static(&[0, 0, 0x01, 0xa4]), // 0644
        })),
        claim: OpenClaim4::Null("file.txt".into()),
    };
    #[rustfmt::skip]
        let want: &[u8] = &[
            0, 0, 0, 7,                 // seqid
            0, 0, 0x04, 0x03,           // share_access: BOTH | WANT_NO_DELEG
            0, 0, 0, 0,                 // share_deny: NONE
            1, 2, 3, 4, 5, 6, 7, 8,     // owner.clientid
            0, 0, 0, 5,                 // owner.owner length
            b'o', b'w', b'n', b'e', b'r', 0, 0, 0,
            0, 0, 0, 1,                 // openhow: OPEN4_CREATE
            0, 0, 0, 1,                 // createhow4: GUARDED4
            0, 0, 0, 2,                 // attrmask: 2 words
            0, 0, 0, 0,
            0, 0, 0, 2,                 // bit 33 (mode)
            0, 0, 0, 4,                 // attr_vals length
            0, 0, 0x01, 0xa4,           // mode 0644
            0, 0, 0, 0,                 // claim: CLAIM_NULL
            0, 0, 0, 8,                 // file length
            b'f', b'i', b'l', b'e', b'.', b't', b'x', b't',
        ];
    let got = to_bytes(&args);
    assert_eq!(&got[..], want);
    assert_eq!(
        from_bytes::<OpenArgs>(Bytes::from_static(want)).unwrap(),
        args
    );
}

#[test]
fn open_claims_new_in_v41_have_their_numbers() {
    assert_eq!(&to_bytes(&OpenClaim4::Fh)[..], &words(&[4])[..]);
    let s = Stateid4 {
        seqid: 2,
        other: [0xab; 12],
    };
    let mut want = words(&[5, 2]);
    want.extend([0xab; 12]);
    assert_eq!(&to_bytes(&OpenClaim4::DelegCurFh(s))[..], &want[..]);
    assert_eq!(&to_bytes(&OpenClaim4::DelegPrevFh)[..], &words(&[6])[..]);
    let c = Createhow4::Exclusive41(Creatverfattr {
        cva_verf: [1; 8],
        cva_attrs: Fattr4::default(),
    });
    let mut want = words(&[3]);
    want.extend([1; 8]);
    want.extend(words(&[0, 0]));
    assert_eq!(&to_bytes(&c)[..], &want[..]);
    // An unknown claim type has no arm in the XDR.
    assert!(from_bytes::<OpenClaim4>(Bytes::from(words(&[7]))).is_err());
}

#[test]
fn lock_denied_arm_carries_the_conflicting_lock() {
    let denied = LockDenied {
        offset: 10,
        length: 20,
        locktype: NfsLockType4::WRITE_LT,
        owner: StateOwner4 {
            clientid: 5,
            owner: Bytes::from_static(b"lo"),
        },
    };
    let res = LockRes::Denied(denied.clone());
    assert_eq!(res.status(), NfsStat4::NFS4ERR_DENIED);
    let mut want = words(&[10010, 0, 10, 0, 20, 2, 0, 5, 2]);
    want.extend([b'l', b'o', 0, 0]);
    assert_eq!(&to_bytes(&res)[..], &want[..]);
    // LOCKT's result has the same arm.
    assert_eq!(&to_bytes(&LockTRes::Denied(denied))[..], &want[..]);
    assert_eq!(&to_bytes(&LockTRes::Ok)[..], &words(&[0])[..]);
    let err = LockRes::Err(NfsStat4::NFS4ERR_GRACE);
    assert_eq!(&to_bytes(&err)[..], &words(&[10013])[..]);
    assert_eq!(err.status(), NfsStat4::NFS4ERR_GRACE);
}

#[test]
fn setattr_result_carries_attrsset_even_on_error() {
    let r = SetAttrRes {
        status: NfsStat4::NFS4ERR_PERM,
        attrsset: Bitmap4(vec![1 << 4]),
    };
    assert_eq!(&to_bytes(&r)[..], &words(&[1, 1, 1 << 4])[..]);
    assert_eq!(r.status(), NfsStat4::NFS4ERR_PERM);
}

#[test]
fn large_read_and_write_data_travel_as_separate_pieces() {
    let data = Bytes::from(vec![0x5a; 4096]);
    let res = ReadRes::Ok(ReadResOk {
        eof: false,
        data: data.clone(),
    });
    let mut enc = Encoder::new();
    res.encode(&mut enc);
    let pieces = enc.into_pieces();
    assert_eq!(pieces.len(), 2);
    assert_eq!(pieces[1].as_ptr(), data.as_ptr(), "payload not copied");

    let args = WriteArgs {
        stateid: Stateid4::ANONYMOUS,
        offset: 0,
        stable: StableHow4::FILE_SYNC4,
        data: data.clone(),
    };
    let mut enc = Encoder::new();
    args.encode(&mut enc);
    let pieces = enc.into_pieces();
    assert_eq!(pieces.len(), 2);
    assert_eq!(pieces[1].as_ptr(), data.as_ptr(), "payload not copied");
}

#[test]
fn createtype_keeps_unknown_types() {
    let t = Createtype4::Other(NfsFtype4::NF4REG);
    let b = to_bytes(&t);
    assert_eq!(&b[..], &words(&[1])[..]);
    assert_eq!(from_bytes::<Createtype4>(b).unwrap(), t);
    let l = Createtype4::Lnk("target".into());
    let mut want = words(&[5, 6]);
    want.extend(b"target\0\0");
    assert_eq!(&to_bytes(&l)[..], &want[..]);
}
