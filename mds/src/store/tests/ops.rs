//! Every namespace operation and its error cases.

use bytes::Bytes;
use nfs_proto::nfs4::attr::{Settime4, TimeHow4};
use nfs_proto::nfs4::{NfsFh4, NfsFtype4, NfsStat4, Nfstime4, Specdata4};

use super::*;

fn stat<T: core::fmt::Debug>(r: Result<T, StoreError>) -> NfsStat4 {
    NfsStat4::from(r.unwrap_err())
}

// ---------------------------------------------------------------------------------------------
// Open, root, getattr

#[test]
fn root_directory_exists_at_first_open() {
    let (_d, s) = fresh();
    let root = s.root().unwrap();
    assert_eq!(root.fileid, ROOT_FILEID);
    assert_eq!(root.ftype, NfsFtype4::NF4DIR);
    assert_eq!((root.mode, root.nlink, root.parent), (0o755, 2, 0));
    assert_eq!(root.birth, t(1));
    assert!(s.readdir(ROOT_FILEID, 0, 10).unwrap().entries.is_empty());
}

#[test]
fn getattr_of_an_unknown_file_id_is_stale() {
    let (_d, s) = fresh();
    assert_eq!(stat(s.getattr(999)), NfsStat4::NFS4ERR_STALE);
}

// ---------------------------------------------------------------------------------------------
// Create

#[test]
fn create_returns_the_new_file_and_the_directory_change_info() {
    let (_d, s) = fresh();
    let before = s.root().unwrap();
    let c = s
        .create(ROOT_FILEID, b"a", file_spec(), t(5))
        .wait()
        .unwrap();
    assert!(c.created);
    let i = &c.inode;
    assert_eq!(i.ftype, NfsFtype4::NF4REG);
    assert_eq!(
        (i.mode, i.uid, i.gid, i.nlink, i.size),
        (0o644, 1000, 100, 1, 0)
    );
    assert_eq!(
        (i.atime, i.mtime, i.ctime, i.birth),
        (t(5), t(5), t(5), t(5))
    );
    assert!(c.cinfo.atomic);
    assert_eq!(c.cinfo.before, before.change);
    assert!(c.cinfo.after > c.cinfo.before);
    let after = s.root().unwrap();
    assert_eq!(after.change, c.cinfo.after);
    assert_eq!((after.mtime, after.ctime), (t(5), t(5)));
    assert_eq!(s.lookup(ROOT_FILEID, b"a").unwrap(), c.inode);
}

#[test]
fn create_makes_every_object_type() {
    let (_d, s) = fresh();
    let dev = Specdata4 {
        specdata1: 8,
        specdata2: 1,
    };
    let cases = [
        ("dir", NewObject::Directory, NfsFtype4::NF4DIR),
        (
            "link",
            NewObject::Symlink(Bytes::from_static(b"../target")),
            NfsFtype4::NF4LNK,
        ),
        ("blk", NewObject::BlockDevice(dev), NfsFtype4::NF4BLK),
        ("chr", NewObject::CharDevice(dev), NfsFtype4::NF4CHR),
        ("fifo", NewObject::Fifo, NfsFtype4::NF4FIFO),
        ("sock", NewObject::Socket, NfsFtype4::NF4SOCK),
    ];
    for (name, object, ftype) in cases {
        let i = s
            .create(ROOT_FILEID, name.as_bytes(), spec(object), t(3))
            .wait()
            .unwrap()
            .inode;
        assert_eq!(i.ftype, ftype, "{name}");
        assert_eq!(s.lookup(ROOT_FILEID, name.as_bytes()).unwrap(), i);
    }
    let l = s.lookup(ROOT_FILEID, b"link").unwrap();
    assert_eq!((&l.symlink[..], l.size), (&b"../target"[..], 9));
    assert_eq!(s.lookup(ROOT_FILEID, b"blk").unwrap().rdev, dev);
    let d = s.lookup(ROOT_FILEID, b"dir").unwrap();
    assert_eq!((d.nlink, d.parent), (2, ROOT_FILEID));
}

#[test]
fn creating_a_directory_adds_a_link_to_its_parent() {
    let (_d, s) = fresh();
    mkdir(&s, ROOT_FILEID, "d");
    mkfile(&s, ROOT_FILEID, "f");
    assert_eq!(s.root().unwrap().nlink, 3);
}

#[test]
fn create_over_an_existing_name_is_exist() {
    let (_d, s) = fresh();
    mkfile(&s, ROOT_FILEID, "a");
    for object in [
        NewObject::Regular(CreateHow::Guarded),
        NewObject::Regular(CreateHow::Exclusive([1; 8])),
        NewObject::Directory,
        NewObject::Symlink(Bytes::from_static(b"x")),
        NewObject::Fifo,
    ] {
        let r = s.create(ROOT_FILEID, b"a", spec(object), t(3)).wait();
        assert_eq!(stat(r), NfsStat4::NFS4ERR_EXIST);
    }
}

