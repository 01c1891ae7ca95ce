//! Bringing each data server into the registry and keeping it there: the task of one data
//! server ([`watch`]: connect, HELLO, REGISTER, poll HEALTH, mark down and retry with
//! backoff), and what the registry does when a data server (re-)registers (resend the
//! table of stateid changes, mark it up) or fails (mark it down).
//!
//! Apart from [`super`] (the registry's queries and pushes) because this is the one place
//! that changes a data server's up/down state.

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};

use nfs_proto::control::{ClusterKey, CtlOpCount, RegisterOk};
use nfs_proto::nfs4::layout_files::{is_rdma_netaddr, socket_addr_from_netaddr};
use nfs_proto::nfs4::Netaddr4;
use nfs_proto::rpc::AuthStat;

use super::{hex, Inner, Pushed};
use crate::pnfs::dsctl::{CtlError, DsControl, Registration};

impl Inner {
    fn set_op_counts(&self, id: u16, ops: Vec<CtlOpCount>, copy_bytes: u64) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = st.0.iter_mut().find(|e| e.status.id == id) {
            e.ops = ops;
            e.copy_bytes = copy_bytes;
        }
    }

    pub(super) fn is_up(&self, id: u16) -> bool {
        let st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.0.iter().any(|e| e.status.id == id && e.status.up)
    }

    pub(super) fn pushed(&self) -> std::sync::MutexGuard<'_, Pushed> {
        self.pushed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends the whole table of stateid changes to a data server that just registered;
    /// returns the table's version it sent.
    async fn resend(&self, ctl: &DsControl) -> Result<u64, CtlError> {
        let (version, access, revoked, closed) = self.pushed().snapshot();
        let epoch = self.keys.mds_epoch;
        ctl.set_access(epoch, &access).await?;
        ctl.revoke(epoch, &revoked, &[]).await?;
        ctl.close_counters(epoch, &closed).await?;
        Ok(version)
    }

    /// After REGISTER: resend the table, mark the data server up, and resend once more if a
    /// change was recorded meanwhile (pushes only reach data servers that are up).
    async fn bring_up(&self, id: u16, ctl: &DsControl, reg: &RegisterOk) -> Result<(), String> {
        if let Some(check) = self.store_check.get() {
            check(id, reg.store_id).await?;
        }
        let sent = self
            .resend(ctl)
            .await
            .map_err(|e| format!("{}: resending revocations: {}", ctl.peer(), describe(&e)))?;
        self.mark_up(id, ctl.clone(), reg);
        if self.pushed().version != sent {
            self.resend(ctl)
                .await
                .map_err(|e| format!("{}: resending revocations: {}", ctl.peer(), describe(&e)))?;
        }
        Ok(())
    }

    fn mark_up(&self, id: u16, ctl: DsControl, reg: &RegisterOk) {
        let boot_verifier = reg.boot_verifier;
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (entries, generation) = &mut *st;
        let Some(e) = entries.iter_mut().find(|e| e.status.id == id) else {
            return;
        };
        let was_up = e.status.up;
        e.status.up = true;
        e.status.last_error = None;
        e.status.boot_verifier = Some(boot_verifier);
        e.status.write_verifier = Some(reg.write_verifier);
        e.status.registrations += 1;
        e.ctl = Some(ctl);
        let (rdma, tcp): (Vec<Netaddr4>, Vec<Netaddr4>) = reg
            .addresses
            .iter()
            .map(|a| Netaddr4::from(a.clone()))
            .partition(is_rdma_netaddr);
        let parse = |v: Vec<Netaddr4>| -> Vec<SocketAddr> {
            v.iter()
                .filter_map(|a| socket_addr_from_netaddr(a).ok())
                .collect()
        };
        let (reported, rdma) = (parse(tcp), parse(rdma));
        let moved = !reported.is_empty() && reported != e.addresses;
        if moved {
            tracing::warn!(
                ds = id,
                was = ?e.addresses,
                now = ?reported,
                "data server answers at other addresses: its devices change (CB_NOTIFY_DEVICEID)"
            );
            e.addresses = reported;
        }
        // (Not a move: a client told RDMA addresses that no longer answer connects to the TCP
        // ones after them, and one told none goes on over TCP.)
        if rdma != e.rdma_addresses {
            tracing::info!(ds = id, rdma = ?rdma, "data server's NFS over RDMA addresses");
            e.rdma_addresses = rdma;
        }
        if moved {
            self.moved
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(id);
            self.moved_wake.notify_one();
        }
        if !was_up {
            *generation = generation.wrapping_add(1);
            tracing::info!(
                ds = id,
                generation = *generation,
                boot_verifier = %hex(&boot_verifier),
                "data server up (registered)"
            );
        } else {
            tracing::info!(ds = id, boot_verifier = %hex(&boot_verifier), "data server re-registered");
        }
    }

    pub(super) fn mark_down(&self, id: u16, why: String) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (entries, generation) = &mut *st;
        let Some(e) = entries.iter_mut().find(|e| e.status.id == id) else {
            return;
        };
        let was_up = e.status.up;
        e.status.up = false;
        e.ctl = None;
        if was_up {
            *generation = generation.wrapping_add(1);
            tracing::warn!(ds = id, generation = *generation, error = %why, "data server down");
        } else if e.status.last_error.as_deref() != Some(why.as_str()) {
            // A new reason (e.g. the first failure, or refused -> wrong secret) is worth an
            // operator's eye; the same one again every backoff is not.
            tracing::warn!(ds = id, error = %why, "data server unreachable");
        } else {
            tracing::debug!(ds = id, error = %why, "data server still down");
        }
        e.status.last_error = Some(why);
    }
}

