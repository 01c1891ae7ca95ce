//! Extended attributes (RFC 8276: GETXATTR, SETXATTR, LISTXATTRS, REMOVEXATTR, the
//! `xattr_support` attribute and the ACCESS xattr bits) on the in-memory cluster.

use bytes::Bytes;
use mds::config::{Access, ClientRule};
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use testkit::cluster::{Cluster, StoreKind};
use testkit::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// SEQUENCE and `ops` in minor version 2, where the xattr operations live.
async fn call42(c: &mut Client, ops: Vec<NfsArgop4>) -> Compound4Res {
    c.call_minor(2, ops).await
}

fn key(name: &str) -> Utf8String {
    Utf8String::from(name)
}

fn set_op(how: SetxattrOption4, name: &str, value: &[u8]) -> NfsArgop4 {
    NfsArgop4::SetXattr(SetXattrArgs {
        sxa_option: how,
        sxa_key: key(name),
        sxa_value: Bytes::copy_from_slice(value),
    })
}

fn get_op(name: &str) -> NfsArgop4 {
    NfsArgop4::GetXattr(GetXattrArgs {
        gxa_name: key(name),
    })
}

fn remove_op(name: &str) -> NfsArgop4 {
    NfsArgop4::RemoveXattr(RemoveXattrArgs {
        rxa_name: key(name),
    })
}

fn list_op(cookie: u64, maxcount: u32) -> NfsArgop4 {
    NfsArgop4::ListXattrs(ListXattrsArgs {
        lxa_cookie: cookie,
        lxa_maxcount: maxcount,
    })
}

fn attrs_of(r: &Compound4Res) -> FileAttrs {
    match r.resarray.last() {
        Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) => {
            FileAttrs::from_fattr(&a.obj_attributes).unwrap()
        }
        _ => panic!("GETATTR failed: {r:?}"),
    }
}

/// Gives the object to `uid` (SETATTR owner, as root).
async fn chown(c: &mut Client, fh: &NfsFh4, uid: u32) {
    let a = FileAttrs {
        owner: Some(Utf8String::from(uid.to_string())),
        ..FileAttrs::default()
    };
    let was = std::mem::replace(&mut c.uid, 0);
    let r = c
        .call(vec![
            putfh(fh),
            NfsArgop4::SetAttr(SetAttrArgs {
                stateid: Stateid4::default(),
                obj_attributes: a.to_fattr(&a.mask()),
            }),
        ])
        .await;
    c.uid = was;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

/// Creates `name` in the root as the client's current user (OPEN + CLOSE); its handle.
async fn create_file(c: &mut Client, name: &str, mode: u32) -> NfsFh4 {
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::Open(OpenArgs {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: 0,
                owner: StateOwner4 {
                    clientid: 0,
                    owner: Bytes::from_static(b"creator"),
                },
                openhow: Openflag4::Create(Createhow4::Unchecked(mode_attrs(mode))),
                claim: OpenClaim4::Null(key(name)),
            }),
            NfsArgop4::GetFh,
            NfsArgop4::Close(CloseArgs {
                seqid: 0,
                open_stateid: Stateid4::CURRENT,
            }),
        ])
        .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    r.resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::GetFh(GetFhRes::Ok(ok)) => Some(ok.object.clone()),
            _ => None,
        })
        .unwrap()
}

/// CREATE of a directory or symlink in the root; its handle.
async fn create_obj(c: &mut Client, name: &str, objtype: Createtype4, mode: u32) -> NfsFh4 {
    let r = c
        .call(vec![
            NfsArgop4::PutRootFh,
            NfsArgop4::Create(CreateArgs {
                objtype,
                objname: key(name),
                createattrs: mode_attrs(mode),
            }),
            NfsArgop4::GetFh,
        ])
        .await;
    match r.resarray.last() {
        Some(NfsResop4::GetFh(GetFhRes::Ok(ok))) => ok.object.clone(),
        _ => panic!("CREATE failed: {r:?}"),
    }
}