#[test]
fn unchecked_create_of_an_existing_file_returns_it_unchanged() {
    let (_d, s) = fresh();
    let a = mkfile(&s, ROOT_FILEID, "a");
    let dir_change = s.root().unwrap().change;
    let c = s
        .create(
            ROOT_FILEID,
            b"a",
            spec(NewObject::Regular(CreateHow::Unchecked)),
            t(20),
        )
        .wait()
        .unwrap();
    assert!(!c.created);
    assert_eq!(c.inode, a);
    assert_eq!((c.cinfo.before, c.cinfo.after), (dir_change, dir_change));
}

#[test]
fn unchecked_create_over_a_non_file_names_the_type() {
    let (_d, s) = fresh();
    mkdir(&s, ROOT_FILEID, "d");
    let sym = NewObject::Symlink(Bytes::from_static(b"t"));
    s.create(ROOT_FILEID, b"l", spec(sym), t(2)).wait().unwrap();
    s.create(ROOT_FILEID, b"p", spec(NewObject::Fifo), t(2))
        .wait()
        .unwrap();
    let unchecked = || spec(NewObject::Regular(CreateHow::Unchecked));
    let r = |n: &[u8]| s.create(ROOT_FILEID, n, unchecked(), t(3)).wait();
    assert_eq!(stat(r(b"d")), NfsStat4::NFS4ERR_ISDIR);
    assert_eq!(stat(r(b"l")), NfsStat4::NFS4ERR_SYMLINK);
    assert_eq!(stat(r(b"p")), NfsStat4::NFS4ERR_WRONG_TYPE);
}

#[test]
fn exclusive_create_retransmission_finds_its_own_file() {
    let (_d, s) = fresh();
    let excl = |v| spec(NewObject::Regular(CreateHow::Exclusive(v)));
    let first = s
        .create(ROOT_FILEID, b"x", excl([7; 8]), t(2))
        .wait()
        .unwrap();
    assert!(first.created);
    assert_eq!(first.inode.verifier, Some([7; 8]));
    let again = s
        .create(ROOT_FILEID, b"x", excl([7; 8]), t(3))
        .wait()
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.inode, first.inode);
    let other = s.create(ROOT_FILEID, b"x", excl([8; 8]), t(3)).wait();
    assert_eq!(stat(other), NfsStat4::NFS4ERR_EXIST);
}

#[test]
fn create_in_a_non_directory_is_notdir_and_in_a_removed_one_is_stale() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let d = mkdir(&s, ROOT_FILEID, "d");
    s.remove(ROOT_FILEID, b"d", t(3), None).wait().unwrap();
    let r = s.create(f.fileid, b"x", file_spec(), t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOTDIR);
    let r = s.create(d.fileid, b"x", file_spec(), t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_STALE);
}

#[test]
fn bad_names_are_rejected_with_the_rfc_errors() {
    let (_d, s) = fresh();
    let long = vec![b'a'; 256];
    let cases: [(&[u8], NfsStat4); 6] = [
        (b"", NfsStat4::NFS4ERR_INVAL),
        (b".", NfsStat4::NFS4ERR_BADNAME),
        (b"..", NfsStat4::NFS4ERR_BADNAME),
        (b"a/b", NfsStat4::NFS4ERR_BADNAME),
        (b"a\0b", NfsStat4::NFS4ERR_BADNAME),
        (&long, NfsStat4::NFS4ERR_NAMETOOLONG),
    ];
    let f = mkfile(&s, ROOT_FILEID, "f");
    for (name, want) in cases {
        let shown = String::from_utf8_lossy(name).into_owned();
        let r = s.create(ROOT_FILEID, name, file_spec(), t(2)).wait();
        assert_eq!(stat(r), want, "create {shown:?}");
        assert_eq!(stat(s.lookup(ROOT_FILEID, name)), want, "lookup {shown:?}");
        let r = s.link(f.fileid, ROOT_FILEID, name, t(2)).wait();
        assert_eq!(stat(r), want, "link {shown:?}");
        assert_eq!(stat(s.remove(ROOT_FILEID, name, t(2), None).wait()), want);
        let r = s.rename(ROOT_FILEID, b"f", ROOT_FILEID, name, t(2)).wait();
        assert_eq!(stat(r), want, "rename to {shown:?}");
    }
    let max = vec![b'a'; 255];
    s.create(ROOT_FILEID, &max, file_spec(), t(2))
        .wait()
        .unwrap();
    // Names are bytes: not UTF-8 is allowed.
    s.create(ROOT_FILEID, b"\xff\xfe", file_spec(), t(2))
        .wait()
        .unwrap();
}

