//! pNFS file layouts (RFC 8881 chapter 13) and flex files layouts (RFC 8435, [`flex`]) on
//! the client: LAYOUTGET per open file, a device cache (GETDEVICEINFO once per device,
//! dropped on CB_NOTIFY_DEVICEID), one session per data server, striped READ/WRITE issued
//! to all data servers of a file in parallel with a bound on RPCs in flight per data server
//! (flex files: every mirror written, any one read), LAYOUTCOMMIT, LAYOUTRETURN on close and
//! on CB_LAYOUTRECALL, and the fall-back to I/O through the MDS when a data server fails (the
//! layout is returned, with the errors under a flex files layout, and asked for again after
//! a pause).
//!
//! The layout type is the server's: flex files when the root file system lists it in
//! `fs_layout_types` (as the Linux client prefers it), else file layouts.
//!
//! I/O under a layout holds the layout's read guard; a recall takes the write guard, so the
//! LAYOUTRETURN waits for I/O in flight and no new I/O starts on the recalled layout (RFC
//! 8881 section 12.5.5.1).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::join_all;
use layouts::stripe::{Packing, StripeMap};
use nfs_proto::nfs4::layout_files::{
    socket_addr_from_netaddr, Nfsv41FileLayout4, Nfsv41FileLayoutDsAddr4,
};
use nfs_proto::nfs4::*;
use nfs_proto::xdr::Discriminant;
use tokio::sync::{watch, Semaphore};

use crate::client::{ClientOptions, Counters, Inner};
use crate::error::{Error, Result};
use crate::io::{self, Target};
use crate::ops::putfh;
use crate::session::{Endpoint, EndpointConfig, Role};

mod flex;
use flex::Mirror;

/// How long a file does its I/O through the MDS after its layout failed or was refused for
/// now (NFS4ERR_LAYOUTTRYLATER and friends) before asking again.
const RETRY_LAYOUT_AFTER: Duration = Duration::from_secs(5);

/// Longest a LAYOUTGET waits for this client's return of a recalled layout of the file.
const RETURN_WAIT: Duration = Duration::from_secs(10);

/// A data server device: for each stripe index, the addresses of its data server
/// (several addresses of one server are trunks; the first that answers is used).
#[derive(Debug)]
struct Device {
    indices: Vec<u32>,
    /// Each data server's addresses to try, in order, and whether each is an RDMA one.
    servers: Vec<Vec<(SocketAddr, bool)>>,
}

/// The addresses of one data server (a multipath list) this client may use, in the order to
/// try them, each with whether it is an RPC-over-RDMA address: over RDMA, the `rdma` and
/// `rdma6` entries first, then the `tcp` and `tcp6` ones (a fall-back); over TCP the `tcp` and
/// `tcp6` entries only. Other netids and entries that do not parse are left out.
fn usable_addrs(list: &[Netaddr4], rdma: bool) -> Vec<(SocketAddr, bool)> {
    let of = |want_rdma: bool| {
        list.iter().filter_map(move |na| {
            let is_rdma = match na.na_r_netid.as_str()? {
                "tcp" | "tcp6" => false,
                "rdma" | "rdma6" => true,
                _ => return None,
            };
            if is_rdma != want_rdma {
                return None;
            }
            socket_addr_from_netaddr(na).ok().map(|a| (a, is_rdma))
        })
    };
    let mut out: Vec<(SocketAddr, bool)> = Vec::new();
    if rdma {
        out.extend(of(true));
    }
    out.extend(of(false));
    out
}

impl Device {
    fn addrs_of(&self, stripe_index: u32) -> Option<&Vec<(SocketAddr, bool)>> {
        let ds = *self.indices.get(stripe_index as usize)?;
        self.servers.get(ds as usize)
    }
}

/// The current stateid (RFC 8881 section 16.2.3.1.2): the stateid the previous operation of
/// the COMPOUND made or used.
pub(crate) const CURRENT_STATEID: Stateid4 = Stateid4 {
    seqid: 1,
    other: [0; 12],
};

/// LAYOUTGET of a whole-file layout of type `ty` under `stateid` (an open's, or the
/// current stateid after an OPEN in the same COMPOUND).
pub(crate) fn layoutget_op(stateid: Stateid4, iomode: Layoutiomode4, ty: Layouttype4) -> NfsArgop4 {
    NfsArgop4::LayoutGet(LayoutGetArgs {
        loga_signal_layout_avail: false,
        loga_layout_type: ty,
        loga_iomode: iomode,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 0,
        loga_stateid: stateid,
        loga_maxcount: 16 << 10,
    })
}

