//! The device registry: which configured data servers are up, and the control connection to
//! each.
//!
//! One task per configured data server connects its control service, says HELLO (learning
//! the boot nonce its calls are signed for: `crate::pnfs::dsctl`), REGISTERs (handing it the MDS's
//! `DsKeys` for this boot), then polls HEALTH. A failed call or connection marks the
//! data server down and the task reconnects with exponential backoff; a changed boot verifier
//! (the data server restarted and lost its keys and revocations) means REGISTER again. The
//! ring of *up* data servers is what new layouts are cut from (RFC 8881 section 13.3: a
//! device names data servers by address; a down one is not handed out), and its generation
//! moves on every membership change so device ids of an older ring are recognised as gone.
//!
//! The registry also keeps each data server's last known write verifier (from REGISTER and
//! from every control WRITE and COMMIT reply): I/O through the MDS answers striped files with
//! a verifier derived from those of the file's data servers (`crate::pnfs::datapath`), so a client
//! sees a data server's restart as a changed verifier and sends its unstable writes again.
//!
//! **Stateid changes** (OPEN upgrades and downgrades, revocations: see `data_server::gate`)
//! are pushed to every up data server by [`Devices::push_access`] and
//! [`Devices::push_revoke`], and kept in a table of this MDS boot ([`Pushed`]): a data
//! server that was down, or restarted (it lost what it was told), gets the whole table again
//! after its REGISTER and before it is marked up, so no layout is cut from a data server
//! that would accept a stateid the MDS has revoked.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cluster::counter_set::CounterSet;
use cluster::keys::DsKeys;
use cluster::stateid::StateidMinter;
use nfs_proto::control::{ClusterKey, CtlOpCount};
use nfs_server::clock::SharedClock;
use tokio::task::JoinHandle;

use crate::config::ClusterConfig;
use crate::pnfs::dsconnect::{DsConnector, TcpConnector};
use crate::pnfs::dsctl::{CallCounts, CtlError, DsControl, RevokeReason};

mod registration;

use registration::watch;

/// A stateid's `other` field (`cluster::stateid::Other`).
pub type Other = cluster::stateid::Other;

/// What the MDS told the data servers about its stateids in this boot: resent whole to a data
/// server at its (re-)registration.
#[derive(Debug, Default)]
pub struct Pushed {
    /// The share access of open and lock stateids whose access changed after they were
    /// minted (OPEN upgrade, OPEN_DOWNGRADE).
    access: HashMap<Other, u32>,
    /// Stateids the data servers must refuse, and why (but closed ones, which are in
    /// `closed`).
    revoked: HashMap<Other, RevokeReason>,
    /// Counters of this boot's stateids closed, freed or returned (open, lock, delegation,
    /// layout: one counter space, `StateidMinter`): runs, not one entry per stateid, so a
    /// create storm does not grow the table ([`CounterSet`]).
    closed: CounterSet,
    /// Moves on every change, so a registration can tell it missed one.
    version: u64,
}

/// A copy of [`Pushed`] to resend: its version, access overrides, revocations and closed
/// counter ranges.
type Snapshot = (
    u64,
    Vec<(Other, u32)>,
    Vec<(Other, RevokeReason)>,
    Vec<(u32, u32)>,
);

impl Pushed {
    fn snapshot(&self) -> Snapshot {
        (
            self.version,
            self.access.iter().map(|(o, a)| (*o, *a)).collect(),
            self.revoked.iter().map(|(o, r)| (*o, *r)).collect(),
            self.closed.ranges().collect(),
        )
    }
}

/// A push of stateid changes did not reach every data server that is up (the change is kept
/// and sent again when the data server registers again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("data server {ds}: {error}")]
pub struct PushError {
    /// The first data server that failed.
    pub ds: u16,
    /// Its error.
    pub error: String,
}

