//! Server-side copy (RFC 7862 sections 4 and 15.2): [`File::copy_to`] sends COPY (PUTFH
//! source, SAVEFH, PUTFH destination, COPY with both files' stateids) and the bytes move
//! inside the server, never through this client.
//!
//! ```text
//!  flush both files (their writes land before the copy; the server knows the sizes)
//!   ─> COPY ca_synchronous = false ─> synchronous reply: done
//!                                  └> callback stateid: wait for CB_OFFLOAD (offload.rs),
//!                                     OFFLOAD_STATUS every `offload_poll` meanwhile
//!   ─> not FILE_SYNC: COMMIT, same verifier or the copy is lost
//!   ─> the destination's cached bytes dropped, its size grown
//! ```
//!
//! A server that cannot copy says so ([`crate::Error::is_no_server_copy`]); the caller
//! copies through the client then.

use std::sync::Arc;
use std::time::Instant;

use nfs_proto::nfs4::*;

use crate::client::Counters;
use crate::error::{Error, Result};
use crate::file::File;
use crate::offload::Waiter;
use crate::ops::putfh;
use crate::session::{nfs_err, Endpoint};

/// What a server-side copy did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Bytes copied.
    pub bytes: u64,
    /// The server copied asynchronously (a callback stateid, then CB_OFFLOAD or
    /// OFFLOAD_STATUS) at least once.
    pub asynchronous: bool,
}

/// The NFSv4.2 minor version COPY and OFFLOAD_* are sent in.
const MINOR: u32 = 2;

/// How a COPY request was answered.
enum Started {
    /// Copied before the reply.
    Done(WriteResponse4),
    /// Copying in the background under this stateid; the reply's verifier.
    Running(Stateid4, Verifier4),
}

impl File {
    /// Copies `count` bytes of this file at `src_offset` into `dst` at `dst_offset` on the
    /// server (COPY, RFC 7862 section 15.2): no byte goes through this client. `count` 0
    /// copies to the source's end, as COPY's `ca_count`. Both files must be open on this
    /// client (`dst` for writing). Buffered writes of both are sent and committed first.
    ///
    /// The server answers small copies at once; for larger ones it replies with a callback
    /// stateid and copies in the background, and this call waits for the server's
    /// CB_OFFLOAD, asking with OFFLOAD_STATUS every [`crate::ClientOptions::offload_poll`]
    /// meanwhile (and giving up, with OFFLOAD_CANCEL, when no progress shows for
    /// `retry_limit`). Dropping the future cancels a background copy.
    ///
    /// Returns the bytes copied: fewer than `count` only at the source's end. A server
    /// that cannot copy these files answers an error for which
    /// [`Error::is_no_server_copy`] is true: copy through the client then.
    pub async fn copy_to(
        &self,
        src_offset: u64,
        dst: &File,
        dst_offset: u64,
        count: u64,
    ) -> Result<Copied> {
        if !Arc::ptr_eq(&self.client.inner, &dst.client.inner) {
            return Err(Error::Invalid(format!(
                "{} -> {}: a server-side copy needs both files open on one client",
                self.open.path, dst.open.path
            )));
        }
        // The copy must see this client's writes to the source, and its earlier writes to
        // the destination must not land over the copied bytes afterwards.
        self.flush_siblings().await;
        self.fsync().await?;
        dst.flush_siblings().await;
        dst.fsync().await?;
        let mut done = Copied {
            bytes: 0,
            asynchronous: false,
        };
        loop {
            let want = if count == 0 { 0 } else { count - done.bytes };
            let (src_at, dst_at) = (src_offset + done.bytes, dst_offset + done.bytes);
            let result = self.copy_once(dst, src_at, dst_at, want, &mut done).await;
            let n = match &result {
                Ok(n) => *n,
                Err((_, n)) => *n,
            };
            if n > 0 {
                dst.changed_by_server(dst_at + n).await;
            }
            done.bytes += n;
            let c = &self.client.inner.counters;
            Counters::add(&c.server_copy_bytes, n);
            result.map_err(|(e, _)| e)?;
            // A short copy (RFC 7862 section 15.2.3 lets the server stop early): the rest,
            // until the source's end (a copy of nothing).
            if count == 0 || n == 0 || done.bytes >= count {
                Counters::add(&c.server_copies, 1);
                if done.asynchronous {
                    Counters::add(&c.server_copies_async, 1);
                }
                return Ok(done);
            }
        }
    }