#[test]
fn create_with_mode_bits_above_07777_is_inval() {
    let (_d, s) = fresh();
    let mut sp = file_spec();
    sp.mode = 0o10644;
    assert_eq!(
        stat(s.create(ROOT_FILEID, b"a", sp, t(2)).wait()),
        NfsStat4::NFS4ERR_INVAL
    );
}

#[test]
fn empty_or_oversized_symlink_targets_are_refused() {
    let (_d, s) = fresh();
    let mk = |target: Vec<u8>| {
        let object = NewObject::Symlink(target.into());
        s.create(ROOT_FILEID, b"l", spec(object), t(2)).wait()
    };
    assert_eq!(stat(mk(vec![])), NfsStat4::NFS4ERR_INVAL);
    let too_long = vec![b'x'; MAX_SYMLINK_LEN + 1];
    assert_eq!(stat(mk(too_long)), NfsStat4::NFS4ERR_NAMETOOLONG);
}

// ---------------------------------------------------------------------------------------------
// Lookup, lookupp

#[test]
fn lookup_of_a_missing_name_is_noent() {
    let (_d, s) = fresh();
    assert_eq!(
        stat(s.lookup(ROOT_FILEID, b"nope")),
        NfsStat4::NFS4ERR_NOENT
    );
}

#[test]
fn lookup_in_a_file_is_notdir_and_in_a_symlink_is_symlink() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let object = NewObject::Symlink(Bytes::from_static(b"f"));
    let l = s
        .create(ROOT_FILEID, b"l", spec(object), t(2))
        .wait()
        .unwrap();
    assert_eq!(stat(s.lookup(f.fileid, b"x")), NfsStat4::NFS4ERR_NOTDIR);
    assert_eq!(
        stat(s.lookup(l.inode.fileid, b"x")),
        NfsStat4::NFS4ERR_SYMLINK
    );
}

#[test]
fn lookupp_returns_the_parent_and_noent_at_the_root() {
    let (_d, s) = fresh();
    let a = mkdir(&s, ROOT_FILEID, "a");
    let b = mkdir(&s, a.fileid, "b");
    assert_eq!(s.lookupp(b.fileid).unwrap().fileid, a.fileid);
    assert_eq!(s.lookupp(a.fileid).unwrap().fileid, ROOT_FILEID);
    assert_eq!(stat(s.lookupp(ROOT_FILEID)), NfsStat4::NFS4ERR_NOENT);
    let f = mkfile(&s, a.fileid, "f");
    assert_eq!(stat(s.lookupp(f.fileid)), NfsStat4::NFS4ERR_NOTDIR);
}

// ---------------------------------------------------------------------------------------------
// Setattr, record_write

#[test]
fn setattr_of_mode_and_owner_moves_ctime_and_change() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let a = SetAttrs {
        mode: Some(0o4755),
        uid: Some(7),
        gid: Some(8),
        ..Default::default()
    };
    let o = s.setattr(f.fileid, a, t(50)).wait().unwrap();
    let i = o.inode;
    assert_eq!((i.mode, i.uid, i.gid), (0o4755, 7, 8));
    assert_eq!((i.ctime, i.mtime), (t(50), f.mtime));
    assert!(i.change > f.change);
    assert_eq!(s.getattr(f.fileid).unwrap(), i);
}

#[test]
fn setattr_of_size_returns_the_old_size_and_sets_mtime() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.record_write(f.fileid, 1000, t(20)).wait().unwrap();
    let a = SetAttrs {
        size: Some(10),
        ..Default::default()
    };
    let o = s.setattr(f.fileid, a, t(30)).wait().unwrap();
    assert_eq!(o.old_size, 1000);
    assert_eq!(
        (o.inode.size, o.inode.mtime, o.inode.ctime),
        (10, t(30), t(30))
    );
}

#[test]
fn setattr_of_size_on_a_directory_is_isdir_and_on_a_symlink_is_inval() {
    let (_d, s) = fresh();
    let object = NewObject::Symlink(Bytes::from_static(b"t"));
    let l = s
        .create(ROOT_FILEID, b"l", spec(object), t(2))
        .wait()
        .unwrap();
    let size = |n| SetAttrs {
        size: Some(n),
        ..Default::default()
    };
    let r = s.setattr(ROOT_FILEID, size(0), t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_ISDIR);
    let r = s.setattr(l.inode.fileid, size(0), t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_INVAL);
    let f = mkfile(&s, ROOT_FILEID, "f");
    let r = s.setattr(f.fileid, size(u64::MAX), t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_FBIG);
}

