//! The pNFS file layout body and device address (RFC 8881 section 13.3), and universal
//! addresses (RFC 5665 section 5.2.3.3 and 5.2.3.4).
//!
//! LAYOUTGET carries a layout's body as opaque bytes ([`LayoutContent4::loc_body`]) and
//! GETDEVICEINFO a device's address likewise ([`DeviceAddr4::da_addr_body`]). For
//! `LAYOUT4_NFSV4_1_FILES` those bytes are the XDR of [`Nfsv41FileLayout4`] and
//! [`Nfsv41FileLayoutDsAddr4`]; the `to_*`/`from_*` methods here convert between the two.
//!
//! Data server addresses are [`Netaddr4`]s: a netid (`"tcp"`, `"tcp6"`) and a universal
//! address, `"h1.h2.h3.h4.p1.p2"` for IPv4 or `"x1:...:x8.p1.p2"` for IPv6, where `p1.p2` is
//! the port's high and low byte in decimal. [`netaddr_from_socket_addr`] and
//! [`socket_addr_from_netaddr`] convert them.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::nfs4::{
    Count4, DeviceAddr4, Deviceid4, LayoutContent4, Layouttype4, Netaddr4, NfsFh4, Offset4,
};
use crate::xdr::{from_bytes, to_bytes, DecodeError, DecodeErrorKind, Xdr};

/// `nfl_util` bits that are flags, not stripe unit size (RFC 8881 section 13.3).
pub const NFL4_UFLG_MASK: u32 = 0x0000_003F;
/// `nfl_util` flag: the layout is dense (stripes packed on each data server's file).
pub const NFL4_UFLG_DENSE: u32 = 0x0000_0001;
/// `nfl_util` flag: COMMIT goes to the metadata server, not the data servers.
pub const NFL4_UFLG_COMMIT_THRU_MDS: u32 = 0x0000_0002;
/// `nfl_util` flag: IO_ADVISE goes to the metadata server (RFC 7862 section 15.5).
pub const NFL42_UFLG_IO_ADVISE_THRU_MDS: u32 = 0x0000_0004;
/// `nfl_util` bits that hold the stripe unit size, in bytes (a multiple of 64).
pub const NFL4_UFLG_STRIPE_UNIT_SIZE_MASK: u32 = 0xFFFF_FFC0;

/// `filelayout_hint_care4` value: the client cares about [`NFL4_UFLG_DENSE`].
///
/// The RFC declares these as an enum, but `nflh_care` is a `uint32_t` bit set, so they are
/// plain constants here.
pub const NFLH4_CARE_DENSE: u32 = NFL4_UFLG_DENSE;
/// `filelayout_hint_care4` value: the client cares about [`NFL4_UFLG_COMMIT_THRU_MDS`].
pub const NFLH4_CARE_COMMIT_THRU_MDS: u32 = NFL4_UFLG_COMMIT_THRU_MDS;
/// `filelayout_hint_care4` value: the client cares about [`NFL42_UFLG_IO_ADVISE_THRU_MDS`].
pub const NFL42_CARE_IO_ADVISE_THRU_MDS: u32 = NFL42_UFLG_IO_ADVISE_THRU_MDS;
/// `filelayout_hint_care4` value: the client cares about the stripe unit size.
pub const NFLH4_CARE_STRIPE_UNIT_SIZE: u32 = 0x0000_0040;
/// `filelayout_hint_care4` value: the client cares about the stripe count.
pub const NFLH4_CARE_STRIPE_COUNT: u32 = 0x0000_0080;

/// `nfl_util4`: stripe unit size and `NFL4_UFLG_*` flags in one word.
#[doc(alias = "nfl_util4")]
pub type NflUtil4 = u32;

