//! Directory operations on the in-memory cluster: CREATE, REMOVE, RENAME, LINK, READDIR and
//! READLINK (RFC 8881 sections 18.4, 18.25, 18.26, 18.9, 18.23, 18.24).

use std::collections::HashSet;

use bytes::Bytes;
use mds::store::{CreateHow, CreateSpec, NewObject};
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Utf8String;
use pfs_core::{ObjectId, Stability};
use testkit::cluster::Cluster;
use testkit::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn mode_attrs(mode: u32) -> Fattr4 {
    FileAttrs {
        mode: Some(mode),
        ..FileAttrs::default()
    }
    .to_fattr(&Bitmap4::from_bits([FATTR4_MODE]))
}

fn no_attrs() -> Fattr4 {
    Fattr4::default()
}

fn create(objtype: Createtype4, name: &str, createattrs: Fattr4) -> NfsArgop4 {
    NfsArgop4::Create(CreateArgs {
        objtype,
        objname: Utf8String::from(name),
        createattrs,
    })
}

fn mkdir(name: &str, mode: u32) -> NfsArgop4 {
    create(Createtype4::Dir, name, mode_attrs(mode))
}

fn rename(old: &str, new: &str) -> NfsArgop4 {
    NfsArgop4::Rename(RenameArgs {
        oldname: Utf8String::from(old),
        newname: Utf8String::from(new),
    })
}

fn link(name: &str) -> NfsArgop4 {
    NfsArgop4::Link(LinkArgs {
        newname: Utf8String::from(name),
    })
}

fn readdir(cookie: u64, dircount: u32, maxcount: u32, bits: &[u32]) -> NfsArgop4 {
    NfsArgop4::ReadDir(ReadDirArgs {
        cookie,
        cookieverf: [0; 8],
        dircount,
        maxcount,
        attr_request: Bitmap4::from_bits(bits.iter().copied()),
    })
}

/// PUTROOTFH, LOOKUPs down `path`, then `ops`.
async fn at(c: &mut Client, path: &str, ops: Vec<NfsArgop4>) -> Compound4Res {
    let mut all = vec![NfsArgop4::PutRootFh];
    all.extend(lookups(path));
    all.extend(ops);
    c.call(all).await
}

/// PUTROOTFH, LOOKUPs down `from`, SAVEFH, PUTROOTFH, LOOKUPs down `to`, then `ops`.
async fn from_to(c: &mut Client, from: &str, to: &str, ops: Vec<NfsArgop4>) -> Compound4Res {
    let mut all = vec![NfsArgop4::PutRootFh];
    all.extend(lookups(from));
    all.push(NfsArgop4::SaveFh);
    all.push(NfsArgop4::PutRootFh);
    all.extend(lookups(to));
    all.extend(ops);
    c.call(all).await
}

fn last(r: &Compound4Res) -> &NfsResop4 {
    r.resarray.last().expect("a result")
}

fn attrs_of(r: &Compound4Res) -> FileAttrs {
    let NfsResop4::GetAttr(GetAttrRes::Ok(a)) = last(r) else {
        panic!("GETATTR failed: {r:?}")
    };
    FileAttrs::from_fattr(&a.obj_attributes).unwrap()
}

/// The result of the op before the last one (the last is a GETATTR).
fn second_last(r: &Compound4Res) -> &NfsResop4 {
    &r.resarray[r.resarray.len() - 2]
}

async fn ok(c: &mut Client, path: &str, ops: Vec<NfsArgop4>) -> Compound4Res {
    let r = at(c, path, ops).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    r
}

async fn status(c: &mut Client, path: &str, ops: Vec<NfsArgop4>) -> NfsStat4 {
    at(c, path, ops).await.status
}

/// The file id of `path` (by the store directly).
fn fileid(s: &Cluster, path: &str) -> u64 {
    let mut id = mds::store::ROOT_FILEID;
    for name in path.split('/').filter(|c| !c.is_empty()) {
        id = s.mds().store().lookup(id, name.as_bytes()).unwrap().fileid;
    }
    id
}

