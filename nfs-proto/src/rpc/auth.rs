//! RPC authentication: flavors, the `opaque_auth` carrier, `auth_stat`, and typed credentials
//! (RFC 5531 sections 8.2, 9 and 14; RPCSEC_GSS bodies are kept raw for RFC 2203 / RFC 5403).

use core::fmt;

use bytes::Bytes;

use crate::xdr::{self, DecodeError, Utf8String, Xdr};
use crate::xdr_enum;

/// The most bytes an `opaque_auth` body may carry (RFC 5531 section 8.2).
pub const MAX_AUTH_BYTES: u32 = 400;
/// The longest `authsys_parms.machinename` (RFC 5531 appendix A).
pub const AUTH_SYS_MAX_MACHINENAME: u32 = 255;
/// The most supplementary groups in `authsys_parms.gids` (RFC 5531 appendix A).
pub const AUTH_SYS_MAX_GIDS: u32 = 16;

xdr_enum! {
    /// Authentication flavor numbers (RFC 5531 section 8.2; RPCSEC_GSS is RFC 2203).
    #[doc(alias = "auth_flavor")]
    pub struct AuthFlavor {
        /// No authentication (formerly AUTH_NULL).
        AUTH_NONE = 0,
        /// UNIX-style uid, gid and groups (formerly AUTH_UNIX).
        AUTH_SYS = 1,
        /// Short-hand handle the server may return in place of AUTH_SYS.
        AUTH_SHORT = 2,
        /// Diffie-Hellman (formerly AUTH_DES, RFC 2695).
        AUTH_DH = 3,
        /// GSS-API based security (RFC 2203).
        RPCSEC_GSS = 6,
    }
}

xdr_enum! {
    /// Why the server refused to authenticate a call (RFC 5531 section 9, appendix A).
    #[doc(alias = "auth_stat")]
    pub struct AuthStat {
        /// Success.
        AUTH_OK = 0,
        /// Bad credential (seal broken).
        AUTH_BADCRED = 1,
        /// Client must begin a new session.
        AUTH_REJECTEDCRED = 2,
        /// Bad verifier (seal broken).
        AUTH_BADVERF = 3,
        /// Verifier expired or replayed.
        AUTH_REJECTEDVERF = 4,
        /// Rejected for security reasons.
        AUTH_TOOWEAK = 5,
        /// Bogus response verifier (failed locally).
        AUTH_INVALIDRESP = 6,
        /// Reason unknown (failed locally).
        AUTH_FAILED = 7,
        /// Kerberos generic error (deprecated, RFC 2695).
        AUTH_KERB_GENERIC = 8,
        /// Time of credential expired (deprecated, RFC 2695).
        AUTH_TIMEEXPIRE = 9,
        /// Problem with ticket file (deprecated, RFC 2695).
        AUTH_TKT_FILE = 10,
        /// Can't decode authenticator (deprecated, RFC 2695).
        AUTH_DECODE = 11,
        /// Wrong net address in ticket (deprecated, RFC 2695).
        AUTH_NET_ADDR = 12,
        /// RPCSEC_GSS: no credentials for user.
        RPCSEC_GSS_CREDPROBLEM = 13,
        /// RPCSEC_GSS: problem with context.
        RPCSEC_GSS_CTXPROBLEM = 14,
    }
}

/// A credential or verifier as carried on the wire: a flavor and up to 400 opaque bytes
/// (RFC 5531 section 8.2).
#[doc(alias = "opaque_auth")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct OpaqueAuth {
    /// The authentication flavor.
    pub flavor: AuthFlavor,
    /// The flavor-specific body.
    #[xdr(max = MAX_AUTH_BYTES)]
    pub body: Bytes,
}

impl OpaqueAuth {
    /// AUTH_NONE with an empty body: the usual verifier.
    pub fn none() -> Self {
        Self {
            flavor: AuthFlavor::AUTH_NONE,
            body: Bytes::new(),
        }
    }

    /// Any flavor with a raw body.
    pub fn new(flavor: AuthFlavor, body: Bytes) -> Self {
        Self { flavor, body }
    }
}

impl Default for OpaqueAuth {
    fn default() -> Self {
        Self::none()
    }
}

/// AUTH_SYS credential body (RFC 5531 appendix A).
#[doc(alias = "authsys_parms")]
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default, Xdr)]
pub struct AuthSysParms {
    /// Arbitrary id the caller machine generates.
    pub stamp: u32,
    /// The caller's machine name.
    #[xdr(max = AUTH_SYS_MAX_MACHINENAME)]
    pub machinename: Utf8String,
    /// The caller's effective user id.
    pub uid: u32,
    /// The caller's effective group id.
    pub gid: u32,
    /// Supplementary groups.
    #[xdr(max = AUTH_SYS_MAX_GIDS)]
    pub gids: Vec<u32>,
}

