//! Authentication of control calls and replies with the cluster secret (sans-IO: time is
//! passed in). The design is in the [module documentation](super).

use core::fmt;
use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::rpc::{AuthFlavor, AuthStat, OpaqueAuth};
use crate::xdr::{self, Xdr};

/// The credential flavor of control calls. It is not registered with IANA (whose registry
/// assigns from 400000 up and 390000-390255 for pseudo-flavors): it is only spoken between
/// the nodes of one cluster, on the private program [`super::PNFS_CTL_PROGRAM`], whose number
/// it repeats.
pub const AUTH_PNFS_CTL: AuthFlavor = AuthFlavor(0x4050_4e46);
/// Version of [`CtlCred`]'s layout and MAC inputs. Version 2 added the target data server
/// and its boot nonce, so a call is good for one process of one data server only.
pub const CTL_AUTH_VERSION: u32 = 2;
/// Bytes of a data server's boot nonce ([`BootNonce`]).
pub const BOOT_NONCE_LEN: usize = 16;
/// How far a call's timestamp may be from the receiver's clock (either way): 5 minutes, as
/// Kerberos allows. Nodes of a cluster keep their clocks closer than that (NTP).
pub const MAX_CLOCK_SKEW_MS: u64 = 300_000;
/// Most calls a [`ReplayGuard`] remembers (all from the last `2 * MAX_CLOCK_SKEW_MS`); beyond
/// it, calls are refused until old ones age out: about 10 MB of memory, and 870 calls a
/// second sustained over the window, far above what an MDS asks of one data server.
pub const REPLAY_CACHE_MAX: usize = 1 << 18;
/// Bytes of a MAC (keyed BLAKE3 output).
pub const MAC_LEN: usize = 32;
/// Node id of the MDS in [`CtlCred::node`]; data servers use their configured id (>= 1).
pub const MDS_NODE: u32 = 0;

const CALL_DOMAIN: &[u8] = b"pnfs-ctl call v2";
const REPLY_DOMAIN: &[u8] = b"pnfs-ctl reply v2";
const SEAL_DOMAIN: &[u8] = b"pnfs-ctl seal v2";

/// A random number a data server draws at every start and never reuses: calls name it, so a
/// call captured in one boot is refused in any other (the replay cache, in memory, only
/// covers one boot).
pub type BootNonce = [u8; BOOT_NONCE_LEN];

/// One boot of one data server: what a call is bound to. The MDS learns it with
/// `CTLPROC_HELLO`; a data server compares every other call's with its own
/// ([`DsBoot::check`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct DsBoot {
    /// The data server's configured id.
    pub ds_id: u32,
    /// Its boot nonce (all zeros in a HELLO, made before the MDS knows it).
    pub boot: BootNonce,
}

impl DsBoot {
    /// Accepts a verified credential only if it names this data server and this boot: a
    /// call meant for another data server is [`CtlAuthError::WrongTarget`], one made for an
    /// earlier boot (or learnt from another data server with this id) is
    /// [`CtlAuthError::StaleBoot`], which tells the MDS to learn the nonce again.
    pub fn check(&self, cred: &CtlCred) -> Result<(), CtlAuthError> {
        if cred.target != self.ds_id {
            return Err(CtlAuthError::WrongTarget(cred.target));
        }
        if cred.boot != self.boot {
            return Err(CtlAuthError::StaleBoot);
        }
        Ok(())
    }
}

/// The body of an [`AUTH_PNFS_CTL`] credential: who calls, which data server boot the call
/// is for, when, a number used once, and the MAC over all of it and the call (see the module
/// documentation for the MAC's input).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Xdr)]
pub struct CtlCred {
    /// [`CTL_AUTH_VERSION`].
    pub version: u32,
    /// The calling node: [`MDS_NODE`], or a data server's id.
    pub node: u32,
    /// The data server the call is for ([`DsBoot::ds_id`]).
    pub target: u32,
    /// The caller's wall clock, milliseconds since 1970.
    pub time_ms: u64,
    /// Never repeated by the caller (a random per-process base plus a counter).
    pub nonce: u64,
    /// The boot of the target the call is for ([`DsBoot::boot`]).
    pub boot: BootNonce,
    /// Keyed BLAKE3 of the call.
    pub mac: [u8; MAC_LEN],
}