/// A file layout held by the client.
pub(crate) struct Layout {
    fh: NfsFh4,
    iomode: Layoutiomode4,
    stateid: Mutex<Stateid4>,
    map: StripeMap,
    deviceid: Deviceid4,
    fhs: Vec<NfsFh4>,
    commit_thru_mds: bool,
    /// I/O holds read guards; a return takes the write guard.
    io: tokio::sync::RwLock<()>,
    /// Recalled or failed: no new I/O under it.
    dead: AtomicBool,
    /// Highest byte written through the data servers + 1, since the last LAYOUTCOMMIT: the
    /// file's, shared by every layout of it the client holds while it is open
    /// ([`Pnfs::end_of`]).
    written_end: Arc<AtomicU64>,
    /// The server returns it when the file's last open is CLOSEd (`logr_return_on_close`,
    /// RFC 8881 section 18.43.3): no LAYOUTRETURN before that CLOSE.
    return_on_close: bool,
    /// A flex files layout's mirrors (empty for a file layout): each a whole copy of the
    /// file on one data server.
    mirrors: Vec<Mirror>,
    /// Flex files: the mirror reads start at (the last one that answered).
    read_from: std::sync::atomic::AtomicUsize,
    /// Flex files: data server errors met under the layout, for its LAYOUTRETURN.
    errors: Mutex<Vec<flex::Failure>>,
}

impl Layout {
    /// The filehandle to send to the data server of stripe index `j` (RFC 8881 section
    /// 13.3: dense packing has one per index; sparse one, or one per data server).
    fn fh_for(&self, j: u32, dev: &Device) -> NfsFh4 {
        match self.fhs.len() {
            0 => self.fh.clone(),
            1 => self.fhs[0].clone(),
            n if n == self.map.count as usize => self.fhs[j as usize].clone(),
            n => {
                let ds = dev.indices.get(j as usize).copied().unwrap_or(0) as usize;
                self.fhs[ds.min(n - 1)].clone()
            }
        }
    }

    fn stateid(&self) -> Stateid4 {
        *self.stateid.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn layout_type(&self) -> Layouttype4 {
        if self.mirrors.is_empty() {
            Layouttype4::LAYOUT4_NFSV4_1_FILES
        } else {
            Layouttype4::LAYOUT4_FLEX_FILES
        }
    }
}

/// The pNFS side of a client.
pub(crate) struct Pnfs {
    mds: Arc<Endpoint>,
    /// The layout type asked for: flex files if the server lists it, else files.
    layout_type: Layouttype4,
    client: Weak<Inner>,
    ds_cfg: EndpointConfig,
    in_flight: usize,
    mds_slots: Arc<Semaphore>,
    devices: Mutex<HashMap<Deviceid4, Arc<Device>>>,
    /// Data server sessions by the first address of their multipath list.
    servers: tokio::sync::Mutex<HashMap<SocketAddr, DsSession>>,
    layouts: Mutex<HashMap<NfsFh4, Arc<Layout>>>,
    /// Per open file, the end of what its layouts wrote and no LAYOUTCOMMIT reported yet
    /// ([`Pnfs::end_of`]).
    ends: Mutex<HashMap<NfsFh4, Arc<AtomicU64>>>,
    /// Files to do through the MDS until the instant (a layout failed or was refused).
    not_before: Mutex<HashMap<NfsFh4, Instant>>,
    /// Files whose recalled layout is being returned: true once it is.
    returning: Mutex<HashMap<NfsFh4, watch::Receiver<bool>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A data server's session and the bound on RPCs in flight to it.
type DsSession = (Arc<Endpoint>, Arc<Semaphore>);

/// Pieces of one data server's share of a request: (index in the request's output,
/// offset in the output buffer, object offset, length).
type Share = Vec<(usize, usize, u64, u64)>;

impl Pnfs {
    pub(crate) fn new(
        mds: Arc<Endpoint>,
        layout_type: Layouttype4,
        opts: &ClientOptions,
        owner: Bytes,
        client: Weak<Inner>,
    ) -> Arc<Pnfs> {
        let ds_cfg = EndpointConfig {
            addr: mds.addr(),
            owner,
            verifier: crate::client::unique().to_be_bytes(),
            cred: opts.credentials.to_auth(),
            role: Role::Ds,
            slots: opts.slots,
            max_message: opts.io_size.saturating_add(64 << 10),
            rpc_timeout: opts.rpc_timeout.min(Duration::from_secs(30)),
            // A data server that stays away this long sends the I/O through the MDS.
            retry_limit: Duration::from_secs(5),
            transport: crate::rpc::Transport::of(opts, opts.io_size.saturating_add(64 << 10)),
        };
        Arc::new(Pnfs {
            mds,
            layout_type,
            client,
            ds_cfg,
            in_flight: opts.ds_in_flight.max(1),
            mds_slots: Arc::new(Semaphore::new(opts.ds_in_flight.max(1))),
            devices: Mutex::new(HashMap::new()),
            servers: tokio::sync::Mutex::new(HashMap::new()),
            layouts: Mutex::new(HashMap::new()),
            ends: Mutex::new(HashMap::new()),
            not_before: Mutex::new(HashMap::new()),
            returning: Mutex::new(HashMap::new()),
        })
    }

    /// The layout type this client asks for.
    pub(crate) fn layout_type(&self) -> Layouttype4 {
        self.layout_type
    }

    fn counters(&self, f: impl FnOnce(&Counters)) {
        if let Some(c) = self.client.upgrade() {
            f(&c.counters);
        }
    }