#[test]
fn setattr_times_take_server_or_client_time() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let client = Nfstime4 {
        seconds: 12345,
        nseconds: 678,
    };
    let a = SetAttrs {
        atime: Some(Settime4::SetToServerTime),
        mtime: Some(Settime4::SetToClientTime(client)),
        ..Default::default()
    };
    let i = s.setattr(f.fileid, a, t(99)).wait().unwrap().inode;
    assert_eq!((i.atime, i.mtime, i.ctime), (t(99), client, t(99)));
}

#[test]
fn setattr_with_invalid_values_is_inval_and_changes_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let bad = [
        SetAttrs {
            mode: Some(0o20000),
            ..Default::default()
        },
        SetAttrs {
            mtime: Some(Settime4::SetToClientTime(Nfstime4 {
                seconds: 1,
                nseconds: 1_000_000_000,
            })),
            ..Default::default()
        },
        SetAttrs {
            uid: Some(1),
            atime: Some(Settime4::Other(TimeHow4(7))),
            ..Default::default()
        },
    ];
    for a in bad {
        let r = s.setattr(f.fileid, a, t(5)).wait();
        assert_eq!(stat(r), NfsStat4::NFS4ERR_INVAL);
    }
    assert_eq!(s.getattr(f.fileid).unwrap(), f);
}

#[test]
fn empty_setattr_changes_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let o = s
        .setattr(f.fileid, SetAttrs::default(), t(70))
        .wait()
        .unwrap();
    assert_eq!(o.inode, f);
}

#[test]
fn setattr_of_an_orphan_works_and_of_a_deleted_file_is_stale() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.remove(ROOT_FILEID, b"f", t(3), None).wait().unwrap();
    let a = SetAttrs {
        uid: Some(1),
        ..Default::default()
    };
    let o = s.setattr(f.fileid, a.clone(), t(4)).wait().unwrap();
    assert_eq!(
        (o.inode.uid, o.inode.nlink),
        (1, 0),
        "an open file's attributes change"
    );
    assert!(s.delete_orphan(f.fileid, no_ds).wait().unwrap());
    assert_eq!(
        stat(s.setattr(f.fileid, a, t(5)).wait()),
        NfsStat4::NFS4ERR_STALE
    );
}

#[test]
fn record_write_only_grows_the_size_and_moves_mtime_and_change() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let a = s.record_write(f.fileid, 4096, t(20)).wait().unwrap();
    assert_eq!((a.size, a.mtime, a.ctime), (4096, t(20), t(20)));
    assert!(a.change > f.change);
    let b = s.record_write(f.fileid, 100, t(21)).wait().unwrap();
    assert_eq!((b.size, b.mtime), (4096, t(21)));
    assert!(b.change > a.change);
}

#[test]
fn record_write_to_a_directory_is_isdir() {
    let (_d, s) = fresh();
    assert_eq!(
        stat(s.record_write(ROOT_FILEID, 1, t(2)).wait()),
        NfsStat4::NFS4ERR_ISDIR
    );
}

// ---------------------------------------------------------------------------------------------
// Link

#[test]
fn link_adds_a_name_and_counts_it() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let d = mkdir(&s, ROOT_FILEID, "d");
    let l = s.link(f.fileid, d.fileid, b"g", t(30)).wait().unwrap();
    assert_eq!((l.inode.nlink, l.inode.ctime), (2, t(30)));
    assert_eq!(l.cinfo.before, d.change);
    assert_eq!(s.getattr(d.fileid).unwrap().change, l.cinfo.after);
    assert_eq!(s.lookup(d.fileid, b"g").unwrap().fileid, f.fileid);
    assert_eq!(s.lookup(ROOT_FILEID, b"f").unwrap().nlink, 2);
}

#[test]
fn link_errors_follow_rfc_8881_section_18_9() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let d = mkdir(&s, ROOT_FILEID, "d");
    let r = s.link(f.fileid, ROOT_FILEID, b"d", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_EXIST, "name taken");
    let r = s.link(f.fileid, ROOT_FILEID, b"f", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_EXIST, "already this file's name");
    let r = s.link(d.fileid, ROOT_FILEID, b"d2", t(3)).wait();
    assert_eq!(
        stat(r),
        NfsStat4::NFS4ERR_ISDIR,
        "directories have one name"
    );
    let r = s.link(f.fileid, f.fileid, b"x", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOTDIR);
    let r = s.link(999, ROOT_FILEID, b"x", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_STALE);
}

// ---------------------------------------------------------------------------------------------
// Remove