/// Timing of the registry's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicesOptions {
    /// Between two HEALTH polls of an up data server.
    pub poll: Duration,
    /// First wait before reconnecting to a down data server (doubled after each failure).
    pub backoff_min: Duration,
    /// Longest wait between reconnection attempts.
    pub backoff_max: Duration,
    /// Bound on connecting and on each control call.
    pub call_timeout: Duration,
}

impl Default for DevicesOptions {
    /// Poll every 2 s (a dead data server leaves new layouts within a few seconds), reconnect
    /// after 250 ms doubling to 5 s, calls bounded by 5 s.
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(2),
            backoff_min: Duration::from_millis(250),
            backoff_max: Duration::from_secs(5),
            call_timeout: Duration::from_secs(5),
        }
    }
}

/// What the registry knows of one data server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsStatus {
    /// Its configured id.
    pub id: u16,
    /// Its control address.
    pub control: Option<SocketAddr>,
    /// Registered with this MDS boot and answering HEALTH.
    pub up: bool,
    /// Why it is down (the last failure), if it is.
    pub last_error: Option<String>,
    /// The boot verifier it registered with (changes on every start of its process).
    pub boot_verifier: Option<[u8; 8]>,
    /// Its object store's last known write verifier (from REGISTER, then from control WRITE
    /// and COMMIT replies): changes when unstable data may have been lost there.
    pub write_verifier: Option<[u8; 8]>,
    /// How many times it was registered since this MDS started.
    pub registrations: u64,
}

struct Entry {
    status: DsStatus,
    ctl: Option<DsControl>,
    /// Its NFS operations by operation and status, from its last HEALTH reply (kept out of
    /// [`DsStatus`], which every LAYOUTGET copies).
    ops: Vec<CtlOpCount>,
    /// Bytes its COPY calls moved, as its last HEALTH reply told.
    copy_bytes: u64,
    /// Where its NFS service answers as clients are told (GETDEVICEINFO): the configured
    /// addresses until it registers, then those it reports (REGISTER), which win: a data
    /// server restarted elsewhere with the same id moves its devices.
    addresses: Vec<SocketAddr>,
    /// Where it answers NFS over RDMA: none until it registers and says so.
    rdma_addresses: Vec<SocketAddr>,
}

struct Inner {
    cluster: ClusterConfig,
    key: Option<Arc<ClusterKey>>,
    keys: DsKeys,
    lease_time: u32,
    opts: DevicesOptions,
    /// The MDS's clock (the wall time that stamps control calls).
    clock: SharedClock,
    /// How control connections are made (TCP but in the test kit's in-memory cluster).
    connector: Arc<dyn DsConnector>,
    /// The control calls of every connection this registry makes.
    calls: Arc<CallCounts>,
    /// Per data server, in configuration order, and the ring generation.
    state: Mutex<(Vec<Entry>, u32)>,
    started: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    pushed: Mutex<Pushed>,
    /// Data servers whose addresses changed since [`Devices::take_moved`] last looked.
    moved: Mutex<Vec<u16>>,
    moved_wake: Arc<tokio::sync::Notify>,
    /// What the MDS does with a registering data server's store identity before counting it
    /// up ([`Devices::on_store`]).
    store_check: std::sync::OnceLock<StoreCheck>,
}

/// The check [`Devices::on_store`] installs: data server id and its store's identity; an
/// error keeps the data server down (the registration is tried again).
pub type StoreCheck = Arc<
    dyn Fn(
            u16,
            [u8; 16],
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// The device registry (cheap to clone; clones share the state).
#[derive(Clone)]
pub struct Devices {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Devices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Devices")
            .field("servers", &self.statuses())
            .field("generation", &self.generation())
            .finish()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in self
            .tasks
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            t.abort();
        }
    }
}