/// Who, for whom, when and which nonce: the part of a [`CtlCred`] fixed before the arguments
/// are encoded, because sealed arguments depend on it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CallStamp {
    /// The calling node.
    pub node: u32,
    /// The data server boot the call is for.
    pub to: DsBoot,
    /// Milliseconds since 1970 on the caller's clock.
    pub time_ms: u64,
    /// A number the caller never uses again.
    pub nonce: u64,
}

impl From<&CtlCred> for CallStamp {
    fn from(c: &CtlCred) -> Self {
        Self {
            node: c.node,
            to: DsBoot {
                ds_id: c.target,
                boot: c.boot,
            },
            time_ms: c.time_ms,
            nonce: c.nonce,
        }
    }
}

impl CallStamp {
    /// Feeds the stamp to a hasher in credential order (the MAC and sealing inputs).
    fn hash_into(&self, h: &mut blake3::Hasher) {
        h.update(&self.node.to_be_bytes());
        h.update(&self.to.ds_id.to_be_bytes());
        h.update(&self.time_ms.to_be_bytes());
        h.update(&self.nonce.to_be_bytes());
        h.update(&self.to.boot);
    }
}

/// Why a control call or reply was not accepted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CtlAuthError {
    /// The credential is not [`AUTH_PNFS_CTL`] (AUTH_NONE, AUTH_SYS, ...).
    WrongFlavor(AuthFlavor),
    /// The credential body is not a [`CtlCred`].
    Malformed,
    /// A [`CtlCred`] layout this side does not speak.
    Version(u32),
    /// The MAC does not match: the caller does not know the secret, or the call was altered.
    BadMac,
    /// A node that may not make this call (a data server only takes calls from the MDS).
    WrongNode(u32),
    /// A call made for another data server (this target id).
    WrongTarget(u32),
    /// A call made for another boot of this data server: captured before a restart, or
    /// signed with a nonce the caller has not learnt again since. The caller must learn the
    /// current one (HELLO) and call again.
    StaleBoot,
    /// The timestamp is more than [`MAX_CLOCK_SKEW_MS`] from the receiver's clock, or older
    /// than calls already seen allow (replays are only remembered that long).
    ClockSkew {
        /// The call's timestamp.
        time_ms: u64,
        /// The receiver's clock.
        now_ms: u64,
    },
    /// The same call (node, time, nonce) was already accepted.
    Replayed,
    /// The replay cache is full ([`REPLAY_CACHE_MAX`]); the caller should retry later.
    ReplayCacheFull,
    /// A SUCCESS reply without a MAC, or with one that does not match the call: forged,
    /// altered, or an answer to another call.
    BadReply,
}

impl CtlAuthError {
    /// The `auth_stat` a server answers with (MSG_DENIED / AUTH_ERROR): TOOWEAK for another
    /// flavor, BADCRED for a credential that does not verify or is for another data server,
    /// REJECTEDCRED ("client must begin new session", RFC 5531) for one made for another boot
    /// of this data server, REJECTEDVERF for a stale or replayed one; INVALIDRESP is the
    /// client's own verdict on a reply. REJECTEDCRED is kept apart from REJECTEDVERF so the
    /// MDS can tell "learn the boot nonce again" from "check the clocks".
    pub fn auth_stat(&self) -> AuthStat {
        match self {
            Self::WrongFlavor(_) => AuthStat::AUTH_TOOWEAK,
            Self::Malformed
            | Self::Version(_)
            | Self::BadMac
            | Self::WrongNode(_)
            | Self::WrongTarget(_) => AuthStat::AUTH_BADCRED,
            Self::StaleBoot => AuthStat::AUTH_REJECTEDCRED,
            Self::ClockSkew { .. } | Self::Replayed | Self::ReplayCacheFull => {
                AuthStat::AUTH_REJECTEDVERF
            }
            Self::BadReply => AuthStat::AUTH_INVALIDRESP,
        }
    }
}

