//! Which RPC credential flavors the NFS service accepts, and the `auth_stat` every other one
//! is refused with (`MSG_DENIED` / `AUTH_ERROR`, RFC 5531 section 9), on the MDS and on the
//! data servers alike, for every procedure of every program on the NFS port (NULL included).
//!
//! | flavor | answer | why |
//! |---|---|---|
//! | AUTH_NONE (0), AUTH_SYS (1) | accepted | what SECINFO and SECINFO_NO_NAME advertise ([`crate::io::secinfo_flavors`]) |
//! | AUTH_SHORT (2) | AUTH_REJECTEDCRED | RFC 5531 appendix A: a short-hand handle the server does not hold is refused with AUTH_REJECTEDCRED, after which the client resends with its AUTH_SYS credential. This server never hands out short-hand verifiers, so it holds none. |
//! | RPCSEC_GSS (6) | AUTH_BADCRED | not implemented yet. knfsd without the GSS module answers the flavor so (`svc_authenticate` finds no handler: `rpc_autherr_badcred`). AUTH_TOOWEAK would say the flavor is weaker than the server's policy, which is the opposite of the truth, and makes the Linux client log "server requires stronger authentication". |
//! | anything else (AUTH_DH, unknown numbers) | AUTH_BADCRED | a credential the server cannot interpret; knfsd answers an unknown flavor so |
//!
//! Before this check, RPCSEC_GSS and every other flavor were served as the anonymous user
//! (65534): a client that asked for Kerberos got unauthenticated access instead of a refusal,
//! and a mount with `sec=krb5` appeared to work. NULL is refused too: RPCSEC_GSS
//! context creation is a NULL call with an RPCSEC_GSS credential (RFC 2203 section 5.2.2),
//! and the client must learn at once that no context can be made; a NULL with AUTH_NONE (the
//! Linux client's probe) or AUTH_SYS is answered as before.
//!
//! The back channel (the MDS calling the client's callback program) is not served here and
//! is not affected.

use nfs_proto::rpc::{AuthFlavor, AuthStat, Credential};

/// Whether a call with this credential may be served: `Err` with the `auth_stat` to refuse it
/// with (see the module documentation for each flavor's answer).
pub fn check(cred: &Credential) -> Result<(), AuthStat> {
    match cred {
        Credential::None | Credential::Sys(_) => Ok(()),
        Credential::Gss(_) => Err(AuthStat::AUTH_BADCRED),
        Credential::Other(AuthFlavor::AUTH_SHORT, _) => Err(AuthStat::AUTH_REJECTEDCRED),
        Credential::Other(..) => Err(AuthStat::AUTH_BADCRED),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use nfs_proto::nfs4::Secinfo4;
    use nfs_proto::rpc::{AuthSysParms, OpaqueAuth};

    use super::*;
    use crate::io::secinfo_flavors;

    fn of(flavor: u32) -> Credential {
        let body = if flavor == AuthFlavor::AUTH_SYS.0 {
            nfs_proto::xdr::to_bytes(&AuthSysParms::default())
        } else {
            Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 0])
        };
        Credential::from_opaque(&OpaqueAuth::new(AuthFlavor(flavor), body)).unwrap()
    }

    #[test]
    fn only_auth_none_and_auth_sys_are_served() {
        assert_eq!(check(&of(0)), Ok(()));
        assert_eq!(check(&of(1)), Ok(()));
        assert_eq!(check(&of(2)), Err(AuthStat::AUTH_REJECTEDCRED));
        assert_eq!(check(&of(3)), Err(AuthStat::AUTH_BADCRED));
        assert_eq!(check(&of(6)), Err(AuthStat::AUTH_BADCRED));
        // RPCSEC_GSS pseudo-flavors (krb5 = 390003, RFC 2623) name a mechanism in SECINFO,
        // never a credential's flavor; the control protocol's own flavor is no NFS flavor.
        for unknown in [4, 5, 7, 390_003, 0x4050_4e46, u32::MAX] {
            assert_eq!(
                check(&of(unknown)),
                Err(AuthStat::AUTH_BADCRED),
                "{unknown}"
            );
        }
    }

    #[test]
    fn secinfo_advertises_exactly_the_accepted_flavors() {
        let advertised: Vec<u32> = secinfo_flavors()
            .into_iter()
            .map(|s| match s {
                Secinfo4::Flavor(f) => f,
                other => panic!("an RPCSEC_GSS triple is advertised: {other:?}"),
            })
            .collect();
        let accepted: Vec<u32> = (0..=16).filter(|f| check(&of(*f)).is_ok()).collect();
        let mut sorted = advertised.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, accepted);
    }
}