/// Makes a regular file `name` in `dir` (OPEN is another module's), owned by `uid`, with
/// `data` in the object store. Returns its file id.
async fn regular_file(s: &Cluster, dir: &str, name: &str, uid: u32, data: &'static [u8]) -> u64 {
    let spec = CreateSpec {
        object: NewObject::Regular(CreateHow::Guarded),
        mode: 0o644,
        uid,
        gid: uid,
    };
    let created = s
        .mds()
        .store()
        .create(fileid(s, dir), name.as_bytes(), spec, s.mds().wall_time())
        .await
        .unwrap();
    let id = created.inode.fileid;
    s.mds()
        .data()
        .write(
            ObjectId::whole(id),
            0,
            &[Bytes::from_static(data)],
            Stability::FileSync,
        )
        .unwrap();
    id
}

fn data_size(s: &Cluster, id: u64) -> u64 {
    s.mds().data().size(ObjectId::whole(id)).unwrap()
}

/// Root makes `/pub` (mode 0777) for other users to work in.
async fn setup() -> (Cluster, Client) {
    let s = Cluster::mds_alone().await;
    let mut c = s.client("dir-ops").await;
    ok(&mut c, "", vec![mkdir("pub", 0o777)]).await;
    (s, c)
}

async fn as_user(s: &Cluster, uid: u32, owner: &str) -> Client {
    let mut c = s.client(owner).await;
    c.uid = uid;
    c
}

