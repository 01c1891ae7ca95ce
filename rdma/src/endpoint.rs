//! One RDMA connection's verbs resources and the task that reaps its completions: receives go
//! to the connection's reader in arrival order, and every send-queue work request (Send,
//! RDMA Read, RDMA Write) wakes the future that posted it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};

use crate::verbs::{Access, CmId, Completion, Cq, Mr, Pd, SendOp, Sge};

/// Receive work requests carry this bit and their buffer's index.
const RECV_BIT: u64 = 1 << 63;

/// Sizes of one connection's queues.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueSizes {
    /// Receive buffers posted at all times (the credits a responder grants).
    pub recvs: u32,
    /// Bytes of each receive buffer (our inline receive threshold).
    pub recv_size: usize,
    /// Send-queue work requests in flight at most.
    pub sends: u32,
    /// Pieces one send-queue work request may gather.
    pub send_sge: u32,
}

/// A connected (or connecting) queue pair with its completion queue and receive buffers.
/// Fields drop in order: the queue pair before the CQ it uses, both before the protection
/// domain (held by the regions too).
pub(crate) struct Endpoint {
    pub(crate) id: CmId,
    cq: tokio::sync::Mutex<Cq>,
    pub(crate) pd: Arc<Pd>,
    recv: Mr,
    sizes: QueueSizes,
    waits: Mutex<HashMap<u64, oneshot::Sender<Completion>>>,
    next_wr: AtomicU64,
    slots: Arc<Semaphore>,
    stop: Notify,
}

/// A posted send-queue work request: await [`Posted::done`] before reusing its memory.
pub(crate) struct Posted {
    rx: oneshot::Receiver<Completion>,
    _slot: OwnedSemaphorePermit,
}

impl Posted {
    /// Waits for the completion; an error status (or a connection torn down) is an error.
    pub(crate) async fn done(self) -> io::Result<()> {
        match self.rx.await {
            Ok(c) if c.ok() => Ok(()),
            Ok(c) => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("RDMA work request failed (ibv_wc_status {})", c.status),
            )),
            Err(_) => Err(io::ErrorKind::ConnectionAborted.into()),
        }
    }
}

/// Hands what one received message came to (a record, nothing, or an error that ends the
/// connection) to the connection's record stream; `false` when the reader should stop.
pub(crate) async fn forward(
    records: &mpsc::Sender<io::Result<Bytes>>,
    outcome: io::Result<Option<Bytes>>,
) -> bool {
    match outcome {
        Ok(Some(record)) => records.send(Ok(record)).await.is_ok(),
        Ok(None) => true,
        Err(e) => {
            let _ = records.send(Err(e)).await;
            false
        }
    }
}

impl Endpoint {
    /// Creates the CQ and queue pair of `id`, and registers and posts the receive buffers.
    pub(crate) fn new(mut id: CmId, sizes: QueueSizes) -> io::Result<Arc<Self>> {
        let pd = id.alloc_pd()?;
        let cq = Cq::new(&pd, (sizes.recvs + sizes.sends + 16) as i32)?;
        id.create_qp(&pd, &cq, sizes.sends, sizes.recvs, sizes.send_sge)?;
        let recv = Mr::new(&pd, sizes.recvs as usize * sizes.recv_size, Access::Local)?;
        let ep = Arc::new(Self {
            id,
            cq: tokio::sync::Mutex::new(cq),
            pd,
            recv,
            sizes,
            waits: Mutex::new(HashMap::new()),
            next_wr: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(sizes.sends as usize)),
            stop: Notify::new(),
        });
        for i in 0..sizes.recvs {
            ep.post_recv(i)?;
        }
        Ok(ep)
    }

    /// Posts receive buffer `index` (again).
    pub(crate) fn post_recv(&self, index: u32) -> io::Result<()> {
        let size = self.sizes.recv_size;
        self.id.post_recv(
            RECV_BIT | u64::from(index),
            &self.recv,
            index as usize * size,
            size as u32,
        )
    }

    /// The message a receive completion delivered, copied out, and its buffer posted again.
    pub(crate) fn take_received(&self, c: &Completion) -> io::Result<Bytes> {
        let index = (c.wr_id & !RECV_BIT) as u32;
        let len = (c.byte_len as usize).min(self.sizes.recv_size);
        let msg = self
            .recv
            .copy_out(index as usize * self.sizes.recv_size, len);
        self.post_recv(index)?;
        Ok(msg)
    }

    /// Posts a Send, RDMA Read or RDMA Write; waits first for room in the send queue.
    pub(crate) async fn post(&self, op: SendOp, sges: &[Sge]) -> io::Result<Posted> {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::ConnectionAborted))?;
        let wr_id = self.next_wr.fetch_add(1, Ordering::Relaxed) & !RECV_BIT;
        let (tx, rx) = oneshot::channel();
        self.waits.lock().expect("waits").insert(wr_id, tx);
        if let Err(e) = self.id.post_send(wr_id, op, sges) {
            self.waits.lock().expect("waits").remove(&wr_id);
            return Err(e);
        }
        Ok(Posted { rx, _slot: slot })
    }

    /// Reaps completions until [`Endpoint::stop`]: receives go to `received` in order, the
    /// others to their posters. Pending posters are failed at the end.
    pub(crate) async fn reap(self: Arc<Self>, received: mpsc::UnboundedSender<Completion>) {
        let mut cq = self.cq.lock().await;
        let mut batch = Vec::new();
        loop {
            tokio::select! {
                r = cq.next_batch(&mut batch) => {
                    if let Err(e) = r {
                        tracing::warn!("RDMA completion queue: {e}");
                        break;
                    }
                }
                () = self.stop.notified() => break,
            }
            for c in batch.drain(..) {
                if c.wr_id & RECV_BIT != 0 {
                    tracing::trace!(
                        wr = c.wr_id & !RECV_BIT,
                        status = c.status,
                        len = c.byte_len,
                        "RDMA receive completion"
                    );
                    let _ = received.send(c);
                } else if let Some(tx) = self.waits.lock().expect("waits").remove(&c.wr_id) {
                    let _ = tx.send(c);
                }
            }
        }
        self.slots.close();
        self.waits.lock().expect("waits").clear();
    }

    /// Ends [`Endpoint::reap`].
    pub(crate) fn stop(&self) {
        self.stop.notify_one();
    }
}
