//! The pseudo file system joining several exports (RFC 8881 section 7.3), and per-export
//! access rules, on the in-memory cluster's MDS alone (its clients connect from TEST-NET-2,
//! 198.51.100.1).

use mds::config::{Access, ClientRule, ExportConfig};
use nfs_proto::nfs4::attr::*;
use nfs_proto::nfs4::*;
use nfs_proto::rpc::OpaqueAuth;
use nfs_proto::xdr::Utf8String;
use testkit::cluster::{Cluster, ClusterBuilder, StoreKind};
use testkit::prelude::*;

fn export(id: u16, path: &str, pseudo: &str, access: Access, network: &str) -> ExportConfig {
    ExportConfig {
        id,
        path: path.into(),
        pseudo: pseudo.into(),
        clients: vec![ClientRule {
            network: network.into(),
            access,
            root_squash: false,
        }],
        delegations: None,
    }
}

/// `/home` (rw), `/data/ro` (read-only) and `/hidden` (for another network), no export at `/`.
fn pseudo_exports() -> Vec<ExportConfig> {
    vec![
        export(1, "/vol/home", "/home", Access::Rw, "198.51.100.0/24"),
        export(2, "/vol/ro", "/data/ro", Access::Ro, "198.51.100.1"),
        export(3, "/vol/hidden", "/hidden", Access::Rw, "10.0.0.0/8"),
    ]
}

/// The cluster's MDS alone (lease 10 s, no grace period) with these exports.
fn with_exports(exports: Vec<ExportConfig>) -> ClusterBuilder {
    Cluster::builder()
        .data_servers(0)
        .lease(10)
        .configure(move |cfg| cfg.exports = exports)
}

fn attrs(r: &Compound4Res) -> FileAttrs {
    match r.resarray.last() {
        Some(NfsResop4::GetAttr(GetAttrRes::Ok(a))) => {
            FileAttrs::from_fattr(&a.obj_attributes).unwrap()
        }
        other => panic!("GETATTR failed: {other:?} in {r:?}"),
    }
}

fn readdir_names(r: &Compound4Res) -> Vec<(String, FileAttrs)> {
    match r.resarray.last() {
        Some(NfsResop4::ReadDir(ReadDirRes::Ok(ok))) => {
            assert!(ok.reply.eof);
            ok.reply
                .entries
                .iter()
                .map(|e| {
                    (
                        e.name.as_str().unwrap().to_owned(),
                        FileAttrs::from_fattr(&e.attrs).unwrap(),
                    )
                })
                .collect()
        }
        other => panic!("READDIR failed: {other:?}"),
    }
}

fn readdir(bits: &[u32]) -> NfsArgop4 {
    NfsArgop4::ReadDir(ReadDirArgs {
        cookie: 0,
        cookieverf: [0; 8],
        dircount: 0,
        maxcount: 65536,
        attr_request: Bitmap4::from_bits(bits.iter().copied()),
    })
}

fn mkdir(name: &str) -> NfsArgop4 {
    NfsArgop4::Create(CreateArgs {
        objtype: Createtype4::Dir,
        objname: Utf8String::from(name),
        createattrs: Fattr4::default(),
    })
}

async fn at(c: &mut Client, path: &str, ops: Vec<NfsArgop4>) -> Compound4Res {
    let mut all = vec![NfsArgop4::PutRootFh];
    all.extend(lookups(path));
    all.extend(ops);
    c.call(all).await
}

const ID_ATTRS: [u32; 4] = [
    FATTR4_TYPE,
    FATTR4_FSID,
    FATTR4_FILEID,
    FATTR4_MOUNTED_ON_FILEID,
];

