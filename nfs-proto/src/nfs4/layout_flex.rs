//! The flexible file layout type, `LAYOUT4_FLEX_FILES` (RFC 8435): the layout body, the
//! device address, the LAYOUTRETURN body (I/O errors and statistics), the LAYOUTSTATS update
//! and the layout hint.
//!
//! As for the file layout ([`super::layout_files`]), these travel as opaque bytes inside the
//! generic pNFS structures: a layout in [`LayoutContent4::loc_body`], a device address in
//! [`DeviceAddr4::da_addr_body`], a LAYOUTRETURN's report in
//! [`LayoutreturnFile4::lrf_body`](super::LayoutreturnFile4), a LAYOUTSTATS update in
//! [`Layoutupdate4::lou_body`], a hint in `layouthint4.loh_body`. The `to_*`/`from_*`
//! methods convert, checking the layout type and that the bytes hold exactly one value.
//!
//! Unlike the file layout, a flex files layout names each data server with its own device
//! (one address per device), carries the stateid and the filehandle to use on it, and may
//! hold several mirrors: the client writes every mirror and reads any one (section 8).

use crate::nfs4::{
    DeviceAddr4, DeviceError4, Deviceid4, IoInfo4, LayoutContent4, Layouttype4, Layoutupdate4,
    Length4, Netaddr4, NfsFh4, Nfstime4, Offset4, Stateid4,
};
use crate::xdr::{from_bytes, to_bytes, DecodeError, DecodeErrorKind, Utf8String, Xdr};

use super::layout_files::MultipathList4;

/// `ffl_flags`: the client need not send LAYOUTCOMMIT (the data servers tell the metadata
/// server of size changes themselves).
pub const FF_FLAGS_NO_LAYOUTCOMMIT: u32 = 0x0000_0001;
/// `ffl_flags`: the client must not fall back to I/O through the metadata server.
pub const FF_FLAGS_NO_IO_THRU_MDS: u32 = 0x0000_0002;
/// `ffl_flags`: the client must not read through this layout (a mirror being rebuilt).
pub const FF_FLAGS_NO_READ_IO: u32 = 0x0000_0004;
/// `ffl_flags`: a write to any one mirror is enough (the metadata server copies it to the
/// others).
pub const FF_FLAGS_WRITE_ONE_MIRROR: u32 = 0x0000_0008;

/// `ff_flags4`: the `FF_FLAGS_*` bits.
#[doc(alias = "ff_flags4")]
pub type FfFlags4 = u32;

/// `ff_device_versions4`: one NFS version a data server speaks, with its I/O sizes
/// (RFC 8435 section 4.1).
#[doc(alias = "ff_device_versions4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct FfDeviceVersions4 {
    /// NFS version (3 or 4).
    pub ffdv_version: u32,
    /// Minor version (for version 4).
    pub ffdv_minorversion: u32,
    /// Largest READ the data server takes.
    pub ffdv_rsize: u32,
    /// Largest WRITE the data server takes.
    pub ffdv_wsize: u32,
    /// Tightly coupled: the data server checks the stateids the metadata server hands out
    /// (section 2.3), so the layout's stateid is one the client has from the metadata server.
    pub ffdv_tightly_coupled: bool,
}

/// `ff_device_addr4`: the body of a flex files `device_addr4` (RFC 8435 section 4.1): one
/// data server's addresses (any may be used) and the versions it speaks.
#[doc(alias = "ff_device_addr4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfDeviceAddr4 {
    /// The data server's addresses.
    pub ffda_netaddrs: MultipathList4,
    /// The NFS versions it speaks, the client picks one.
    pub ffda_versions: Vec<FfDeviceVersions4>,
}