fn cinfo_of(r: &Compound4Res) -> ChangeInfo4 {
    r.resarray
        .iter()
        .find_map(|x| match x {
            NfsResop4::SetXattr(SetXattrRes::Ok(ok)) => Some(ok.sxr_info),
            NfsResop4::RemoveXattr(RemoveXattrRes::Ok(ok)) => Some(ok.rxr_info),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no SETXATTR/REMOVEXATTR result: {r:?}"))
}

fn value_of(r: &Compound4Res) -> Bytes {
    match r.resarray.last() {
        Some(NfsResop4::GetXattr(GetXattrRes::Ok(ok))) => ok.gxr_value.clone(),
        _ => panic!("GETXATTR failed: {r:?}"),
    }
}

fn list_of(r: &Compound4Res) -> ListXattrsResOk {
    match r.resarray.last() {
        Some(NfsResop4::ListXattrs(ListXattrsRes::Ok(ok))) => ok.clone(),
        _ => panic!("LISTXATTRS failed: {r:?}"),
    }
}

fn names(l: &ListXattrsResOk) -> Vec<String> {
    l.lxr_names
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

async fn change_of(c: &mut Client, fh: &NfsFh4) -> u64 {
    let r = call42(c, vec![putfh(fh), getattr_op(&[FATTR4_CHANGE])]).await;
    attrs_of(&r).change.unwrap()
}

// ---------------------------------------------------------------------------------------------
// xattr_support and minor versions
// ---------------------------------------------------------------------------------------------

/// `xattr_support` (RFC 8276) and `open_arguments` (RFC 9754) are NFSv4.2 extensions.
#[tokio::test]
async fn xattr_support_and_open_arguments_are_reported_in_minor_version_2_only() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("support").await;
    let ask = [
        FATTR4_SUPPORTED_ATTRS,
        FATTR4_XATTR_SUPPORT,
        FATTR4_OPEN_ARGUMENTS,
    ];
    let r = call42(&mut c, vec![NfsArgop4::PutRootFh, getattr_op(&ask)]).await;
    let a = attrs_of(&r);
    let supported = a.supported_attrs.unwrap();
    assert!(supported.contains(FATTR4_XATTR_SUPPORT));
    assert!(supported.contains(FATTR4_OPEN_ARGUMENTS));
    assert!(!supported.contains(FATTR4_TIME_DELEG_MODIFY));
    assert_eq!(a.xattr_support, Some(true));
    let oa = a.open_arguments.unwrap();
    // Every claim type, the PREV ones included; every create mode and share deny.
    assert_eq!(
        oa.oa_open_claim.iter().collect::<Vec<_>>(),
        (0..=6).collect::<Vec<_>>()
    );
    assert_eq!(
        oa.oa_create_mode.iter().collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        oa.oa_share_deny.iter().collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(oa.oa_share_access.iter().collect::<Vec<_>>(), vec![1, 2, 3]);
    // Wants: ANY_DELEG, NO_DELEG, CANCEL; no delegated timestamps, no OPEN_XOR_DELEGATION.
    assert_eq!(
        oa.oa_share_access_want.iter().collect::<Vec<_>>(),
        vec![3, 4, 5]
    );

    let r = c
        .call_minor(1, vec![NfsArgop4::PutRootFh, getattr_op(&ask)])
        .await;
    let a = attrs_of(&r);
    let supported = a.supported_attrs.unwrap();
    assert!(!supported.contains(FATTR4_XATTR_SUPPORT));
    assert!(!supported.contains(FATTR4_OPEN_ARGUMENTS));
    assert_eq!(a.xattr_support, None, "not an NFSv4.1 attribute");
    assert_eq!(a.open_arguments, None, "not an NFSv4.1 attribute");
}

#[tokio::test]
async fn xattr_operations_are_notsupp_in_minor_version_1() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("v41").await;
    let f = create_file(&mut c, "f", 0o644).await;
    for op in [
        set_op(SetxattrOption4::SETXATTR4_EITHER, "a", b"1"),
        get_op("a"),
        list_op(0, 4096),
        remove_op("a"),
    ] {
        let r = c.call_minor(1, vec![putfh(&f), op]).await;
        assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOTSUPP, "{r:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// SETXATTR / GETXATTR / REMOVEXATTR
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn setxattr_options_follow_rfc_8276_section_8_4_2() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("options").await;
    let f = create_file(&mut c, "f", 0o644).await;
    use SetxattrOption4 as O;
    let st = |r: &Compound4Res| last_status(r);

    let r = call42(&mut c, vec![putfh(&f), get_op("attr1")]).await;
    assert_eq!(st(&r), NfsStat4::NFS4ERR_NOXATTR);
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_REPLACE, "attr1", b"v")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4ERR_NOXATTR);
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_CREATE, "attr1", b"v1")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_CREATE, "attr1", b"v2")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4ERR_EXIST);
    let r = call42(&mut c, vec![putfh(&f), get_op("attr1")]).await;
    assert_eq!(value_of(&r), "v1");
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_REPLACE, "attr1", b"v2")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4_OK);
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_EITHER, "attr1", b"v3")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4_OK);
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(O::SETXATTR4_EITHER, "attr2", b"")],
    )
    .await;
    assert_eq!(st(&r), NfsStat4::NFS4_OK);
    let r = call42(&mut c, vec![putfh(&f), get_op("attr1")]).await;
    assert_eq!(value_of(&r), "v3");
    let r = call42(&mut c, vec![putfh(&f), get_op("attr2")]).await;
    assert_eq!(value_of(&r), "", "an empty value is a value");
    let r = call42(
        &mut c,
        vec![putfh(&f), set_op(SetxattrOption4(3), "attr1", b"x")],
    )
    .await;
    assert_eq!(
        st(&r),
        NfsStat4::NFS4ERR_INVAL,
        "an option the RFC does not define"
    );
}