    /// The layout of `fh` good for `iomode`: the cached one, or a new LAYOUTGET under the
    /// open stateid. `None` means: do this I/O through the MDS.
    async fn layout(
        &self,
        fh: &NfsFh4,
        open: Stateid4,
        iomode: Layoutiomode4,
    ) -> Option<Arc<Layout>> {
        if let Some(l) = lock(&self.layouts).get(fh) {
            let fits = l.iomode == Layoutiomode4::LAYOUTIOMODE4_RW || iomode == l.iomode;
            if fits && !l.dead.load(Ordering::Acquire) {
                return Some(l.clone());
            }
        }
        if lock(&self.not_before)
            .get(fh)
            .is_some_and(|t| Instant::now() < *t)
        {
            return None;
        }
        // A recalled layout of the file still on its way back: the server would refuse a new
        // one until it is in (RECALLCONFLICT), and the I/O would go through the MDS. Wait
        // for the return first, as the Linux client does.
        let returning = lock(&self.returning).get(fh).cloned();
        if let Some(mut done) = returning {
            let _ = tokio::time::timeout(RETURN_WAIT, done.wait_for(|d| *d)).await;
        }
        let got = match self
            .mds
            .compound(vec![
                putfh(fh),
                layoutget_op(open, iomode, self.layout_type),
            ])
            .await
            .and_then(|r| r.ok())
        {
            Ok(results) => match results.last() {
                Some(NfsResop4::LayoutGet(LayoutGetRes::Ok(ok))) => {
                    self.adopt(fh, ok.clone()).await
                }
                _ => Err(self.bad("no LAYOUTGET result")),
            },
            Err(e) => Err(e),
        };
        match got {
            Ok(l) => Some(l),
            Err(e) => {
                self.refused(fh, &e);
                None
            }
        }
    }

    /// A LAYOUTGET failed with `e`: the I/O of `fh` goes through the MDS for a while.
    /// Unavailable for this file (RFC 8881 section 15.1.10.4): stop asking for a long
    /// while; anything else (TRYLATER, RECALLCONFLICT, a data server down) may pass soon.
    pub(crate) fn refused(&self, fh: &NfsFh4, e: &Error) {
        tracing::debug!("no layout, I/O through the MDS: {e}");
        let pause = match e.nfs_status() {
            Some(NfsStat4::NFS4ERR_LAYOUTUNAVAILABLE | NfsStat4::NFS4ERR_UNKNOWN_LAYOUTTYPE) => {
                Duration::from_secs(3600)
            }
            _ => RETRY_LAYOUT_AFTER,
        };
        lock(&self.not_before).insert(fh.clone(), Instant::now() + pause);
    }

    /// Takes the layout a LAYOUTGET of `fh` granted into use (the first I/O finds it).
    pub(crate) async fn adopt(&self, fh: &NfsFh4, ok: LayoutGetResOk) -> Result<Arc<Layout>> {
        let l = self.layout_of(fh, ok).await?;
        self.counters(|c| Counters::add(&c.layouts, 1));
        lock(&self.layouts).insert(fh.clone(), l.clone());
        Ok(l)
    }

    /// The layout `ok` grants, its device looked up (GETDEVICEINFO when not cached).
    async fn layout_of(&self, fh: &NfsFh4, ok: LayoutGetResOk) -> Result<Arc<Layout>> {
        // Whole-file layouts only (as the Linux driver): anything else goes through the MDS.
        let l = ok
            .logr_layout
            .iter()
            .find(|l| l.lo_offset == 0 && l.lo_length == u64::MAX)
            .ok_or_else(|| self.bad("a layout that does not cover the whole file"))?;
        if l.lo_content.loc_type == Layouttype4::LAYOUT4_FLEX_FILES {
            return self.flex_layout_of(fh, &ok, l).await;
        }
        let body = Nfsv41FileLayout4::from_content(&l.lo_content)
            .map_err(|e| self.bad(&format!("layout body: {e}")))?;
        let packing = if body.is_dense() {
            Packing::Dense
        } else {
            Packing::Sparse
        };
        let commit_thru_mds = body.commit_thru_mds();
        let dev = self.device(&body.nfl_deviceid).await?;
        let count = dev.indices.len() as u32;
        let map = StripeMap::new(
            body.stripe_unit(),
            count,
            body.nfl_first_stripe_index,
            body.nfl_pattern_offset,
            packing,
        )
        .map_err(|e| self.bad(&format!("stripe map: {e}")))?;
        if packing == Packing::Dense && body.nfl_fh_list.len() != count as usize {
            return Err(self.bad("dense layout without one filehandle per stripe index"));
        }
        let layout = Arc::new(Layout {
            fh: fh.clone(),
            iomode: l.lo_iomode,
            stateid: Mutex::new(ok.logr_stateid),
            map,
            deviceid: body.nfl_deviceid,
            fhs: body.nfl_fh_list,
            commit_thru_mds,
            io: tokio::sync::RwLock::new(()),
            dead: AtomicBool::new(false),
            written_end: self.end_of(fh),
            return_on_close: ok.logr_return_on_close,
            mirrors: Vec::new(),
            read_from: Default::default(),
            errors: Mutex::new(Vec::new()),
        });
        Ok(layout)
    }

    fn bad(&self, what: &str) -> Error {
        Error::Protocol {
            addr: self.mds.addr(),
            what: what.to_string(),
        }
    }

