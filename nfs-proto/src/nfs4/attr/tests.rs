use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

/// The attribute numbers, checked one by one against the RFC 8881 / RFC 7863 XDR, RFC 8275
/// (mode_umask) and RFC 8276 (xattr_support).
#[test]
fn attribute_numbers_match_the_rfcs() {
    let table: &[(u32, u32)] = &[
        (FATTR4_SUPPORTED_ATTRS, 0),
        (FATTR4_TYPE, 1),
        (FATTR4_FH_EXPIRE_TYPE, 2),
        (FATTR4_CHANGE, 3),
        (FATTR4_SIZE, 4),
        (FATTR4_LINK_SUPPORT, 5),
        (FATTR4_SYMLINK_SUPPORT, 6),
        (FATTR4_NAMED_ATTR, 7),
        (FATTR4_FSID, 8),
        (FATTR4_UNIQUE_HANDLES, 9),
        (FATTR4_LEASE_TIME, 10),
        (FATTR4_RDATTR_ERROR, 11),
        (FATTR4_ACL, 12),
        (FATTR4_ACLSUPPORT, 13),
        (FATTR4_ARCHIVE, 14),
        (FATTR4_CANSETTIME, 15),
        (FATTR4_CASE_INSENSITIVE, 16),
        (FATTR4_CASE_PRESERVING, 17),
        (FATTR4_CHOWN_RESTRICTED, 18),
        (FATTR4_FILEHANDLE, 19),
        (FATTR4_FILEID, 20),
        (FATTR4_FILES_AVAIL, 21),
        (FATTR4_FILES_FREE, 22),
        (FATTR4_FILES_TOTAL, 23),
        (FATTR4_FS_LOCATIONS, 24),
        (FATTR4_HIDDEN, 25),
        (FATTR4_HOMOGENEOUS, 26),
        (FATTR4_MAXFILESIZE, 27),
        (FATTR4_MAXLINK, 28),
        (FATTR4_MAXNAME, 29),
        (FATTR4_MAXREAD, 30),
        (FATTR4_MAXWRITE, 31),
        (FATTR4_MIMETYPE, 32),
        (FATTR4_MODE, 33),
        (FATTR4_NO_TRUNC, 34),
        (FATTR4_NUMLINKS, 35),
        (FATTR4_OWNER, 36),
        (FATTR4_OWNER_GROUP, 37),
        (FATTR4_QUOTA_AVAIL_HARD, 38),
        (FATTR4_QUOTA_AVAIL_SOFT, 39),
        (FATTR4_QUOTA_USED, 40),
        (FATTR4_RAWDEV, 41),
        (FATTR4_SPACE_AVAIL, 42),
        (FATTR4_SPACE_FREE, 43),
        (FATTR4_SPACE_TOTAL, 44),
        (FATTR4_SPACE_USED, 45),
        (FATTR4_SYSTEM, 46),
        (FATTR4_TIME_ACCESS, 47),
        (FATTR4_TIME_ACCESS_SET, 48),
        (FATTR4_TIME_BACKUP, 49),
        (FATTR4_TIME_CREATE, 50),
        (FATTR4_TIME_DELTA, 51),
        (FATTR4_TIME_METADATA, 52),
        (FATTR4_TIME_MODIFY, 53),
        (FATTR4_TIME_MODIFY_SET, 54),
        (FATTR4_MOUNTED_ON_FILEID, 55),
        (FATTR4_DIR_NOTIF_DELAY, 56),
        (FATTR4_DIRENT_NOTIF_DELAY, 57),
        (FATTR4_DACL, 58),
        (FATTR4_SACL, 59),
        (FATTR4_CHANGE_POLICY, 60),
        (FATTR4_FS_STATUS, 61),
        (FATTR4_FS_LAYOUT_TYPES, 62),
        (FATTR4_LAYOUT_HINT, 63),
        (FATTR4_LAYOUT_TYPES, 64),
        (FATTR4_LAYOUT_BLKSIZE, 65),
        (FATTR4_LAYOUT_ALIGNMENT, 66),
        (FATTR4_FS_LOCATIONS_INFO, 67),
        (FATTR4_MDSTHRESHOLD, 68),
        (FATTR4_RETENTION_GET, 69),
        (FATTR4_RETENTION_SET, 70),
        (FATTR4_RETENTEVT_GET, 71),
        (FATTR4_RETENTEVT_SET, 72),
        (FATTR4_RETENTION_HOLD, 73),
        (FATTR4_MODE_SET_MASKED, 74),
        (FATTR4_SUPPATTR_EXCLCREAT, 75),
        (FATTR4_FS_CHARSET_CAP, 76),
        (FATTR4_CLONE_BLKSIZE, 77),
        (FATTR4_SPACE_FREED, 78),
        (FATTR4_CHANGE_ATTR_TYPE, 79),
        (FATTR4_SEC_LABEL, 80),
        (FATTR4_MODE_UMASK, 81),
        (FATTR4_XATTR_SUPPORT, 82),
        (FATTR4_OFFLINE, 83),
        (FATTR4_TIME_DELEG_ACCESS, 84),
        (FATTR4_TIME_DELEG_MODIFY, 85),
        (FATTR4_OPEN_ARGUMENTS, 86),
    ];
    for &(c, n) in table {
        assert_eq!(c, n);
    }
    assert_eq!(ALL_KNOWN, (0..=86).collect::<Vec<u32>>().as_slice());
    assert_eq!(all_known_mask().0.len(), 3);
    assert!(!is_known(87) && !is_known(u32::MAX));
}

