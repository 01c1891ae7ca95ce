//! What the control service drives on the NFS side: the [`DsTarget`] seam, the
//! [`DataServer`] behind it, and [`StartOnRegister`], which makes that data server on the
//! MDS's first REGISTER.

use super::*;

/// What the control service changes on the NFS side of a data server.
pub trait DsTarget: Send + Sync + 'static {
    /// The MDS (re)registered: check with these keys from now on.
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError>;
    /// Refuse `other` from now on.
    fn revoke(&self, other: Other, why: Revoked);
    /// Forget `other` (freed on the MDS: no client can show it again).
    fn forget(&self, other: &Other);
    /// The share access of `other` is now `access` (`OPEN4_SHARE_ACCESS_*` bits).
    fn set_access(&self, other: Other, access: u8);
    /// Refuse the open and lock stateids with these counters (inclusive ranges) from now
    /// on: closed or freed on the MDS.
    fn close_counters(&self, ranges: &[(u32, u32)]);
    /// Its NFS operations so far, by operation and status (for HEALTH).
    fn op_counts(&self) -> Vec<CtlOpCount>;
    /// Where files end in objects held here (SIZE_HINT). A target that answers no READ
    /// (tests) keeps nothing.
    fn learn_ends(&self, ends: &[ObjectEnd]) {
        let _ = ends;
    }
    /// These objects of `file` were truncated, as planned at change attribute `version`:
    /// where the file ends there is unknown until a newer hint.
    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        let _ = (file, stripes, version);
    }
    /// These files were removed.
    fn removed(&self, files: &[u64]) {
        let _ = files;
    }
}

/// `counters` as HEALTH carries them.
fn op_counts_of(counters: &nfs_server::Counters) -> Vec<CtlOpCount> {
    counters
        .snapshot()
        .into_iter()
        .map(|(op, status, count)| CtlOpCount {
            op: op.0,
            status: status.0,
            count,
        })
        .collect()
}

impl DsTarget for DataServer {
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError> {
        DataServer::set_keys(self, keys);
        Ok(())
    }

    fn revoke(&self, other: Other, why: Revoked) {
        DataServer::revoke(self, other, why);
    }

    fn forget(&self, other: &Other) {
        self.forget_stateid(other);
    }

    fn set_access(&self, other: Other, access: u8) {
        DataServer::set_access(self, other, access);
    }

    fn close_counters(&self, ranges: &[(u32, u32)]) {
        DataServer::close_counters(self, ranges);
    }

    fn op_counts(&self) -> Vec<CtlOpCount> {
        op_counts_of(self.counters())
    }

    fn learn_ends(&self, ends: &[ObjectEnd]) {
        self.ends().learn(ends);
    }

    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        self.ends()
            .truncated(file, stripes.iter().copied(), version);
    }

    fn removed(&self, files: &[u64]) {
        for &f in files {
            self.ends().removed(f);
        }
    }
}

/// Makes the [`DataServer`] on the first REGISTER (it needs the MDS's keys to exist) and
/// hands it to `start`, which serves it (e.g. `tokio::spawn(ds.serve_on(listener))`); later
/// calls go to it.
pub struct StartOnRegister {
    opts: DsOptions,
    objects: Arc<dyn ObjectStore>,
    start: Box<dyn Fn(Arc<DataServer>) + Send + Sync>,
    ds: Mutex<Option<Arc<DataServer>>>,
    clock: SharedClock,
}

impl fmt::Debug for StartOnRegister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StartOnRegister")
            .field("opts", &self.opts)
            .field("started", &self.data_server().is_some())
            .finish_non_exhaustive()
    }
}

impl StartOnRegister {
    /// A data server with these options over `objects`, handed to `start` once made.
    pub fn new(
        opts: DsOptions,
        objects: Arc<dyn ObjectStore>,
        start: impl Fn(Arc<DataServer>) + Send + Sync + 'static,
    ) -> Self {
        Self {
            opts,
            objects,
            start: Box::new(start),
            ds: Mutex::new(None),
            clock: nfs_server::clock::system(),
        }
    }

    /// The data server it makes runs on `clock` (tests pass a
    /// [`ManualClock`](nfs_server::ManualClock)).
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The data server, once the MDS registered.
    pub fn data_server(&self) -> Option<Arc<DataServer>> {
        self.ds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl DsTarget for StartOnRegister {
    fn set_keys(&self, keys: &DsKeys) -> Result<(), DsError> {
        let mut slot = self.ds.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Some(ds) => ds.set_keys(keys),
            None => {
                let ds = DataServer::with_clock(
                    self.opts.clone(),
                    keys.clone(),
                    self.objects.clone(),
                    self.clock.clone(),
                )?;
                *slot = Some(ds.clone());
                (self.start)(ds);
            }
        }
        Ok(())
    }

    // The control service refuses REVOKE and SET_ACCESS until a REGISTER succeeded, so the
    // data server exists whenever these are called.
    fn revoke(&self, other: Other, why: Revoked) {
        if let Some(ds) = self.data_server() {
            ds.revoke(other, why);
        }
    }

    fn forget(&self, other: &Other) {
        if let Some(ds) = self.data_server() {
            ds.forget_stateid(other);
        }
    }

    fn set_access(&self, other: Other, access: u8) {
        if let Some(ds) = self.data_server() {
            ds.set_access(other, access);
        }
    }

    fn close_counters(&self, ranges: &[(u32, u32)]) {
        if let Some(ds) = self.data_server() {
            ds.close_counters(ranges);
        }
    }

    fn op_counts(&self) -> Vec<CtlOpCount> {
        self.data_server()
            .map_or_else(Vec::new, |ds| op_counts_of(ds.counters()))
    }

    // Before the first REGISTER there is no data server, and the one made then knows no
    // ends: nothing to learn or forget.
    fn learn_ends(&self, ends: &[ObjectEnd]) {
        if let Some(ds) = self.data_server() {
            ds.learn_ends(ends);
        }
    }

    fn truncated(&self, file: u64, stripes: &[u32], version: u64) {
        if let Some(ds) = self.data_server() {
            DsTarget::truncated(&*ds, file, stripes, version);
        }
    }

    fn removed(&self, files: &[u64]) {
        if let Some(ds) = self.data_server() {
            DsTarget::removed(&*ds, files);
        }
    }
}
