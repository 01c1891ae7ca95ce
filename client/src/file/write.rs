//! Writing a [`File`]: buffered writes, sent UNSTABLE and kept until a COMMIT with a matching
//! verifier proves them stable (`fsync`), re-sent when the verifier changed.

use super::*;

impl File {
    /// Writes `data` at `offset` (buffered; sent when the buffer fills, or at fsync/close).
    pub async fn write_at(&self, offset: u64, data: Bytes) -> Result<()> {
        if self.open.access & OPEN4_SHARE_ACCESS_WRITE == 0 {
            return Err(nfs_err(NfsOpnum4::OP_WRITE, NfsStat4::NFS4ERR_OPENMODE));
        }
        if data.is_empty() {
            return Ok(());
        }
        let end = offset + data.len() as u64;
        // Bytes of this range on their way in a background send land first: supersede then
        // finds them among the sent ones.
        let mut d = self.data_clear_of(offset, end).await;
        drop_cached(&mut d, offset, end);
        supersede(&mut d, offset, end);
        d.dirty_bytes += data.len();
        d.dirty.push((offset, data));
        self.wrote(&mut d, end);
        let part = behind::send_size(self.client.inner.opts.write_back);
        if d.dirty_bytes >= part {
            // Write-behind: the buffer goes out in the background while the caller goes on
            // filling the next part; a caller that fills it while every send runs waits.
            if d.behind.len() >= behind::MAX_SENDS {
                drop(d);
                d = self.data_unsent().await;
            }
            if d.dirty_bytes >= part {
                if let Some(e) = d.behind_error.take() {
                    // The last one failed and its bytes are back in the buffer: say so now
                    // rather than let the buffer grow without end.
                    return Err(e);
                }
                self.send_behind(&mut d);
            }
        }
        Ok(())
    }

    /// Writes a list of extents (offset, data) in one call: sent at once, as few COMPOUNDs
    /// per server as fit.
    pub async fn write_list(&self, extents: &[(u64, Bytes)]) -> Result<()> {
        let mut d = self.data_settled().await;
        for (o, data) in extents {
            if data.is_empty() {
                continue;
            }
            let end = o + data.len() as u64;
            drop_cached(&mut d, *o, end);
            supersede(&mut d, *o, end);
            d.dirty_bytes += data.len();
            d.dirty.push((*o, data.clone()));
            self.wrote(&mut d, end);
        }
        self.send_dirty(&mut d).await
    }

    /// Bookkeeping of a write buffered up to `end`: the file's size, the staleness of other
    /// Files' caches, and whether the buffer now holds writes made under a write delegation.
    fn wrote(&self, d: &mut Data, end: u64) {
        if d.dirty_epoch.is_none() {
            d.dirty_epoch = self.open.server.write_epoch();
        }
        self.open.server.changed(Some(end), None, &mut d.cache_gen);
    }

    /// Sends the buffered writes UNSTABLE (through the layout, or the MDS), holding the data
    /// lock. Writes made under a write delegation the server has revoked since are dropped
    /// instead, with [`Error::DataLost`]: another client may have changed the file (RFC 8881
    /// section 10.5.1). The caller holds `d` from [`Self::data_settled`]: no background
    /// send is running.
    pub(super) async fn send_dirty(&self, d: &mut Data) -> Result<()> {
        self.send_dirty_as(d, StableHow4::UNSTABLE4).await
    }

    /// [`Self::send_dirty`], the writes `stable` as asked.
    async fn send_dirty_as(&self, d: &mut Data, stable: StableHow4) -> Result<()> {
        let Some((pieces, epoch)) = behind::take_dirty(d) else {
            return Ok(());
        };
        let pieces = coalesce(pieces, self.io_size());
        let written = self.send_pieces_as(&pieces, epoch, stable).await;
        behind::sent(d, pieces, epoch, written)
    }

    /// Sends `pieces` taken from the buffer (made when the delegation revocation count was
    /// `epoch`): the server's answers, or [`Error::DataLost`] when a write delegation they
    /// were made under has been revoked since.
    pub(super) async fn send_pieces(
        &self,
        pieces: &[(u64, Bytes)],
        epoch: Option<u64>,
    ) -> Result<Vec<Written>> {
        self.send_pieces_as(pieces, epoch, StableHow4::UNSTABLE4)
            .await
    }

    async fn send_pieces_as(
        &self,
        pieces: &[(u64, Bytes)],
        epoch: Option<u64>,
        stable: StableHow4,
    ) -> Result<Vec<Written>> {
        self.with_state(true, |s| {
            let lost = self.open.server.revoked_since(epoch);
            async move {
                if lost {
                    return Err(Error::DataLost {
                        path: self.open.path.clone(),
                        bytes: pieces.iter().map(|p| p.1.len() as u64).sum(),
                    });
                }
                self.send_writes(s, pieces, stable).await
            }
        })
        .await
    }