/// A parsed call credential. Build one from the [`OpaqueAuth`] of a call with
/// [`Credential::from_opaque`]; turn it back into wire form with [`Credential::to_opaque`].
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Credential {
    /// AUTH_NONE (any body is ignored; RFC 5531 recommends it be empty).
    None,
    /// AUTH_SYS.
    Sys(AuthSysParms),
    /// RPCSEC_GSS: the raw `rpc_gss_cred_t` body, for a later RPCSEC_GSS implementation.
    Gss(Bytes),
    /// Any other flavor (AUTH_SHORT, AUTH_DH, unknown numbers) with its raw body.
    Other(AuthFlavor, Bytes),
}

/// A credential whose body does not parse for its flavor. The server answers it with
/// `MSG_DENIED` / `AUTH_ERROR` carrying [`CredentialError::auth_stat`] (AUTH_BADCRED).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CredentialError {
    /// The flavor whose body was malformed.
    pub flavor: AuthFlavor,
    /// What was wrong with the body.
    pub error: DecodeError,
}

impl CredentialError {
    /// The `auth_stat` to reply with: AUTH_BADCRED.
    pub fn auth_stat(&self) -> AuthStat {
        AuthStat::AUTH_BADCRED
    }
}

impl fmt::Display for CredentialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad {} credential: {}", self.flavor, self.error)
    }
}

impl std::error::Error for CredentialError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl Credential {
    /// Parses the credential of a call. An AUTH_SYS body must decode completely (no trailing
    /// bytes); any failure is a [`CredentialError`] that maps to AUTH_BADCRED.
    pub fn from_opaque(auth: &OpaqueAuth) -> Result<Self, CredentialError> {
        match auth.flavor {
            AuthFlavor::AUTH_NONE => Ok(Self::None),
            AuthFlavor::AUTH_SYS => xdr::from_bytes::<AuthSysParms>(auth.body.clone())
                .map(Self::Sys)
                .map_err(|error| CredentialError {
                    flavor: auth.flavor,
                    error: error.context("AuthSysParms"),
                }),
            AuthFlavor::RPCSEC_GSS => Ok(Self::Gss(auth.body.clone())),
            flavor => Ok(Self::Other(flavor, auth.body.clone())),
        }
    }

    /// The wire form.
    pub fn to_opaque(&self) -> OpaqueAuth {
        match self {
            Self::None => OpaqueAuth::none(),
            Self::Sys(p) => OpaqueAuth::new(AuthFlavor::AUTH_SYS, xdr::to_bytes(p)),
            Self::Gss(b) => OpaqueAuth::new(AuthFlavor::RPCSEC_GSS, b.clone()),
            Self::Other(flavor, b) => OpaqueAuth::new(*flavor, b.clone()),
        }
    }

    /// The flavor.
    pub fn flavor(&self) -> AuthFlavor {
        match self {
            Self::None => AuthFlavor::AUTH_NONE,
            Self::Sys(_) => AuthFlavor::AUTH_SYS,
            Self::Gss(_) => AuthFlavor::RPCSEC_GSS,
            Self::Other(flavor, _) => *flavor,
        }
    }
}

impl TryFrom<&OpaqueAuth> for Credential {
    type Error = CredentialError;
    fn try_from(auth: &OpaqueAuth) -> Result<Self, CredentialError> {
        Self::from_opaque(auth)
    }
}

impl From<&Credential> for OpaqueAuth {
    fn from(c: &Credential) -> Self {
        c.to_opaque()
    }
}

impl From<AuthSysParms> for Credential {
    fn from(p: AuthSysParms) -> Self {
        Self::Sys(p)
    }
}

#[cfg(any(test, feature = "arbitrary"))]
impl proptest::arbitrary::Arbitrary for Credential {
    type Parameters = ();
    type Strategy = proptest::strategy::BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        use proptest::prelude::*;
        let body = || {
            proptest::collection::vec(any::<u8>(), 0..=MAX_AUTH_BYTES as usize)
                .prop_map(Bytes::from)
        };
        prop_oneof![
            Just(Self::None),
            any::<AuthSysParms>().prop_map(Self::Sys),
            body().prop_map(Self::Gss),
            (any::<u32>(), body())
                .prop_filter("flavor with its own variant", |(f, _)| {
                    ![0, 1, 6].contains(f)
                })
                .prop_map(|(f, b)| Self::Other(AuthFlavor(f), b)),
        ]
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::xdr::{from_bytes, to_bytes, DecodeErrorKind};