    /// One COPY and its outcome: the bytes copied, or the error and the bytes copied
    /// before it.
    async fn copy_once(
        &self,
        dst: &File,
        src_offset: u64,
        dst_offset: u64,
        count: u64,
        done: &mut Copied,
    ) -> std::result::Result<u64, (Error, u64)> {
        let started = self
            .with_state(false, |src_stateid| async move {
                dst.with_state(true, |dst_stateid| {
                    self.send_copy(dst, src_stateid, dst_stateid, src_offset, dst_offset, count)
                })
                .await
            })
            .await
            .map_err(|e| (e, 0))?;
        let reply = match started {
            Started::Done(w) => w,
            Started::Running(stateid, verf) => {
                done.asynchronous = true;
                let waiter = self.client.inner.offloads.wait_for(&stateid);
                let wait = Wait {
                    ep: self.client.inner.mds.clone(),
                    fh: dst.open.fh.clone(),
                    stateid,
                    finished: false,
                };
                wait.outcome(self, waiter, verf).await?
            }
        };
        self.make_stable(dst, &reply, dst_offset)
            .await
            .map_err(|e| (e, reply.wr_count))?;
        Ok(reply.wr_count)
    }

    async fn send_copy(
        &self,
        dst: &File,
        src_stateid: Stateid4,
        dst_stateid: Stateid4,
        src_offset: u64,
        dst_offset: u64,
        count: u64,
    ) -> Result<Started> {
        let ops = vec![
            putfh(&self.open.fh),
            NfsArgop4::SaveFh,
            putfh(&dst.open.fh),
            NfsArgop4::Copy(CopyArgs {
                ca_src_stateid: src_stateid,
                ca_dst_stateid: dst_stateid,
                ca_src_offset: src_offset,
                ca_dst_offset: dst_offset,
                ca_count: count,
                ca_consecutive: true,
                // The server picks: small copies at once, large ones in the background
                // (a synchronous COPY of GiBs would outlast the RPC timeout).
                ca_synchronous: false,
                ca_source_server: Vec::new(),
            }),
        ];
        let r = self
            .client
            .inner
            .mds
            .compound_minor(MINOR, ops)
            .await?
            .ok()?;
        let ok = crate::ops::find(&r, NfsOpnum4::OP_COPY, |x| match x {
            NfsResop4::Copy(CopyRes::Ok(ok)) => Some(ok.cr_response.clone()),
            _ => None,
        })?;
        match ok.wr_callback_id.first() {
            None => Ok(Started::Done(ok)),
            Some(s) => Ok(Started::Running(*s, ok.wr_writeverf)),
        }
    }

    /// A copy the server did not say is FILE_SYNC is committed, and is the copy only if
    /// COMMIT answers its verifier (else the server restarted meanwhile and lost it: RFC
    /// 7862 section 15.2.3).
    async fn make_stable(&self, dst: &File, w: &WriteResponse4, dst_offset: u64) -> Result<()> {
        if w.wr_committed == StableHow4::FILE_SYNC4 || w.wr_count == 0 {
            return Ok(());
        }
        let r = self
            .client
            .run(vec![
                putfh(&dst.open.fh),
                NfsArgop4::Commit(CommitArgs {
                    offset: dst_offset,
                    count: u32::try_from(w.wr_count).unwrap_or(0),
                }),
            ])
            .await?;
        let verf = crate::ops::find(&r, NfsOpnum4::OP_COMMIT, |x| match x {
            NfsResop4::Commit(CommitRes::Ok(ok)) => Some(ok.writeverf),
            _ => None,
        })?;
        if verf != w.wr_writeverf {
            return Err(self.client.protocol(
                "the server's write verifier changed during a server-side copy (it restarted); \
                 the copied bytes may be lost: copy again",
            ));
        }
        Ok(())
    }
}

/// The outcome CB_OFFLOAD told: what was written, or the failure and the bytes copied.
fn outcome_of(info: OffloadInfo4) -> std::result::Result<WriteResponse4, (Error, u64)> {
    match info {
        OffloadInfo4::Ok(w) => Ok(w),
        OffloadInfo4::Failed {
            coa_status,
            coa_bytes_copied,
        } => Err((nfs_err(NfsOpnum4::OP_COPY, coa_status), coa_bytes_copied)),
    }
}

