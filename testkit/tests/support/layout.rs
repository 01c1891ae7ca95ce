//! COMPOUND building blocks for pNFS file layouts (RFC 8881 chapter 13), shared by the test
//! files.

use bytes::Bytes;
use nfs_proto::nfs4::layout_files::Nfsv41FileLayout4;
use nfs_proto::nfs4::*;

use super::open::*;
use super::Client;

/// LAYOUTGET of the whole file for `iomode` under `stateid`.
pub fn layoutget_op(iomode: Layoutiomode4, stateid: Stateid4) -> NfsArgop4 {
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
pub fn layoutget_res(r: &Compound4Res) -> &LayoutGetRes {
    r.resarray
        .iter()
        .find_map(|op| match op {
            NfsResop4::LayoutGet(res) => Some(res),
            _ => None,
        })
        .expect("no LAYOUTGET in the reply")
}

/// The layout of a successful LAYOUTGET: (reply, decoded file layout).
pub fn granted(r: &Compound4Res) -> (LayoutGetResOk, Nfsv41FileLayout4) {
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
pub async fn open_and_layoutget(c: &mut Client, name: &str, iomode: Layoutiomode4) -> Compound4Res {
    open_and_layoutget_in(c, "", name, iomode).await
}

/// [`open_and_layoutget`] of `name` in directory `dir` (a path from the root).
pub async fn open_and_layoutget_in(
    c: &mut Client,
    dir: &str,
    name: &str,
    iomode: Layoutiomode4,
) -> Compound4Res {
    let mut ops = vec![NfsArgop4::PutRootFh];
    ops.extend(super::lookups(dir));
    ops.extend([
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
    ]);
    c.call(ops).await
}

pub fn layoutreturn_op(iomode: Layoutiomode4, what: Layoutreturn4) -> NfsArgop4 {
    NfsArgop4::LayoutReturn(LayoutReturnArgs {
        lora_reclaim: false,
        lora_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
        lora_iomode: iomode,
        lora_layoutreturn: what,
    })
}

pub fn return_file(stateid: Stateid4) -> Layoutreturn4 {
    Layoutreturn4::File(LayoutreturnFile4 {
        lrf_offset: 0,
        lrf_length: u64::MAX,
        lrf_stateid: stateid,
        lrf_body: Bytes::new(),
    })
}

pub fn layoutcommit_op(stateid: Stateid4, last: Option<u64>, mtime: Option<Nfstime4>) -> NfsArgop4 {
    NfsArgop4::LayoutCommit(LayoutCommitArgs {
        loca_offset: 0,
        loca_length: u64::MAX,
        loca_reclaim: false,
        loca_stateid: stateid,
        loca_last_write_offset: match last {
            Some(no_offset) => Newoffset4::Present { no_offset },
            None => Newoffset4::Absent,
        },
        loca_time_modify: match mtime {
            Some(nt_time) => Newtime4::Changed { nt_time },
            None => Newtime4::Unchanged,
        },
        loca_layoutupdate: Default::default(),
    })
}

/// LAYOUTGET RW of `fh` under `stateid`: the DS filehandle of stripe index 0 (an RW layout's
/// handles write; a READ layout's never do).
#[allow(dead_code)]
pub async fn rw_layout_fh(c: &mut Client, fh: &NfsFh4, stateid: Stateid4) -> NfsFh4 {
    let r = c
        .call(vec![
            super::open::putfh(fh),
            layoutget_op(Layoutiomode4::LAYOUTIOMODE4_RW, stateid),
        ])
        .await;
    let (_, body) = granted(&r);
    body.nfl_fh_list[0].clone()
}