#[test]
fn removing_a_files_last_link_leaves_an_orphan_until_it_is_deleted() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let fh = s.fh(&f);
    let root = s.root().unwrap();
    let r = s.remove(ROOT_FILEID, b"f", t(40), None).wait().unwrap();
    assert_eq!(
        (r.fileid, r.ftype, r.last_link, r.orphan),
        (f.fileid, NfsFtype4::NF4REG, true, true)
    );
    assert_eq!(r.cinfo.before, root.change);
    assert_eq!(s.root().unwrap().mtime, t(40));
    assert_eq!(stat(s.lookup(ROOT_FILEID, b"f")), NfsStat4::NFS4ERR_NOENT);
    let (_, orphan) = s.resolve(&fh).unwrap();
    assert_eq!(
        (orphan.nlink, orphan.ctime),
        (0, t(40)),
        "the handle still works"
    );
    assert_eq!(orphan_ids(&s), [f.fileid]);

    assert!(s.delete_orphan(f.fileid, no_ds).wait().unwrap());
    assert_eq!(stat(s.resolve(&fh)), NfsStat4::NFS4ERR_STALE);
    assert!(orphan_ids(&s).is_empty());
    assert!(!s.delete_orphan(f.fileid, no_ds).wait().unwrap(), "once");
}

#[test]
fn deleting_a_file_that_is_not_an_orphan_does_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    assert!(!s.delete_orphan(f.fileid, no_ds).wait().unwrap());
    assert_eq!(s.lookup(ROOT_FILEID, b"f").unwrap(), f);
    assert!(!s.delete_orphan(ROOT_FILEID, no_ds).wait().unwrap());
    assert!(!s.delete_orphan(9999, no_ds).wait().unwrap());
}

#[test]
fn removing_the_last_name_of_a_non_regular_object_deletes_it_at_once() {
    let (_d, s) = fresh();
    let l = s
        .create(
            ROOT_FILEID,
            b"l",
            spec(NewObject::Symlink(Bytes::from_static(b"t"))),
            t(2),
        )
        .wait()
        .unwrap()
        .inode;
    let r = s.remove(ROOT_FILEID, b"l", t(3), None).wait().unwrap();
    assert_eq!((r.last_link, r.orphan), (true, false));
    assert_eq!(stat(s.getattr(l.fileid)), NfsStat4::NFS4ERR_STALE);
    assert!(orphan_ids(&s).is_empty());
}

#[test]
fn an_orphan_gets_no_new_name() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.remove(ROOT_FILEID, b"f", t(3), None).wait().unwrap();
    assert_eq!(
        stat(s.link(f.fileid, ROOT_FILEID, b"g", t(4)).wait()),
        NfsStat4::NFS4ERR_NOENT
    );
    assert_eq!(orphan_ids(&s), [f.fileid]);
}

#[test]
fn removing_one_of_two_links_keeps_the_file() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.link(f.fileid, ROOT_FILEID, b"g", t(3)).wait().unwrap();
    let r = s.remove(ROOT_FILEID, b"f", t(4), None).wait().unwrap();
    assert!(!r.last_link);
    let g = s.lookup(ROOT_FILEID, b"g").unwrap();
    assert_eq!((g.nlink, g.ctime), (1, t(4)));
    assert_eq!(names(&s, ROOT_FILEID), ["g"]);
}

#[test]
fn removing_a_non_empty_directory_is_notempty() {
    let (_d, s) = fresh();
    let d = mkdir(&s, ROOT_FILEID, "d");
    mkfile(&s, d.fileid, "f");
    let r = s.remove(ROOT_FILEID, b"d", t(3), None).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOTEMPTY);
    s.remove(d.fileid, b"f", t(4), None).wait().unwrap();
    let r = s.remove(ROOT_FILEID, b"d", t(5), None).wait().unwrap();
    assert_eq!(
        (r.ftype, r.last_link, r.orphan),
        (NfsFtype4::NF4DIR, true, false)
    );
    assert_eq!(s.root().unwrap().nlink, 2);
    assert_eq!(stat(s.getattr(d.fileid)), NfsStat4::NFS4ERR_STALE);
}

#[test]
fn removing_a_missing_name_is_noent_and_in_a_file_is_notdir() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let r = s.remove(ROOT_FILEID, b"x", t(3), None).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOENT);
    let r = s.remove(f.fileid, b"x", t(3), None).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOTDIR);
}

// ---------------------------------------------------------------------------------------------
// Rename

#[test]
fn rename_within_a_directory_moves_the_name() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "a");
    let before = s.root().unwrap().change;
    let r = s
        .rename(ROOT_FILEID, b"a", ROOT_FILEID, b"b", t(60))
        .wait()
        .unwrap();
    assert_eq!(r.source_cinfo, r.target_cinfo);
    assert_eq!(r.source_cinfo.before, before);
    assert!(r.replaced.is_none());
    assert_eq!(names(&s, ROOT_FILEID), ["b"]);
    let b = s.lookup(ROOT_FILEID, b"b").unwrap();
    assert_eq!((b.fileid, b.ctime), (f.fileid, t(60)));
}

