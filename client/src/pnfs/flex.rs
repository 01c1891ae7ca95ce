//! Flex files layouts (RFC 8435) on the client: a layout of mirrors, each a whole copy of
//! the file on one data server (tightly coupled: NFSv4.1 data servers that check the
//! stateid the layout names). Writes go to every mirror at once and count only when all
//! took them; reads go to one mirror, the next one on a failure (noted for the layout's
//! return). A mirror that fails a write makes the write fail under the layout: the caller
//! returns the layout with an `ff_ioerr4` report and sends the write through the MDS, which
//! writes every good copy and marks the failed one stale (RFC 8435 section 8; the Linux
//! driver does the same).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::join_all;
use layouts::stripe::{Packing, StripeMap};
use nfs_proto::nfs4::layout_flex::{FfDeviceAddr4, FfIoerr4, FfLayout4, FfLayoutreturn4};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::to_bytes;

use super::{lock, usable_addrs, Device, Layout, Pnfs};
use crate::client::Counters;
use crate::error::{Error, Result};
use crate::io::{self, Target};

/// One mirror of a flex files layout: its data server's device, the filehandle and the
/// stateid to use there.
#[derive(Clone, Debug)]
pub(crate) struct Mirror {
    deviceid: Deviceid4,
    fh: NfsFh4,
    stateid: Stateid4,
}

/// A data server error met under a flex files layout, for its LAYOUTRETURN.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    deviceid: Deviceid4,
    status: NfsStat4,
    op: NfsOpnum4,
    offset: u64,
    length: u64,
}

/// A flex files device (`ff_device_addr4`): its one data server's addresses, if it speaks
/// NFSv4.1 or later, tightly coupled (this client has no NFSv3 data path).
pub(super) fn device(addr: &DeviceAddr4, rdma: bool) -> std::result::Result<Device, String> {
    let a = FfDeviceAddr4::from_device_addr(addr).map_err(|e| format!("device address: {e}"))?;
    let v41 = a
        .ffda_versions
        .iter()
        .any(|v| v.ffdv_version == 4 && v.ffdv_minorversion >= 1 && v.ffdv_tightly_coupled);
    if !v41 {
        return Err("a flex files device without a tightly coupled NFSv4.1 version".into());
    }
    let addrs = usable_addrs(&a.ffda_netaddrs.0, rdma);
    if addrs.is_empty() {
        return Err("a flex files device without a usable address".into());
    }
    Ok(Device {
        indices: vec![0],
        servers: vec![addrs],
    })
}

/// The body of a LAYOUTRETURN of `l`: for a flex files layout, an `ff_layoutreturn4` with
/// the errors met under it (one `ff_ioerr4` each); nothing for a file layout.
pub(super) fn return_body(l: &Layout) -> Bytes {
    if l.mirrors.is_empty() {
        return Bytes::new();
    }
    let failures = std::mem::take(&mut *lock(&l.errors));
    let stateid = l.stateid();
    to_bytes(&FfLayoutreturn4 {
        fflr_ioerr_report: failures
            .into_iter()
            .map(|f| FfIoerr4 {
                ffie_offset: f.offset,
                ffie_length: f.length,
                ffie_stateid: stateid,
                ffie_errors: vec![DeviceError4 {
                    de_deviceid: f.deviceid,
                    de_status: f.status,
                    de_opnum: f.op,
                }],
            })
            .collect(),
        fflr_iostats_report: Vec::new(),
    })
}

/// The NFS status an I/O error stands for in an error report: the data server's own, or
/// NFS4ERR_NXIO for a data server that could not be reached (as the Linux driver reports).
fn status_of(e: &Error) -> NfsStat4 {
    e.nfs_status().unwrap_or(NfsStat4::NFS4ERR_NXIO)
}

impl Pnfs {
    /// The flex files layout `l` of `ok` (whole file), its mirrors' devices looked up.
    pub(super) async fn flex_layout_of(
        &self,
        fh: &NfsFh4,
        ok: &LayoutGetResOk,
        l: &Layout4,
    ) -> Result<Arc<Layout>> {
        let body = FfLayout4::from_content(&l.lo_content)
            .map_err(|e| self.bad(&format!("layout body: {e}")))?;
        let mut mirrors = Vec::with_capacity(body.ffl_mirrors.len());
        for m in &body.ffl_mirrors {
            // Striping within a mirror (several data servers) is not done here.
            let [ds] = &m.ffm_data_servers[..] else {
                return Err(self.bad("a flex files mirror of several data servers"));
            };
            let fh = ds
                .ffds_fh_vers
                .first()
                .ok_or_else(|| self.bad("a flex files data server without a filehandle"))?;
            self.device(&ds.ffds_deviceid).await?;
            mirrors.push(Mirror {
                deviceid: ds.ffds_deviceid,
                fh: fh.clone(),
                stateid: ds.ffds_stateid,
            });
        }
        if mirrors.is_empty() {
            return Err(self.bad("a flex files layout without mirrors"));
        }
        // (Unused for flex files: each mirror holds the file at its own offsets.)
        let map = StripeMap::new(64, 1, 0, 0, Packing::Dense)
            .map_err(|e| self.bad(&format!("stripe map: {e}")))?;
        Ok(Arc::new(Layout {
            fh: fh.clone(),
            iomode: l.lo_iomode,
            stateid: Mutex::new(ok.logr_stateid),
            map,
            deviceid: mirrors[0].deviceid,
            fhs: mirrors.iter().map(|m| m.fh.clone()).collect(),
            commit_thru_mds: false,
            io: tokio::sync::RwLock::new(()),
            dead: AtomicBool::new(false),
            written_end: self.end_of(fh),
            return_on_close: ok.logr_return_on_close,
            mirrors,
            read_from: AtomicUsize::new(0),
            errors: Mutex::new(Vec::new()),
        }))
    }

