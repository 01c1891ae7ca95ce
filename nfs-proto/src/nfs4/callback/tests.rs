//! Tests of the callback operations and CB_COMPOUND.

use super::*;
use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

crate::roundtrip_tests!(
    cb_get_attr_args: CbGetAttrArgs,
    cb_get_attr_res_ok: CbGetAttrResOk,
    cb_get_attr_res: CbGetAttrRes,
    cb_recall_args: CbRecallArgs,
    cb_recall_res: CbRecallRes,
    layoutrecall_type4: LayoutrecallType4,
    layoutrecall_file4: LayoutrecallFile4,
    layoutrecall4: Layoutrecall4,
    cb_layout_recall_args: CbLayoutRecallArgs,
    cb_layout_recall_res: CbLayoutRecallRes,
    notify_type4: NotifyType4,
    notify_entry4: NotifyEntry4,
    prev_entry4: PrevEntry4,
    notify_remove4: NotifyRemove4,
    notify_add4: NotifyAdd4,
    notify_attr4: NotifyAttr4,
    notify_rename4: NotifyRename4,
    notify_verifier4: NotifyVerifier4,
    notify4: Notify4,
    cb_notify_args: CbNotifyArgs,
    cb_notify_res: CbNotifyRes,
    cb_push_deleg_args: CbPushDelegArgs,
    cb_push_deleg_res: CbPushDelegRes,
    cb_recall_any_args: CbRecallAnyArgs,
    cb_recall_any_res: CbRecallAnyRes,
    cb_recallable_obj_avail_args: CbRecallableObjAvailArgs,
    cb_recallable_obj_avail_res: CbRecallableObjAvailRes,
    cb_recall_slot_args: CbRecallSlotArgs,
    cb_recall_slot_res: CbRecallSlotRes,
    referring_call4: ReferringCall4,
    referring_call_list4: ReferringCallList4,
    cb_sequence_args: CbSequenceArgs,
    cb_sequence_res_ok: CbSequenceResOk,
    cb_sequence_res: CbSequenceRes,
    cb_wants_cancelled_args: CbWantsCancelledArgs,
    cb_wants_cancelled_res: CbWantsCancelledRes,
    cb_notify_lock_args: CbNotifyLockArgs,
    cb_notify_lock_res: CbNotifyLockRes,
    notify_deviceid_delete4: NotifyDeviceidDelete4,
    notify_deviceid_change4: NotifyDeviceidChange4,
    cb_notify_deviceid_args: CbNotifyDeviceidArgs,
    cb_notify_deviceid_res: CbNotifyDeviceidRes,
    offload_info4: OffloadInfo4,
    cb_offload_args: CbOffloadArgs,
    cb_offload_res: CbOffloadRes,
    cb_illegal_res: CbIllegalRes,
    nfs_cb_argop4: NfsCbArgop4,
    nfs_cb_resop4: NfsCbResop4,
    cb_compound_args: CbCompoundArgs,
    cb_compound_res: CbCompoundRes,
    nfs_cb_opnum4: NfsCbOpnum4,
);

/// A client that offers CB_RECALL only.
struct RecallOnly(u32);

impl CbHandler for RecallOnly {
    async fn cb_recall(&mut self, _: &CbRecallArgs) -> CbRecallRes {
        self.0 += 1;
        CbRecallRes {
            status: NfsStat4::NFS4_OK,
        }
    }
}

#[test]
fn cb_dispatch_runs_the_handler_s_method_and_answers_notsupp_for_the_rest() {
    let mut h = RecallOnly(0);
    let run =
        |h: &mut RecallOnly, op: NfsCbArgop4| futures::executor::block_on(cb_dispatch(h, &op));
    assert_eq!(run(&mut h, recall()).status(), NfsStat4::NFS4_OK);
    assert_eq!(h.0, 1);
    assert_eq!(
        run(&mut h, sequence()),
        NfsCbResop4::Sequence(CbSequenceRes::Err(NfsStat4::NFS4ERR_NOTSUPP))
    );
    assert_eq!(
        run(
            &mut h,
            NfsCbArgop4::RecallAny(CbRecallAnyArgs {
                craa_objects_to_keep: 0,
                craa_type_mask: Bitmap4::default(),
            })
        ),
        NfsCbResop4::RecallAny(CbRecallAnyRes {
            status: NfsStat4::NFS4ERR_NOTSUPP
        })
    );
    for op in [
        NfsCbArgop4::Illegal,
        NfsCbArgop4::Unknown(NfsCbOpnum4(9999)),
    ] {
        assert_eq!(
            run(&mut h, op),
            NfsCbResop4::Illegal(CbIllegalRes {
                status: NfsStat4::NFS4ERR_OP_ILLEGAL
            })
        );
    }
}