impl Devices {
    /// The registry of `cluster`'s data servers, to be registered with `keys` (this MDS
    /// boot's) and `lease_time` (seconds). `secret` is the cluster secret; `None` only when
    /// there are no data servers. Nothing is contacted until [`Devices::start`].
    pub fn new(
        cluster: ClusterConfig,
        secret: Option<&[u8]>,
        keys: DsKeys,
        lease_time: u32,
        opts: DevicesOptions,
        clock: SharedClock,
    ) -> Self {
        Self::with_connector(
            cluster,
            secret,
            keys,
            lease_time,
            opts,
            clock,
            Arc::new(TcpConnector),
        )
    }

    /// [`Devices::new`] reaching the data servers through `connector`.
    pub fn with_connector(
        cluster: ClusterConfig,
        secret: Option<&[u8]>,
        keys: DsKeys,
        lease_time: u32,
        opts: DevicesOptions,
        clock: SharedClock,
        connector: Arc<dyn DsConnector>,
    ) -> Self {
        let entries = cluster
            .data_servers
            .iter()
            .map(|d| Entry {
                status: DsStatus {
                    id: d.id,
                    control: d.control_addr(),
                    up: false,
                    last_error: Some("not contacted yet".into()),
                    boot_verifier: None,
                    write_verifier: None,
                    registrations: 0,
                },
                ctl: None,
                ops: Vec::new(),
                copy_bytes: 0,
                addresses: d.addresses.clone(),
                rdma_addresses: Vec::new(),
            })
            .collect();
        // Generations start from this boot's epoch, so a device id a client cached from an
        // earlier MDS boot does not name a ring of this one.
        let generation = u32::from(keys.mds_epoch) << 16;
        Self {
            inner: Arc::new(Inner {
                key: secret.map(|s| Arc::new(ClusterKey::from_secret(s))),
                cluster,
                keys,
                lease_time,
                opts,
                clock,
                connector,
                calls: Arc::default(),
                state: Mutex::new((entries, generation)),
                started: AtomicBool::new(false),
                tasks: Mutex::new(Vec::new()),
                pushed: Mutex::new(Pushed::default()),
                moved: Mutex::new(Vec::new()),
                moved_wake: Arc::new(tokio::sync::Notify::new()),
                store_check: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Installs what runs when a data server registers, before it counts as up: the MDS
    /// compares the identity of its object store with the one on record
    /// (`crate::pnfs::replaced`). Once; before [`Devices::start`].
    pub fn on_store(&self, check: StoreCheck) {
        let _ = self.inner.store_check.set(check);
    }

    /// Starts one task per data server (once; later calls do nothing). Needs a tokio
    /// runtime. The tasks end when the last clone of the registry is dropped.
    pub fn start(&self) {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(key) = self.inner.key.clone() else {
            return;
        };
        let mut tasks = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for d in &self.inner.cluster.data_servers {
            let weak = Arc::downgrade(&self.inner);
            tasks.push(tokio::spawn(watch(weak, d.id, key.clone())));
        }
    }

    /// The ring of data servers that are up now (id order), with its generation.
    pub fn ring(&self) -> layouts::Ring {
        let st = self.state();
        let full = self.inner.cluster.ring(st.1);
        let up: Vec<u32> =
            st.0.iter()
                .filter(|e| e.status.up)
                .map(|e| u32::from(e.status.id))
                .collect();
        layouts::Ring::ordered(
            st.1,
            full.servers
                .into_iter()
                .filter(|s| up.contains(&s.id))
                .collect(),
        )
    }

    /// The ring's generation: bumped on every change of the set of up data servers.
    pub fn generation(&self) -> u32 {
        self.state().1
    }

    /// Every configured data server's status, in configuration order.
    pub fn statuses(&self) -> Vec<DsStatus> {
        self.state().0.iter().map(|e| e.status.clone()).collect()
    }

    /// Each data server's NFS operations by operation and status, as its last HEALTH reply
    /// told (empty before one).
    pub fn op_counts(&self) -> Vec<(u16, Vec<CtlOpCount>)> {
        self.state()
            .0
            .iter()
            .map(|e| (e.status.id, e.ops.clone()))
            .collect()
    }

    /// Bytes each data server copied for server-side COPY since it started, as its last
    /// HEALTH reply told (0 before one).
    pub fn copy_bytes(&self) -> Vec<(u16, u64)> {
        self.state()
            .0
            .iter()
            .map(|e| (e.status.id, e.copy_bytes))
            .collect()
    }

    /// Where data server `id`'s NFS service answers, as clients are told: the configured
    /// addresses until it registers, then those it reported.
    pub fn addresses(&self, id: u16) -> Option<Vec<SocketAddr>> {
        self.state()
            .0
            .iter()
            .find(|e| e.status.id == id)
            .map(|e| e.addresses.clone())
    }

    /// Where data server `id` answers NFS over RDMA, as it reported at its last REGISTER
    /// (empty: it does not, or has not registered).
    pub fn rdma_addresses(&self, id: u16) -> Vec<SocketAddr> {
        self.state()
            .0
            .iter()
            .find(|e| e.status.id == id)
            .map(|e| e.rdma_addresses.clone())
            .unwrap_or_default()
    }

    /// The data servers whose addresses changed (at a REGISTER) since the last call, and a
    /// handle that is notified when there are more: for the task that sends
    /// CB_NOTIFY_DEVICEID ([`crate::pnfs::notify`]).
    pub fn take_moved(&self) -> (Vec<u16>, Arc<tokio::sync::Notify>) {
        let moved = std::mem::take(
            &mut *self
                .inner
                .moved
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        (moved, self.inner.moved_wake.clone())
    }

    /// Data server `id`'s status.
    pub fn status(&self, id: u16) -> Option<DsStatus> {
        self.state()
            .0
            .iter()
            .find(|e| e.status.id == id)
            .map(|e| e.status.clone())
    }

    /// Whether data server `id` is up now: what placement and LAYOUTGET ask before naming it
    /// to a client (a server the registry does not know is not up).
    pub fn is_up(&self, id: u16) -> bool {
        self.inner.is_up(id)
    }

    /// [`Devices::is_up`] for an id as a ring holds it (`u32`; one out of the `u16` range is
    /// never up).
    pub fn is_ring_member_up(&self, id: u32) -> bool {
        u16::try_from(id).is_ok_and(|id| self.is_up(id))
    }

    /// The control connection to data server `id` while it is up (for OBJECT_SIZE,
    /// TRUNCATE, REMOVE, REVOKE, SET_ACCESS).
    pub fn control(&self, id: u16) -> Option<DsControl> {
        self.state()
            .0
            .iter()
            .find(|e| e.status.id == id && e.status.up)
            .and_then(|e| e.ctl.clone())
    }

    /// The control calls sent to the data servers since this registry was made
    /// (`pnfs_ctl_calls_total`).
    pub fn control_calls(&self) -> &CallCounts {
        &self.inner.calls
    }

    /// Data server `id`'s last known write verifier (None before its first REGISTER).
    pub fn write_verifier(&self, id: u16) -> Option<[u8; 8]> {
        self.state()
            .0
            .iter()
            .find(|e| e.status.id == id)
            .and_then(|e| e.status.write_verifier)
    }

    /// Records the write verifier a control WRITE or COMMIT reply of data server `id` showed.
    pub fn note_write_verifier(&self, id: u16, verifier: [u8; 8]) {
        let mut st = self.state();
        let Some(e) = st.0.iter_mut().find(|e| e.status.id == id) else {
            return;
        };
        if e.status.write_verifier != Some(verifier) {
            tracing::info!(ds = id, write_verifier = %hex(&verifier), "data server has a new write verifier");
            e.status.write_verifier = Some(verifier);
        }
    }

    /// How many data servers are up and down.
    pub fn counts(&self) -> (usize, usize) {
        let st = self.state();
        let up = st.0.iter().filter(|e| e.status.up).count();
        (up, st.0.len() - up)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Vec<Entry>, u32)> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The control connections of every up data server.
    fn up_controls(&self) -> Vec<(u16, DsControl)> {
        self.state()
            .0
            .iter()
            .filter(|e| e.status.up)
            .filter_map(|e| Some((e.status.id, e.ctl.clone()?)))
            .collect()
    }

    /// How many stateid access changes and revocations the data servers hold for this boot
    /// (for operators and tests).
    pub fn pushed_counts(&self) -> (usize, usize) {
        let p = self.inner.pushed();
        (p.access.len(), p.revoked.len() + p.closed.range_count())
    }

    /// SET_ACCESS: the new share access of open and lock stateids (after an OPEN upgrade or
    /// OPEN_DOWNGRADE), recorded for data servers that register later and sent to every up
    /// data server, all at once. Returns once each has applied it, or the first failure.
    pub async fn push_access(&self, changes: &[(Other, u32)]) -> Result<(), PushError> {
        if changes.is_empty() {
            return Ok(());
        }
        {
            let mut p = self.inner.pushed();
            for &(o, a) in changes {
                if !p.revoked.contains_key(&o) {
                    p.access.insert(o, a);
                }
            }
            p.version += 1;
        }
        let epoch = self.inner.keys.mds_epoch;
        let changes = changes.to_vec();
        self.fan_out(move |ctl| {
            let changes = changes.clone();
            async move { ctl.set_access(epoch, &changes).await }
        })
        .await
    }

    /// REVOKE: the data servers refuse these stateids from now on; recorded for data servers
    /// that register later and sent to every up data server, all at once. Returns once each
    /// has applied it, or the first failure.
    pub async fn push_revoke(&self, revoke: &[(Other, RevokeReason)]) -> Result<(), PushError> {
        if revoke.is_empty() {
            return Ok(());
        }
        let epoch = self.inner.keys.mds_epoch;
        let minted = StateidMinter::new(self.inner.keys.stateid_key, epoch);
        let mut closed = CounterSet::new();
        let mut others = Vec::new();
        {
            let mut p = self.inner.pushed();
            for &(o, why) in revoke {
                p.access.remove(&o);
                match minted.counter_of(&o) {
                    Some(c) if why == RevokeReason::Closed => {
                        p.closed.insert(c);
                        closed.insert(c);
                    }
                    _ => {
                        p.revoked.insert(o, why);
                        others.push((o, why));
                    }
                }
            }
            p.version += 1;
        }
        let closed: Vec<(u32, u32)> = closed.ranges().collect();
        self.fan_out(move |ctl| {
            let (others, closed) = (others.clone(), closed.clone());
            async move {
                if !others.is_empty() {
                    ctl.revoke(epoch, &others, &[]).await?;
                }
                ctl.close_counters(epoch, &closed).await
            }
        })
        .await
    }

    /// Runs `call` against every up data server concurrently.
    async fn fan_out<F, Fut>(&self, call: F) -> Result<(), PushError>
    where
        F: Fn(DsControl) -> Fut,
        Fut: std::future::Future<Output = Result<(), CtlError>> + Send + 'static,
    {
        let mut set = tokio::task::JoinSet::new();
        for (id, ctl) in self.up_controls() {
            let fut = call(ctl);
            set.spawn(async move { (id, fut.await) });
        }
        let mut first = None;
        while let Some(r) = set.join_next().await {
            let failed = match r {
                Ok((_, Ok(()))) => continue,
                Ok((ds, Err(e))) => PushError {
                    ds,
                    error: e.to_string(),
                },
                Err(e) => PushError {
                    ds: 0,
                    error: e.to_string(),
                },
            };
            // It may still hold the old state: marked down, it gets the whole table again
            // before it is up again (its task re-registers it), so every up data server has
            // applied every recorded change.
            self.inner.mark_down(
                failed.ds,
                format!("pushing stateid changes: {}", failed.error),
            );
            first.get_or_insert(failed);
        }
        first.map_or(Ok(()), Err)
    }
}

/// `b` as lowercase hex, for logs.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