/// The wait for a background copy: cancelled on the server when dropped before its end.
struct Wait {
    ep: Arc<Endpoint>,
    /// The destination (OFFLOAD_STATUS and OFFLOAD_CANCEL act on the current filehandle).
    fh: NfsFh4,
    stateid: Stateid4,
    finished: bool,
}

impl Wait {
    /// The copy's outcome: from CB_OFFLOAD, or from OFFLOAD_STATUS when it does not come
    /// within `offload_poll` (asked again every `offload_poll`). No progress for the
    /// client's `retry_limit`: give up (the copy is cancelled when `self` is dropped).
    async fn outcome(
        mut self,
        file: &File,
        mut waiter: Waiter,
        verf: Verifier4,
    ) -> std::result::Result<WriteResponse4, (Error, u64)> {
        let inner = &file.client.inner;
        let poll = inner
            .opts
            .offload_poll
            .max(std::time::Duration::from_millis(10));
        let mut progress = (0u64, Instant::now());
        loop {
            match tokio::time::timeout(poll, &mut waiter.rx).await {
                Ok(Ok(info)) => {
                    Counters::add(&inner.counters.offload_callbacks, 1);
                    self.finished = true;
                    return outcome_of(info);
                }
                // No sender any more (none should go without sending): polling alone,
                // still paced.
                Ok(Err(_)) => tokio::time::sleep(poll).await,
                Err(_) => {}
            }
            Counters::add(&inner.counters.offload_polls, 1);
            let status = self.status().await;
            // The CB may have come while OFFLOAD_STATUS was on its way.
            if let Ok(info) = waiter.rx.try_recv() {
                Counters::add(&inner.counters.offload_callbacks, 1);
                self.finished = true;
                return outcome_of(info);
            }
            let st = match status {
                Ok(st) => st,
                Err(e) => {
                    // The server forgot the copy (restarted, or a lease passed): what it
                    // did is unknown.
                    self.finished = true;
                    return Err((e, 0));
                }
            };
            match st.osr_complete.first() {
                Some(&NfsStat4::NFS4_OK) => {
                    self.finished = true;
                    // OFFLOAD_STATUS does not say how stable: the COMMIT after tells.
                    return Ok(WriteResponse4 {
                        wr_callback_id: Vec::new(),
                        wr_count: st.osr_count,
                        wr_committed: StableHow4::UNSTABLE4,
                        wr_writeverf: verf,
                    });
                }
                Some(&s) => {
                    self.finished = true;
                    return Err((nfs_err(NfsOpnum4::OP_COPY, s), st.osr_count));
                }
                None if st.osr_count > progress.0 => progress = (st.osr_count, Instant::now()),
                None if progress.1.elapsed() > inner.opts.retry_limit => {
                    return Err((
                        Error::Timeout {
                            addr: self.ep.addr(),
                            secs: inner.opts.retry_limit.as_secs(),
                            what: "progress of a server-side copy",
                        },
                        st.osr_count,
                    ));
                }
                None => {}
            }
        }
    }

    async fn status(&self) -> Result<OffloadStatusResOk> {
        let r = self
            .ep
            .compound_minor(
                MINOR,
                vec![
                    putfh(&self.fh),
                    NfsArgop4::OffloadStatus(OffloadStatusArgs {
                        osa_stateid: self.stateid,
                    }),
                ],
            )
            .await?
            .ok()?;
        crate::ops::find(&r, NfsOpnum4::OP_OFFLOAD_STATUS, |x| match x {
            NfsResop4::OffloadStatus(OffloadStatusRes::Ok(ok)) => Some(ok.clone()),
            _ => None,
        })
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (ep, fh, stateid) = (self.ep.clone(), self.fh.clone(), self.stateid);
        rt.spawn(async move {
            let r = ep
                .compound_minor(
                    MINOR,
                    vec![
                        putfh(&fh),
                        NfsArgop4::OffloadCancel(OffloadCancelArgs {
                            oca_stateid: stateid,
                        }),
                    ],
                )
                .await;
            tracing::debug!(?r, "OFFLOAD_CANCEL of an abandoned copy");
        });
    }
}