/// `ff_data_server4`: one data server of a mirror (RFC 8435 section 5.1).
#[doc(alias = "ff_data_server4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfDataServer4 {
    /// Its device (GETDEVICEINFO gives its [`FfDeviceAddr4`]).
    pub ffds_deviceid: Deviceid4,
    /// A hint for picking a mirror to read: higher is better (section 5.1).
    pub ffds_efficiency: u32,
    /// The stateid for I/O on this data server (for a tightly coupled server, the client
    /// may use its own open, lock or delegation stateid instead: section 5.1).
    pub ffds_stateid: Stateid4,
    /// The file's handle on the data server, one per version of `ffda_versions`.
    pub ffds_fh_vers: Vec<NfsFh4>,
    /// The user to send I/O as (AUTH_SYS, loosely coupled servers).
    pub ffds_user: Utf8String,
    /// The group to send I/O as.
    pub ffds_group: Utf8String,
}

/// `ff_mirror4`: one copy of the file's data, striped over its data servers (RFC 8435
/// section 5.1).
#[doc(alias = "ff_mirror4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfMirror4 {
    /// The data servers, in stripe order.
    pub ffm_data_servers: Vec<FfDataServer4>,
}

/// `ff_layout4`: the body of a flex files `layout_content4` (RFC 8435 section 5.1).
#[doc(alias = "ff_layout4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfLayout4 {
    /// Bytes of one stripe unit; 0 when each mirror has one data server (no striping).
    pub ffl_stripe_unit: Length4,
    /// The copies of the data.
    pub ffl_mirrors: Vec<FfMirror4>,
    /// `FF_FLAGS_*` bits.
    pub ffl_flags: FfFlags4,
    /// How often (seconds) the server would like LAYOUTSTATS; 0: no wish.
    pub ffl_stats_collect_hint: u32,
}

/// `ff_ioerr4`: errors a client met on a range of the file (RFC 8435 section 9.1.1).
#[doc(alias = "ff_ioerr4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfIoerr4 {
    /// Start of the range.
    pub ffie_offset: Offset4,
    /// Length of the range.
    pub ffie_length: Length4,
    /// The stateid the I/O used.
    pub ffie_stateid: Stateid4,
    /// The errors, by data server and operation.
    pub ffie_errors: Vec<DeviceError4>,
}

/// `ff_io_latency4`: counts and times of one kind of I/O to one data server (RFC 8435
/// section 9.2.1).
#[doc(alias = "ff_io_latency4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfIoLatency4 {
    /// Operations sent.
    pub ffil_ops_requested: u64,
    /// Bytes asked for.
    pub ffil_bytes_requested: u64,
    /// Operations answered.
    pub ffil_ops_completed: u64,
    /// Bytes moved.
    pub ffil_bytes_completed: u64,
    /// Bytes asked for and not moved.
    pub ffil_bytes_not_delivered: u64,
    /// Time with at least one operation outstanding.
    pub ffil_total_busy_time: Nfstime4,
    /// Sum of the operations' times from sending to answer.
    pub ffil_aggregate_completion_time: Nfstime4,
}

/// `ff_layoutupdate4`: I/O statistics for one data server, the body of a flex files
/// `layoutupdate4` in LAYOUTSTATS and of [`FfIostats4`] (RFC 8435 section 9.2.2).
#[doc(alias = "ff_layoutupdate4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfLayoutupdate4 {
    /// The data server's address the client used.
    pub ffl_addr: Netaddr4,
    /// The filehandle used there.
    pub ffl_fhandle: NfsFh4,
    /// Reads.
    pub ffl_read: FfIoLatency4,
    /// Writes.
    pub ffl_write: FfIoLatency4,
    /// The period the figures cover.
    pub ffl_duration: Nfstime4,
    /// The data was served from the client's cache (not the data server).
    pub ffl_local: bool,
}

/// `ff_iostats4`: I/O statistics of a range of the file on one device (RFC 8435 section
/// 9.2.2).
#[doc(alias = "ff_iostats4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfIostats4 {
    /// Start of the range.
    pub ffis_offset: Offset4,
    /// Length of the range.
    pub ffis_length: Length4,
    /// The stateid the I/O used.
    pub ffis_stateid: Stateid4,
    /// Reads.
    pub ffis_read: IoInfo4,
    /// Writes.
    pub ffis_write: IoInfo4,
    /// The device.
    pub ffis_deviceid: Deviceid4,
    /// The detailed figures.
    pub ffis_layoutupdate: FfLayoutupdate4,
}

