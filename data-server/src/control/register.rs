//! REGISTER: the MDS hands this data server its keys and epoch; a call of an older epoch is
//! refused from then on.

use super::*;

impl ControlService {
    pub(super) fn register(&self, stamp: CallStamp, a: RegisterArgs) -> RegisterRes {
        if a.ds_id != self.cfg.ds_id {
            tracing::error!(
                asked = a.ds_id,
                me = self.cfg.ds_id,
                "REGISTER for another data server id: the MDS's configuration is wrong"
            );
            return RegisterRes::Err(CtlStat::CTL_WRONG_ID);
        }
        let Ok(mds_epoch) = u16::try_from(a.mds_epoch) else {
            return RegisterRes::Err(CtlStat::CTL_INVAL);
        };
        if u64::from(a.lease_time) != self.cfg.lease_time.as_secs() {
            tracing::error!(
                mds = a.lease_time,
                me = self.cfg.lease_time.as_secs(),
                "REGISTER with another lease time: the configurations differ"
            );
            return RegisterRes::Err(CtlStat::CTL_LEASE_MISMATCH);
        }
        let mut keys = [0u8; 64];
        keys[..32].copy_from_slice(&a.sealed_stateid_key);
        keys[32..].copy_from_slice(&a.sealed_fh_key);
        self.key.seal(stamp, REGISTER_SEAL_PURPOSE, &mut keys);
        let mut k = DsKeys {
            stateid_key: [0; 32],
            fh_key: [0; 32],
            mds_epoch,
        };
        k.stateid_key.copy_from_slice(&keys[..32]);
        k.fh_key.copy_from_slice(&keys[32..]);
        // Hold the registration lock across the change, so REVOKE and SET_ACCESS see the
        // new epoch only once the checks use the new keys.
        let mut registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = self.target.set_keys(&k) {
            tracing::error!(error = %e, "REGISTER: the data server could not start");
            return RegisterRes::Err(CtlStat::CTL_IO);
        }
        *registered = Some(mds_epoch);
        drop(registered);
        tracing::info!(ds = self.cfg.ds_id, mds_epoch, "registered with the MDS");
        RegisterRes::Ok(RegisterOk {
            ds_id: a.ds_id,
            boot_verifier: self.boot_verifier,
            write_verifier: self.store.verifier(),
            backend: self.cfg.backend,
            addresses: self.addresses.clone(),
            store_id: self.store.identity(),
        })
    }

    /// The registration lock, if the MDS registered with `epoch`; else the status to answer.
    pub(super) fn registered_as(
        &self,
        epoch: u32,
    ) -> Result<std::sync::MutexGuard<'_, Option<u16>>, CtlStat> {
        let registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match *registered {
            None => Err(CtlStat::CTL_NOT_REGISTERED),
            Some(e) if u32::from(e) != epoch => Err(CtlStat::CTL_STALE_EPOCH),
            Some(_) => Ok(registered),
        }
    }
}