#[test]
fn attribute_names() {
    assert_eq!(attr_name(FATTR4_TYPE), Some("type"));
    assert_eq!(attr_name(FATTR4_TIME_MODIFY_SET), Some("time_modify_set"));
    assert_eq!(
        attr_name(FATTR4_SUPPATTR_EXCLCREAT),
        Some("suppattr_exclcreat")
    );
    assert_eq!(attr_name(FATTR4_XATTR_SUPPORT), Some("xattr_support"));
    assert_eq!(attr_name(FATTR4_OPEN_ARGUMENTS), Some("open_arguments"));
    assert_eq!(attr_name(87), None);
    for &bit in ALL_KNOWN {
        let name = attr_name(bit).unwrap();
        assert!(!name.starts_with("r#"), "{name}");
    }
}

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn be64(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// A GETATTR reply's `obj_attributes` as a Linux client asks for them on every file
/// (type, change, size, fsid, fileid, mode, numlinks, owner, owner_group, space_used,
/// time_access, time_metadata, time_modify, mounted_on_fileid), written out by hand.
fn getattr_reply_bytes() -> Vec<u8> {
    let mut b = Vec::new();
    // attrmask: two words.
    b.extend(be32(2));
    // word 0: type(1) change(3) size(4) fsid(8) fileid(20)
    b.extend(be32((1 << 1) | (1 << 3) | (1 << 4) | (1 << 8) | (1 << 20)));
    // word 1: mode(33) numlinks(35) owner(36) owner_group(37) space_used(45)
    // time_access(47) time_metadata(52) time_modify(53) mounted_on_fileid(55)
    b.extend(be32(
        (1 << 1)
            | (1 << 3)
            | (1 << 4)
            | (1 << 5)
            | (1 << 13)
            | (1 << 15)
            | (1 << 20)
            | (1 << 21)
            | (1 << 23),
    ));
    // attr_vals length: 120 bytes.
    b.extend(be32(120));
    b.extend(be32(1)); // type: NF4REG
    b.extend(be64(0x0000_0001_6553_f100)); // change
    b.extend(be64(4096)); // size
    b.extend(be64(0x2a)); // fsid.major
    b.extend(be64(0x07)); // fsid.minor
    b.extend(be64(8000)); // fileid
    b.extend(be32(0o644)); // mode
    b.extend(be32(1)); // numlinks
    b.extend([0, 0, 0, 1, b'0', 0, 0, 0]); // owner "0"
    b.extend([0, 0, 0, 1, b'0', 0, 0, 0]); // owner_group "0"
    b.extend(be64(4096)); // space_used
    for (secs, nsecs) in [
        (1_700_000_000i64, 1u32),
        (1_700_000_001, 2),
        (1_700_000_002, 3),
    ] {
        b.extend(be64(secs as u64)); // time_access, time_metadata, time_modify
        b.extend(be32(nsecs));
    }
    b.extend(be64(8000)); // mounted_on_fileid
    b
}

#[test]
fn decodes_a_getattr_reply_built_by_hand() {
    let wire = Bytes::from(getattr_reply_bytes());
    assert_eq!(
        &wire[4..12],
        &[0x00, 0x10, 0x01, 0x1a, 0x00, 0xb0, 0xa0, 0x3a]
    );
    let f: Fattr4 = from_bytes(wire.clone()).unwrap();
    let attrs = FileAttrs::from_fattr(&f).unwrap();
    let t = |seconds, nseconds| Nfstime4 { seconds, nseconds };
    let want = FileAttrs {
        r#type: Some(NfsFtype4::NF4REG),
        change: Some(0x0000_0001_6553_f100),
        size: Some(4096),
        fsid: Some(Fsid4 {
            major: 0x2a,
            minor: 7,
        }),
        fileid: Some(8000),
        mode: Some(0o644),
        numlinks: Some(1),
        owner: Some("0".into()),
        owner_group: Some("0".into()),
        space_used: Some(4096),
        time_access: Some(t(1_700_000_000, 1)),
        time_metadata: Some(t(1_700_000_001, 2)),
        time_modify: Some(t(1_700_000_002, 3)),
        mounted_on_fileid: Some(8000),
        ..FileAttrs::default()
    };
    assert_eq!(attrs, want);
    // Re-encoding what was asked gives the same bytes; so does answering Linux's usual
    // request, which also asks for rawdev (41), which a regular file leaves out.
    assert_eq!(to_bytes(&attrs.to_fattr(&f.attrmask)), wire);
    let linux_request = Bitmap4(vec![0x0010_011a, 0x00b0_a23a]);
    assert_eq!(to_bytes(&attrs.to_fattr(&linux_request)), wire);
    assert_eq!(to_bytes(&attrs.to_fattr_exact(&f.attrmask)), wire);
    assert_eq!(attrs.mask(), f.attrmask);
    let dbg = format!("{attrs:?}");
    assert!(
        dbg.starts_with("FileAttrs { type: NF4REG, change: "),
        "{dbg}"
    );
    assert!(!dbg.contains("None"), "{dbg}");
}

#[test]
fn unknown_bits_are_unsupported() {
    // Bit 87 is past the last attribute known; bit 200 is in word 6.
    for bit in [87, 95, 200] {
        let f = Fattr4 {
            attrmask: Bitmap4::from_bits([FATTR4_SIZE, bit]),
            attr_vals: Bytes::from(be64(1).to_vec()),
        };
        let e = FileAttrs::from_fattr(&f).unwrap_err();
        assert_eq!(e, AttrError::Unsupported(bit));
        assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_ATTRNOTSUPP);
    }
    // The lowest unknown bit is reported, even when values before it are malformed.
    let f = Fattr4 {
        attrmask: Bitmap4::from_bits([FATTR4_OWNER, 90, 88]),
        attr_vals: Bytes::new(),
    };
    assert_eq!(
        FileAttrs::from_fattr(&f).unwrap_err(),
        AttrError::Unsupported(88)
    );
}