/// The file layout hint, the body of a `layouthint4` (RFC 8881 section 13.3).
#[doc(alias = "nfsv4_1_file_layouthint4")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct Nfsv41FileLayouthint4 {
    /// `NFLH4_CARE_*` bits: which of the following the client cares about.
    pub nflh_care: u32,
    /// Preferred stripe unit size and flags.
    pub nflh_util: NflUtil4,
    /// Preferred stripe count.
    pub nflh_stripe_count: Count4,
}

/// `multipath_list4`: addresses of one data server, any of which may be used
/// (RFC 8881 section 13.3).
#[doc(alias = "multipath_list4")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct MultipathList4(pub Vec<Netaddr4>);

/// The file layout device address, the body of a `device_addr4` (RFC 8881 section 13.3).
#[doc(alias = "nfsv4_1_file_layout_ds_addr4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Nfsv41FileLayoutDsAddr4 {
    /// For each stripe, an index into `nflda_multipath_ds_list`.
    pub nflda_stripe_indices: Vec<u32>,
    /// The data servers, each with its addresses.
    pub nflda_multipath_ds_list: Vec<MultipathList4>,
}

/// The file layout, the body of a `layout_content4` (RFC 8881 section 13.3).
#[doc(alias = "nfsv4_1_file_layout4")]
#[derive(Clone, PartialEq, Eq, Debug, Default, Xdr)]
pub struct Nfsv41FileLayout4 {
    /// The device (GETDEVICEINFO gives its [`Nfsv41FileLayoutDsAddr4`]).
    pub nfl_deviceid: Deviceid4,
    /// Stripe unit size and `NFL4_UFLG_*` flags.
    pub nfl_util: NflUtil4,
    /// The stripe index of the first stripe unit at `nfl_pattern_offset`.
    pub nfl_first_stripe_index: u32,
    /// The file offset where the striping pattern starts.
    pub nfl_pattern_offset: Offset4,
    /// Filehandles on the data servers: one for all, or one per stripe index.
    pub nfl_fh_list: Vec<NfsFh4>,
}

fn wrong_type(what: &'static str) -> DecodeError {
    DecodeError::new(
        DecodeErrorKind::Invalid("layout type is not LAYOUT4_NFSV4_1_FILES"),
        0,
    )
    .context(what)
}

impl Nfsv41FileLayout4 {
    /// The stripe unit size in bytes (`nfl_util & NFL4_UFLG_STRIPE_UNIT_SIZE_MASK`).
    pub fn stripe_unit(&self) -> u32 {
        self.nfl_util & NFL4_UFLG_STRIPE_UNIT_SIZE_MASK
    }

    /// Whether the layout is dense ([`NFL4_UFLG_DENSE`]).
    pub fn is_dense(&self) -> bool {
        self.nfl_util & NFL4_UFLG_DENSE != 0
    }

    /// Whether COMMIT goes through the metadata server ([`NFL4_UFLG_COMMIT_THRU_MDS`]).
    pub fn commit_thru_mds(&self) -> bool {
        self.nfl_util & NFL4_UFLG_COMMIT_THRU_MDS != 0
    }

    /// This layout as a `LAYOUT4_NFSV4_1_FILES` layout body.
    pub fn to_content(&self) -> LayoutContent4 {
        LayoutContent4 {
            loc_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            loc_body: to_bytes(self),
        }
    }

    /// Decodes a layout body, which must be of type `LAYOUT4_NFSV4_1_FILES` and hold exactly
    /// one file layout.
    pub fn from_content(content: &LayoutContent4) -> Result<Self, DecodeError> {
        if content.loc_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
            return Err(wrong_type("Nfsv41FileLayout4"));
        }
        from_bytes(content.loc_body.clone()).map_err(|e| e.context("Nfsv41FileLayout4"))
    }
}

impl Nfsv41FileLayoutDsAddr4 {
    /// This address as a `LAYOUT4_NFSV4_1_FILES` device address.
    pub fn to_device_addr(&self) -> DeviceAddr4 {
        DeviceAddr4 {
            da_layout_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            da_addr_body: to_bytes(self),
        }
    }