#[test]
fn rename_of_a_directory_across_directories_moves_its_parent_and_links() {
    let (_d, s) = fresh();
    let a = mkdir(&s, ROOT_FILEID, "a");
    let b = mkdir(&s, ROOT_FILEID, "b");
    let c = mkdir(&s, a.fileid, "c");
    let a_before = s.getattr(a.fileid).unwrap().change;
    let r = s
        .rename(a.fileid, b"c", b.fileid, b"c2", t(61))
        .wait()
        .unwrap();
    assert_eq!(r.source_cinfo.before, a_before);
    assert_eq!(r.source_cinfo.after, s.getattr(a.fileid).unwrap().change);
    assert_eq!(r.target_cinfo.before, b.change);
    assert_eq!(r.target_cinfo.after, s.getattr(b.fileid).unwrap().change);
    assert_eq!(s.lookupp(c.fileid).unwrap().fileid, b.fileid);
    assert_eq!(s.getattr(a.fileid).unwrap().nlink, 2);
    assert_eq!(s.getattr(b.fileid).unwrap().nlink, 3);
    assert!(names(&s, a.fileid).is_empty());
    assert_eq!(names(&s, b.fileid), ["c2"]);
}

#[test]
fn rename_over_an_existing_file_replaces_it() {
    let (_d, s) = fresh();
    let a = mkfile(&s, ROOT_FILEID, "a");
    let b = mkfile(&s, ROOT_FILEID, "b");
    let r = s
        .rename(ROOT_FILEID, b"a", ROOT_FILEID, b"b", t(3))
        .wait()
        .unwrap();
    let gone = r.replaced.unwrap();
    assert_eq!(
        (gone.fileid, gone.last_link, gone.orphan),
        (b.fileid, true, true)
    );
    assert_eq!(s.lookup(ROOT_FILEID, b"b").unwrap().fileid, a.fileid);
    assert_eq!(names(&s, ROOT_FILEID), ["b"]);
    assert_eq!(s.getattr(b.fileid).unwrap().nlink, 0, "kept as an orphan");
    assert_eq!(orphan_ids(&s), [b.fileid]);
}

#[test]
fn rename_over_a_file_with_other_links_keeps_that_file() {
    let (_d, s) = fresh();
    mkfile(&s, ROOT_FILEID, "a");
    let b = mkfile(&s, ROOT_FILEID, "b");
    s.link(b.fileid, ROOT_FILEID, b"b2", t(3)).wait().unwrap();
    let r = s
        .rename(ROOT_FILEID, b"a", ROOT_FILEID, b"b", t(4))
        .wait()
        .unwrap();
    let kept = r.replaced.unwrap();
    assert!(!kept.last_link && !kept.orphan);
    assert_eq!(s.lookup(ROOT_FILEID, b"b2").unwrap().nlink, 1);
    assert!(orphan_ids(&s).is_empty());
}

#[test]
fn rename_between_incompatible_types_is_exist() {
    let (_d, s) = fresh();
    mkfile(&s, ROOT_FILEID, "f");
    mkdir(&s, ROOT_FILEID, "d");
    let full = mkdir(&s, ROOT_FILEID, "full");
    mkfile(&s, full.fileid, "x");
    mkdir(&s, ROOT_FILEID, "d2");
    let r = |a: &[u8], b: &[u8]| s.rename(ROOT_FILEID, a, ROOT_FILEID, b, t(3)).wait();
    assert_eq!(stat(r(b"f", b"d")), NfsStat4::NFS4ERR_EXIST);
    assert_eq!(stat(r(b"d", b"f")), NfsStat4::NFS4ERR_EXIST);
    assert_eq!(stat(r(b"d", b"full")), NfsStat4::NFS4ERR_EXIST);
    assert_eq!(names(&s, ROOT_FILEID), ["f", "d", "full", "d2"]);
    let ok = r(b"d", b"d2").unwrap();
    assert_eq!(ok.replaced.unwrap().ftype, NfsFtype4::NF4DIR);
    assert_eq!(names(&s, ROOT_FILEID), ["f", "full", "d2"]);
    assert_eq!(s.root().unwrap().nlink, 4);
}

#[test]
fn rename_onto_itself_or_another_link_of_the_same_file_does_nothing() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    s.link(f.fileid, ROOT_FILEID, b"g", t(3)).wait().unwrap();
    let change = s.root().unwrap().change;
    for (a, b) in [(b"f", b"f"), (b"f", b"g")] {
        let r = s
            .rename(ROOT_FILEID, a, ROOT_FILEID, b, t(9))
            .wait()
            .unwrap();
        assert_eq!(
            (r.source_cinfo.before, r.source_cinfo.after),
            (change, change)
        );
        assert!(r.replaced.is_none());
    }
    assert_eq!(names(&s, ROOT_FILEID), ["f", "g"]);
    assert_eq!(s.getattr(f.fileid).unwrap().nlink, 2);
}