#[test]
fn malformed_values_are_badxdr() {
    // size needs 8 bytes; 4 given.
    let f = Fattr4 {
        attrmask: Bitmap4::from_bits([FATTR4_SIZE]),
        attr_vals: Bytes::from(be32(1).to_vec()),
    };
    let e = FileAttrs::from_fattr(&f).unwrap_err();
    let AttrError::Decode(d) = e else {
        panic!("{e:?}")
    };
    assert_eq!(d.what, "FATTR4_SIZE");
    assert_eq!(NfsStat4::from(e), NfsStat4::NFS4ERR_BADXDR);

    // A bool that is 2.
    let f = Fattr4 {
        attrmask: Bitmap4::from_bits([FATTR4_XATTR_SUPPORT]),
        attr_vals: Bytes::from(be32(2).to_vec()),
    };
    let AttrError::Decode(d) = FileAttrs::from_fattr(&f).unwrap_err() else {
        panic!()
    };
    assert_eq!(d.kind, DecodeErrorKind::BadBool(2));

    // Trailing bytes after the last value.
    let f = Fattr4 {
        attrmask: Bitmap4::from_bits([FATTR4_MODE]),
        attr_vals: Bytes::from([be32(0o755), be32(0)].concat()),
    };
    let AttrError::Decode(d) = FileAttrs::from_fattr(&f).unwrap_err() else {
        panic!()
    };
    assert_eq!(d.kind, DecodeErrorKind::TrailingBytes(4));

    // Values but no bits.
    let f = Fattr4 {
        attrmask: Bitmap4(vec![0, 0]),
        attr_vals: Bytes::from(be32(0).to_vec()),
    };
    assert!(matches!(
        FileAttrs::from_fattr(&f),
        Err(AttrError::Decode(_))
    ));
}