#[tokio::test]
async fn the_pseudo_root_lists_the_paths_to_the_exports_the_client_may_use() {
    let s = with_exports(pseudo_exports()).start().await;
    let mut c = s.client("pseudo").await;

    let root = attrs(&at(&mut c, "/", vec![getattr_op(&ID_ATTRS)]).await);
    assert_eq!(root.r#type, Some(NfsFtype4::NF4DIR));
    let entries = readdir_names(&at(&mut c, "/", vec![readdir(&ID_ATTRS)]).await);
    let names: Vec<_> = entries.iter().map(|(n, _)| n.as_str()).collect();
    // `hidden` leads to an export for 10.0.0.0/8 only: not shown to 198.51.100.1.
    assert_eq!(names, ["data", "home"]);
    // `home` is the root of export 1: another file system, grafted on the pseudo root.
    let home = &entries[1].1;
    assert_ne!(home.fsid, root.fsid);
    let home_direct = attrs(&at(&mut c, "/home", vec![getattr_op(&ID_ATTRS)]).await);
    assert_eq!(home.fileid, home_direct.fileid);
    assert_eq!(home.fsid, home_direct.fsid);
    assert_eq!(home.mounted_on_fileid, home_direct.mounted_on_fileid);
    assert_ne!(home_direct.mounted_on_fileid, home_direct.fileid);
    // `data` is a pseudo directory on the way to `data/ro`.
    let data = &entries[0].1;
    assert_eq!(data.fsid, root.fsid);
    let ro = attrs(&at(&mut c, "/data/ro", vec![getattr_op(&ID_ATTRS)]).await);
    assert_ne!(ro.fsid, root.fsid);
    assert_ne!(ro.fsid, home.fsid);
    assert_eq!(
        at(&mut c, "/nothing", vec![]).await.status,
        NfsStat4::NFS4ERR_NOENT
    );
}

#[tokio::test]
async fn lookupp_climbs_from_an_export_root_through_the_pseudo_tree() {
    let s = with_exports(pseudo_exports()).start().await;
    let mut c = s.client("up").await;
    let data = attrs(&at(&mut c, "/data", vec![getattr_op(&ID_ATTRS)]).await);
    let root = attrs(&at(&mut c, "/", vec![getattr_op(&ID_ATTRS)]).await);
    let up = attrs(
        &at(
            &mut c,
            "/data/ro",
            vec![NfsArgop4::LookupP, getattr_op(&ID_ATTRS)],
        )
        .await,
    );
    assert_eq!(up.fileid, data.fileid);
    let r = at(
        &mut c,
        "/data/ro",
        vec![
            NfsArgop4::LookupP,
            NfsArgop4::LookupP,
            getattr_op(&ID_ATTRS),
        ],
    )
    .await;
    assert_eq!(attrs(&r).fileid, root.fileid);
    let r = at(&mut c, "/", vec![NfsArgop4::LookupP]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_NOENT);
}

#[tokio::test]
async fn pseudo_nodes_are_read_only_and_exports_follow_their_rules() {
    let s = with_exports(pseudo_exports()).start().await;
    let mds = s.mds().clone();
    let mut c = s.client("rules").await;
    assert_eq!(
        at(&mut c, "/", vec![mkdir("x")]).await.status,
        NfsStat4::NFS4ERR_ROFS
    );
    assert_eq!(
        at(&mut c, "/data", vec![mkdir("x")]).await.status,
        NfsStat4::NFS4ERR_ROFS
    );
    assert_eq!(
        at(&mut c, "/home", vec![mkdir("x")]).await.status,
        NfsStat4::NFS4_OK
    );
    assert_eq!(
        at(&mut c, "/data/ro", vec![mkdir("x")]).await.status,
        NfsStat4::NFS4ERR_ROFS
    );
    // Export 3 admits only 10.0.0.0/8: this client may not enter it.
    let r = at(&mut c, "/hidden", vec![]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
    // Nor reach it by a handle: the rule holds for PUTFH too.
    let hidden_fh = mds_handle_of_export_root(&mds, 3);
    let r = c.call(vec![putfh(&hidden_fh)]).await;
    assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS);
    // SAVEFH in one export, then RESTOREFH after moving into a read-only one, keeps each
    // export's rule with its handle.
    let r = at(
        &mut c,
        "/home",
        vec![
            NfsArgop4::SaveFh,
            NfsArgop4::PutRootFh,
            lookup("data"),
            lookup("ro"),
            NfsArgop4::RestoreFh,
            mkdir("y"),
        ],
    )
    .await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
}

fn mds_handle_of_export_root(mds: &mds::Mds, id: u16) -> NfsFh4 {
    let fileid = mds.export_root_fileid(id).unwrap();
    let inode = mds.store().getattr(fileid).unwrap();
    mds.store().fh_codec().encode(id, fileid, inode.generation)
}

/// A whole restart: the first MDS (and with it its stores) stops, a second opens its data
/// directory.
#[tokio::test]
async fn pseudo_handles_and_export_handles_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = with_exports(pseudo_exports())
        .store(StoreKind::Redb(dir.path().to_path_buf()))
        .start()
        .await;
    let (handles, fileid) = {
        let mut c = s.client("restart").await;
        let mut handles = Vec::new();
        for path in ["/", "/data", "/home"] {
            let r = at(&mut c, path, vec![NfsArgop4::GetFh]).await;
            let Some(NfsResop4::GetFh(GetFhRes::Ok(fh))) = r.resarray.last() else {
                panic!("{r:?}")
            };
            handles.push(fh.object.clone());
        }
        (handles, s.mds().export_root_fileid(1).unwrap())
    };
    s.restart_mds().await;
    assert_eq!(s.mds().export_root_fileid(1), Some(fileid));
    let mut c = s.client("restart2").await;
    for fh in handles {
        let r = c.call(vec![putfh(&fh), getattr_op(&ID_ATTRS)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    }
}

#[tokio::test]
async fn an_export_at_the_root_carries_others_as_junctions() {
    let s = with_exports(vec![
        export(1, "/", "/", Access::Rw, "198.51.100.1"),
        export(2, "/vol/scratch", "/scratch", Access::Rw, "198.51.100.1"),
    ])
    .start()
    .await;
    let mut c = s.client("junction").await;
    let root = attrs(&at(&mut c, "/", vec![getattr_op(&ID_ATTRS)]).await);
    let entries = readdir_names(&at(&mut c, "/", vec![readdir(&ID_ATTRS)]).await);
    let mut names: Vec<_> = entries.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    assert_eq!(names, ["scratch", "vol"]);
    let scratch = &entries.iter().find(|(n, _)| n == "scratch").unwrap().1;
    assert_ne!(
        scratch.fsid, root.fsid,
        "the junction shows export 2's root"
    );
    // A directory made through the junction lands in export 2's directory, which export 1
    // also reaches by its path.
    assert_eq!(
        at(&mut c, "/scratch", vec![mkdir("made")]).await.status,
        NfsStat4::NFS4_OK
    );
    let via_path = attrs(&at(&mut c, "/vol/scratch/made", vec![getattr_op(&ID_ATTRS)]).await);
    let via_junction = attrs(&at(&mut c, "/scratch/made", vec![getattr_op(&ID_ATTRS)]).await);
    assert_eq!(via_path.fileid, via_junction.fileid);
    let up = attrs(
        &at(
            &mut c,
            "/scratch",
            vec![NfsArgop4::LookupP, getattr_op(&ID_ATTRS)],
        )
        .await,
    );
    assert_eq!(up.fileid, root.fileid);
}

/// `path` then `ops`, in the session of `c` but with the credential `cred`.
async fn at_as(c: &mut Client, cred: OpaqueAuth, path: &str, ops: Vec<NfsArgop4>) -> Compound4Res {
    let mut all = vec![c.sequence(), NfsArgop4::PutRootFh];
    all.extend(lookups(path));
    all.extend(ops);
    compound_as(&c.conn, cred, 1, all).await.expect("rpc")
}

fn create_file(name: &str) -> NfsArgop4 {
    open_op(
        by_name(name),
        unchecked(0o644),
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        "squash",
    )
}

/// Root squash maps gid 0 as well as uid 0, as knfsd does: otherwise any AUTH_SYS client
/// could claim group 0 and write where only root's group may. The same directory is exported
/// twice, with and without root squash, so the same directory and the same credentials show
/// the difference.
#[tokio::test]
async fn root_squash_maps_group_0_and_supplementary_group_0_too() {
    let rule = |root_squash| ClientRule {
        network: "198.51.100.0/24".into(),
        access: Access::Rw,
        root_squash,
    };
    let s = with_exports(vec![
        ExportConfig {
            clients: vec![rule(false)],
            ..export(1, "/vol", "/plain", Access::Rw, "")
        },
        ExportConfig {
            clients: vec![rule(true)],
            ..export(2, "/vol", "/squashed", Access::Rw, "")
        },
    ])
    .start()
    .await;
    let mut c = s.client("squash").await;
    // Root, unsquashed, makes root:root 0770 and 0777 directories.
    let root = auth_sys_groups(0, 0, &[]);
    for (name, mode) in [("private", 0o770), ("public", 0o777)] {
        let r = at_as(
            &mut c,
            root.clone(),
            "/plain",
            vec![
                NfsArgop4::Create(CreateArgs {
                    objtype: Createtype4::Dir,
                    objname: Utf8String::from(name),
                    createattrs: mode_attrs(mode),
                }),
                getattr_op(&[FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP]),
            ],
        )
        .await;
        let a = attrs(&r);
        assert_eq!(a.mode, Some(mode));
        assert_eq!(a.owner.as_ref().map(|o| o.to_string()), Some("0".into()));
        assert_eq!(
            a.owner_group.as_ref().map(|o| o.to_string()),
            Some("0".into())
        );
    }
    let group_0 = auth_sys_groups(1000, 0, &[]);
    let supplementary_0 = auth_sys_groups(1000, 1000, &[7, 0]);
    // Through the squashing export none of them may create in the 0770 directory: not root
    // (as before), and not a user claiming group 0 either way.
    for (who, cred) in [
        ("root", root.clone()),
        ("gid 0", group_0.clone()),
        ("supplementary gid 0", supplementary_0.clone()),
    ] {
        let r = at_as(&mut c, cred, "/squashed/private", vec![create_file(who)]).await;
        assert_eq!(r.status, NfsStat4::NFS4ERR_ACCESS, "{who}: {r:?}");
    }
    // Without squashing, group 0 does grant it (so the refusals above are the squash's).
    for (who, cred) in [
        ("gid 0", group_0.clone()),
        ("supplementary gid 0", supplementary_0),
    ] {
        let r = at_as(&mut c, cred, "/plain/private", vec![create_file(who)]).await;
        assert_eq!(r.status, NfsStat4::NFS4_OK, "{who}: {r:?}");
    }
    // A file created through the squashing export with group 0 gets the anonymous group;
    // a squashed root's gets the anonymous owner and group.
    for (name, cred, owner) in [("g", group_0, "1000"), ("r", root, "65534")] {
        let r = at_as(
            &mut c,
            cred,
            "/squashed/public",
            vec![
                create_file(name),
                getattr_op(&[FATTR4_OWNER, FATTR4_OWNER_GROUP]),
            ],
        )
        .await;
        let a = attrs(&r);
        assert_eq!(a.owner.as_ref().map(|o| o.to_string()), Some(owner.into()));
        assert_eq!(
            a.owner_group.as_ref().map(|o| o.to_string()),
            Some("65534".into()),
            "{name}"
        );
    }
}