/// `ff_layoutreturn4`: the body of a flex files LAYOUTRETURN of a file's layout
/// (`layoutreturn_file4.lrf_body`, RFC 8435 section 9.3): the errors met and the statistics.
#[doc(alias = "ff_layoutreturn4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfLayoutreturn4 {
    /// Errors.
    pub fflr_ioerr_report: Vec<FfIoerr4>,
    /// Statistics.
    pub fflr_iostats_report: Vec<FfIostats4>,
}

/// `ff_layouthint4`: the body of a flex files `layouthint4` (RFC 8435 section 10): how many
/// mirrors the client would like (`ff_mirrors_hint`, a union on a bool: `None` is no wish).
#[doc(alias = "ff_layouthint4")]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Xdr)]
pub struct FfLayouthint4 {
    /// The mirror count wished for.
    pub fflh_mirrors_hint: Option<u32>,
}

/// `FF_RCA4_TYPE_MASK_READ`: CB_RECALL_ANY mask bit for READ flex files layouts (RFC 8435
/// section 11).
pub const FF_RCA4_TYPE_MASK_READ: u32 = 16;
/// `FF_RCA4_TYPE_MASK_RW`: CB_RECALL_ANY mask bit for RW flex files layouts.
pub const FF_RCA4_TYPE_MASK_RW: u32 = 17;

fn wrong_type(what: &'static str) -> DecodeError {
    DecodeError::new(
        DecodeErrorKind::Invalid("layout type is not LAYOUT4_FLEX_FILES"),
        0,
    )
    .context(what)
}

/// Decodes `body` as exactly one `T` of a flex files structure whose type field is `ty`.
fn flex_body<T: Xdr>(
    ty: Layouttype4,
    body: &bytes::Bytes,
    what: &'static str,
) -> Result<T, DecodeError> {
    if ty != Layouttype4::LAYOUT4_FLEX_FILES {
        return Err(wrong_type(what));
    }
    from_bytes(body.clone()).map_err(|e| e.context(what))
}

impl FfLayout4 {
    /// This layout as a `LAYOUT4_FLEX_FILES` layout body.
    pub fn to_content(&self) -> LayoutContent4 {
        LayoutContent4 {
            loc_type: Layouttype4::LAYOUT4_FLEX_FILES,
            loc_body: to_bytes(self),
        }
    }

    /// Decodes a layout body, which must be of type `LAYOUT4_FLEX_FILES` and hold exactly one
    /// flex files layout.
    pub fn from_content(content: &LayoutContent4) -> Result<Self, DecodeError> {
        flex_body(content.loc_type, &content.loc_body, "FfLayout4")
    }
}

impl FfDeviceAddr4 {
    /// This address as a `LAYOUT4_FLEX_FILES` device address.
    pub fn to_device_addr(&self) -> DeviceAddr4 {
        DeviceAddr4 {
            da_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
            da_addr_body: to_bytes(self),
        }
    }

    /// Decodes a device address, which must be of type `LAYOUT4_FLEX_FILES` and hold exactly
    /// one flex files device address.
    pub fn from_device_addr(addr: &DeviceAddr4) -> Result<Self, DecodeError> {
        flex_body(addr.da_layout_type, &addr.da_addr_body, "FfDeviceAddr4")
    }
}

impl FfLayoutupdate4 {
    /// These statistics as a `LAYOUT4_FLEX_FILES` layout update (LAYOUTSTATS).
    pub fn to_update(&self) -> Layoutupdate4 {
        Layoutupdate4 {
            lou_type: Layouttype4::LAYOUT4_FLEX_FILES,
            lou_body: to_bytes(self),
        }
    }

    /// Decodes a layout update, which must be of type `LAYOUT4_FLEX_FILES` and hold exactly
    /// one flex files update.
    pub fn from_update(update: &Layoutupdate4) -> Result<Self, DecodeError> {
        flex_body(update.lou_type, &update.lou_body, "FfLayoutupdate4")
    }
}

