//! Device ID notifications (RFC 8881 sections 12.2.10 and 20.12): which clients asked to hear
//! of changes to which devices, and the task that sends them CB_NOTIFY_DEVICEID when a data
//! server of a device answers at other addresses.
//!
//! ```text
//!  GETDEVICEINFO asking NOTIFY_DEVICEID4_CHANGE ─> watch(client, device)
//!  REGISTER of a data server reporting other addresses (crate::pnfs::devices) ─> moved
//!  task: for each moved data server, each client watching a device that has it:
//!          CB_NOTIFY_DEVICEID [CHANGE(device, immediate)] ─> forget those watches
//!          (the client asks GETDEVICEINFO again, which watches again)
//! ```
//!
//! A device's servers never change (a device id names a recorded ring generation and a window
//! of it), and no device is deleted, so a change of addresses is the only notification due.
//! The Linux client drops a device it is told about from its cache and asks again.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use nfs_proto::nfs4::{
    Bitmap4, CbNotifyDeviceidArgs, Deviceid4, Layouttype4, NfsCbArgop4, Notify4,
    NotifyDeviceidChange4, NotifyDeviceidType4,
};
use nfs_proto::xdr::to_bytes;
use nfs_server::Core;
use tracing::{info, warn};

use crate::server::Pnfs;

/// The most devices one client is watched for: a bound on memory for a client that asks
/// about every device id it can make up (a device id this server did not make is NOENT
/// before it is watched, so this is only reached with very large rings).
const MAX_WATCHED: usize = 65536;

/// Clients' device watches, kept in the [`Pnfs`](crate::server::Pnfs) handle.
#[derive(Debug, Default)]
pub struct DeviceWatch {
    watches: Mutex<HashMap<u64, BTreeSet<Deviceid4>>>,
    started: AtomicBool,
    /// CB_NOTIFY_DEVICEID calls sent.
    pub sent: AtomicU64,
}

impl DeviceWatch {
    /// Client `clientid` asked to hear of changes to `device` (GETDEVICEINFO with
    /// NOTIFY_DEVICEID4_CHANGE accepted).
    pub fn watch(&self, clientid: u64, device: Deviceid4) {
        let mut w = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        let set = w.entry(clientid).or_default();
        if set.len() < MAX_WATCHED {
            set.insert(device);
        }
    }

    /// The devices `clientid` watches.
    pub fn watched(&self, clientid: u64) -> Vec<Deviceid4> {
        self.watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&clientid)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Starts the task (once) over the data servers and the watches (`pnfs`) and the back
    /// channels (`core`). Needs a tokio runtime. The task holds both weakly and upgrades
    /// them only while it works, so dropping the server ends it.
    pub fn start(core: &Arc<Core>, pnfs: &Arc<Pnfs>) {
        if pnfs.device_watch().started.swap(true, Ordering::SeqCst) {
            return;
        }
        tokio::spawn(run(Arc::downgrade(core), Arc::downgrade(pnfs)));
    }

    /// Takes, per client, the watched devices that have a data server of `moved`.
    fn take_affected(&self, pnfs: &Pnfs, moved: &[u16]) -> Vec<(u64, Vec<Deviceid4>)> {
        let has_moved = |id: &Deviceid4| {
            let Some(d) = layouts::Device::from_id(id) else {
                return false;
            };
            pnfs.ring(d.generation)
                .and_then(|r| {
                    r.members(&d).ok().map(|m| {
                        m.iter()
                            .any(|s| u16::try_from(s.id).is_ok_and(|s| moved.contains(&s)))
                    })
                })
                .unwrap_or(false)
        };
        let mut w = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        for (&clientid, set) in w.iter_mut() {
            let hit: Vec<Deviceid4> = set.iter().copied().filter(|d| has_moved(d)).collect();
            for d in &hit {
                set.remove(d);
            }
            if !hit.is_empty() {
                out.push((clientid, hit));
            }
        }
        w.retain(|_, s| !s.is_empty());
        out
    }
}

async fn run(core: Weak<Core>, pnfs: Weak<Pnfs>) {
    loop {
        let wake = {
            let (Some(core), Some(pnfs)) = (core.upgrade(), pnfs.upgrade()) else {
                return;
            };
            let (moved, wake) = pnfs.devices().take_moved();
            if !moved.is_empty() {
                forget_gone_clients(&core, pnfs.device_watch());
                for (clientid, devices) in pnfs.device_watch().take_affected(&pnfs, &moved) {
                    notify(&core, pnfs.device_watch(), clientid, devices).await;
                }
            }
            wake
        };
        // Woken by the registry; a timeout too, so a dropped MDS ends the task.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wake.notified()).await;
    }
}

/// Drops the watches of clients the session layer no longer has.
fn forget_gone_clients(core: &Core, watch: &DeviceWatch) {
    let st = core.state();
    watch
        .watches
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|&c, _| st.clients.get(c).is_some());
}

/// Sends one CB_NOTIFY_DEVICEID naming `devices` as changed to `clientid`.
async fn notify(core: &Core, watch: &DeviceWatch, clientid: u64, devices: Vec<Deviceid4>) {
    let session = {
        let st = core.state();
        st.sessions
            .callback_path(&st.clients, clientid)
            .map(|(s, _)| *s.id())
    };
    let Some(session) = session else {
        info!(clientid, "no back channel for CB_NOTIFY_DEVICEID");
        return;
    };
    let changes = devices
        .iter()
        .map(|&id| Notify4 {
            notify_mask: Bitmap4::from_bits([NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.0]),
            notify_vals: to_bytes(&NotifyDeviceidChange4 {
                ndc_layouttype: Layouttype4::LAYOUT4_NFSV4_1_FILES,
                ndc_deviceid: id,
                // The old addresses may answer no more: layouts naming the device are to be
                // used with the new ones only.
                ndc_immediate: true,
            }),
        })
        .collect();
    watch.sent.fetch_add(1, Ordering::Relaxed);
    let r = crate::callback::cb_compound(
        core,
        &session,
        vec![NfsCbArgop4::NotifyDeviceid(CbNotifyDeviceidArgs {
            cnda_changes: changes,
        })],
    )
    .await;
    match r {
        Ok(res) => {
            info!(clientid, devices = devices.len(), status = ?res.status, "CB_NOTIFY_DEVICEID answered")
        }
        Err(e) => warn!(clientid, "CB_NOTIFY_DEVICEID failed: {e}"),
    }
}