#[test]
fn empty_lists() {
    for mask in [Bitmap4::new(), Bitmap4(vec![0]), Bitmap4(vec![0, 0, 0])] {
        let f = Fattr4 {
            attrmask: mask.clone(),
            attr_vals: Bytes::new(),
        };
        let a = FileAttrs::from_fattr(&f).unwrap();
        assert!(a.is_empty());
        assert_eq!(a.to_fattr(&mask), Fattr4::default());
        assert_eq!(a.to_fattr_exact(&mask), f);
    }
    assert_eq!(format!("{:?}", FileAttrs::default()), "FileAttrs");
}

#[test]
fn setattr_with_write_only_attributes() {
    // SETATTR of mode, time_modify_set (client time) and time_access_set (server time).
    let mut vals = Vec::new();
    vals.extend(be32(0o600)); // mode (33)
    vals.extend(be32(0)); // time_access_set (48): SET_TO_SERVER_TIME4
    vals.extend(be32(1)); // time_modify_set (54): SET_TO_CLIENT_TIME4
    vals.extend(be64(1_600_000_000));
    vals.extend(be32(500));
    let f = Fattr4 {
        attrmask: Bitmap4::from_bits([FATTR4_MODE, FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET]),
        attr_vals: Bytes::from(vals),
    };
    let a = FileAttrs::from_fattr(&f).unwrap();
    assert_eq!(a.mode, Some(0o600));
    assert_eq!(a.time_access_set, Some(Settime4::SetToServerTime));
    assert_eq!(
        a.time_modify_set,
        Some(Settime4::SetToClientTime(Nfstime4 {
            seconds: 1_600_000_000,
            nseconds: 500
        }))
    );
    assert_eq!(a.to_fattr_exact(&f.attrmask), f);
}

#[test]
fn has_clear_merge() {
    let mut a = FileAttrs {
        size: Some(1),
        mode: Some(0o644),
        ..FileAttrs::default()
    };
    assert!(a.has(FATTR4_SIZE) && a.has(FATTR4_MODE) && !a.has(FATTR4_OWNER));
    assert!(!a.has(1000));
    a.clear(FATTR4_SIZE);
    assert!(!a.has(FATTR4_SIZE));
    a.merge(FileAttrs {
        owner: Some("u".into()),
        mode: Some(0o600),
        ..FileAttrs::default()
    });
    assert_eq!(a.mode, Some(0o600));
    assert_eq!(a.mask(), Bitmap4::from_bits([FATTR4_MODE, FATTR4_OWNER]));
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "has no value")]
fn to_fattr_exact_wants_every_bit() {
    FileAttrs::default().to_fattr_exact(&Bitmap4::from_bits([FATTR4_SIZE]));
}