    /// The session and filehandle of mirror `m`.
    async fn mirror_target(&self, m: &Mirror) -> Result<Target> {
        let dev = self.device(&m.deviceid).await?;
        let addrs = dev
            .servers
            .first()
            .ok_or_else(|| self.bad("a flex files device without a data server"))?;
        let (ep, slots) = self.server(addrs).await?;
        Ok(Target {
            ep,
            fh: m.fh.clone(),
            slots,
        })
    }

    /// Notes error `e` of mirror `i` of `l` for the layout's return.
    fn note_failure(&self, l: &Layout, i: usize, e: &Error, op: NfsOpnum4, span: (u64, u64)) {
        tracing::warn!(mirror = i, "flex files data server I/O failed: {e}");
        lock(&l.errors).push(Failure {
            deviceid: l.mirrors[i].deviceid,
            status: status_of(e),
            op,
            offset: span.0,
            length: span.1,
        });
    }

    /// Reads `ranges` from one mirror: the one that answered last, then the others in turn.
    /// A mirror that fails is noted (and the layout kept) while another answers.
    pub(super) async fn read_mirrored(
        &self,
        l: &Layout,
        ranges: &[(u64, u64)],
    ) -> Result<Vec<Bytes>> {
        let n = l.mirrors.len();
        let first = l.read_from.load(Ordering::Relaxed) % n;
        let span = span_of(ranges);
        let mut last = None;
        for k in 0..n {
            let i = (first + k) % n;
            match self.read_mirror(l, i, ranges).await {
                Ok(out) => {
                    l.read_from.store(i, Ordering::Relaxed);
                    return Ok(out);
                }
                Err(e) if e.is_state_lost() || e.is_read_at_end() || e.is_layout_gone() => {
                    return Err(e)
                }
                Err(e) => {
                    self.note_failure(l, i, &e, NfsOpnum4::OP_READ, span);
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| self.bad("a flex files layout without mirrors")))
    }

    async fn read_mirror(&self, l: &Layout, i: usize, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let m = &l.mirrors[i];
        let t = self.mirror_target(m).await?;
        let max = u64::from(t.ep.max_io());
        let mut pieces = Vec::new();
        let mut place = Vec::new();
        for (r, &(off, len)) in ranges.iter().enumerate() {
            for (o, n, k) in io::cut(off, len, max) {
                pieces.push((o, n));
                place.push((r, k));
            }
        }
        let got = io::read(&t, m.stateid, &pieces).await?;
        let pieces = place
            .into_iter()
            .zip(got)
            .map(|((r, at), p)| (r, at, p.data))
            .collect();
        Ok(self.gather(ranges, pieces))
    }

    /// Writes `pieces` to every mirror at once; what each mirror wrote is committed there
    /// (one [`crate::file::Written`] per mirror and piece, the data shared). Any mirror's
    /// failure fails the write under the layout (noted for its return).
    pub(super) async fn write_mirrored(
        &self,
        l: &Layout,
        pieces: &[(u64, Bytes)],
        stable: StableHow4,
    ) -> Result<Vec<crate::file::Written>> {
        let ranges: Vec<(u64, u64)> = pieces.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
        let span = span_of(&ranges);
        let jobs = l.mirrors.iter().map(|m| async move {
            let t = self.mirror_target(m).await?;
            let max = u64::from(t.ep.max_io());
            let mut out = Vec::new();
            for (off, data) in pieces {
                for (o, n, k) in io::cut(*off, data.len() as u64, max) {
                    out.push((o, data.slice(k..k + n as usize)));
                }
            }
            let res = io::write(&t, m.stateid, &out, stable).await?;
            Ok::<_, Error>(
                res.into_iter()
                    .zip(out)
                    .map(|(r, (offset, data))| crate::file::Written {
                        offset,
                        data,
                        verf: r.writeverf,
                        stable: r.committed,
                        target: t.clone(),
                    })
                    .collect::<Vec<_>>(),
            )
        });
        let mut all = Vec::new();
        let mut failed = None;
        for (i, r) in join_all(jobs).await.into_iter().enumerate() {
            match r {
                Ok(w) => all.extend(w),
                Err(e) if e.is_state_lost() || e.is_layout_gone() => return Err(e),
                Err(e) => {
                    self.note_failure(l, i, &e, NfsOpnum4::OP_WRITE, span);
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        l.written_end.fetch_max(span.0 + span.1, Ordering::AcqRel);
        let bytes: u64 = ranges.iter().map(|r| r.1).sum();
        self.counters(|c| Counters::add(&c.ds_bytes_written, bytes));
        Ok(all)
    }
}

/// The range from the first byte of `ranges` to their last: (offset, length).
fn span_of(ranges: &[(u64, u64)]) -> (u64, u64) {
    let start = ranges.iter().map(|r| r.0).min().unwrap_or(0);
    let end = ranges.iter().map(|r| r.0 + r.1).max().unwrap_or(start);
    (start, end - start)
}