    /// The device, from the cache or GETDEVICEINFO (asking for change and delete
    /// notifications, so the cache stays right: RFC 8881 section 20.12).
    async fn device(&self, id: &Deviceid4) -> Result<Arc<Device>> {
        if let Some(d) = lock(&self.devices).get(id) {
            return Ok(d.clone());
        }
        let results = self
            .mds
            .compound(vec![NfsArgop4::GetDeviceInfo(GetDeviceInfoArgs {
                gdia_device_id: *id,
                gdia_layout_type: self.layout_type,
                gdia_maxcount: 64 << 10,
                gdia_notify_types: Bitmap4::from_bits([
                    NotifyDeviceidType4::NOTIFY_DEVICEID4_CHANGE.to_u32(),
                    NotifyDeviceidType4::NOTIFY_DEVICEID4_DELETE.to_u32(),
                ]),
            })])
            .await?
            .ok()?;
        let ok = match results.last() {
            Some(NfsResop4::GetDeviceInfo(GetDeviceInfoRes::Ok(ok))) => ok.clone(),
            _ => return Err(self.bad("no GETDEVICEINFO result")),
        };
        let rdma = self.ds_cfg.transport.is_rdma();
        if self.layout_type == Layouttype4::LAYOUT4_FLEX_FILES {
            let dev = Arc::new(flex::device(&ok.gdir_device_addr, rdma).map_err(|e| self.bad(&e))?);
            lock(&self.devices).insert(*id, dev.clone());
            return Ok(dev);
        }
        let addr = Nfsv41FileLayoutDsAddr4::from_device_addr(&ok.gdir_device_addr)
            .map_err(|e| self.bad(&format!("device address: {e}")))?;
        let servers: Vec<Vec<(SocketAddr, bool)>> = addr
            .nflda_multipath_ds_list
            .iter()
            .map(|m| usable_addrs(&m.0, rdma))
            .collect();
        if servers.iter().any(Vec::is_empty)
            || addr.nflda_stripe_indices.is_empty()
            || addr
                .nflda_stripe_indices
                .iter()
                .any(|&i| i as usize >= servers.len())
        {
            return Err(self.bad("a device with a stripe index naming no usable data server"));
        }
        let dev = Arc::new(Device {
            indices: addr.nflda_stripe_indices,
            servers,
        });
        lock(&self.devices).insert(*id, dev.clone());
        Ok(dev)
    }