impl fmt::Display for CtlAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongFlavor(fl) => write!(f, "control call with credential flavor {fl}"),
            Self::Malformed => f.write_str("malformed control credential"),
            Self::Version(v) => write!(
                f,
                "control credential version {v} (expected {CTL_AUTH_VERSION})"
            ),
            Self::BadMac => f.write_str("control call MAC does not verify (wrong cluster secret?)"),
            Self::WrongNode(n) => write!(f, "control call from node {n}, which may not make it"),
            Self::WrongTarget(n) => write!(f, "control call made for data server {n}"),
            Self::StaleBoot => f.write_str(
                "control call made for another boot of this data server (replayed, or the \
                 caller has not learnt the new boot nonce yet)",
            ),
            Self::ClockSkew { time_ms, now_ms } => write!(
                f,
                "control call timestamp {time_ms} ms is too far from this clock ({now_ms} ms)"
            ),
            Self::Replayed => f.write_str("replayed control call"),
            Self::ReplayCacheFull => f.write_str("control replay cache full"),
            Self::BadReply => f.write_str("control reply MAC missing or wrong"),
        }
    }
}

impl std::error::Error for CtlAuthError {}

/// Keys derived from the cluster secret: one for MACs, one for sealing keys in transit.
#[derive(Clone)]
pub struct ClusterKey {
    mac: [u8; 32],
    seal: [u8; 32],
}

impl fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

/// Feeds a list of byte pieces and their total length to a hasher.
fn update_pieces<'a>(h: &mut blake3::Hasher, pieces: impl Iterator<Item = &'a [u8]> + Clone) {
    let total: u64 = pieces.clone().map(|p| p.len() as u64).sum();
    h.update(&total.to_be_bytes());
    for p in pieces {
        h.update(p);
    }
}

impl ClusterKey {
    /// Derives the keys (BLAKE3 `derive_key` with a context string per use) from the secret.
    /// The configuration requires at least 32 bytes of secret.
    pub fn from_secret(secret: &[u8]) -> Self {
        Self {
            mac: blake3::derive_key("pnfs 2026-11 control protocol v1 MAC key", secret),
            seal: blake3::derive_key("pnfs 2026-11 control protocol v1 sealing key", secret),
        }
    }

    fn call_mac<'a>(
        &self,
        stamp: CallStamp,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> [u8; MAC_LEN] {
        let mut h = blake3::Hasher::new_keyed(&self.mac);
        h.update(CALL_DOMAIN);
        h.update(&CTL_AUTH_VERSION.to_be_bytes());
        stamp.hash_into(&mut h);
        h.update(&prog.to_be_bytes());
        h.update(&vers.to_be_bytes());
        h.update(&proc_.to_be_bytes());
        update_pieces(&mut h, args);
        *h.finalize().as_bytes()
    }

    /// The credential for a call of `proc_` with the encoded arguments `args`.
    pub fn sign_call(
        &self,
        stamp: CallStamp,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[Bytes],
    ) -> OpaqueAuth {
        let cred = CtlCred {
            version: CTL_AUTH_VERSION,
            node: stamp.node,
            target: stamp.to.ds_id,
            time_ms: stamp.time_ms,
            nonce: stamp.nonce,
            boot: stamp.to.boot,
            mac: self.call_mac(stamp, prog, vers, proc_, args.iter().map(|b| &b[..])),
        };
        OpaqueAuth::new(AUTH_PNFS_CTL, xdr::to_bytes(&cred))
    }

    /// Checks a call's credential against its header fields and arguments (flavor, layout,
    /// MAC, in constant time), and returns it. Whether it is for this data server and boot is
    /// [`DsBoot::check`]'s job and freshness [`ReplayGuard::check`]'s, to be run after this,
    /// so unauthenticated calls cannot fill the replay cache.
    pub fn verify_call(
        &self,
        cred: &OpaqueAuth,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
    ) -> Result<CtlCred, CtlAuthError> {
        if cred.flavor != AUTH_PNFS_CTL {
            return Err(CtlAuthError::WrongFlavor(cred.flavor));
        }
        let c: CtlCred = xdr::from_bytes(cred.body.clone()).map_err(|_| CtlAuthError::Malformed)?;
        if c.version != CTL_AUTH_VERSION {
            return Err(CtlAuthError::Version(c.version));
        }
        let want = self.call_mac(
            CallStamp::from(&c),
            prog,
            vers,
            proc_,
            core::iter::once(args),
        );
        // blake3::Hash compares in constant time.
        if blake3::Hash::from(want) != blake3::Hash::from(c.mac) {
            return Err(CtlAuthError::BadMac);
        }
        Ok(c)
    }

