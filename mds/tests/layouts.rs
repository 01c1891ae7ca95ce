//! pNFS file layouts on the MDS (RFC 8881 chapter 13), over loopback sockets. The data
//! servers are configured but need not run for these checks.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use mds::{Config, Mds};
use nfs_proto::nfs4::layout_files::{Nfsv41FileLayout4, NFL4_UFLG_DENSE};
use nfs_proto::nfs4::*;
use nfs_server::ds_fh::DsFhCodec;
use nfs_server::keys::DsKeys;
use support::open::*;
use support::*;

/// The test configuration over `dir`, changed by `f`.
fn config(dir: &Path, f: impl FnOnce(&mut Config)) -> Config {
    let mut cfg = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        grace_time: 0,
        lease_time: 10,
        ..Config::default()
    };
    f(&mut cfg);
    cfg
}

/// A server whose configuration is changed by `f` (from the test defaults).
async fn server_with(f: impl FnOnce(&mut Config)) -> (tempfile::TempDir, Arc<Mds>, SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let (mds, addr) = start_with(config(dir.path(), f)).await;
    (dir, mds, addr)
}

fn layouts_on(c: &mut Config) {
    c.cluster.layouts = true;
}

/// LAYOUTGET of the whole file for `iomode` under `stateid`.
fn layoutget_op(iomode: Layoutiomode4, stateid: Stateid4) -> NfsArgop4 {
    NfsArgop4::LayoutGet(LayoutGetArgs {
        loga_signal_layout_avail: false,
        loga_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        loga_iomode: iomode,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 4096,
        loga_stateid: stateid,
        loga_maxcount: 4096,
    })
}

/// The LAYOUTGET result of a COMPOUND.
fn layoutget_res(r: &Compound4Res) -> &LayoutGetRes {
    r.resarray
        .iter()
        .find_map(|op| match op {
            NfsResop4::LayoutGet(res) => Some(res),
            _ => None,
        })
        .expect("no LAYOUTGET in the reply")
}

/// The layout of a successful LAYOUTGET: (reply, decoded file layout).
fn granted(r: &Compound4Res) -> (LayoutGetResOk, Nfsv41FileLayout4) {
    let LayoutGetRes::Ok(ok) = layoutget_res(r) else {
        panic!("LAYOUTGET failed: {r:?}")
    };
    assert_eq!(ok.logr_layout.len(), 1, "{ok:?}");
    let l = &ok.logr_layout[0];
    let body = Nfsv41FileLayout4::from_content(&l.lo_content).expect("layout body decodes");
    (ok.clone(), body)
}

/// OPEN (create) of `name` in the root for reading and writing, then LAYOUTGET in the same
/// COMPOUND under the current stateid, as the Linux client sends it.
async fn open_and_layoutget(c: &mut Client, name: &str, iomode: Layoutiomode4) -> Compound4Res {
    c.call(vec![
        NfsArgop4::PutRootFh,
        open_op(
            by_name(name),
            unchecked(0o644),
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            "owner",
        ),
        NfsArgop4::GetFh,
        layoutget_op(
            iomode,
            Stateid4 {
                seqid: 1,
                other: [0; 12],
            },
        ),
    ])
    .await
}

/// The DS filehandle codec of a server (its key derives from the store's persistent server
/// key, as the data servers are given it).
fn ds_codec(mds: &Mds) -> DsFhCodec {
    DsFhCodec::new(DsKeys::derive(mds.store.server_key(), 0).fh_key)
}

/// The role flags of an EXCHANGE_ID reply.
async fn exchange_id_flags(addr: SocketAddr) -> u32 {
    let conn = connect(addr).await;
    let ex = ExchangeIdArgs {
        eia_clientowner: ClientOwner4 {
            co_verifier: [1; 8],
            co_ownerid: Bytes::from_static(b"layouts-test"),
        },
        eia_flags: 0,
        eia_state_protect: StateProtect4A::None,
        eia_client_impl_id: vec![],
    };
    let r = compound_on(&conn, 0, 1, vec![NfsArgop4::ExchangeId(ex)])
        .await
        .unwrap();
    let NfsResop4::ExchangeId(ExchangeIdRes::Ok(ok)) = &r.resarray[0] else {
        panic!("EXCHANGE_ID failed: {r:?}")
    };
    ok.eir_flags & EXCHGID4_FLAG_MASK_PNFS
}

#[tokio::test]
async fn with_layouts_on_the_mds_takes_the_pnfs_mds_role_only() {
    let (_d, _mds, addr) = server_with(|c| c.cluster.layouts = true).await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_PNFS_MDS);
}

#[tokio::test]
async fn with_layouts_off_the_mds_takes_the_non_pnfs_role_only() {
    let (_d, _mds, addr) = server_with(|c| assert!(!c.cluster.layouts)).await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_NON_PNFS);
}

#[tokio::test]
async fn with_layouts_on_but_no_data_servers_the_mds_is_non_pnfs() {
    let (_d, _mds, addr) = server_with(|c| {
        c.cluster.layouts = true;
        c.cluster.data_servers.clear();
    })
    .await;
    assert_eq!(exchange_id_flags(addr).await, EXCHGID4_FLAG_USE_NON_PNFS);
}

#[tokio::test]
async fn open_then_layoutget_grants_a_whole_file_dense_layout_with_verifiable_ds_handles() {
    let (_d, mds, addr) = server_with(layouts_on).await;
    let mut c = Client::new(addr, "lg").await;
    let r = open_and_layoutget(&mut c, "f", Layoutiomode4::LAYOUTIOMODE4_RW).await;
    assert_eq!(r.status, NfsStat4::NFS4_OK, "{r:?}");
    let fh = getfh_res(&r);
    let (fileid, _) = fileid_of(&mut c, &fh).await;
    let (ok, body) = granted(&r);
    assert!(ok.logr_return_on_close);
    let l = &ok.logr_layout[0];
    assert_eq!((l.lo_offset, l.lo_length), (0, u64::MAX));
    assert_eq!(l.lo_iomode, Layoutiomode4::LAYOUTIOMODE4_RW);
    let device = layouts::Device::from_id(&body.nfl_deviceid).expect("one of our device ids");
    // The default cluster: three local data servers, all in every file's stripe set.
    assert_eq!(device.count, 3);
    assert_eq!(u64::from(device.first), fileid % 3);
    assert_eq!(body.stripe_unit(), 1 << 20);
    assert_eq!(body.nfl_util & NFL4_UFLG_DENSE, NFL4_UFLG_DENSE);
    assert_eq!(
        (body.nfl_first_stripe_index, body.nfl_pattern_offset),
        (0, 0)
    );
    assert_eq!(body.nfl_fh_list.len(), 3);
    let codec = ds_codec(&mds);
    for (i, h) in body.nfl_fh_list.iter().enumerate() {
        let d = codec.decode(h).expect("DS filehandle verifies");
        assert_eq!((usize::from(d.stripe), d.fileid), (i, fileid));
    }
}