#[test]
fn rename_of_a_directory_into_its_own_subtree_is_inval() {
    let (_d, s) = fresh();
    let a = mkdir(&s, ROOT_FILEID, "a");
    let b = mkdir(&s, a.fileid, "b");
    let r = s.rename(ROOT_FILEID, b"a", b.fileid, b"a", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_INVAL);
    let r = s.rename(ROOT_FILEID, b"a", a.fileid, b"a", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_INVAL);
    assert_eq!(names(&s, ROOT_FILEID), ["a"]);
}

#[test]
fn rename_of_a_missing_name_is_noent_and_to_a_file_is_notdir() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let r = s.rename(ROOT_FILEID, b"x", ROOT_FILEID, b"y", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOENT);
    let r = s.rename(ROOT_FILEID, b"f", f.fileid, b"y", t(3)).wait();
    assert_eq!(stat(r), NfsStat4::NFS4ERR_NOTDIR);
}

// ---------------------------------------------------------------------------------------------
// Readdir

#[test]
fn readdir_lists_entries_in_creation_order_with_cookies_from_3() {
    let (_d, s) = fresh();
    for n in ["c", "a", "b"] {
        mkfile(&s, ROOT_FILEID, n);
    }
    let r = s.readdir(ROOT_FILEID, 0, 10).unwrap();
    assert!(r.eof);
    let got: Vec<_> = r.entries.iter().map(|e| (e.cookie, &e.name[..])).collect();
    assert_eq!(got, [(3, &b"c"[..]), (4, b"a"), (5, b"b")]);
    assert_eq!(r.entries[1].inode, s.lookup(ROOT_FILEID, b"a").unwrap());
}

#[test]
fn readdir_resumes_after_a_cookie_in_pages() {
    let (_d, s) = fresh();
    for i in 0..10 {
        mkfile(&s, ROOT_FILEID, &format!("f{i}"));
    }
    let mut cookie = 0;
    let mut seen = Vec::new();
    loop {
        let r = s.readdir(ROOT_FILEID, cookie, 3).unwrap();
        seen.extend(r.entries.iter().map(|e| e.name.clone()));
        if r.eof {
            break;
        }
        cookie = r.entries.last().unwrap().cookie;
    }
    let want: Vec<Bytes> = (0..10).map(|i| Bytes::from(format!("f{i}"))).collect();
    assert_eq!(seen, want);
}

#[test]
fn readdir_page_ending_at_the_last_entry_reports_eof() {
    let (_d, s) = fresh();
    mkfile(&s, ROOT_FILEID, "a");
    mkfile(&s, ROOT_FILEID, "b");
    let r = s.readdir(ROOT_FILEID, 0, 2).unwrap();
    assert_eq!((r.entries.len(), r.eof), (2, true));
    let r = s.readdir(ROOT_FILEID, 0, 1).unwrap();
    assert_eq!((r.entries.len(), r.eof), (1, false));
}

#[test]
fn readdir_cookie_stays_valid_after_its_entry_is_removed() {
    let (_d, s) = fresh();
    for n in ["a", "b", "c", "d"] {
        mkfile(&s, ROOT_FILEID, n);
    }
    let first = s.readdir(ROOT_FILEID, 0, 2).unwrap();
    let cookie = first.entries[1].cookie; // "b"
    s.remove(ROOT_FILEID, b"b", t(3), None).wait().unwrap();
    s.remove(ROOT_FILEID, b"a", t(3), None).wait().unwrap();
    let rest = s.readdir(ROOT_FILEID, cookie, 10).unwrap();
    let got: Vec<_> = rest.entries.iter().map(|e| &e.name[..]).collect();
    assert_eq!(got, [&b"c"[..], b"d"]);
    assert!(rest.eof);
}

#[test]
fn renamed_entries_get_a_new_cookie_at_the_end() {
    let (_d, s) = fresh();
    for n in ["a", "b"] {
        mkfile(&s, ROOT_FILEID, n);
    }
    s.rename(ROOT_FILEID, b"a", ROOT_FILEID, b"z", t(3))
        .wait()
        .unwrap();
    let r = s.readdir(ROOT_FILEID, 0, 10).unwrap();
    let got: Vec<_> = r.entries.iter().map(|e| (e.cookie, &e.name[..])).collect();
    assert_eq!(got, [(4, &b"b"[..]), (5, b"z")]);
}