    fn reply_mac<'a>(
        &self,
        call_mac: &[u8; MAC_LEN],
        results: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> [u8; MAC_LEN] {
        let mut h = blake3::Hasher::new_keyed(&self.mac);
        h.update(REPLY_DOMAIN);
        h.update(call_mac);
        update_pieces(&mut h, results);
        *h.finalize().as_bytes()
    }

    /// The MAC a server appends to the results of a SUCCESS reply to the call whose
    /// credential carried `call_mac`: the reply body is `results || mac`.
    pub fn sign_reply(&self, call_mac: &[u8; MAC_LEN], results: &[Bytes]) -> Bytes {
        Bytes::copy_from_slice(&self.reply_mac(call_mac, results.iter().map(|b| &b[..])))
    }

    /// Checks the MAC at the end of a SUCCESS reply's body against the call's credential
    /// (as made by [`ClusterKey::sign_call`]) and returns the results before it.
    pub fn open_reply(&self, call_cred: &OpaqueAuth, body: Bytes) -> Result<Bytes, CtlAuthError> {
        let c: CtlCred =
            xdr::from_bytes(call_cred.body.clone()).map_err(|_| CtlAuthError::Malformed)?;
        let Some(split) = body.len().checked_sub(MAC_LEN) else {
            return Err(CtlAuthError::BadReply);
        };
        let results = body.slice(..split);
        let got: [u8; MAC_LEN] = body[split..]
            .try_into()
            .map_err(|_| CtlAuthError::BadReply)?;
        let want = self.reply_mac(&c.mac, core::iter::once(&results[..]));
        if blake3::Hash::from(want) != blake3::Hash::from(got) {
            return Err(CtlAuthError::BadReply);
        }
        Ok(results)
    }

    /// Encrypts or decrypts (the same XOR) `data` for a call with this stamp: a BLAKE3 XOF
    /// keystream keyed by the sealing key over the stamp (target and boot included) and
    /// `purpose`. The stamp is unique per call, so no keystream is used twice; the call MAC
    /// (over the sealed bytes) authenticates the result. Used for the keys REGISTER carries,
    /// which must not cross the network in the clear.
    pub fn seal(&self, stamp: CallStamp, purpose: &[u8], data: &mut [u8]) {
        let mut h = blake3::Hasher::new_keyed(&self.seal);
        h.update(SEAL_DOMAIN);
        stamp.hash_into(&mut h);
        h.update(purpose);
        let mut stream = vec![0u8; data.len()];
        h.finalize_xof().fill(&mut stream);
        for (d, k) in data.iter_mut().zip(stream) {
            *d ^= k;
        }
    }
}

/// Makes [`CallStamp`]s for one node: the time given, and nonces that never repeat within
/// the process (a counter) and are unlikely to meet another process's (a random base).
#[derive(Debug)]
pub struct Stamper {
    node: u32,
    base: u64,
    counter: AtomicU64,
}

impl Stamper {
    /// A stamper for calls from `node`.
    pub fn new(node: u32) -> Self {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u32(std::process::id());
        h.write_u32(node);
        Self {
            node,
            base: h.finish(),
            counter: AtomicU64::new(0),
        }
    }

    /// A stamp for a call to `to` made at `now_ms`.
    pub fn stamp(&self, to: DsBoot, now_ms: u64) -> CallStamp {
        CallStamp {
            node: self.node,
            to,
            time_ms: now_ms,
            nonce: self
                .base
                .wrapping_add(self.counter.fetch_add(1, Ordering::Relaxed)),
        }
    }
}

/// Milliseconds since 1970 of `t` (0 before 1970).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u128::from(u64::MAX)) as u64)
}

/// Refuses stale and replayed calls: a call is accepted once, and only within
/// [`MAX_CLOCK_SKEW_MS`] of the receiver's clock; accepted calls are remembered until they
/// are too old to be accepted anyway. "Too old" is measured from the latest clock reading
/// seen, so a clock stepped backwards cannot revive calls already forgotten.
#[derive(Debug)]
pub struct ReplayGuard {
    seen: BTreeSet<(u64, u32, u64)>,
    high_water_ms: u64,
    skew_ms: u64,
    max: usize,
}