    /// The session with the data server at `addrs` (the first address that answers).
    async fn server(&self, addrs: &[(SocketAddr, bool)]) -> Result<DsSession> {
        let key = addrs[0].0;
        let mut servers = self.servers.lock().await;
        if let Some(s) = servers.get(&key) {
            return Ok(s.clone());
        }
        let mut last = None;
        for &(a, is_rdma) in addrs {
            let cfg = EndpointConfig {
                addr: a,
                transport: if is_rdma {
                    self.ds_cfg.transport.clone()
                } else {
                    crate::rpc::Transport::Tcp
                },
                ..self.ds_cfg.clone()
            };
            match Endpoint::connect(cfg, None).await {
                Ok(ep) => {
                    let entry = (ep, Arc::new(Semaphore::new(self.in_flight)));
                    servers.insert(key, entry.clone());
                    return Ok(entry);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| self.bad("a data server without addresses")))
    }

    /// The target (session, filehandle) of stripe index `j`.
    async fn target(&self, l: &Layout, dev: &Device, j: u32) -> Result<Target> {
        let addrs = dev
            .addrs_of(j)
            .ok_or_else(|| self.bad("stripe index outside the device"))?;
        let (ep, slots) = self.server(addrs).await?;
        Ok(Target {
            ep,
            fh: l.fh_for(j, dev),
            slots,
        })
    }

    /// Splits file ranges into per-stripe-index shares.
    fn plan(&self, l: &Layout, ranges: &[(u64, u64)]) -> Result<HashMap<u32, Share>> {
        let mut shares: HashMap<u32, Share> = HashMap::new();
        for (i, &(off, len)) in ranges.iter().enumerate() {
            let extents = l
                .map
                .extents(off, len)
                .map_err(|e| self.bad(&format!("striping: {e}")))?;
            for e in extents {
                shares.entry(e.index).or_default().push((
                    i,
                    (e.file_offset - off) as usize,
                    e.object_offset,
                    e.len,
                ));
            }
        }
        Ok(shares)
    }

    /// Reads `ranges` of the file through its layout. `Ok(None)`: no usable layout, read
    /// through the MDS. Short object data (holes, data past an object's end) reads as zeros;
    /// the caller clamps to the file size.
    pub(crate) async fn read(
        &self,
        fh: &NfsFh4,
        open: Stateid4,
        ranges: &[(u64, u64)],
    ) -> Result<Option<Vec<Bytes>>> {
        let Some(l) = self
            .layout(fh, open, Layoutiomode4::LAYOUTIOMODE4_READ)
            .await
        else {
            return Ok(None);
        };
        let Ok(_guard) = l.io.try_read() else {
            return Ok(None); // being returned
        };
        let got = if l.mirrors.is_empty() {
            self.read_under(&l, open, ranges).await
        } else {
            self.read_mirrored(&l, ranges).await
        };
        match got {
            Ok(out) => Ok(Some(out)),
            Err(e) if e.is_state_lost() => Err(e),
            // The file's end is the MDS's to tell: this read through the MDS, the layout kept.
            Err(e) if e.is_read_at_end() => {
                self.counters(|c| Counters::add(&c.reads_at_end, 1));
                Ok(None)
            }
            Err(e) => {
                drop(_guard);
                self.failed(&l, &e).await;
                Ok(None)
            }
        }
    }

    async fn read_under(
        &self,
        l: &Layout,
        open: Stateid4,
        ranges: &[(u64, u64)],
    ) -> Result<Vec<Bytes>> {
        let dev = self.device(&l.deviceid).await?;
        let shares = self.plan(l, ranges)?;
        let jobs = shares.into_iter().map(|(j, share)| {
            let dev = dev.clone();
            async move {
                let t = self.target(l, &dev, j).await?;
                let max = u64::from(t.ep.max_io());
                let mut pieces = Vec::new();
                let mut place = Vec::new();
                for (i, at, obj, len) in share {
                    for (off, n, k) in io::cut(obj, len, max) {
                        pieces.push((off, n));
                        place.push((i, at + k));
                    }
                }
                let got = io::read(&t, open, &pieces).await?;
                Ok::<_, Error>((place, got))
            }
        });
        let mut pieces = Vec::new();
        for r in join_all(jobs).await {
            let (place, got) = r?;
            pieces.extend(
                place
                    .into_iter()
                    .zip(got)
                    .map(|((i, at), p)| (i, at, p.data)),
            );
        }
        Ok(self.gather(ranges, pieces))
    }

    /// The bytes of each of `ranges` from the pieces read from data servers for them, each
    /// (range index, where in the range, data), holes read as zeros; the bytes are counted.
    fn gather(&self, ranges: &[(u64, u64)], pieces: Vec<(usize, usize, Bytes)>) -> Vec<Bytes> {
        let mut parts: Vec<Vec<(usize, Bytes)>> = vec![Vec::new(); ranges.len()];
        let mut total = 0u64;
        for (i, at, data) in pieces {
            total += data.len() as u64;
            if let Some(p) = parts.get_mut(i) {
                p.push((at, data));
            }
        }
        self.counters(|c| Counters::add(&c.ds_bytes_read, total));
        ranges
            .iter()
            .zip(parts)
            .map(|(&(_, len), p)| io::assemble(len as usize, p))
            .collect()
    }

    /// Writes `pieces` (file offset, data) UNSTABLE through the file's RW layout. Returns,
    /// per piece split at stripe boundaries, what to COMMIT where; `Ok(None)`: no usable
    /// layout, write through the MDS.
    pub(crate) async fn write(
        &self,
        fh: &NfsFh4,
        open: Stateid4,
        pieces: &[(u64, Bytes)],
        stable: StableHow4,
    ) -> Result<Option<Vec<crate::file::Written>>> {
        let Some(l) = self.layout(fh, open, Layoutiomode4::LAYOUTIOMODE4_RW).await else {
            return Ok(None);
        };
        let Ok(guard) = l.io.try_read() else {
            return Ok(None);
        };
        let got = if l.mirrors.is_empty() {
            self.write_under(&l, open, pieces, stable).await
        } else {
            self.write_mirrored(&l, pieces, stable).await
        };
        match got {
            Ok(out) => Ok(Some(out)),
            Err(e) if e.is_state_lost() => Err(e),
            Err(e) => {
                drop(guard);
                self.failed(&l, &e).await;
                Ok(None)
            }
        }
    }

    async fn write_under(
        &self,
        l: &Layout,
        open: Stateid4,
        pieces: &[(u64, Bytes)],
        stable: StableHow4,
    ) -> Result<Vec<crate::file::Written>> {
        let dev = self.device(&l.deviceid).await?;
        let ranges: Vec<(u64, u64)> = pieces.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
        let shares = self.plan(l, &ranges)?;
        let mds_target = Target {
            ep: self.mds.clone(),
            fh: l.fh.clone(),
            slots: self.mds_slots.clone(),
        };
        let jobs = shares.into_iter().map(|(j, share)| {
            let dev = dev.clone();
            let mds_target = mds_target.clone();
            async move {
                let t = self.target(l, &dev, j).await?;
                let max = u64::from(t.ep.max_io());
                let mut out_pieces = Vec::new();
                let mut file_offsets = Vec::new();
                for (i, at, obj, len) in share {
                    let (foff, data) = &pieces[i];
                    for (off, n, k) in io::cut(obj, len, max) {
                        let from = at + k;
                        out_pieces.push((off, data.slice(from..from + n as usize)));
                        file_offsets.push(foff + from as u64);
                    }
                }
                let res = io::write(&t, open, &out_pieces, stable).await?;
                let commit_to = if l.commit_thru_mds { mds_target } else { t };
                let written: Vec<crate::file::Written> = res
                    .into_iter()
                    .zip(out_pieces)
                    .zip(file_offsets)
                    .map(|((r, (_, data)), offset)| crate::file::Written {
                        offset,
                        data,
                        verf: r.writeverf,
                        stable: r.committed,
                        target: commit_to.clone(),
                    })
                    .collect();
                Ok::<_, Error>(written)
            }
        });
        let mut all = Vec::new();
        for r in join_all(jobs).await {
            all.extend(r?);
        }
        let bytes: u64 = all.iter().map(|w| w.data.len() as u64).sum();
        let end = all
            .iter()
            .map(|w| w.offset + w.data.len() as u64)
            .max()
            .unwrap_or(0);
        l.written_end.fetch_max(end, Ordering::AcqRel);
        self.counters(|c| Counters::add(&c.ds_bytes_written, bytes));
        Ok(all)
    }

    /// A data server failed under `l`: return the layout (so the MDS knows) and do the
    /// file's I/O through the MDS for a while. A layout the data server says is gone
    /// (NFS4ERR_PNFS_NO_LAYOUT) is only dropped: this I/O goes through the MDS, the next
    /// asks for a new layout at once.
    async fn failed(&self, l: &Arc<Layout>, e: &Error) {
        if e.is_layout_gone() {
            tracing::info!("data server: the layout is gone ({e}); asking for a new one");
            self.withdraw(l);
            return;
        }
        tracing::warn!("data server I/O failed, falling back to the MDS: {e}");
        self.counters(|c| Counters::add(&c.fallbacks, 1));
        lock(&self.not_before).insert(l.fh.clone(), Instant::now() + RETRY_LAYOUT_AFTER);
        // A session to a dead data server is dropped; the next layout reconnects.
        if let Some(bad) = error_addr(e) {
            self.servers
                .lock()
                .await
                .retain(|k, (ep, _)| *k != bad && ep.addr() != bad);
        }
        self.retire(l, false).await;
    }

    /// Takes `l` out of use and returns it (after I/O under it is done); `closing`: a CLOSE
    /// of the file's last open follows, which returns a return-on-close layout itself.
    async fn retire(&self, l: &Arc<Layout>, closing: bool) {
        self.withdraw(l);
        let _w = l.io.write().await;
        // The size written through it goes to the MDS before the layout does (a server
        // that does not ask its data servers would not learn it otherwise).
        if let Err(e) = self.layoutcommit_of(l).await {
            tracing::debug!("LAYOUTCOMMIT before returning a layout: {e}");
        }
        if !(closing && l.return_on_close) {
            let _ = self.layoutreturn(l).await;
        }
    }

    /// Marks `l` dead (no new I/O under it) and takes it out of the table, unless a newer
    /// layout of the file replaced it there.
    fn withdraw(&self, l: &Arc<Layout>) {
        l.dead.store(true, Ordering::Release);
        let mut m = lock(&self.layouts);
        if m.get(&l.fh).is_some_and(|x| Arc::ptr_eq(x, l)) {
            m.remove(&l.fh);
        }
    }

    async fn layoutreturn(&self, l: &Layout) -> Result<()> {
        let r = self
            .mds
            .compound(vec![
                putfh(&l.fh),
                NfsArgop4::LayoutReturn(LayoutReturnArgs {
                    lora_reclaim: false,
                    lora_layout_type: l.layout_type(),
                    lora_iomode: Layoutiomode4::LAYOUTIOMODE4_ANY,
                    lora_layoutreturn: Layoutreturn4::File(LayoutreturnFile4 {
                        lrf_offset: 0,
                        lrf_length: u64::MAX,
                        lrf_stateid: l.stateid(),
                        lrf_body: flex::return_body(l),
                    }),
                }),
            ])
            .await?;
        match r.status {
            NfsStat4::NFS4_OK | NfsStat4::NFS4ERR_NOMATCHING_LAYOUT => Ok(()),
            s => Err(crate::session::nfs_err(NfsOpnum4::OP_LAYOUTRETURN, s)),
        }
    }

    /// The end of what this client wrote to `fh` through the data servers and has not
    /// LAYOUTCOMMITted yet (0: nothing). A GETATTR's size leaves these writes out (the MDS
    /// shows each client the size its own writes reached at its last LAYOUTCOMMIT: the Linux
    /// client LAYOUTCOMMITs before it asks), so they are counted into it here.
    pub(crate) fn unreported_end(&self, fh: &NfsFh4) -> u64 {
        lock(&self.ends)
            .get(fh)
            .map_or(0, |e| e.load(Ordering::Acquire))
    }

    /// The unreported end of `fh`, shared by all its layouts from the first LAYOUTGET to
    /// the CLOSE of its last open ([`Pnfs::closing`]). Kept per file rather than per
    /// layout, because a layout can leave the table with writes no LAYOUTCOMMIT reported:
    /// replaced by another (two sends that asked for one at once), or dropped when a data
    /// server said it is gone. A LAYOUTCOMMIT under whichever layout comes next reports
    /// them, where a per-layout end was lost with its layout, and the MDS kept the size
    /// its last LAYOUTCOMMIT gave (a file read back short until the MDS settled it).
    fn end_of(&self, fh: &NfsFh4) -> Arc<AtomicU64> {
        lock(&self.ends).entry(fh.clone()).or_default().clone()
    }

    /// `fh` is being truncated (or extended) to `size` by a SETATTR: what this client wrote
    /// through its layout past `size` goes, so its unreported end stops there. Returns the
    /// end before, for [`Pnfs::not_truncated`] if the SETATTR fails.
    pub(crate) fn truncated(&self, fh: &NfsFh4, size: u64) -> u64 {
        lock(&self.ends)
            .get(fh)
            .map_or(0, |e| e.fetch_min(size, Ordering::AcqRel))
    }

    /// The SETATTR of [`Pnfs::truncated`] failed: the unreported end is `end` again (or
    /// what writes since made it, if larger).
    pub(crate) fn not_truncated(&self, fh: &NfsFh4, end: u64) {
        if let Some(e) = lock(&self.ends).get(fh) {
            e.fetch_max(end, Ordering::AcqRel);
        }
    }

    /// LAYOUTCOMMIT of `fh` when data went to the data servers since the last one: the MDS
    /// learns the new size and mtime (RFC 8881 section 18.42). Call after COMMIT.
    pub(crate) async fn layoutcommit(&self, fh: &NfsFh4) -> Result<()> {
        let Some(l) = lock(&self.layouts).get(fh).cloned() else {
            return Ok(());
        };
        self.layoutcommit_of(&l).await
    }

    /// LAYOUTCOMMIT under `l` of what was written through it since the last one.
    async fn layoutcommit_of(&self, l: &Layout) -> Result<()> {
        let Some(commit) = Unreported::take(l) else {
            return Ok(());
        };
        let r = self.mds.compound(vec![putfh(&l.fh), commit.op(l)]).await?;
        if r.status != NfsStat4::NFS4_OK {
            commit.failed(l);
            return Err(crate::session::nfs_err(
                NfsOpnum4::OP_LAYOUTCOMMIT,
                r.status,
            ));
        }
        Ok(())
    }

    /// The file's last open is about to be CLOSEd: take its layout out of use (a
    /// return-on-close layout goes back with the CLOSE).
    pub(crate) async fn close(&self, fh: &NfsFh4) {
        if let Some(l) = self.closing(fh) {
            self.retire(&l, true).await;
        }
    }

    /// The layout of `fh`, whose last open is about to be CLOSEd (and the file's wait for a
    /// new layout and its unreported end forgotten: the layout, if any, carries the end to
    /// its last LAYOUTCOMMIT; without one the MDS learns the size from the data servers).
    fn closing(&self, fh: &NfsFh4) -> Option<Arc<Layout>> {
        let l = lock(&self.layouts).get(fh).cloned();
        lock(&self.not_before).remove(fh);
        lock(&self.ends).remove(fh);
        l
    }

    /// As [`Pnfs::close`], for a CLOSE in a COMPOUND of the caller's that also gives back a
    /// delegation: a return-on-close layout's LAYOUTCOMMIT is handed back to go in that
    /// COMPOUND (after the file's PUTFH, before the CLOSE) instead of a round trip of its
    /// own. A file written under a write delegation is LAYOUTCOMMITted only here
    /// ([`crate::File::close`] leaves it to the delegation's return); when the return goes
    /// with the file's REMOVE the caller drops the LAYOUTCOMMIT, so a small file created,
    /// written and removed costs the MDS none. `None`: nothing to fold (nothing
    /// unreported, or a layout that is not returned by the CLOSE, which [`Pnfs::close`]
    /// handled).
    pub(crate) async fn close_folding(&self, fh: &NfsFh4) -> Option<NfsArgop4> {
        let l = self.closing(fh)?;
        if !l.return_on_close {
            self.retire(&l, true).await;
            return None;
        }
        self.withdraw(&l);
        let _w = l.io.write().await;
        // (Out of the table now: if the COMPOUND does not get through the LAYOUTCOMMIT, the
        // MDS learns the size from the data servers, as for any layout returned without one.)
        Unreported::take(&l).map(|u| u.op(&l))
    }

    /// CB_LAYOUTRECALL: returns the recalled layouts once their I/O is done.
    pub(crate) fn recall(self: &Arc<Self>, args: &CbLayoutRecallArgs) -> NfsStat4 {
        let recalled: Vec<Arc<Layout>> = {
            let m = lock(&self.layouts);
            match &args.clora_recall {
                Layoutrecall4::File(f) => m.get(&f.lor_fh).cloned().into_iter().collect(),
                Layoutrecall4::Fsid(_) | Layoutrecall4::All => m.values().cloned().collect(),
            }
        };
        if recalled.is_empty() {
            return NfsStat4::NFS4ERR_NOMATCHING_LAYOUT;
        }
        let mut returned = Vec::with_capacity(recalled.len());
        for l in &recalled {
            l.dead.store(true, Ordering::Release);
            let (tx, rx) = watch::channel(false);
            lock(&self.returning).insert(l.fh.clone(), rx);
            returned.push(tx);
        }
        let me = self.clone();
        tokio::spawn(async move {
            for (l, done) in recalled.into_iter().zip(returned) {
                me.retire(&l, false).await;
                let _ = done.send(true);
                let mut r = lock(&me.returning);
                if r.get(&l.fh).is_some_and(|rx| *rx.borrow()) {
                    r.remove(&l.fh);
                }
            }
        });
        NfsStat4::NFS4_OK
    }

    /// CB_NOTIFY_DEVICEID: drop the cached devices; layouts look them up again.
    pub(crate) fn device_changed(&self, _args: &CbNotifyDeviceidArgs) {
        lock(&self.devices).clear();
        // Sessions to data servers that moved are replaced when their device is re-read.
        if let Ok(mut s) = self.servers.try_lock() {
            s.clear();
        }
    }

    /// The stateids of the layouts held, by file (to TEST_STATEID them when the server says
    /// some recallable state was revoked).
    pub(crate) fn layout_stateids(&self) -> Vec<(NfsFh4, Stateid4)> {
        lock(&self.layouts)
            .values()
            .map(|l| (l.fh.clone(), l.stateid()))
            .collect()
    }

    /// The server revoked the layout of `fh`: forget it without returning it (its I/O goes
    /// through the MDS until a new LAYOUTGET succeeds).
    pub(crate) fn forget_layout(&self, fh: &NfsFh4) {
        if let Some(l) = lock(&self.layouts).remove(fh) {
            l.dead.store(true, Ordering::Release);
        }
    }

    /// A data server answered NFS4ERR_PNFS_NO_LAYOUT through `ds_fh` (the layout it was
    /// handed out under is gone on the server: returned, recalled, revoked, or of an earlier
    /// MDS boot): forget the cached layout of `fh` if that handle is one of its, so the next
    /// I/O asks for a new one.
    pub(crate) fn layout_gone(&self, fh: &NfsFh4, ds_fh: &NfsFh4) {
        let mut m = lock(&self.layouts);
        if m.get(fh).is_some_and(|l| l.fhs.contains(ds_fh)) {
            if let Some(l) = m.remove(fh) {
                l.dead.store(true, Ordering::Release);
            }
        }
    }

    /// The MDS lost our state (restart): every layout is gone with it.
    pub(crate) fn forget_layouts(&self) {
        lock(&self.layouts).clear();
        lock(&self.not_before).clear();
    }

    /// Ends the data server sessions.
    pub(crate) async fn shutdown(&self) {
        let servers: Vec<_> = self.servers.lock().await.drain().collect();
        for (_, (ep, _)) in servers {
            ep.shutdown().await;
        }
    }
}

/// The server an error came from, when it names one.
fn error_addr(e: &Error) -> Option<SocketAddr> {
    match e {
        Error::Connect { addr, .. }
        | Error::Rpc { addr, .. }
        | Error::Decode { addr, .. }
        | Error::Protocol { addr, .. }
        | Error::Timeout { addr, .. } => Some(*addr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn na(netid: &str, uaddr: &str) -> Netaddr4 {
        Netaddr4 {
            na_r_netid: netid.into(),
            na_r_addr: uaddr.into(),
        }
    }

    #[test]
    fn rdma_addresses_are_preferred_over_rdma_and_ignored_over_tcp() {
        // As a data server lists them: RDMA (NFS port + 200) first, then TCP.
        let list = [
            na("rdma", "10.99.0.1.78.77"),
            na("tcp", "10.99.0.1.77.189"),
            na("rdma6", "::1.78.77"),
            na("tcp6", "::1.77.189"),
            na("sctp", "10.99.0.1.1.1"),
            na("tcp", "not-an-address"),
        ];
        let v4 = |p| SocketAddr::from(([10, 99, 0, 1], p));
        let v6 = |p| SocketAddr::new(std::net::Ipv6Addr::LOCALHOST.into(), p);
        assert_eq!(
            usable_addrs(&list, false),
            vec![(v4(19901), false), (v6(19901), false)]
        );
        assert_eq!(
            usable_addrs(&list, true),
            vec![
                (v4(20045), true),
                (v6(20045), true),
                (v4(19901), false),
                (v6(19901), false)
            ]
        );
        // RDMA mode without RDMA entries falls back to TCP; TCP mode with only RDMA ones
        // has nothing to use.
        assert_eq!(usable_addrs(&list[1..2], true), vec![(v4(19901), false)]);
        assert!(usable_addrs(&list[..1], false).is_empty());
    }
}

/// What a layout wrote through the data servers and has not LAYOUTCOMMITted, taken out of it
/// for one LAYOUTCOMMIT (put back if that fails).
#[derive(Debug)]
struct Unreported {
    end: u64,
}

impl Unreported {
    /// Takes `l`'s unreported end; `None` when nothing was written since the last
    /// LAYOUTCOMMIT.
    fn take(l: &Layout) -> Option<Self> {
        let end = l.written_end.swap(0, Ordering::AcqRel);
        (end > 0).then_some(Self { end })
    }

    /// The LAYOUTCOMMIT of it under `l` (the current filehandle must be `l`'s file).
    fn op(&self, l: &Layout) -> NfsArgop4 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        NfsArgop4::LayoutCommit(LayoutCommitArgs {
            loca_offset: 0,
            loca_length: u64::MAX,
            loca_reclaim: false,
            loca_stateid: l.stateid(),
            loca_last_write_offset: Newoffset4::Present {
                no_offset: self.end - 1,
            },
            loca_time_modify: Newtime4::Changed {
                nt_time: Nfstime4 {
                    seconds: now.as_secs() as i64,
                    nseconds: now.subsec_nanos(),
                },
            },
            loca_layoutupdate: Layoutupdate4 {
                lou_type: l.layout_type(),
                lou_body: Bytes::new(),
            },
        })
    }

    /// The LAYOUTCOMMIT failed: the end is unreported again (with what writes since added).
    fn failed(&self, l: &Layout) {
        l.written_end.fetch_max(self.end, Ordering::AcqRel);
    }
}
