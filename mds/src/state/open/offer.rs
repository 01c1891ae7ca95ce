//! OPEN's delegation decision (RFC 8881 sections 10.2 and 18.16.3): whether an open gets a
//! read or write delegation, or none and why, and the delegation body of the reply. The
//! delegations themselves are kept in [`crate::state::deleg`]; their recalls in
//! [`crate::state::recall`].

use nfs_proto::nfs4::*;

use super::*;

/// The delegation part of an OPEN reply while the server grants no delegations (RFC 8881
/// section 18.16.3): plain `OPEN_DELEGATE_NONE` when the client stated no preference,
/// otherwise `OPEN_DELEGATE_NONE_EXT` with the reason: `WND4_NOT_WANTED` for
/// `WANT_NO_DELEG`, `WND4_CANCELLED` for `WANT_CANCEL`, and for a wanted delegation
/// `WND4_RESOURCE` without a promise to signal (none will come).
pub fn no_delegation(want: u32) -> OpenDelegation4 {
    match want & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK {
        OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE => OpenDelegation4::None,
        OPEN4_SHARE_ACCESS_WANT_NO_DELEG => OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(
            WhyNoDelegation4::WND4_NOT_WANTED,
        )),
        OPEN4_SHARE_ACCESS_WANT_CANCEL => {
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(WhyNoDelegation4::WND4_CANCELLED))
        }
        _ => OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource {
            ond_server_will_signal_avail: false,
        }),
    }
}

/// What OPEN's delegation decision needs besides the state table.
#[derive(Clone, Copy, Debug)]
pub struct DelegOffer<'a> {
    /// Delegations are on for the file's export (configuration).
    pub enabled: bool,
    /// The client has a working back channel (a delegation that cannot be recalled must not
    /// be granted: RFC 8881 section 10.2.1).
    pub callback_up: bool,
    /// The file's handle, for CB_RECALL.
    pub fh: &'a NfsFh4,
    /// The file's change attribute now.
    pub change: u64,
}

/// The delegation answer when none is granted for a reason other than the client's wish
/// (RFC 8881 section 18.16.3): nothing to say without a preference, otherwise the reason.
fn refused(want: u32, why: WhyNoDelegation4) -> OpenDelegation4 {
    match want {
        OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE => OpenDelegation4::None,
        OPEN4_SHARE_ACCESS_WANT_NO_DELEG | OPEN4_SHARE_ACCESS_WANT_CANCEL => no_delegation(want),
        _ if why == WhyNoDelegation4::WND4_CONTENTION => {
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention {
                ond_server_will_push_deleg: false,
            })
        }
        _ if why == WhyNoDelegation4::WND4_RESOURCE => no_delegation(want),
        _ => OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(why)),
    }
}

/// The delegation reply body for a granted delegation: no recall pending, and for a write
/// delegation no limit on how far the client may extend the file locally (the MDS has no
/// quotas). The ACE lets the holder decide nothing on its own: every client asks the server
/// with ACCESS (an empty mask, as knfsd sends).
pub fn delegation_body(kind: DelegType, stateid: Stateid4) -> OpenDelegation4 {
    let permissions = Nfsace4 {
        r#type: nfs_proto::nfs4::attr::ACE4_ACCESS_ALLOWED_ACE_TYPE,
        flag: 0,
        access_mask: 0,
        who: Default::default(),
    };
    match kind {
        DelegType::Read => OpenDelegation4::Read(OpenReadDelegation4 {
            stateid,
            recall: false,
            permissions,
        }),
        DelegType::Write => OpenDelegation4::Write(OpenWriteDelegation4 {
            stateid,
            recall: false,
            space_limit: NfsSpaceLimit4::Size(u64::MAX),
            permissions,
        }),
    }
}

impl StateTable {
    /// OPEN's delegation decision, after its share reservation was granted (RFC 8881 sections
    /// 10.2 and 18.16.3):
    /// - WANT_NO_DELEG and WANT_CANCEL get none, with that reason;
    /// - none when delegations are off, the client has no back channel, it holds one of the
    ///   file already, or a recall of the file is under way;
    /// - an open for writing gets a WRITE delegation when no other client has the file open
    ///   or holds a delegation of it (WANT_READ_DELEG asks for none of that kind);
    /// - an open for reading gets a READ delegation when no other client has the file open
    ///   for writing or holds its write delegation (WANT_WRITE_DELEG asks for a write
    ///   delegation, which needs write access);
    /// - otherwise none, `WND4_CONTENTION` to a client that asked for one.
    ///
    /// A read delegation is never granted to an open for writing: the holder's writes would
    /// go unseen by other read delegation holders.
    pub fn offer_delegation(
        &mut self,
        clientid: u64,
        file: u64,
        share: &OpenShare,
        offer: DelegOffer<'_>,
    ) -> Result<OpenDelegation4, CounterExhausted> {
        let want = share.want;
        if matches!(
            want,
            OPEN4_SHARE_ACCESS_WANT_NO_DELEG | OPEN4_SHARE_ACCESS_WANT_CANCEL
        ) {
            return Ok(no_delegation(want));
        }
        if !offer.enabled || !offer.callback_up {
            return Ok(refused(want, WhyNoDelegation4::WND4_RESOURCE));
        }
        if let Some((_, held)) = self.delegs.held_by(clientid, file) {
            let why = match (held, want) {
                (DelegType::Read, OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG) => {
                    WhyNoDelegation4::WND4_NOT_SUPP_UPGRADE
                }
                (DelegType::Write, OPEN4_SHARE_ACCESS_WANT_READ_DELEG) => {
                    WhyNoDelegation4::WND4_NOT_SUPP_DOWNGRADE
                }
                _ => return Ok(OpenDelegation4::None),
            };
            return Ok(refused(want, why));
        }
        if self.delegs.recalling(file) {
            return Ok(refused(want, WhyNoDelegation4::WND4_CONTENTION));
        }
        let (others_open, others_write) = self.others_open(file, clientid);
        let writes = share.access & OPEN4_SHARE_ACCESS_WRITE != 0;
        let kind = if writes {
            let possible = !others_open && !self.delegs.held_by_others(file, clientid);
            (possible && want != OPEN4_SHARE_ACCESS_WANT_READ_DELEG).then_some(DelegType::Write)
        } else {
            let possible = !others_write
                && !self
                    .delegs
                    .conflicts(file, clientid, crate::state::deleg::Need::Read);
            (possible && want != OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG).then_some(DelegType::Read)
        };
        let Some(kind) = kind else {
            return Ok(refused(want, WhyNoDelegation4::WND4_CONTENTION));
        };
        let stateid = self
            .delegs
            .grant(clientid, file, offer.fh.clone(), kind, offer.change)?;
        Ok(delegation_body(kind, stateid))
    }
}