    /// Decodes a device address, which must be of type `LAYOUT4_NFSV4_1_FILES` and hold
    /// exactly one file layout device address.
    pub fn from_device_addr(addr: &DeviceAddr4) -> Result<Self, DecodeError> {
        if addr.da_layout_type != Layouttype4::LAYOUT4_NFSV4_1_FILES {
            return Err(wrong_type("Nfsv41FileLayoutDsAddr4"));
        }
        from_bytes(addr.da_addr_body.clone()).map_err(|e| e.context("Nfsv41FileLayoutDsAddr4"))
    }
}

// ---------------------------------------------------------------------------------------------
// Universal addresses (RFC 5665)
// ---------------------------------------------------------------------------------------------

/// Why a [`Netaddr4`] or universal address string could not be read as a socket address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UaddrError {
    /// The netid or the address is not valid UTF-8.
    NotUtf8,
    /// The netid is not one of RFC 5665's IP netids (`tcp`, `udp`, `rdma`, `sctp` and their
    /// `6` forms).
    UnknownNetid,
    /// The address does not end in `.p1.p2`.
    MissingPort,
    /// `p1` or `p2` is not a decimal number from 0 to 255.
    BadPort,
    /// The host part is not an address of the netid's family (dotted-quad IPv4 for `tcp`,
    /// RFC 4291 text for `tcp6`).
    BadHost,
}

impl fmt::Display for UaddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotUtf8 => "universal address is not UTF-8",
            Self::UnknownNetid => "unknown netid",
            Self::MissingPort => "universal address has no .p1.p2 port",
            Self::BadPort => "universal address port byte is not 0..255",
            Self::BadHost => "universal address host is not an address of the netid's family",
        })
    }
}

impl std::error::Error for UaddrError {}

/// Formats `addr` as a universal address: `"h1.h2.h3.h4.p1.p2"` for IPv4,
/// `"x1:...:x8.p1.p2"` (RFC 5952 text) for IPv6. An IPv6 scope id and flow label are not
/// representable and are dropped.
pub fn format_uaddr(addr: SocketAddr) -> String {
    let [hi, lo] = addr.port().to_be_bytes();
    format!("{}.{hi}.{lo}", addr.ip())
}

fn port_byte(s: &str) -> Result<u8, UaddrError> {
    if s.is_empty() || s.len() > 3 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UaddrError::BadPort);
    }
    s.parse::<u8>().map_err(|_| UaddrError::BadPort)
}

/// Splits `"host.p1.p2"` into the host text and the port.
fn split_port(uaddr: &str) -> Result<(&str, u16), UaddrError> {
    let mut it = uaddr.rsplitn(3, '.');
    let (lo, hi, host) = match (it.next(), it.next(), it.next()) {
        (Some(lo), Some(hi), Some(host)) => (lo, hi, host),
        _ => return Err(UaddrError::MissingPort),
    };
    let port = u16::from_be_bytes([port_byte(hi)?, port_byte(lo)?]);
    Ok((host, port))
}

/// Parses a universal address, taking the family from the host text (IPv6 when it contains
/// a `:`).
pub fn parse_uaddr(uaddr: &str) -> Result<SocketAddr, UaddrError> {
    let (host, port) = split_port(uaddr)?;
    let ip = if host.contains(':') {
        IpAddr::V6(host.parse::<Ipv6Addr>().map_err(|_| UaddrError::BadHost)?)
    } else {
        IpAddr::V4(host.parse::<Ipv4Addr>().map_err(|_| UaddrError::BadHost)?)
    };
    Ok(SocketAddr::new(ip, port))
}

/// A TCP [`Netaddr4`] for `addr`: netid `"tcp"` or `"tcp6"` and its universal address.
pub fn netaddr_from_socket_addr(addr: SocketAddr) -> Netaddr4 {
    let netid = if addr.is_ipv4() { "tcp" } else { "tcp6" };
    Netaddr4 {
        na_r_netid: netid.into(),
        na_r_addr: format_uaddr(addr).into(),
    }
}