impl FfLayoutreturn4 {
    /// Decodes the body of a LAYOUTRETURN of a file's flex files layout
    /// (`layoutreturn_file4.lrf_body`; the type is the LAYOUTRETURN's `lora_layout_type`).
    /// An empty body is an empty report (the Linux client sends one when it has nothing to
    /// say; RFC 8435 section 9.3 does not allow it, knfsd takes it).
    pub fn from_body(ty: Layouttype4, body: &bytes::Bytes) -> Result<Self, DecodeError> {
        if body.is_empty() && ty == Layouttype4::LAYOUT4_FLEX_FILES {
            return Ok(Self::default());
        }
        flex_body(ty, body, "FfLayoutreturn4")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::{NfsOpnum4, NfsStat4};
    use bytes::Bytes;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_body_round_trips_through_its_typed_field(
            l in any::<FfLayout4>(),
            a in any::<FfDeviceAddr4>(),
            r in any::<FfLayoutreturn4>(),
            u in any::<FfLayoutupdate4>(),
            h in any::<FfLayouthint4>(),
        ) {
            prop_assert_eq!(FfLayout4::from_content(&l.to_content()), Ok(l));
            prop_assert_eq!(FfDeviceAddr4::from_device_addr(&a.to_device_addr()), Ok(a));
            let body = to_bytes(&r);
            prop_assert_eq!(
                FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, &body),
                Ok(r)
            );
            prop_assert_eq!(FfLayoutupdate4::from_update(&u.to_update()), Ok(u));
            prop_assert_eq!(from_bytes::<FfLayouthint4>(to_bytes(&h)), Ok(h));
        }
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    fn text(s: &str) -> Vec<u8> {
        let mut v = words(&[s.len() as u32]);
        v.extend(s.as_bytes());
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }

    fn ds(device: u8, fh: &[u8]) -> FfDataServer4 {
        FfDataServer4 {
            ffds_deviceid: [device; 16],
            ffds_efficiency: 1,
            ffds_stateid: Stateid4 {
                seqid: 0,
                other: [0; 12],
            },
            ffds_fh_vers: vec![NfsFh4(Bytes::copy_from_slice(fh))],
            ffds_user: "0".into(),
            ffds_group: "0".into(),
        }
    }

    /// A layout of two mirrors of one data server each, byte for byte as RFC 8435 section
    /// 5.1 lays it out.
    #[test]
    fn a_two_mirror_layout_has_the_rfc_encoding() {
        let l = FfLayout4 {
            ffl_stripe_unit: 0,
            ffl_mirrors: vec![
                FfMirror4 {
                    ffm_data_servers: vec![ds(1, b"ab")],
                },
                FfMirror4 {
                    ffm_data_servers: vec![ds(2, b"cd")],
                },
            ],
            ffl_flags: FF_FLAGS_NO_LAYOUTCOMMIT,
            ffl_stats_collect_hint: 5,
        };
        let mut want = words(&[0, 0, 2]);
        for (dev, fh) in [(1u8, b"ab"), (2, b"cd")] {
            want.extend(words(&[1]));
            want.extend([dev; 16]);
            want.extend(words(&[1, 0, 0, 0, 0, 1, 2]));
            want.extend(fh);
            want.extend([0, 0]);
            want.extend(text("0"));
            want.extend(text("0"));
        }
        want.extend(words(&[1, 5]));
        let c = l.to_content();
        assert_eq!(c.loc_type, Layouttype4::LAYOUT4_FLEX_FILES);
        assert_eq!(&c.loc_body[..], &want[..]);
        assert_eq!(FfLayout4::from_content(&c).unwrap(), l);
    }