#[test]
fn readdir_refuses_reserved_and_never_issued_cookies() {
    let (_d, s) = fresh();
    mkfile(&s, ROOT_FILEID, "a");
    for c in [1, 2, 4, 1000] {
        assert_eq!(
            stat(s.readdir(ROOT_FILEID, c, 10)),
            NfsStat4::NFS4ERR_BAD_COOKIE,
            "cookie {c}"
        );
    }
    assert!(s.readdir(ROOT_FILEID, 3, 10).unwrap().eof);
}

#[test]
fn readdir_of_an_empty_directory_is_eof_and_of_a_file_is_notdir() {
    let (_d, s) = fresh();
    let d = mkdir(&s, ROOT_FILEID, "d");
    let f = mkfile(&s, ROOT_FILEID, "f");
    let r = s.readdir(d.fileid, 0, 10).unwrap();
    assert!(r.entries.is_empty() && r.eof);
    assert_eq!(stat(s.readdir(f.fileid, 0, 10)), NfsStat4::NFS4ERR_NOTDIR);
}

// ---------------------------------------------------------------------------------------------
// Change attribute, filehandles, clients

#[test]
fn change_attribute_grows_with_every_change() {
    let (_d, s) = fresh();
    let mut last = s.change_counter().unwrap();
    let f = mkfile(&s, ROOT_FILEID, "f");
    for step in 0..5 {
        let i = s
            .record_write(f.fileid, step, t(step as i64))
            .wait()
            .unwrap();
        assert!(i.change > last);
        last = i.change;
    }
    assert_eq!(s.change_counter().unwrap(), last);
}

#[test]
fn filehandles_resolve_to_their_object() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let fh = s.fh(&f);
    assert_eq!(fh.0.len(), 32);
    assert_eq!(s.resolve(&fh).unwrap(), (DEFAULT_EXPORT, f.clone()));
    let root = s.root().unwrap();
    assert_eq!(s.resolve(&s.fh(&root)).unwrap().1, root);
}

#[test]
fn filehandle_with_another_generation_is_stale() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let fh = s
        .fh_codec()
        .encode(DEFAULT_EXPORT, f.fileid, f.generation + 1);
    assert_eq!(stat(s.resolve(&fh)), NfsStat4::NFS4ERR_STALE);
    assert_eq!(
        stat(s.getattr_checked(f.fileid, f.generation + 1)),
        NfsStat4::NFS4ERR_STALE
    );
}

#[test]
fn forged_or_foreign_filehandles_are_badhandle() {
    let (_d, s) = fresh();
    let f = mkfile(&s, ROOT_FILEID, "f");
    let mut forged = s.fh(&f).0.to_vec();
    forged[11] ^= 1; // another file id, same MAC
    let cases = [
        NfsFh4(forged.into()),
        NfsFh4(Bytes::from_static(b"short")),
        FhCodec::new([0; 32]).encode(DEFAULT_EXPORT, f.fileid, f.generation),
        s.fh_codec().encode_kind(FhKind::Pseudo, 0, 1, 0),
    ];
    for fh in cases {
        assert_eq!(stat(s.resolve(&fh)), NfsStat4::NFS4ERR_BADHANDLE, "{fh:?}");
    }
}

fn client(id: u64) -> ClientRecord {
    ClientRecord {
        clientid: id,
        owner: Bytes::from(format!("Linux NFSv4.1 host{id}")),
        verifier: [id as u8; 8],
        principal: "nfs/host@EXAMPLE".into(),
        boot_epoch: 1,
    }
}

#[test]
fn client_records_are_kept_until_removed() {
    let (_d, s) = fresh();
    s.put_client(client(1)).wait().unwrap();
    s.put_client(client(2)).wait().unwrap();
    let mut c2 = client(2);
    c2.verifier = [9; 8];
    s.put_client(c2.clone()).wait().unwrap();
    assert_eq!(s.clients().unwrap(), [client(1), c2]);
    assert!(s.remove_client(1).wait().unwrap());
    assert!(!s.remove_client(1).wait().unwrap());
    assert_eq!(s.clients().unwrap().len(), 1);
    assert!(s.previous_clients().is_empty());
}

#[tokio::test]
async fn changes_can_be_awaited_from_async_code() {
    let (_d, s) = fresh();
    let c = s
        .create(ROOT_FILEID, b"a", file_spec(), t(2))
        .await
        .unwrap();
    let r = s.remove(ROOT_FILEID, b"a", t(3), None).await.unwrap();
    assert_eq!(r.fileid, c.inode.fileid);
    let e = s.remove(ROOT_FILEID, b"", t(3), None).await.unwrap_err();
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_INVAL);
}

#[test]
fn store_handles_and_results_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Store>();
    send::<Pending<Created>>();
    send_sync::<StoreError>();
}