/// An RPC-over-RDMA [`Netaddr4`] for `addr`: netid `"rdma"` or `"rdma6"` (RFC 5665, as the
/// Linux client decodes them for a data server it reaches with `proto=rdma`).
pub fn rdma_netaddr_from_socket_addr(addr: SocketAddr) -> Netaddr4 {
    let netid = if addr.is_ipv4() { "rdma" } else { "rdma6" };
    Netaddr4 {
        na_r_netid: netid.into(),
        na_r_addr: format_uaddr(addr).into(),
    }
}

/// Whether `na` names an RPC-over-RDMA endpoint (netid `rdma` or `rdma6`).
pub fn is_rdma_netaddr(na: &Netaddr4) -> bool {
    matches!(na.na_r_netid.as_str(), Some("rdma" | "rdma6"))
}

/// The socket address of a [`Netaddr4`] with an IP netid (`tcp`, `udp`, `rdma`, `sctp`, or
/// the same with `6`); the address must be of the netid's family.
pub fn socket_addr_from_netaddr(na: &Netaddr4) -> Result<SocketAddr, UaddrError> {
    let netid = na.na_r_netid.as_str().ok_or(UaddrError::NotUtf8)?;
    let v6 = match netid {
        "tcp" | "udp" | "rdma" | "sctp" => false,
        "tcp6" | "udp6" | "rdma6" | "sctp6" => true,
        _ => return Err(UaddrError::UnknownNetid),
    };
    let uaddr = na.na_r_addr.as_str().ok_or(UaddrError::NotUtf8)?;
    let (host, port) = split_port(uaddr)?;
    let ip = if v6 {
        IpAddr::V6(host.parse::<Ipv6Addr>().map_err(|_| UaddrError::BadHost)?)
    } else {
        IpAddr::V4(host.parse::<Ipv4Addr>().map_err(|_| UaddrError::BadHost)?)
    };
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::Utf8String;
    use bytes::Bytes;
    use proptest::prelude::*;

    crate::roundtrip_tests!(
        nfsv4_1_file_layouthint4: Nfsv41FileLayouthint4,
        multipath_list4: MultipathList4,
        nfsv4_1_file_layout_ds_addr4: Nfsv41FileLayoutDsAddr4,
        nfsv4_1_file_layout4: Nfsv41FileLayout4,
    );

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    fn na(netid: &str, addr: &str) -> Netaddr4 {
        Netaddr4 {
            na_r_netid: netid.into(),
            na_r_addr: addr.into(),
        }
    }

    proptest! {
        #[test]
        fn layout_content_round_trip(l in any::<Nfsv41FileLayout4>()) {
            let c = l.to_content();
            prop_assert_eq!(c.loc_type, Layouttype4::LAYOUT4_NFSV4_1_FILES);
            prop_assert_eq!(Nfsv41FileLayout4::from_content(&c), Ok(l));
        }

        #[test]
        fn device_addr_round_trip(a in any::<Nfsv41FileLayoutDsAddr4>()) {
            let d = a.to_device_addr();
            prop_assert_eq!(Nfsv41FileLayoutDsAddr4::from_device_addr(&d), Ok(a));
        }

        #[test]
        fn uaddr_round_trip_v4(ip in any::<Ipv4Addr>(), port in any::<u16>()) {
            let sa = SocketAddr::new(IpAddr::V4(ip), port);
            let n = netaddr_from_socket_addr(sa);
            prop_assert_eq!(n.na_r_netid.as_str(), Some("tcp"));
            prop_assert_eq!(socket_addr_from_netaddr(&n), Ok(sa));
            prop_assert_eq!(parse_uaddr(&format_uaddr(sa)), Ok(sa));
        }

        #[test]
        fn uaddr_round_trip_v6(ip in any::<Ipv6Addr>(), port in any::<u16>()) {
            let sa = SocketAddr::new(IpAddr::V6(ip), port);
            let n = netaddr_from_socket_addr(sa);
            prop_assert_eq!(n.na_r_netid.as_str(), Some("tcp6"));
            prop_assert_eq!(socket_addr_from_netaddr(&n), Ok(sa));
            prop_assert_eq!(parse_uaddr(&format_uaddr(sa)), Ok(sa));
        }

        #[test]
        fn uaddr_parse_never_panics(s in "\\PC{0,48}", t in "[0-9a-fA-F:.%]{0,48}") {
            let _ = parse_uaddr(&s);
            let _ = parse_uaddr(&t);
            let _ = socket_addr_from_netaddr(&na("tcp", &t));
            let _ = socket_addr_from_netaddr(&na("tcp6", &t));
        }
    }

    #[test]
    fn uaddr_known_values() {
        let sa: SocketAddr = "192.0.2.7:2049".parse().unwrap();
        assert_eq!(format_uaddr(sa), "192.0.2.7.8.1");
        assert_eq!(netaddr_from_socket_addr(sa), na("tcp", "192.0.2.7.8.1"));

        let sa: SocketAddr = "[2001:db8::1]:2049".parse().unwrap();
        assert_eq!(format_uaddr(sa), "2001:db8::1.8.1");
        assert_eq!(netaddr_from_socket_addr(sa), na("tcp6", "2001:db8::1.8.1"));

        // The RFC 5665 example forms.
        assert_eq!(
            socket_addr_from_netaddr(&na("tcp6", "::.0.111")),
            Ok("[::]:111".parse().unwrap())
        );
        assert_eq!(
            socket_addr_from_netaddr(&na("tcp6", "::ffff:10.1.2.3.3.255")),
            Ok("[::ffff:10.1.2.3]:1023".parse().unwrap())
        );
        assert_eq!(
            socket_addr_from_netaddr(&na("rdma", "10.0.0.1.78.69")),
            Ok("10.0.0.1:20037".parse().unwrap())
        );
        // A scope id cannot be carried; it is dropped.
        let sa: SocketAddr = "[fe80::1%2]:20049".parse().unwrap();
        assert_eq!(
            parse_uaddr(&format_uaddr(sa)),
            Ok("[fe80::1]:20049".parse().unwrap())
        );
    }

    #[test]
    fn uaddr_malformed() {
        use UaddrError::*;
        let cases: &[(&str, &str, UaddrError)] = &[
            ("tcp", "", MissingPort),
            ("tcp", "1.2", MissingPort),
            ("tcp", "1.2.3.4", BadHost), // host "1.2", port 3.4
            ("tcp", "1.2.3.4.5", BadHost),
            ("tcp", "1.2.3.4.5.6.7", BadHost),
            ("tcp", "1.2.3.4.256.1", BadPort),
            ("tcp", "1.2.3.4.1.256", BadPort),
            ("tcp", "1.2.3.4.8.", BadPort),
            ("tcp", "1.2.3.4..1", BadPort),
            ("tcp", "1.2.3.4.+8.1", BadPort),
            ("tcp", "1.2.3.4.-1.1", BadPort),
            ("tcp", "1.2.3.4.0008.1", BadPort),
            ("tcp", "1.2.3.4.a.1", BadPort),
            ("tcp", "1.2.3.999.8.1", BadHost),
            ("tcp", "host.example.8.1", BadHost),
            ("tcp", ".8.1", BadHost),
            ("tcp", "::1.8.1", BadHost),
            ("tcp6", "1.2.3.4.8.1", BadHost),
            ("tcp6", "[::1].8.1", BadHost),
            ("tcp6", "::1%eth0.8.1", BadHost),
            ("tcp6", "2001:db8:::1.8.1", BadHost),
            ("tcp6", "::1:8:1", MissingPort),
            ("udp7", "1.2.3.4.8.1", UnknownNetid),
            ("", "1.2.3.4.8.1", UnknownNetid),
        ];
        for &(netid, addr, want) in cases {
            assert_eq!(
                socket_addr_from_netaddr(&na(netid, addr)),
                Err(want),
                "{netid} {addr:?}"
            );
        }
        let bad = Netaddr4 {
            na_r_netid: "tcp".into(),
            na_r_addr: Utf8String(Bytes::from_static(b"\xff.8.1")),
        };
        assert_eq!(socket_addr_from_netaddr(&bad), Err(NotUtf8));
        assert_eq!(parse_uaddr("1.2.3.4.8"), Err(BadHost));
        assert_eq!(parse_uaddr("nonsense"), Err(MissingPort));
        assert_eq!(
            UaddrError::BadPort.to_string(),
            "universal address port byte is not 0..255"
        );
    }

    #[test]
    fn file_layout_known_encoding_and_flags() {
        let l = Nfsv41FileLayout4 {
            nfl_deviceid: [0x11; 16],
            nfl_util: 65536 | NFL4_UFLG_COMMIT_THRU_MDS,
            nfl_first_stripe_index: 1,
            nfl_pattern_offset: 0,
            nfl_fh_list: vec![NfsFh4(Bytes::from_static(&[9, 9, 9]))],
        };
        assert_eq!(l.stripe_unit(), 65536);
        assert!(l.commit_thru_mds() && !l.is_dense());
        let mut want = vec![0x11; 16];
        want.extend(words(&[65538, 1, 0, 0, 1, 3]));
        want.extend([9, 9, 9, 0]);
        let c = l.to_content();
        assert_eq!(&c.loc_body[..], &want[..]);
        assert_eq!(Nfsv41FileLayout4::from_content(&c).unwrap(), l);
    }

    #[test]
    fn ds_addr_known_encoding() {
        let a = Nfsv41FileLayoutDsAddr4 {
            nflda_stripe_indices: vec![0, 1],
            nflda_multipath_ds_list: vec![MultipathList4(vec![na("tcp", "10.0.0.1.8.1")])],
        };
        let mut want = words(&[2, 0, 1, 1, 1, 3]);
        want.extend(b"tcp\0");
        want.extend(words(&[12]));
        want.extend(b"10.0.0.1.8.1");
        assert_eq!(&a.to_device_addr().da_addr_body[..], &want[..]);
    }

    #[test]
    fn wrong_layout_type_or_trailing_bytes_are_errors() {
        let mut c = Nfsv41FileLayout4::default().to_content();
        c.loc_type = Layouttype4::LAYOUT4_FLEX_FILES;
        let e = Nfsv41FileLayout4::from_content(&c).unwrap_err();
        assert!(matches!(e.kind, DecodeErrorKind::Invalid(_)), "{e}");
        assert_eq!(e.what, "Nfsv41FileLayout4");

        let mut d = Nfsv41FileLayoutDsAddr4::default().to_device_addr();
        d.da_layout_type = Layouttype4::LAYOUT4_BLOCK_VOLUME;
        assert!(Nfsv41FileLayoutDsAddr4::from_device_addr(&d).is_err());

        let mut c = Nfsv41FileLayout4::default().to_content();
        let mut body = c.loc_body.to_vec();
        body.extend([0, 0, 0, 0]);
        c.loc_body = Bytes::from(body);
        let e = Nfsv41FileLayout4::from_content(&c).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::TrailingBytes(4));

        let c = LayoutContent4 {
            loc_type: Layouttype4::LAYOUT4_NFSV4_1_FILES,
            loc_body: Bytes::from_static(&[0, 0, 0]),
        };
        assert!(Nfsv41FileLayout4::from_content(&c).is_err());
    }
}
