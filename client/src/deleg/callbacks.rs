//! The back channel's calls about delegations: CB_RECALL (answered at once, the return runs
//! in the background) and CB_GETATTR (answered from this client's view of the file).

use super::*;

impl Inner {
    /// CB_RECALL (section 20.2): NFS4_OK at once and the return in a task;
    /// NFS4ERR_BAD_STATEID for a delegation this client does not hold.
    pub(crate) fn cb_recall(self: &Arc<Self>, args: &CbRecallArgs) -> NfsStat4 {
        let Some(so) = self.server_open(&args.fh) else {
            return NfsStat4::NFS4ERR_BAD_STATEID;
        };
        if !so.is_deleg(&args.stateid) {
            return NfsStat4::NFS4ERR_BAD_STATEID;
        }
        Counters::add(&self.counters.delegations_recalled, 1);
        if self.opts.ignore_recalls {
            tracing::warn!(path = %so.path, "CB_RECALL ignored (ClientOptions::ignore_recalls)");
            return NfsStat4::NFS4_OK;
        }
        if let Some(sid) = self.start_return(&so) {
            let me = self.clone();
            tokio::spawn(async move { me.give_back(so, sid).await });
        }
        NfsStat4::NFS4_OK
    }

    /// CB_GETATTR (section 20.1): this client's view of a file it holds a write delegation
    /// of; NFS4ERR_BADHANDLE for any other file.
    pub(crate) fn cb_getattr(&self, args: &CbGetAttrArgs) -> CbGetAttrRes {
        match self
            .server_open(&args.fh)
            .and_then(|so| so.cb_attrs(&args.attr_request))
        {
            Some(obj_attributes) => CbGetAttrRes::Ok(CbGetAttrResOk { obj_attributes }),
            None => CbGetAttrRes::Err(NfsStat4::NFS4ERR_BADHANDLE),
        }
    }
}