    crate::roundtrip_tests!(
        auth_flavor: AuthFlavor,
        auth_stat: AuthStat,
        opaque_auth: OpaqueAuth,
        auth_sys_parms: AuthSysParms,
    );

    proptest! {
        #[test]
        fn credential_round_trips_through_opaque_auth(c in any::<Credential>()) {
            let wire = to_bytes(&c.to_opaque());
            let auth = from_bytes::<OpaqueAuth>(wire).unwrap();
            prop_assert_eq!(auth.flavor, c.flavor());
            prop_assert_eq!(Credential::from_opaque(&auth), Ok(c));
        }
    }

    #[test]
    fn largest_auth_sys_fits_in_an_opaque_auth() {
        let p = AuthSysParms {
            stamp: 1,
            machinename: Utf8String::from("m".repeat(AUTH_SYS_MAX_MACHINENAME as usize)),
            uid: 2,
            gid: 3,
            gids: vec![7; AUTH_SYS_MAX_GIDS as usize],
        };
        let auth = Credential::Sys(p.clone()).to_opaque();
        assert!(auth.body.len() <= MAX_AUTH_BYTES as usize);
        let back = from_bytes::<OpaqueAuth>(to_bytes(&auth)).unwrap();
        assert_eq!(Credential::from_opaque(&back), Ok(Credential::Sys(p)));
    }

    #[test]
    fn bad_auth_sys_bodies_are_badcred() {
        let good = to_bytes(&AuthSysParms {
            stamp: 0,
            machinename: "h".into(),
            uid: 0,
            gid: 0,
            gids: vec![1, 2],
        });
        // Truncated, trailing bytes, too many groups, too long a name.
        let mut trailing = good.to_vec();
        trailing.extend_from_slice(&[0; 4]);
        let mut many_gids = Vec::new();
        many_gids.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        many_gids.extend_from_slice(&17u32.to_be_bytes());
        many_gids.extend_from_slice(&[0; 17 * 4]);
        let mut long_name = Vec::new();
        long_name.extend_from_slice(&[0; 4]);
        long_name.extend_from_slice(&256u32.to_be_bytes());
        long_name.extend_from_slice(&[b'a'; 256]);
        long_name.extend_from_slice(&[0; 12]);
        for body in [
            good.slice(..good.len() - 4),
            Bytes::from(trailing),
            Bytes::from(many_gids),
            Bytes::from(long_name),
        ] {
            let e =
                Credential::from_opaque(&OpaqueAuth::new(AuthFlavor::AUTH_SYS, body)).unwrap_err();
            assert_eq!(e.auth_stat(), AuthStat::AUTH_BADCRED);
            assert_eq!(e.flavor, AuthFlavor::AUTH_SYS);
            assert!(e.to_string().starts_with("bad AUTH_SYS credential"), "{e}");
        }
        let e = Credential::from_opaque(&OpaqueAuth::new(
            AuthFlavor::AUTH_SYS,
            good.slice(..good.len() - 4),
        ))
        .unwrap_err();
        assert!(matches!(
            e.error.kind,
            DecodeErrorKind::LengthBeyondInput { len: 2, .. }
        ));
        assert_eq!(e.error.what, "AuthSysParms.gids");
    }

    #[test]
    fn opaque_auth_body_is_capped_at_400() {
        let mut wire = vec![0, 0, 0, 1];
        wire.extend_from_slice(&401u32.to_be_bytes());
        wire.extend_from_slice(&[0; 404]);
        let e = from_bytes::<OpaqueAuth>(Bytes::from(wire)).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::TooLong { len: 401, max: 400 });
        assert_eq!(e.what, "OpaqueAuth.body");
    }

    #[test]
    fn auth_none_ignores_its_body_and_unknown_flavors_are_kept() {
        let c = Credential::from_opaque(&OpaqueAuth::new(
            AuthFlavor::AUTH_NONE,
            Bytes::from_static(b"junk"),
        ));
        assert_eq!(c, Ok(Credential::None));
        let c = Credential::from_opaque(&OpaqueAuth::new(
            AuthFlavor(390_004),
            Bytes::from_static(b"x"),
        ))
        .unwrap();
        assert_eq!(
            c,
            Credential::Other(AuthFlavor(390_004), Bytes::from_static(b"x"))
        );
        assert_eq!(format!("{:?}", c.flavor()), "AuthFlavor(390004)");
    }
}