// ---------------------------------------------------------------------------------------------
// CREATE
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn create_makes_every_non_regular_type_and_it_becomes_current() {
    let (_s, mut c) = setup().await;
    let dev = Specdata4 {
        specdata1: 8,
        specdata2: 1,
    };
    let cases = [
        (Createtype4::Dir, NfsFtype4::NF4DIR, 0o755, 2),
        (
            Createtype4::Lnk("../target".into()),
            NfsFtype4::NF4LNK,
            0o777,
            1,
        ),
        (Createtype4::Blk(dev), NfsFtype4::NF4BLK, 0o644, 1),
        (Createtype4::Chr(dev), NfsFtype4::NF4CHR, 0o644, 1),
        (Createtype4::Sock, NfsFtype4::NF4SOCK, 0o644, 1),
        (Createtype4::Fifo, NfsFtype4::NF4FIFO, 0o644, 1),
    ];
    for (i, (t, ftype, mode, nlink)) in cases.into_iter().enumerate() {
        let name = format!("obj{i}");
        let r = ok(
            &mut c,
            "pub",
            vec![
                create(t.clone(), &name, no_attrs()),
                getattr_op(&[FATTR4_TYPE, FATTR4_MODE, FATTR4_NUMLINKS, FATTR4_RAWDEV]),
            ],
        )
        .await;
        let NfsResop4::Create(CreateRes::Ok(res)) = second_last(&r) else {
            panic!("{r:?}")
        };
        assert!(res.cinfo.after > res.cinfo.before, "{ftype:?}");
        assert!(res.attrset.is_empty(), "nothing was given");
        let a = attrs_of(&r);
        assert_eq!(a.r#type, Some(ftype));
        assert_eq!(a.mode, Some(mode), "{ftype:?}");
        assert_eq!(a.numlinks, Some(nlink));
        if matches!(ftype, NfsFtype4::NF4BLK | NfsFtype4::NF4CHR) {
            assert_eq!(a.rawdev, Some(dev));
        }
        // The same name again.
        let again = status(&mut c, "pub", vec![create(t, &name, no_attrs())]).await;
        assert_eq!(again, NfsStat4::NFS4ERR_EXIST, "{ftype:?}");
    }
}

#[tokio::test]
async fn create_applies_the_given_attributes_and_reports_them_in_attrset() {
    let (_s, mut c) = setup().await;
    let attrs = FileAttrs {
        mode: Some(0o700),
        owner: Some("1234".into()),
        time_modify_set: Some(Settime4::SetToClientTime(Nfstime4 {
            seconds: 1_000_000,
            nseconds: 5,
        })),
        ..FileAttrs::default()
    };
    let mask = Bitmap4::from_bits([FATTR4_MODE, FATTR4_OWNER, FATTR4_TIME_MODIFY_SET]);
    let r = ok(
        &mut c,
        "pub",
        vec![
            create(Createtype4::Dir, "given", attrs.to_fattr(&mask)),
            getattr_op(&[FATTR4_MODE, FATTR4_OWNER, FATTR4_TIME_MODIFY]),
        ],
    )
    .await;
    let NfsResop4::Create(CreateRes::Ok(res)) = second_last(&r) else {
        panic!("{r:?}")
    };
    assert_eq!(res.attrset, mask);
    let a = attrs_of(&r);
    assert_eq!(a.mode, Some(0o700));
    assert_eq!(a.owner, Some("1234".into()));
    assert_eq!(a.time_modify.map(|t| t.seconds), Some(1_000_000));
}

#[tokio::test]
async fn create_of_a_regular_file_is_badtype() {
    let (_s, mut c) = setup().await;
    let st = status(
        &mut c,
        "pub",
        vec![create(
            Createtype4::Other(NfsFtype4::NF4REG),
            "f",
            no_attrs(),
        )],
    )
    .await;
    assert_eq!(st, NfsStat4::NFS4ERR_BADTYPE);
}

#[tokio::test]
async fn create_checks_names_attributes_and_the_current_object() {
    let (_s, mut c) = setup().await;
    let fifo = |n: &str| create(Createtype4::Fifo, n, no_attrs());
    let long = "x".repeat(256);
    for (name, want) in [
        (".", NfsStat4::NFS4ERR_BADNAME),
        ("..", NfsStat4::NFS4ERR_BADNAME),
        ("a/b", NfsStat4::NFS4ERR_BADNAME),
        ("", NfsStat4::NFS4ERR_INVAL),
        (long.as_str(), NfsStat4::NFS4ERR_NAMETOOLONG),
    ] {
        assert_eq!(
            status(&mut c, "pub", vec![fifo(name)]).await,
            want,
            "{name:?}"
        );
    }
    // 255 bytes is fine.
    ok(&mut c, "pub", vec![fifo(&"y".repeat(255))]).await;
    // A read-only attribute is INVAL.
    let ro = FileAttrs {
        r#type: Some(NfsFtype4::NF4DIR),
        ..FileAttrs::default()
    }
    .to_fattr(&Bitmap4::from_bits([FATTR4_TYPE]));
    let st = status(&mut c, "pub", vec![create(Createtype4::Dir, "ro", ro)]).await;
    assert_eq!(st, NfsStat4::NFS4ERR_INVAL);
    // Under a symlink or a FIFO: NOTDIR.
    ok(
        &mut c,
        "pub",
        vec![create(Createtype4::Lnk("x".into()), "lnk", no_attrs())],
    )
    .await;
    ok(&mut c, "pub", vec![fifo("fifo")]).await;
    for parent in ["pub/lnk", "pub/fifo"] {
        let st = status(&mut c, parent, vec![mkdir("d", 0o755)]).await;
        assert_eq!(st, NfsStat4::NFS4ERR_NOTDIR, "{parent}");
    }
    // Without a current filehandle.
    let r = c.call(vec![mkdir("d", 0o755)]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOFILEHANDLE);
}

#[tokio::test]
async fn create_needs_write_permission_and_only_root_gives_objects_away() {
    let (s, _c) = setup().await;
    let mut u = as_user(&s, 1000, "user-1000").await;
    // The root directory is root's, mode 0755.
    let st = status(&mut u, "", vec![mkdir("mine", 0o755)]).await;
    assert_eq!(st, NfsStat4::NFS4ERR_ACCESS);
    // /pub is 0777: the new directory is the caller's.
    let r = ok(
        &mut u,
        "pub",
        vec![
            mkdir("mine", 0o750),
            getattr_op(&[FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_MODE]),
        ],
    )
    .await;
    let a = attrs_of(&r);
    assert_eq!(a.owner, Some("1000".into()));
    assert_eq!(a.owner_group, Some("1000".into()));
    assert_eq!(a.mode, Some(0o750));
    // Another owner: PERM.
    let give = FileAttrs {
        owner: Some("0".into()),
        ..FileAttrs::default()
    }
    .to_fattr(&Bitmap4::from_bits([FATTR4_OWNER]));
    let st = status(
        &mut u,
        "pub",
        vec![create(Createtype4::Fifo, "given", give)],
    )
    .await;
    assert_eq!(st, NfsStat4::NFS4ERR_PERM);
}

// ---------------------------------------------------------------------------------------------
// READLINK
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn readlink_returns_the_target_and_other_objects_are_wrong_type() {
    let (_s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![create(
            Createtype4::Lnk("/some/where else".into()),
            "l",
            no_attrs(),
        )],
    )
    .await;
    let r = ok(&mut c, "pub/l", vec![NfsArgop4::ReadLink]).await;
    let NfsResop4::ReadLink(ReadLinkRes::Ok(l)) = last(&r) else {
        panic!("{r:?}")
    };
    assert_eq!(l.link, Utf8String::from("/some/where else"));
    // RFC 8881 section 18.24.4.
    let st = status(&mut c, "pub", vec![NfsArgop4::ReadLink]).await;
    assert_eq!(st, NfsStat4::NFS4ERR_WRONG_TYPE);
    // A target that is not UTF-8 is refused at CREATE.
    let bad = Createtype4::Lnk(Utf8String(Bytes::from_static(b"\xff\xfe")));
    let st = status(&mut c, "pub", vec![create(bad, "bad", no_attrs())]).await;
    assert_eq!(st, NfsStat4::NFS4ERR_INVAL);
}

// ---------------------------------------------------------------------------------------------
// REMOVE
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn remove_takes_the_name_and_the_data_of_the_last_link() {
    let (s, mut c) = setup().await;
    let id = regular_file(&s, "pub", "f", 0, b"hello").await;
    assert_eq!(data_size(&s, id), 5);
    let r = ok(&mut c, "pub", vec![remove_op("f")]).await;
    let NfsResop4::Remove(RemoveRes::Ok(res)) = last(&r) else {
        panic!("{r:?}")
    };
    assert!(res.cinfo.after > res.cinfo.before);
    // The data goes in the background once the unlink is durable.
    s.until("the data object is gone", || data_size(&s, id) == 0)
        .await;
    assert_eq!(
        status(&mut c, "pub", vec![remove_op("f")]).await,
        NfsStat4::NFS4ERR_NOENT
    );
    assert_eq!(
        status(&mut c, "pub/f", vec![]).await,
        NfsStat4::NFS4ERR_NOENT
    );
}

#[tokio::test]
async fn remove_of_one_of_two_links_keeps_the_data() {
    let (s, mut c) = setup().await;
    let id = regular_file(&s, "pub", "f", 0, b"hello").await;
    let r = from_to(&mut c, "pub/f", "pub", vec![link("g")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    ok(&mut c, "pub", vec![remove_op("f")]).await;
    assert_eq!(data_size(&s, id), 5);
    let r = ok(&mut c, "pub/g", vec![getattr_op(&[FATTR4_NUMLINKS])]).await;
    assert_eq!(attrs_of(&r).numlinks, Some(1));
}

#[tokio::test]
async fn remove_of_an_open_file_keeps_it_for_its_holder() {
    let (s, mut c) = setup().await;
    let id = regular_file(&s, "pub", "open", 0, b"still here").await;
    let owner = StateOwner4 {
        clientid: c.clientid,
        owner: Bytes::from_static(b"opener"),
    };
    s.mds()
        .tables()
        .opens()
        .open(c.clientid, id, &owner, OPEN4_SHARE_ACCESS_BOTH, 0)
        .unwrap();
    ok(&mut c, "pub", vec![remove_op("open")]).await;
    assert_eq!(data_size(&s, id), 10, "kept while open");
    assert_eq!(s.mds().store().getattr(id).unwrap().nlink, 0, "an orphan");
    assert_eq!(
        s.mds()
            .store()
            .orphans()
            .unwrap()
            .iter()
            .map(|o| o.0)
            .collect::<Vec<_>>(),
        [id]
    );
}

#[tokio::test]
async fn remove_of_a_non_empty_directory_is_notempty() {
    let (_s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("d", 0o755), mkdir("sub", 0o755)]).await;
    assert_eq!(
        status(&mut c, "pub", vec![remove_op("d")]).await,
        NfsStat4::NFS4ERR_NOTEMPTY
    );
    ok(&mut c, "pub/d", vec![remove_op("sub")]).await;
    ok(&mut c, "pub", vec![remove_op("d")]).await;
}

#[tokio::test]
async fn remove_needs_write_permission_on_the_directory() {
    let (s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("closed", 0o755)]).await;
    ok(
        &mut c,
        "pub/closed",
        vec![create(Createtype4::Fifo, "p", no_attrs())],
    )
    .await;
    let mut u = as_user(&s, 1000, "user-1000").await;
    assert_eq!(
        status(&mut u, "pub/closed", vec![remove_op("p")]).await,
        NfsStat4::NFS4ERR_ACCESS
    );
    assert_eq!(
        status(&mut u, "pub", vec![remove_op(".")]).await,
        NfsStat4::NFS4ERR_BADNAME
    );
}

#[tokio::test]
async fn sticky_directory_lets_only_the_owners_remove() {
    let (s, mut c) = setup().await;
    ok(&mut c, "", vec![mkdir("tmp", 0o1777)]).await;
    let mut alice = as_user(&s, 1000, "alice").await;
    let mut bob = as_user(&s, 1001, "bob").await;
    ok(
        &mut alice,
        "tmp",
        vec![
            create(Createtype4::Fifo, "a1", no_attrs()),
            NfsArgop4::PutRootFh,
            lookup("tmp"),
            create(Createtype4::Fifo, "a2", no_attrs()),
        ],
    )
    .await;
    assert_eq!(
        status(&mut bob, "tmp", vec![remove_op("a1")]).await,
        NfsStat4::NFS4ERR_ACCESS
    );
    assert_eq!(
        from_to(&mut bob, "tmp", "tmp", vec![rename("a1", "b1")])
            .await
            .status,
        NfsStat4::NFS4ERR_ACCESS
    );
    ok(&mut alice, "tmp", vec![remove_op("a1")]).await;
    // Root (the directory's owner too) may.
    ok(&mut c, "tmp", vec![remove_op("a2")]).await;
}

// ---------------------------------------------------------------------------------------------
// RENAME
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn rename_within_and_across_directories_reports_both_cinfos() {
    let (_s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![
            mkdir("a", 0o755),
            NfsArgop4::LookupP,
            mkdir("b", 0o755),
            NfsArgop4::LookupP,
            create(Createtype4::Fifo, "x", no_attrs()),
        ],
    )
    .await;
    let r = from_to(&mut c, "pub", "pub", vec![rename("x", "y")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let NfsResop4::Rename(RenameRes::Ok(same)) = last(&r) else {
        panic!()
    };
    assert_eq!(same.source_cinfo, same.target_cinfo);
    assert_eq!(
        status(&mut c, "pub/x", vec![]).await,
        NfsStat4::NFS4ERR_NOENT
    );
    ok(&mut c, "pub/y", vec![]).await;

    let r = from_to(&mut c, "pub", "pub/a", vec![rename("y", "z")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let NfsResop4::Rename(RenameRes::Ok(across)) = last(&r) else {
        panic!()
    };
    assert!(across.source_cinfo.after > across.source_cinfo.before);
    assert!(across.target_cinfo.after > across.target_cinfo.before);
    ok(&mut c, "pub/a/z", vec![]).await;

    // A directory moves with its contents.
    let r = from_to(&mut c, "pub", "pub/b", vec![rename("a", "a2")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    ok(&mut c, "pub/b/a2/z", vec![]).await;
    // And not below itself.
    let r = from_to(&mut c, "pub", "pub/b/a2", vec![rename("b", "inside")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_INVAL);
}

#[tokio::test]
async fn rename_over_a_file_replaces_it_and_removes_its_data() {
    let (s, mut c) = setup().await;
    let old = regular_file(&s, "pub", "old", 0, b"old data").await;
    let new = regular_file(&s, "pub", "new", 0, b"new").await;
    let r = from_to(&mut c, "pub", "pub", vec![rename("new", "old")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    s.until("the replaced file's data went", || data_size(&s, old) == 0)
        .await;
    assert_eq!(data_size(&s, new), 3);
    assert_eq!(fileid(&s, "pub/old"), new);
}

#[tokio::test]
async fn rename_errors() {
    let (s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![
            mkdir("d", 0o755),
            mkdir("sub", 0o755),
            NfsArgop4::LookupP,
            NfsArgop4::LookupP,
            mkdir("closed", 0o755),
            NfsArgop4::LookupP,
            create(Createtype4::Fifo, "f", no_attrs()),
        ],
    )
    .await;
    let cases = [
        ("missing", "x", NfsStat4::NFS4ERR_NOENT),
        ("f", "d", NfsStat4::NFS4ERR_EXIST),
        ("closed", "d", NfsStat4::NFS4ERR_EXIST), // d is not empty
        ("f", "", NfsStat4::NFS4ERR_INVAL),
        ("f", "..", NfsStat4::NFS4ERR_BADNAME),
    ];
    for (old, new, want) in cases {
        let r = from_to(&mut c, "pub", "pub", vec![rename(old, new)]).await;
        assert_eq!(r.status, want, "{old} -> {new}");
    }
    // Onto itself: nothing happens.
    let r = from_to(&mut c, "pub", "pub", vec![rename("f", "f")]).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK);
    // No saved filehandle.
    let r = at(&mut c, "pub", vec![rename("f", "g")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOFILEHANDLE);
    // A user without write permission on the target directory.
    let mut u = as_user(&s, 1000, "user-1000").await;
    ok(
        &mut u,
        "pub",
        vec![create(Createtype4::Fifo, "mine", no_attrs())],
    )
    .await;
    let r = from_to(&mut u, "pub", "pub/closed", vec![rename("mine", "m")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
}

// ---------------------------------------------------------------------------------------------
// LINK
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn link_adds_a_name_and_refuses_directories() {
    let (s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![
            mkdir("d", 0o755),
            NfsArgop4::LookupP,
            mkdir("closed", 0o755),
            NfsArgop4::LookupP,
            create(Createtype4::Fifo, "f", no_attrs()),
        ],
    )
    .await;
    let r = from_to(
        &mut c,
        "pub/f",
        "pub/d",
        vec![link("g"), getattr_op(&[FATTR4_FILEID])],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let NfsResop4::Link(LinkRes::Ok(res)) = second_last(&r) else {
        panic!()
    };
    assert!(res.cinfo.after > res.cinfo.before);
    assert_eq!(
        attrs_of(&r).fileid,
        Some(fileid(&s, "pub/d")),
        "the current filehandle stays the directory"
    );
    let r = ok(
        &mut c,
        "pub/d/g",
        vec![getattr_op(&[FATTR4_NUMLINKS, FATTR4_FILEID])],
    )
    .await;
    assert_eq!(attrs_of(&r).numlinks, Some(2));
    assert_eq!(attrs_of(&r).fileid, Some(fileid(&s, "pub/f")));

    let cases = [
        ("pub/d", "pub", "d2", NfsStat4::NFS4ERR_ISDIR),
        ("pub/f", "pub", "d", NfsStat4::NFS4ERR_EXIST),
        ("pub/f", "pub/f", "x", NfsStat4::NFS4ERR_NOTDIR),
    ];
    for (from, to, name, want) in cases {
        let r = from_to(&mut c, from, to, vec![link(name)]).await;
        assert_eq!(r.status, want, "{from} -> {to}/{name}");
    }
    let r = at(&mut c, "pub", vec![link("x")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOFILEHANDLE);
    let mut u = as_user(&s, 1000, "user-1000").await;
    let r = from_to(&mut u, "pub/f", "pub/closed", vec![link("x")]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
}

// ---------------------------------------------------------------------------------------------
// READDIR
// ---------------------------------------------------------------------------------------------

struct Page {
    entries: Vec<(u64, String, FileAttrs)>,
    eof: bool,
}

async fn read_page(
    c: &mut Client,
    path: &str,
    cookie: u64,
    dircount: u32,
    maxcount: u32,
    bits: &[u32],
) -> Result<Page, NfsStat4> {
    let r = at(c, path, vec![readdir(cookie, dircount, maxcount, bits)]).await;
    match last(&r) {
        NfsResop4::ReadDir(ReadDirRes::Ok(ok)) => {
            assert_eq!(ok.cookieverf, [0; 8]);
            Ok(Page {
                entries: ok
                    .reply
                    .entries
                    .iter()
                    .map(|e| {
                        (
                            e.cookie,
                            e.name.to_string(),
                            FileAttrs::from_fattr(&e.attrs).unwrap(),
                        )
                    })
                    .collect(),
                eof: ok.reply.eof,
            })
        }
        NfsResop4::ReadDir(ReadDirRes::Err(s)) => Err(*s),
        _ => Err(r.status),
    }
}

/// Makes `n` FIFOs named f0000.. in `dir` through the store (one group commit).
async fn many_entries(s: &Cluster, dir: &str, n: usize) {
    let parent = fileid(s, dir);
    let pending: Vec<_> = (0..n)
        .map(|i| {
            let spec = CreateSpec {
                object: NewObject::Fifo,
                mode: 0o644,
                uid: 0,
                gid: 0,
            };
            s.mds().store().create(
                parent,
                format!("f{i:04}").as_bytes(),
                spec,
                s.mds().wall_time(),
            )
        })
        .collect();
    for p in pending {
        p.await.unwrap();
    }
}

#[tokio::test]
async fn readdir_pages_through_2000_entries_with_stable_cookies() {
    let (s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("big", 0o755)]).await;
    many_entries(&s, "pub/big", 2000).await;
    // Each entry with FILEID: 4 + 8 + 4+8 (name) + 4+4 (bitmap) + 4+8 (values) = 44 bytes.
    let maxcount = 36_000;
    let mut cookie = 0;
    let mut pages = Vec::new();
    let mut seen = Vec::new();
    loop {
        let p = read_page(&mut c, "pub/big", cookie, 0, maxcount, &[FATTR4_FILEID])
            .await
            .unwrap();
        assert!(!p.entries.is_empty());
        pages.push((cookie, p.entries.len(), p.eof));
        cookie = p.entries.last().unwrap().0;
        let eof = p.eof;
        seen.extend(p.entries);
        if eof {
            break;
        }
        assert!(pages.len() < 10);
    }
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert_eq!(
        pages.iter().map(|p| p.2).collect::<Vec<_>>(),
        [false, false, true]
    );
    assert_eq!(seen.len(), 2000);
    let names: HashSet<_> = seen.iter().map(|e| e.1.clone()).collect();
    assert_eq!(names.len(), 2000, "no duplicates");
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "cookies increase");
    assert!(seen.iter().all(|e| e.2.fileid.is_some()));

    // The second page again, after removing the entry whose cookie it continues from.
    let (second_from, second_len, _) = pages[1];
    let removed = seen.iter().find(|e| e.0 == second_from).unwrap().1.clone();
    ok(&mut c, "pub/big", vec![remove_op(&removed)]).await;
    let again = read_page(
        &mut c,
        "pub/big",
        second_from,
        0,
        maxcount,
        &[FATTR4_FILEID],
    )
    .await
    .unwrap();
    let first_len = pages[0].1;
    let expected: Vec<_> = seen[first_len..first_len + second_len]
        .iter()
        .map(|e| (e.0, e.1.clone()))
        .collect();
    let got: Vec<_> = again.entries.iter().map(|e| (e.0, e.1.clone())).collect();
    assert_eq!(got, expected, "same cookies, same entries");
}

#[tokio::test]
async fn readdir_of_an_empty_directory_is_eof_and_cookie_verifier_is_not_checked() {
    let (_s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("empty", 0o755)]).await;
    let p = read_page(&mut c, "pub/empty", 0, 0, 1000, &[FATTR4_TYPE])
        .await
        .unwrap();
    assert!(p.entries.is_empty());
    assert!(p.eof);
    let r = at(
        &mut c,
        "pub/empty",
        vec![NfsArgop4::ReadDir(ReadDirArgs {
            cookie: 0,
            cookieverf: [1; 8],
            dircount: 0,
            maxcount: 1000,
            attr_request: Bitmap4::new(),
        })],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK);
}

#[tokio::test]
async fn readdir_returns_the_requested_attributes() {
    let (_s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![
            mkdir("d", 0o755),
            mkdir("sub", 0o700),
            NfsArgop4::LookupP,
            create(Createtype4::Lnk("t".into()), "l", no_attrs()),
        ],
    )
    .await;
    let bits = [
        FATTR4_TYPE,
        FATTR4_MODE,
        FATTR4_RDATTR_ERROR,
        FATTR4_FILEHANDLE,
        FATTR4_SPACE_TOTAL,
        FATTR4_MOUNTED_ON_FILEID,
    ];
    let p = read_page(&mut c, "pub/d", 0, 0, 10_000, &bits)
        .await
        .unwrap();
    assert!(p.eof);
    let by_name: Vec<_> = p.entries.iter().map(|e| (e.1.as_str(), &e.2)).collect();
    assert_eq!(by_name.len(), 2);
    let (name, sub) = by_name[0];
    assert_eq!(name, "sub");
    assert_eq!(sub.r#type, Some(NfsFtype4::NF4DIR));
    assert_eq!(sub.mode, Some(0o700));
    assert_eq!(sub.rdattr_error, Some(NfsStat4::NFS4_OK));
    assert!(sub.filehandle.is_some());
    assert_eq!(by_name[1].1.r#type, Some(NfsFtype4::NF4LNK));
    assert_eq!(by_name[0].1.space_total, by_name[1].1.space_total);
}

#[tokio::test]
async fn readdir_with_room_for_no_entry_is_toosmall() {
    let (s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("d", 0o755)]).await;
    many_entries(&s, "pub/d", 3).await;
    for maxcount in [0, 20, 40] {
        let r = read_page(&mut c, "pub/d", 0, 0, maxcount, &[FATTR4_FILEID]).await;
        assert_eq!(r.err(), Some(NfsStat4::NFS4ERR_TOOSMALL), "{maxcount}");
    }
    // Exactly one entry: 20 fixed + 44.
    let p = read_page(&mut c, "pub/d", 0, 0, 64, &[FATTR4_FILEID])
        .await
        .unwrap();
    assert_eq!(p.entries.len(), 1);
    assert!(!p.eof);
}

#[tokio::test]
async fn readdir_honours_dircount_but_returns_at_least_one_entry() {
    let (s, mut c) = setup().await;
    ok(&mut c, "pub", vec![mkdir("d", 0o755)]).await;
    many_entries(&s, "pub/d", 10).await;
    // Each entry counts 4 + 8 + 4+8 = 24 bytes of dircount.
    let p = read_page(&mut c, "pub/d", 0, 48, 100_000, &[])
        .await
        .unwrap();
    assert_eq!(p.entries.len(), 2);
    let p = read_page(&mut c, "pub/d", 0, 1, 100_000, &[])
        .await
        .unwrap();
    assert_eq!(p.entries.len(), 1);
    let p = read_page(&mut c, "pub/d", 0, 0, 100_000, &[])
        .await
        .unwrap();
    assert_eq!(p.entries.len(), 10);
    assert!(p.eof);
}

#[tokio::test]
async fn readdir_errors() {
    let (s, mut c) = setup().await;
    ok(
        &mut c,
        "pub",
        vec![
            mkdir("private", 0o700),
            NfsArgop4::LookupP,
            create(Createtype4::Fifo, "f", no_attrs()),
        ],
    )
    .await;
    let r = read_page(&mut c, "pub/private", 2, 0, 1000, &[]).await;
    assert_eq!(r.err(), Some(NfsStat4::NFS4ERR_BAD_COOKIE));
    let r = read_page(&mut c, "pub/private", 999, 0, 1000, &[]).await;
    assert_eq!(r.err(), Some(NfsStat4::NFS4ERR_BAD_COOKIE));
    let r = read_page(&mut c, "pub/f", 0, 0, 1000, &[]).await;
    assert_eq!(r.err(), Some(NfsStat4::NFS4ERR_NOTDIR));
    let mut u = as_user(&s, 1000, "user-1000").await;
    let r = read_page(&mut u, "pub/private", 0, 0, 1000, &[]).await;
    assert_eq!(r.err(), Some(NfsStat4::NFS4ERR_ACCESS));
}