    async fn send_writes(
        &self,
        stateid: Stateid4,
        pieces: &[(u64, Bytes)],
        stable: StableHow4,
    ) -> Result<Vec<Written>> {
        if let Some(p) = &self.client.inner.pnfs {
            if let Some(w) = p.write(&self.open.fh, stateid, pieces, stable).await? {
                return Ok(w);
            }
        }
        let t = self.mds_target();
        let res = io::write(&t, stateid, pieces, stable).await?;
        let bytes: usize = pieces.iter().map(|p| p.1.len()).sum();
        Counters::add(&self.client.inner.counters.mds_bytes_written, bytes as u64);
        Ok(res
            .into_iter()
            .zip(pieces)
            .map(|(r, (offset, data))| Written {
                offset: *offset,
                data: data.clone(),
                verf: r.writeverf,
                stable: r.committed,
                target: t.clone(),
            })
            .collect())
    }

    /// Makes everything written so far stable: sends the buffer, COMMITs each server written
    /// UNSTABLE, re-sends writes whose verifier changed, then LAYOUTCOMMIT (RFC 8881 sections
    /// 13.7 and 18.42). When a data server cannot COMMIT, its writes go to the MDS FILE_SYNC.
    pub async fn fsync(&self) -> Result<()> {
        self.flush_stable(true).await
    }

    /// [`File::fsync`], with the LAYOUTCOMMIT only when `layoutcommit`: a file closed under
    /// a write delegation leaves it to the delegation's return ([`File::close`]).
    pub(crate) async fn flush_stable(&self, layoutcommit: bool) -> Result<()> {
        let mut d = self.data_settled().await;
        if let Some(e) = d.behind_error.take() {
            tracing::debug!(path = %self.open.path, "a background send failed ({e}); sending again");
        }
        // What is left to send all fits in one WRITE per server and nothing sent earlier
        // awaits a COMMIT: FILE_SYNC, so no COMMIT round trip follows (a small file written
        // and closed costs one WRITE, as the Linux client's single-request flush).
        let one_write = d.unstable.is_empty() && d.dirty_bytes <= self.io_size();
        let stable = if one_write {
            StableHow4::FILE_SYNC4
        } else {
            StableHow4::UNSTABLE4
        };
        self.send_dirty_as(&mut d, stable).await?;
        for _round in 0..4 {
            if d.unstable.is_empty() {
                break;
            }
            let pending = std::mem::take(&mut d.unstable);
            let mut groups: Vec<(Target, Vec<Written>)> = Vec::new();
            for w in pending {
                match groups
                    .iter_mut()
                    .find(|(t, _)| t.ep.addr() == w.target.ep.addr() && t.fh == w.target.fh)
                {
                    Some((_, v)) => v.push(w),
                    None => groups.push((w.target.clone(), vec![w])),
                }
            }
            let results =
                futures::future::join_all(groups.iter().map(|(t, _)| io::commit(t))).await;
            let mut resend = Vec::new();
            let mut to_mds = Vec::new();
            for ((t, ws), r) in groups.into_iter().zip(results) {
                match r {
                    Ok(verf) => resend.extend(ws.into_iter().filter(|w| w.verf != verf)),
                    Err(e) if e.is_state_lost() => resend.extend(ws),
                    // The layout it was written through is gone (returned after a data
                    // server failed, recalled, or of the MDS's previous boot): what it wrote
                    // is not known to be stable, so it is written again.
                    Err(e) if e.is_layout_gone() => {
                        if let Some(p) = &self.client.inner.pnfs {
                            p.layout_gone(&self.open.fh, &t.fh);
                        }
                        resend.extend(ws)
                    }
                    Err(e) => {
                        tracing::warn!(path = %self.open.path, "COMMIT failed ({e}); writing through the MDS");
                        to_mds.extend(ws);
                    }
                }
            }
            if !resend.is_empty() {
                Counters::add(&self.client.inner.counters.rewrites, resend.len() as u64);
                tracing::info!(path = %self.open.path, writes = resend.len(), "write verifier changed; re-sending");
                let pieces: Vec<(u64, Bytes)> =
                    resend.into_iter().map(|w| (w.offset, w.data)).collect();
                match self
                    .with_state(true, |s| {
                        self.send_writes(s, &pieces, StableHow4::UNSTABLE4)
                    })
                    .await
                {
                    Ok(w) => d
                        .unstable
                        .extend(w.into_iter().filter(|w| w.stable == StableHow4::UNSTABLE4)),
                    Err(e) => {
                        d.dirty_bytes += pieces.iter().map(|p| p.1.len()).sum::<usize>();
                        d.dirty.extend(pieces);
                        return Err(e);
                    }
                }
            }
            if !to_mds.is_empty() {
                Counters::add(&self.client.inner.counters.fallbacks, 1);
                let pieces: Vec<(u64, Bytes)> =
                    to_mds.into_iter().map(|w| (w.offset, w.data)).collect();
                let split = coalesce(pieces, self.io_size());
                let t = self.mds_target();
                self.with_state(true, |s| io::write(&t, s, &split, StableHow4::FILE_SYNC4))
                    .await?;
            }
        }
        if !d.unstable.is_empty() {
            return Err(Error::Protocol {
                addr: self.client.server(),
                what: "the write verifier kept changing across COMMITs".into(),
            });
        }
        if let Some(p) = self.client.inner.pnfs.as_ref().filter(|_| layoutcommit) {
            p.layoutcommit(&self.open.fh).await?;
        }
        self.client.inner.forget_attrs(&self.open.fh);
        Ok(())
    }
}