#[test]
fn attr_error_converts_and_prints() {
    let e = AttrError::Unsupported(87);
    assert_eq!(e.to_string(), "attribute 87 is not supported");
    let d = DecodeError::new(DecodeErrorKind::NonZeroPadding, 4);
    assert_eq!(AttrError::from(d), AttrError::Decode(d));
    assert_eq!(NfsStat4::from(AttrError::from(d)), NfsStat4::NFS4ERR_BADXDR);
}

/// Bitmaps over known bits (with an unknown one now and then) and arbitrary bytes.
fn wild_fattr() -> impl Strategy<Value = Fattr4> {
    (
        proptest::collection::vec(0u32..90, 0..6),
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(any::<u32>(), 0..16),
    )
        .prop_map(|(bits, junk, words)| {
            let mut vals = Vec::new();
            for w in words {
                vals.extend(w.to_be_bytes());
            }
            vals.extend(junk);
            Fattr4 {
                attrmask: Bitmap4::from_bits(bits),
                attr_vals: Bytes::from(vals),
            }
        })
}

proptest! {
    #[test]
    fn file_attrs_round_trip(a in any::<FileAttrs>()) {
        let f = a.to_fattr(&a.mask());
        prop_assert_eq!(&f.attrmask, &a.mask());
        prop_assert!(f.attrmask.0.last().is_none_or(|&w| w != 0), "trailing zero word");
        prop_assert_eq!(f.attr_vals.len() % 4, 0);
        prop_assert_eq!(FileAttrs::from_fattr(&f), Ok(a.clone()));
        // Through the full fattr4 encoding as well.
        let back: Fattr4 = from_bytes(to_bytes(&f)).unwrap();
        prop_assert_eq!(FileAttrs::from_fattr(&back), Ok(a));
    }

    #[test]
    fn exact_reencoding_keeps_the_bytes(a in any::<FileAttrs>(), pad in 0usize..3) {
        // A peer's bitmap with trailing zero words.
        let mut f = a.to_fattr(&a.mask());
        f.attrmask.0.extend(std::iter::repeat_n(0, pad));
        let wire = to_bytes(&f);
        let got: Fattr4 = from_bytes(wire.clone()).unwrap();
        let decoded = FileAttrs::from_fattr(&got).unwrap();
        prop_assert_eq!(to_bytes(&decoded.to_fattr_exact(&got.attrmask)), wire);
    }

    #[test]
    fn to_fattr_emits_exactly_the_requested_bits(a in any::<FileAttrs>(), req in any::<Bitmap4>()) {
        let f = a.to_fattr(&req);
        let want: Vec<u32> = req.iter().filter(|&b| a.has(b)).collect();
        prop_assert_eq!(f.attrmask.iter().collect::<Vec<_>>(), want.clone());
        prop_assert_eq!(f.attrmask.0.len(), want.last().map_or(0, |&b| b as usize / 32 + 1));
        let back = FileAttrs::from_fattr(&f).unwrap();
        for &bit in ALL_KNOWN {
            prop_assert_eq!(back.has(bit), want.contains(&bit));
        }
    }

    #[test]
    fn truncated_or_extended_values_fail(a in any::<FileAttrs>()) {
        let f = a.to_fattr(&a.mask());
        for n in (0..f.attr_vals.len()).step_by(4) {
            let cut = Fattr4 { attrmask: f.attrmask.clone(), attr_vals: f.attr_vals.slice(..n) };
            prop_assert!(FileAttrs::from_fattr(&cut).is_err(), "prefix of {} bytes decoded", n);
        }
        let mut longer = f.attr_vals.to_vec();
        longer.extend([0, 0, 0, 0]);
        let long = Fattr4 { attrmask: f.attrmask.clone(), attr_vals: Bytes::from(longer) };
        prop_assert!(FileAttrs::from_fattr(&long).is_err());
    }

    #[test]
    fn arbitrary_input_never_panics(f in wild_fattr()) {
        if let Ok(a) = FileAttrs::from_fattr(&f) {
            // Whatever decoded re-encodes to what came in.
            prop_assert_eq!(a.to_fattr_exact(&f.attrmask), f);
        }
    }
}