#[tokio::test]
async fn changes_report_the_files_change_attribute_before_and_after() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("cinfo").await;
    let f = create_file(&mut c, "f", 0o644).await;
    let before = change_of(&mut c, &f).await;
    let r = call42(
        &mut c,
        vec![
            putfh(&f),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
        ],
    )
    .await;
    let ci = cinfo_of(&r);
    let after = change_of(&mut c, &f).await;
    assert!(ci.atomic);
    assert_eq!((ci.before, ci.after), (before, after));
    assert!(after > before);

    let r = call42(&mut c, vec![putfh(&f), remove_op("a")]).await;
    let ci = cinfo_of(&r);
    let last = change_of(&mut c, &f).await;
    assert_eq!((ci.before, ci.after), (after, last));
    assert!(last > after);
    // A GETXATTR changes nothing.
    call42(&mut c, vec![putfh(&f), get_op("a")]).await;
    assert_eq!(change_of(&mut c, &f).await, last);
}

#[tokio::test]
async fn removexattr_removes_and_a_missing_name_is_noxattr() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("remove").await;
    let f = create_file(&mut c, "f", 0o644).await;
    let r = call42(&mut c, vec![putfh(&f), remove_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOXATTR);
    call42(
        &mut c,
        vec![
            putfh(&f),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
        ],
    )
    .await;
    let r = call42(&mut c, vec![putfh(&f), remove_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = call42(&mut c, vec![putfh(&f), get_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOXATTR);
}

#[tokio::test]
async fn values_up_to_64_kib_are_kept_and_larger_ones_are_xattr2big() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("big").await;
    let f = create_file(&mut c, "f", 0o644).await;
    let v: Vec<u8> = (0..65_536u32).map(|i| (i * 13) as u8).collect();
    let r = call42(
        &mut c,
        vec![
            putfh(&f),
            set_op(SetxattrOption4::SETXATTR4_EITHER, "big", &v),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = call42(&mut c, vec![putfh(&f), get_op("big")]).await;
    assert_eq!(value_of(&r), v);
    let mut bigger = v.clone();
    bigger.push(1);
    let r = call42(
        &mut c,
        vec![
            putfh(&f),
            set_op(SetxattrOption4::SETXATTR4_EITHER, "big", &bigger),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_XATTR2BIG);
}

#[tokio::test]
async fn names_follow_the_user_namespace_limits() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("names").await;
    let f = create_file(&mut c, "f", 0o644).await;
    let set = |n: &str| set_op(SetxattrOption4::SETXATTR4_EITHER, n, b"v");
    let longest = "n".repeat(250); // "user." + 250 = XATTR_NAME_MAX
    let r = call42(&mut c, vec![putfh(&f), set(&longest)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = call42(&mut c, vec![putfh(&f), set(&format!("{longest}n"))]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NAMETOOLONG);
    let r = call42(&mut c, vec![putfh(&f), set("")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_INVAL);
    let r = call42(&mut c, vec![putfh(&f), set("a\0b")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BADNAME);
    let r = call42(&mut c, vec![putfh(&f), get_op("")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_INVAL);
}

// ---------------------------------------------------------------------------------------------
// LISTXATTRS
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn listxattrs_pages_by_maxcount_and_resumes_at_its_cookie() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("list").await;
    let f = create_file(&mut c, "f", 0o644).await;
    let r = call42(&mut c, vec![putfh(&f), list_op(0, 8192)]).await;
    let l = list_of(&r);
    assert!(l.lxr_eof && l.lxr_names.is_empty(), "{l:?}");

    let keys = ["user1", "attr2", "attr3", "attr4", "attr5", "attr6"];
    for k in keys {
        let r = call42(
            &mut c,
            vec![
                putfh(&f),
                set_op(SetxattrOption4::SETXATTR4_CREATE, k, b"value"),
            ],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    }
    let r = call42(&mut c, vec![putfh(&f), list_op(0, 8192)]).await;
    let all = list_of(&r);
    assert_eq!(names(&all), keys, "creation order");
    assert!(all.lxr_eof);

    // cookie 8 + count 4 + eof 4, and each 5-byte name takes 4 + 8: two fit in 40.
    let mut got = Vec::new();
    let mut cookie = 0;
    loop {
        let r = call42(&mut c, vec![putfh(&f), list_op(cookie, 16 + 2 * 12)]).await;
        let l = list_of(&r);
        assert!(l.lxr_names.len() <= 2, "{l:?}");
        got.extend(names(&l));
        cookie = l.lxr_cookie;
        if l.lxr_eof {
            break;
        }
    }
    assert_eq!(got, keys);

    let r = call42(&mut c, vec![putfh(&f), list_op(0, 16 + 11)]).await;
    assert_eq!(
        last_status(&r),
        NfsStat4::NFS4ERR_TOOSMALL,
        "not even one name fits"
    );
    let r = call42(&mut c, vec![putfh(&f), list_op(0, 8)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_TOOSMALL);
    let r = call42(&mut c, vec![putfh(&f), list_op(u64::MAX, 8192)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_BAD_COOKIE);
}

#[tokio::test]
async fn a_listxattrs_cookie_survives_the_removal_of_its_name() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("cookie").await;
    let f = create_file(&mut c, "f", 0o644).await;
    for k in ["a", "b", "c"] {
        call42(
            &mut c,
            vec![putfh(&f), set_op(SetxattrOption4::SETXATTR4_CREATE, k, b"")],
        )
        .await;
    }
    // "a" alone: 16 + 8.
    let r = call42(&mut c, vec![putfh(&f), list_op(0, 24)]).await;
    let first = list_of(&r);
    assert_eq!(
        (names(&first), first.lxr_eof),
        (vec!["a".to_owned()], false)
    );
    call42(&mut c, vec![putfh(&f), remove_op("a")]).await;
    let r = call42(&mut c, vec![putfh(&f), list_op(first.lxr_cookie, 4096)]).await;
    let rest = list_of(&r);
    assert_eq!(
        (names(&rest), rest.lxr_eof),
        (vec!["b".to_owned(), "c".to_owned()], true)
    );
}

// ---------------------------------------------------------------------------------------------
// Objects, permissions, read-only exports, restarts
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn directories_hold_xattrs_and_symlinks_do_not() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("types").await;
    let d = create_obj(&mut c, "d", Createtype4::Dir, 0o755).await;
    let r = call42(
        &mut c,
        vec![
            putfh(&d),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"dir"),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
    let r = call42(&mut c, vec![putfh(&d), get_op("a")]).await;
    assert_eq!(value_of(&r), "dir");

    let l = create_obj(&mut c, "l", Createtype4::Lnk(Utf8String::from("d")), 0o777).await;
    let r = call42(
        &mut c,
        vec![
            putfh(&l),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"x"),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PERM);
    let r = call42(&mut c, vec![putfh(&l), remove_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PERM);
    let r = call42(&mut c, vec![putfh(&l), get_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_NOXATTR);
    let r = call42(&mut c, vec![putfh(&l), list_op(0, 4096)]).await;
    assert!(list_of(&r).lxr_names.is_empty());
}

#[tokio::test]
async fn changes_need_write_permission_and_reads_need_read_permission() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("perm").await;
    let readable = create_file(&mut c, "readable", 0o644).await;
    let private = create_file(&mut c, "private", 0o600).await;
    chown(&mut c, &readable, 1000).await;
    chown(&mut c, &private, 1000).await;
    c.uid = 1000;
    for f in [&readable, &private] {
        let r = call42(
            &mut c,
            vec![
                putfh(f),
                set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
            ],
        )
        .await;
        assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "the owner may: {r:?}");
    }
    c.uid = 2000;
    let set = set_op(SetxattrOption4::SETXATTR4_EITHER, "a", b"2");
    let r = call42(&mut c, vec![putfh(&readable), set.clone()]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
    let r = call42(&mut c, vec![putfh(&readable), remove_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
    let r = call42(&mut c, vec![putfh(&readable), get_op("a")]).await;
    assert_eq!(
        value_of(&r),
        "1",
        "others may read a 0644 file's attributes"
    );
    let r = call42(&mut c, vec![putfh(&private), get_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
    let r = call42(&mut c, vec![putfh(&private), list_op(0, 4096)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ACCESS);
    c.uid = 0;
    let r = call42(&mut c, vec![putfh(&private), set]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "root may: {r:?}");
}

#[tokio::test]
async fn access_reports_the_xattr_bits_by_mode_in_minor_version_2() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("access").await;
    let f = create_file(&mut c, "f", 0o644).await;
    chown(&mut c, &f, 1000).await;
    c.uid = 1000;
    let xa = ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST;
    let ask = NfsArgop4::Access(AccessArgs {
        access: ACCESS4_READ | xa,
    });
    let res = |r: &Compound4Res| match r.resarray.last() {
        Some(NfsResop4::Access(AccessRes::Ok(ok))) => *ok,
        _ => panic!("ACCESS failed: {r:?}"),
    };
    let owner = res(&call42(&mut c, vec![putfh(&f), ask.clone()]).await);
    assert_eq!(owner.supported, ACCESS4_READ | xa);
    assert_eq!(owner.access, ACCESS4_READ | xa);
    c.uid = 2000;
    let other = res(&call42(&mut c, vec![putfh(&f), ask.clone()]).await);
    assert_eq!(
        other.access,
        ACCESS4_READ | ACCESS4_XAREAD | ACCESS4_XALIST,
        "no XAWRITE without write permission"
    );
    let v41 = res(&c.call_minor(1, vec![putfh(&f), ask]).await);
    assert_eq!(v41.supported, ACCESS4_READ, "the xattr bits are NFSv4.2's");
}

#[tokio::test]
async fn in_a_sticky_directory_only_the_owner_changes_xattrs() {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("sticky").await;
    let d = create_obj(&mut c, "tmp", Createtype4::Dir, 0o1777).await;
    c.uid = 1000;
    let r = call42(
        &mut c,
        vec![
            putfh(&d),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_PERM);
    c.uid = 0;
    let r = call42(
        &mut c,
        vec![
            putfh(&d),
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
}

#[tokio::test]
async fn a_read_only_export_refuses_changes_with_rofs() {
    // The cluster's clients (TEST-NET-2) may only read.
    let s = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .configure(|cfg| {
            cfg.exports[0].clients = vec![ClientRule {
                network: "198.51.100.0/24".into(),
                access: Access::Ro,
                root_squash: false,
            }];
        })
        .start()
        .await;
    let mut c = s.client("ro").await;
    let r = call42(
        &mut c,
        vec![
            NfsArgop4::PutRootFh,
            set_op(SetxattrOption4::SETXATTR4_CREATE, "a", b"1"),
        ],
    )
    .await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ROFS);
    let r = call42(&mut c, vec![NfsArgop4::PutRootFh, remove_op("a")]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4ERR_ROFS);
    let r = call42(&mut c, vec![NfsArgop4::PutRootFh, list_op(0, 4096)]).await;
    assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "reading is fine");
}

#[tokio::test]
async fn acknowledged_xattrs_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Cluster::builder()
        .data_servers(0)
        .lease(10)
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .start()
        .await;
    let (fh, cookie) = {
        let mut c = s.client("restart").await;
        let f = create_file(&mut c, "f", 0o644).await;
        for (k, v) in [("a", "1"), ("b", "2")] {
            let r = call42(
                &mut c,
                vec![
                    putfh(&f),
                    set_op(SetxattrOption4::SETXATTR4_CREATE, k, v.as_bytes()),
                ],
            )
            .await;
            assert_eq!(last_status(&r), NfsStat4::NFS4_OK, "{r:?}");
        }
        let r = call42(&mut c, vec![putfh(&f), list_op(0, 24)]).await;
        (f, list_of(&r).lxr_cookie)
    };
    s.restart_mds().await;
    {
        let mut c = s.client("restart").await;
        let r = call42(&mut c, vec![putfh(&fh), get_op("b")]).await;
        assert_eq!(value_of(&r), "2");
        let r = call42(&mut c, vec![putfh(&fh), list_op(cookie, 4096)]).await;
        assert_eq!(
            names(&list_of(&r)),
            ["b"],
            "the cookie still resumes after \"a\""
        );
    }
}