/// Explains a failure for operators: a refused credential almost always means the two sides
/// do not share the cluster secret.
pub(super) fn describe(e: &CtlError) -> String {
    match e {
        CtlError::Denied(AuthStat::AUTH_BADCRED) => format!(
            "{e} (the data server does not accept our credential: the MDS and the data \
             server do not share the cluster secret, or another data server answers at \
             this address)"
        ),
        CtlError::Denied(AuthStat::AUTH_REJECTEDCRED) => format!(
            "{e} (the data server refused our call as made for another of its boots even \
             after we asked its boot nonce again: is it restarting over and over?)"
        ),
        CtlError::Denied(AuthStat::AUTH_REJECTEDVERF) => format!(
            "{e} (the data server finds our call stale or replayed: are the clocks of the \
             two hosts more than 5 minutes apart?)"
        ),
        CtlError::BadReply(_) => {
            format!("{e} (the data server does not hold our cluster secret)")
        }
        _ => e.to_string(),
    }
}

/// Connects and registers data server `id`: returns the connection and what it said.
async fn register(
    inner: &Inner,
    id: u16,
    key: Arc<ClusterKey>,
) -> Result<(DsControl, RegisterOk), String> {
    let addr = inner
        .cluster
        .data_server(id)
        .and_then(|d| d.control_addr())
        .ok_or_else(|| format!("cluster.data_servers[id={id}].control: no control address"))?;
    let ctl = DsControl::connect_with(&*inner.connector, addr, id, key, inner.opts.call_timeout)
        .await
        .map_err(|e| format!("{addr}: {}", describe(&e)))?
        .with_clock(inner.clock.clone())
        .with_counts(inner.calls.clone());
    let ok = ctl
        .register(&Registration {
            ds_id: id,
            lease_time: inner.lease_time,
            keys: inner.keys.clone(),
        })
        .await
        .map_err(|e| format!("{addr}: REGISTER: {}", describe(&e)))?;
    Ok((ctl, ok))
}

/// The task of one data server: register, poll, mark down and retry, until the registry
/// goes. A data server restarted behind the connection refuses the next HEALTH as made for
/// its old boot; the control client asks HELLO again and repeats it, and the changed boot
/// verifier in the answer makes this task register it again.
pub(super) async fn watch(weak: std::sync::Weak<Inner>, id: u16, key: Arc<ClusterKey>) {
    let mut backoff = match weak.upgrade() {
        Some(i) => i.opts.backoff_min,
        None => return,
    };
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let opts = inner.opts;
        match register(&inner, id, key.clone()).await {
            Err(why) => {
                inner.mark_down(id, why);
                drop(inner);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(opts.backoff_max);
                continue;
            }
            Ok((ctl, reg)) => {
                let mut verifier = reg.boot_verifier;
                if let Err(why) = inner.bring_up(id, &ctl, &reg).await {
                    inner.mark_down(id, why);
                    drop(inner);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(opts.backoff_max);
                    continue;
                }
                backoff = opts.backoff_min;
                drop(inner);
                loop {
                    tokio::time::sleep(opts.poll).await;
                    let Some(inner) = weak.upgrade() else { return };
                    let epoch = u32::from(inner.keys.mds_epoch);
                    if !inner.is_up(id) {
                        // A push of stateid changes failed and marked it down: register it
                        // again, which resends the whole table.
                        break;
                    }
                    match ctl.health().await {
                        Ok(h) if h.boot_verifier == verifier && h.mds_epoch == Some(epoch) => {
                            inner.set_op_counts(id, h.ops, h.copy_bytes);
                        }
                        Ok(_) => {
                            // Restarted behind the same connection, or registered by another
                            // MDS boot: hand it our keys again.
                            match ctl
                                .register(&Registration {
                                    ds_id: id,
                                    lease_time: inner.lease_time,
                                    keys: inner.keys.clone(),
                                })
                                .await
                            {
                                Ok(ok) => {
                                    verifier = ok.boot_verifier;
                                    if let Err(why) = inner.bring_up(id, &ctl, &ok).await {
                                        inner.mark_down(id, why);
                                        break;
                                    }
                                }
                                Err(e) => {
                                    inner.mark_down(
                                        id,
                                        format!("{}: REGISTER: {}", ctl.peer(), describe(&e)),
                                    );
                                    break;
                                }
                            }
                        }
                        Err(e) => {
                            inner
                                .mark_down(id, format!("{}: HEALTH: {}", ctl.peer(), describe(&e)));
                            break;
                        }
                    }
                }
            }
        }
    }
}