impl Default for ReplayGuard {
    fn default() -> Self {
        Self::new(MAX_CLOCK_SKEW_MS, REPLAY_CACHE_MAX)
    }
}

impl ReplayGuard {
    /// A guard allowing `skew_ms` of clock difference and remembering at most `max` calls.
    pub fn new(skew_ms: u64, max: usize) -> Self {
        Self {
            seen: BTreeSet::new(),
            high_water_ms: 0,
            skew_ms,
            max,
        }
    }

    /// Calls remembered now.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// True when no call is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Accepts a verified credential at receiver time `now_ms`, or says why not.
    pub fn check(&mut self, cred: &CtlCred, now_ms: u64) -> Result<(), CtlAuthError> {
        self.high_water_ms = self.high_water_ms.max(now_ms);
        let oldest = self.high_water_ms.saturating_sub(self.skew_ms);
        // Forget what the check below refuses anyway.
        self.seen = self.seen.split_off(&(oldest, 0, 0));
        if cred.time_ms < oldest || cred.time_ms.saturating_sub(self.skew_ms) > now_ms {
            return Err(CtlAuthError::ClockSkew {
                time_ms: cred.time_ms,
                now_ms,
            });
        }
        let key = (cred.time_ms, cred.node, cred.nonce);
        if self.seen.contains(&key) {
            return Err(CtlAuthError::Replayed);
        }
        if self.seen.len() >= self.max {
            return Err(CtlAuthError::ReplayCacheFull);
        }
        self.seen.insert(key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::roundtrip_tests!(ctl_cred: CtlCred);

    const NOW: u64 = 1_790_000_000_000;

    fn key() -> ClusterKey {
        ClusterKey::from_secret(&[7u8; 32])
    }

    const BOOT: DsBoot = DsBoot {
        ds_id: 3,
        boot: [0xb0; BOOT_NONCE_LEN],
    };

    fn stamp(nonce: u64) -> CallStamp {
        CallStamp {
            node: MDS_NODE,
            to: BOOT,
            time_ms: NOW,
            nonce,
        }
    }

    fn args() -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"\0\0\0\x05"),
            Bytes::from_static(b"abcd"),
        ]
    }

    #[test]
    fn a_signed_call_verifies_and_any_change_breaks_it() {
        let k = key();
        let cred = k.sign_call(stamp(1), 9, 1, 2, &args());
        let flat: Vec<u8> = args().concat();
        let c = k.verify_call(&cred, 9, 1, 2, &flat).unwrap();
        assert_eq!(CallStamp::from(&c), stamp(1));
        // Another procedure, program, version, argument byte, or secret.
        assert_eq!(
            k.verify_call(&cred, 9, 1, 3, &flat),
            Err(CtlAuthError::BadMac)
        );
        assert_eq!(
            k.verify_call(&cred, 8, 1, 2, &flat),
            Err(CtlAuthError::BadMac)
        );
        assert_eq!(
            k.verify_call(&cred, 9, 2, 2, &flat),
            Err(CtlAuthError::BadMac)
        );
        let mut changed = flat.clone();
        changed[7] ^= 1;
        assert_eq!(
            k.verify_call(&cred, 9, 1, 2, &changed),
            Err(CtlAuthError::BadMac)
        );
        let other = ClusterKey::from_secret(&[8u8; 32]);
        assert_eq!(
            other.verify_call(&cred, 9, 1, 2, &flat),
            Err(CtlAuthError::BadMac)
        );
        // Any field of the credential itself.
        let base: CtlCred = xdr::from_bytes(cred.body.clone()).unwrap();
        for tweak in [
            CtlCred { node: 1, ..base },
            CtlCred {
                time_ms: NOW + 1,
                ..base
            },
            CtlCred { nonce: 2, ..base },
            CtlCred { target: 4, ..base },
            CtlCred {
                boot: [0xb1; BOOT_NONCE_LEN],
                ..base
            },
        ] {
            let forged = OpaqueAuth::new(AUTH_PNFS_CTL, xdr::to_bytes(&tweak));
            assert_eq!(
                k.verify_call(&forged, 9, 1, 2, &flat),
                Err(CtlAuthError::BadMac)
            );
        }
        let v2 = OpaqueAuth::new(
            AUTH_PNFS_CTL,
            xdr::to_bytes(&CtlCred { version: 1, ..base }),
        );
        assert_eq!(
            k.verify_call(&v2, 9, 1, 2, &flat),
            Err(CtlAuthError::Version(1)),
            "a version 1 credential (no target, no boot) is refused"
        );
    }

    #[test]
    fn other_flavors_and_malformed_bodies_are_refused_with_their_auth_stat() {
        let k = key();
        let e = k
            .verify_call(&OpaqueAuth::none(), 9, 1, 0, &[])
            .unwrap_err();
        assert_eq!(e, CtlAuthError::WrongFlavor(AuthFlavor::AUTH_NONE));
        assert_eq!(e.auth_stat(), AuthStat::AUTH_TOOWEAK);
        let short = OpaqueAuth::new(AUTH_PNFS_CTL, Bytes::from_static(&[0; 20]));
        let e = k.verify_call(&short, 9, 1, 0, &[]).unwrap_err();
        assert_eq!(e, CtlAuthError::Malformed);
        assert_eq!(e.auth_stat(), AuthStat::AUTH_BADCRED);
        assert_eq!(
            CtlAuthError::Replayed.auth_stat(),
            AuthStat::AUTH_REJECTEDVERF
        );
    }

    #[test]
    fn a_reply_opens_only_for_its_own_call_and_unaltered() {
        let k = key();
        let cred = k.sign_call(stamp(1), 9, 1, 2, &args());
        let results = vec![Bytes::from_static(b"\0\0\0\0"), Bytes::from_static(b"zzzz")];
        let mac = k.sign_reply(
            &xdr::from_bytes::<CtlCred>(cred.body.clone()).unwrap().mac,
            &results,
        );
        let body: Bytes = [&results.concat()[..], &mac[..]].concat().into();
        assert_eq!(
            &k.open_reply(&cred, body.clone()).unwrap()[..],
            b"\0\0\0\0zzzz"
        );
        let other_call = k.sign_call(stamp(2), 9, 1, 2, &args());
        assert_eq!(
            k.open_reply(&other_call, body.clone()),
            Err(CtlAuthError::BadReply)
        );
        let mut altered = body.to_vec();
        altered[5] ^= 1;
        assert_eq!(
            k.open_reply(&cred, altered.into()),
            Err(CtlAuthError::BadReply)
        );
        assert_eq!(
            k.open_reply(&cred, body.slice(..31)),
            Err(CtlAuthError::BadReply)
        );
        let wrong = ClusterKey::from_secret(&[8; 32]);
        assert_eq!(wrong.open_reply(&cred, body), Err(CtlAuthError::BadReply));
    }

    #[test]
    fn sealing_twice_restores_the_data_and_depends_on_the_stamp() {
        let k = key();
        let plain = [0x5au8; 64];
        let mut a = plain;
        k.seal(stamp(1), b"keys", &mut a);
        assert_ne!(a, plain);
        let mut b = plain;
        k.seal(stamp(2), b"keys", &mut b);
        assert_ne!(a, b, "another call, another keystream");
        let mut c = plain;
        k.seal(
            CallStamp {
                to: DsBoot {
                    boot: [0xb2; BOOT_NONCE_LEN],
                    ..BOOT
                },
                ..stamp(1)
            },
            b"keys",
            &mut c,
        );
        assert_ne!(a, c, "another boot of the data server, another keystream");
        k.seal(stamp(1), b"keys", &mut a);
        assert_eq!(a, plain);
    }

    fn cred_at(time_ms: u64, nonce: u64) -> CtlCred {
        CtlCred {
            version: CTL_AUTH_VERSION,
            node: 0,
            target: BOOT.ds_id,
            time_ms,
            nonce,
            boot: BOOT.boot,
            mac: [0; 32],
        }
    }

    #[test]
    fn a_credential_is_laid_out_as_docs_design_md_draws_it() {
        let cred = key().sign_call(stamp(0x0102), 9, 1, 2, &args());
        let b = &cred.body[..];
        assert_eq!(b.len(), 76);
        assert_eq!(&b[..4], &CTL_AUTH_VERSION.to_be_bytes());
        assert_eq!(&b[8..12], &3u32.to_be_bytes(), "target");
        assert_eq!(&b[12..20], &NOW.to_be_bytes());
        assert_eq!(&b[20..28], &0x0102u64.to_be_bytes());
        assert_eq!(&b[28..44], &BOOT.boot, "boot nonce");
    }

    #[test]
    fn a_call_is_good_only_for_the_data_server_and_boot_it_names() {
        let k = key();
        let cred = k.sign_call(stamp(1), 9, 1, 2, &args());
        let c = k.verify_call(&cred, 9, 1, 2, &args().concat()).unwrap();
        assert_eq!(BOOT.check(&c), Ok(()));
        let other_ds = DsBoot { ds_id: 4, ..BOOT };
        let e = other_ds.check(&c).unwrap_err();
        assert_eq!(e, CtlAuthError::WrongTarget(3));
        assert_eq!(e.auth_stat(), AuthStat::AUTH_BADCRED);
        let restarted = DsBoot {
            boot: [0xb2; BOOT_NONCE_LEN],
            ..BOOT
        };
        let e = restarted.check(&c).unwrap_err();
        assert_eq!(e, CtlAuthError::StaleBoot);
        assert_eq!(e.auth_stat(), AuthStat::AUTH_REJECTEDCRED);
    }

    #[test]
    fn a_call_is_accepted_once_and_only_while_fresh() {
        let mut g = ReplayGuard::new(1000, 100);
        g.check(&cred_at(NOW, 1), NOW).unwrap();
        assert_eq!(g.check(&cred_at(NOW, 1), NOW), Err(CtlAuthError::Replayed));
        assert_eq!(
            g.check(&cred_at(NOW, 1), NOW + 900),
            Err(CtlAuthError::Replayed)
        );
        g.check(&cred_at(NOW, 2), NOW).unwrap();
        g.check(&cred_at(NOW + 1000, 3), NOW).unwrap();
        assert!(matches!(
            g.check(&cred_at(NOW + 1001, 4), NOW),
            Err(CtlAuthError::ClockSkew { .. })
        ));
        assert!(matches!(
            g.check(&cred_at(NOW - 1001, 5), NOW),
            Err(CtlAuthError::ClockSkew { .. })
        ));
        // Once too old to be accepted, a call is forgotten: memory stays bounded.
        assert!(matches!(
            g.check(&cred_at(NOW, 1), NOW + 1001),
            Err(CtlAuthError::ClockSkew { .. })
        ));
        assert_eq!(
            g.len(),
            1,
            "only the call at NOW + 1000 is still remembered"
        );
    }

    #[test]
    fn a_clock_stepped_back_does_not_revive_forgotten_calls() {
        let mut g = ReplayGuard::new(1000, 100);
        g.check(&cred_at(NOW, 1), NOW).unwrap();
        g.check(&cred_at(NOW + 5000, 2), NOW + 5000).unwrap();
        // The clock goes back to NOW: the first call would be "fresh" again, but it was
        // forgotten, so it must be refused as too old.
        assert!(matches!(
            g.check(&cred_at(NOW, 1), NOW),
            Err(CtlAuthError::ClockSkew { .. })
        ));
    }

    #[test]
    fn a_full_replay_cache_refuses_new_calls_until_old_ones_age_out() {
        let mut g = ReplayGuard::new(1000, 3);
        for n in 0..3 {
            g.check(&cred_at(NOW, n), NOW).unwrap();
        }
        assert_eq!(
            g.check(&cred_at(NOW, 9), NOW),
            Err(CtlAuthError::ReplayCacheFull)
        );
        g.check(&cred_at(NOW + 1500, 9), NOW + 1500).unwrap();
        assert_eq!(g.len(), 1);
    }

    #[test]
    fn stamps_of_one_stamper_never_repeat_and_two_stampers_differ() {
        let s = Stamper::new(0);
        let t = Stamper::new(0);
        let a: BTreeSet<u64> = (0..1000).map(|_| s.stamp(BOOT, NOW).nonce).collect();
        assert_eq!(a.len(), 1000);
        assert_ne!(s.stamp(BOOT, NOW).nonce, t.stamp(BOOT, NOW).nonce);
        let st = s.stamp(BOOT, NOW + 5);
        assert_eq!((st.time_ms, st.to), (NOW + 5, BOOT));
    }

    #[test]
    fn the_key_does_not_show_in_debug_output() {
        assert_eq!(format!("{:?}", key()), "ClusterKey(..)");
    }
}