fn sequence() -> NfsCbArgop4 {
    NfsCbArgop4::Sequence(CbSequenceArgs {
        csa_sessionid: [0xab; 16],
        csa_sequenceid: 7,
        csa_slotid: 0,
        csa_highest_slotid: 0,
        csa_cachethis: false,
        csa_referring_call_lists: vec![],
    })
}

fn recall() -> NfsCbArgop4 {
    NfsCbArgop4::Recall(CbRecallArgs {
        stateid: Stateid4 {
            seqid: 1,
            other: [9; 12],
        },
        truncate: false,
        fh: NfsFh4(Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8])),
    })
}

/// Header of a CB_COMPOUND with an empty tag, minor version 1 and `n` operations.
fn header(e: &mut Encoder, n: u32) {
    e.put_opaque(b"");
    e.put_u32(1);
    e.put_u32(0);
    e.put_u32(n);
}

#[test]
fn cb_sequence_and_recall_known_bytes() {
    let args = CbCompoundArgs {
        tag: Utf8String::default(),
        minorversion: 1,
        callback_ident: 0,
        argarray: vec![sequence(), recall()],
    };
    let mut e = Encoder::new();
    header(&mut e, 2);
    e.put_u32(11); // OP_CB_SEQUENCE
    e.put_fixed(&[0xab; 16]);
    for w in [7, 0, 0, 0, 0] {
        e.put_u32(w); // sequenceid, slotid, highest_slotid, cachethis, no referring lists
    }
    e.put_u32(4); // OP_CB_RECALL
    e.put_u32(1);
    e.put_fixed(&[9; 12]);
    e.put_u32(0);
    e.put_opaque(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let b = e.into_bytes();
    assert_eq!(to_bytes(&args), b);
    assert_eq!(from_bytes::<CbCompoundArgs>(b).unwrap(), args);
    assert_eq!(args.argarray[1].opnum(), NfsCbOpnum4::OP_CB_RECALL);
}

#[test]
fn unknown_op_ends_the_array() {
    let mut e = Encoder::new();
    header(&mut e, 3);
    sequence().encode(&mut e);
    e.put_u32(99); // unknown op, then arguments nobody can parse
    e.put_u32(0xdead_beef);
    e.put_u32(0xffff_ffff);
    recall().encode(&mut e);
    let b = e.into_bytes();

    // Strict decoding refuses it; partial decoding keeps the ops up to the unknown one.
    let e = from_bytes::<CbCompoundArgs>(b.clone()).unwrap_err();
    assert_eq!(e.kind, crate::xdr::DecodeErrorKind::BadDiscriminant(99));
    let mut d = Decoder::new(b);
    let (partial, failed) = CbCompoundArgs::decode_partial(&mut d).unwrap();
    assert_eq!(
        partial.argarray,
        vec![sequence(), NfsCbArgop4::Unknown(NfsCbOpnum4(99))]
    );
    assert_eq!(partial.argarray[1].opnum(), NfsCbOpnum4(99));
    assert_eq!(failed, None);
}

#[test]
fn illegal_op_does_not_end_the_array() {
    let args = CbCompoundArgs {
        tag: "t".into(),
        minorversion: 2,
        callback_ident: 0,
        argarray: vec![sequence(), NfsCbArgop4::Illegal, recall()],
    };
    let b = to_bytes(&args);
    assert_eq!(from_bytes::<CbCompoundArgs>(b).unwrap(), args);
}

#[test]
fn truncated_op_is_reported_with_its_index() {
    let mut e = Encoder::new();
    header(&mut e, 3);
    sequence().encode(&mut e);
    recall().encode(&mut e);
    // CB_RECALL whose filehandle claims 64 bytes but the message ends after 8.
    e.put_u32(4);
    Stateid4::default().encode(&mut e);
    e.put_u32(1);
    e.put_u32(64);
    e.put_fixed(&[0; 8]);
    let b = e.into_bytes();

    let err = from_bytes::<CbCompoundArgs>(b.clone()).unwrap_err();
    assert!(
        matches!(err.kind, DecodeErrorKind::LengthBeyondInput { len: 64, .. }),
        "{err}"
    );

    let mut d = Decoder::new(b);
    let (partial, failed) = CbCompoundArgs::decode_partial(&mut d).unwrap();
    assert_eq!(partial.argarray, vec![sequence(), recall()]);
    assert_eq!(partial.minorversion, 1);
    let failed = failed.expect("the third op fails");
    assert_eq!(failed.index, 2);
    assert_eq!(failed.op, NfsCbOpnum4::OP_CB_RECALL);
    assert_eq!(failed.error, err);
    assert_eq!(failed.error.what, "NfsFh4.0");
    assert!(failed
        .to_string()
        .starts_with("CB_COMPOUND operation 2 (OP_CB_RECALL)"));
}

#[test]
fn truncated_header_is_an_error() {
    let mut e = Encoder::new();
    header(&mut e, 1);
    let b = e.into_bytes();
    // The count says one op, but there is no op number.
    let mut d = Decoder::new(b.clone());
    assert!(CbCompoundArgs::decode_partial(&mut d).is_err());
    let mut d = Decoder::new(b.slice(..8));
    assert!(CbCompoundArgs::decode_partial(&mut d).is_err());
}

#[test]
fn compound_res_status_and_opnums() {
    let res = CbCompoundRes {
        status: NfsStat4::NFS4ERR_DELAY,
        tag: "x".into(),
        resarray: vec![
            NfsCbResop4::Sequence(CbSequenceRes::Ok(CbSequenceResOk::default())),
            NfsCbResop4::Recall(CbRecallRes {
                status: NfsStat4::NFS4ERR_DELAY,
            }),
        ],
    };
    let back = from_bytes::<CbCompoundRes>(to_bytes(&res)).unwrap();
    assert_eq!(back, res);
    assert_eq!(back.status(), NfsStat4::NFS4ERR_DELAY);
    assert_eq!(back.resarray[0].status(), NfsStat4::NFS4_OK);
    assert_eq!(back.resarray[1].opnum(), NfsCbOpnum4::OP_CB_RECALL);
    assert_eq!(back.resarray[1].status(), NfsStat4::NFS4ERR_DELAY);
}

#[test]
fn compound_res_with_unknown_result_is_malformed() {
    let mut e = Encoder::new();
    e.put_u32(0);
    e.put_opaque(b"");
    e.put_u32(2);
    e.put_u32(77);
    e.put_u32(0x1234_5678);
    let err = from_bytes::<CbCompoundRes>(e.into_bytes()).unwrap_err();
    assert_eq!(err.kind, crate::xdr::DecodeErrorKind::BadDiscriminant(77));
    assert_eq!(err.offset, 12);
    assert_eq!(
        NfsCbResop4::Unknown(NfsCbOpnum4(77)).status(),
        NfsStat4::NFS4ERR_OP_ILLEGAL
    );
}

#[test]
fn cb_offload_failure_carries_bytes_copied() {
    let mut e = Encoder::new();
    e.put_opaque(&[5; 4]);
    Stateid4::default().encode(&mut e);
    e.put_u32(28); // NFS4ERR_NOSPC
    e.put_u64(4096);
    let a = from_bytes::<CbOffloadArgs>(e.into_bytes()).unwrap();
    assert_eq!(
        a.coa_offload_info,
        OffloadInfo4::Failed {
            coa_status: NfsStat4::NFS4ERR_NOSPC,
            coa_bytes_copied: 4096,
        }
    );
    assert_eq!(a.coa_offload_info.status(), NfsStat4::NFS4ERR_NOSPC);
}

#[test]
fn layoutrecall_all_is_void_and_unknown_type_refused() {
    let mut e = Encoder::new();
    e.put_u32(3);
    assert_eq!(
        from_bytes::<Layoutrecall4>(e.into_bytes()).unwrap(),
        Layoutrecall4::All
    );
    let mut e = Encoder::new();
    e.put_u32(4);
    assert!(from_bytes::<Layoutrecall4>(e.into_bytes()).is_err());
}