    #[test]
    fn a_device_address_carries_its_versions() {
        let a = FfDeviceAddr4 {
            ffda_netaddrs: MultipathList4(vec![Netaddr4 {
                na_r_netid: "tcp".into(),
                na_r_addr: "10.0.0.1.8.1".into(),
            }]),
            ffda_versions: vec![FfDeviceVersions4 {
                ffdv_version: 4,
                ffdv_minorversion: 1,
                ffdv_rsize: 1 << 20,
                ffdv_wsize: 1 << 20,
                ffdv_tightly_coupled: true,
            }],
        };
        let mut want = words(&[1]);
        want.extend(text("tcp"));
        want.extend(text("10.0.0.1.8.1"));
        want.extend(words(&[1, 4, 1, 1 << 20, 1 << 20, 1]));
        let d = a.to_device_addr();
        assert_eq!(&d.da_addr_body[..], &want[..]);
        assert_eq!(FfDeviceAddr4::from_device_addr(&d).unwrap(), a);
    }

    #[test]
    fn a_layoutreturn_report_and_a_hint_round_trip() {
        let r = FfLayoutreturn4 {
            fflr_ioerr_report: vec![FfIoerr4 {
                ffie_offset: 0,
                ffie_length: 4096,
                ffie_stateid: Stateid4::default(),
                ffie_errors: vec![DeviceError4 {
                    de_deviceid: [3; 16],
                    de_status: NfsStat4::NFS4ERR_NXIO,
                    de_opnum: NfsOpnum4::OP_WRITE,
                }],
            }],
            fflr_iostats_report: vec![FfIostats4::default()],
        };
        let b = to_bytes(&r);
        assert_eq!(
            FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, &b).unwrap(),
            r
        );
        assert_eq!(
            FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_FLEX_FILES, &Bytes::new()).unwrap(),
            FfLayoutreturn4::default(),
            "an empty body is an empty report"
        );
        assert!(FfLayoutreturn4::from_body(Layouttype4::LAYOUT4_NFSV4_1_FILES, &b).is_err());
        for h in [None, Some(3)] {
            let hint = FfLayouthint4 {
                fflh_mirrors_hint: h,
            };
            let b = to_bytes(&hint);
            assert_eq!(&b[..4], &words(&[h.is_some() as u32])[..]);
            assert_eq!(from_bytes::<FfLayouthint4>(b).unwrap(), hint);
        }
        let u = FfLayoutupdate4 {
            ffl_local: true,
            ..FfLayoutupdate4::default()
        };
        assert_eq!(FfLayoutupdate4::from_update(&u.to_update()).unwrap(), u);
    }

    #[test]
    fn the_wrong_type_truncated_bodies_and_trailing_bytes_are_errors() {
        let l = FfLayout4 {
            ffl_mirrors: vec![FfMirror4 {
                ffm_data_servers: vec![ds(1, b"fh")],
            }],
            ..FfLayout4::default()
        };
        let mut c = l.to_content();
        c.loc_type = Layouttype4::LAYOUT4_NFSV4_1_FILES;
        let e = FfLayout4::from_content(&c).unwrap_err();
        assert!(matches!(e.kind, DecodeErrorKind::Invalid(_)), "{e}");
        assert_eq!(e.what, "FfLayout4");
        let full = l.to_content();
        for n in 0..full.loc_body.len() {
            let cut = LayoutContent4 {
                loc_type: Layouttype4::LAYOUT4_FLEX_FILES,
                loc_body: full.loc_body.slice(..n),
            };
            assert!(FfLayout4::from_content(&cut).is_err(), "{n} bytes");
        }
        let mut body = full.loc_body.to_vec();
        body.extend([0, 0, 0, 0]);
        let c = LayoutContent4 {
            loc_type: Layouttype4::LAYOUT4_FLEX_FILES,
            loc_body: Bytes::from(body),
        };
        assert_eq!(
            FfLayout4::from_content(&c).unwrap_err().kind,
            DecodeErrorKind::TrailingBytes(4)
        );
        // A count far past the bytes there is refused, not allocated.
        let mut huge = words(&[0, 0, u32::MAX]);
        huge.extend([0; 8]);
        let c = LayoutContent4 {
            loc_type: Layouttype4::LAYOUT4_FLEX_FILES,
            loc_body: Bytes::from(huge),
        };
        assert!(FfLayout4::from_content(&c).is_err());
    }
}
