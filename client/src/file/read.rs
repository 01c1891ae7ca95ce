//! Reading a [`File`]: through the per-open block cache, from the layout's data servers or
//! the MDS, with read-ahead for a sequential reader.
//!
//! The data lock is not held while blocks are fetched: concurrent reads of one File (a FUSE
//! mount's kernel sends several) fetch different blocks in parallel, and a read that needs
//! a block another is fetching waits for that fetch rather than asking again. A sequential
//! reader's next blocks are fetched in the background (a window doubling up to
//! [`READ_AHEAD`] blocks), so that its next reads find them cached while it consumes these.
//! Fetched blocks go into the cache only if nothing was removed from it meanwhile (its
//! epoch): a write's range dropped while they travelled may be newer than they are.

use std::collections::BTreeMap;

use tokio::sync::watch;

use super::*;

/// Most blocks fetched ahead of a sequential reader.
const READ_AHEAD: u64 = 8;

/// A read up to this long, the second in a row away from the last one, fetches only its
/// own bytes.
const SMALL: u64 = 64 << 10;

/// Blocks being fetched, each with a receiver that closes when its fetch ends.
pub(super) type Fetching = BTreeMap<u64, watch::Receiver<()>>;

impl File {
    /// Reads up to `len` bytes at `offset` (fewer at the end of the file), as one buffer:
    /// [`read_pieces_at`](Self::read_pieces_at)'s pieces, copied together when the range
    /// spans several blocks.
    pub async fn read_at(&self, offset: u64, len: u64) -> Result<Bytes> {
        let pieces = self.read_pieces_at(offset, len).await?;
        Ok(concat(pieces))
    }

    /// Reads up to `len` bytes at `offset` (fewer at the end of the file) as the pieces the
    /// cache holds them in, in order, never copied: a reader that hands them on (to a file,
    /// a socket, a hash) saves the copy [`read_at`](Self::read_at) makes of a range longer
    /// than a block (a quarter of `pnfs get`'s CPU for 4 MiB reads).
    pub async fn read_pieces_at(&self, offset: u64, len: u64) -> Result<Vec<Bytes>> {
        self.flush_siblings().await;
        let mut first_pass = true;
        loop {
            let mut d = self.data_clear_of(offset, offset.saturating_add(len)).await;
            if overlaps(&d.dirty, offset, len) {
                self.send_dirty(&mut d).await?;
            }
            // Another File of the file wrote, or the server showed a new change attribute:
            // what this one cached is not the file's any more.
            let gen = self.open.server.st().data_gen;
            if d.cache_gen != gen {
                d.cache.clear();
                d.cache_gen = gen;
            }
            let size = self.size();
            if offset >= size || len == 0 {
                return Ok(Vec::new());
            }
            let end = size.min(offset.saturating_add(len));
            let (first, last) = (offset / BLOCK, (end - 1) / BLOCK);
            if std::mem::take(&mut first_pass) {
                let sequential = offset == d.read_next && offset > 0;
                d.ahead = if sequential {
                    (d.ahead * 2).clamp(1, READ_AHEAD)
                } else {
                    0
                };
                d.jumps = if sequential || end - offset > SMALL {
                    0
                } else {
                    d.jumps.saturating_add(1)
                };
                d.read_next = end;
                if d.ahead > 0 {
                    let to = (last + 1 + d.ahead).min(size.div_ceil(BLOCK));
                    self.fetch_behind(&mut d, last + 1..to, size);
                }
            }
            if (first..=last).all(|b| d.cache.map.contains_key(&b)) {
                return Ok(pieces(&d.cache.map, offset, end));
            }
            // Small reads that keep jumping (random access): just their bytes, not their
            // blocks (a 4 KiB read would otherwise move 1 MiB), and not cached. The first
            // jump still caches its block: a reader going back to the same bytes (a header
            // read again) finds them.
            if d.jumps >= 2 && !d.fetching.contains_key(&first) {
                drop(d);
                let got = self.fetch(&[(offset, end - offset)]).await?;
                let mut got = got.into_iter().next().unwrap_or_default();
                if (got.len() as u64) < end - offset {
                    // Short inside the file: a hole; zeros.
                    let mut padded = BytesMut::from(&got[..]);
                    padded.resize((end - offset) as usize, 0);
                    got = padded.freeze();
                }
                return Ok(vec![got]);
            }
            // A block another read is fetching: wait for it, then look again.
            if let Some(rx) = (first..=last)
                .filter(|b| !d.cache.map.contains_key(b))
                .find_map(|b| d.fetching.get(&b).cloned())
            {
                drop(d);
                let mut rx = rx;
                let _ = rx.changed().await;
                continue;
            }
            let missing: Vec<u64> = (first..=last)
                .filter(|b| !d.cache.map.contains_key(b))
                .collect();
            let (tx, rx) = watch::channel(());
            for b in &missing {
                d.fetching.insert(*b, rx.clone());
            }
            let epoch = d.cache.epoch;
            drop(d);
            let got = self.fetch_blocks(&missing, size).await;
            let mut d = self.open.data.lock().await;
            for b in &missing {
                d.fetching.remove(b);
            }
            drop(tx);
            let got = got?;
            let mut blocks: BTreeMap<u64, Bytes> = (first..=last)
                .filter_map(|b| d.cache.map.get(&b).map(|x| (b, x.clone())))
                .collect();
            blocks.extend(got.iter().cloned());
            let limit = self.client.inner.opts.read_cache;
            d.cache.put(epoch, got, limit, first);
            return Ok(pieces(&blocks, offset, end));
        }
    }

    /// The blocks `blocks` of a file of `size` bytes, fetched in parallel.
    async fn fetch_blocks(&self, blocks: &[u64], size: u64) -> Result<Vec<(u64, Bytes)>> {
        let ranges: Vec<(u64, u64)> = blocks
            .iter()
            .map(|b| (b * BLOCK, BLOCK.min(size - b * BLOCK)))
            .collect();
        let got = self.fetch(&ranges).await?;
        Ok(blocks.iter().copied().zip(got).collect())
    }

    /// Starts fetching `blocks` (those not cached nor being fetched) in the background, for
    /// the cache.
    fn fetch_behind(&self, d: &mut Data, blocks: std::ops::Range<u64>, size: u64) {
        let want: Vec<u64> = blocks
            .filter(|b| !d.cache.map.contains_key(b) && !d.fetching.contains_key(b))
            .collect();
        if want.is_empty() {
            return;
        }
        let (tx, rx) = watch::channel(());
        for b in &want {
            d.fetching.insert(*b, rx.clone());
        }
        let epoch = d.cache.epoch;
        let file = File::new(self.client.clone(), self.open.clone());
        tokio::spawn(async move {
            let got = file.fetch_blocks(&want, size).await;
            let mut d = file.open.data.lock().await;
            for b in &want {
                d.fetching.remove(b);
            }
            match got {
                Ok(got) => {
                    let limit = file.client.inner.opts.read_cache;
                    let from = want
                        .first()
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(READ_AHEAD);
                    d.cache.put(epoch, got, limit, from);
                }
                // The reader asks again, and meets the error then.
                Err(e) => tracing::debug!(path = %file.open.path, "reading ahead: {e}"),
            }
            drop(d);
            drop(tx);
        });
    }

    /// Reads the whole file.
    pub async fn read_to_end(&self) -> Result<Bytes> {
        let size = self.size();
        self.read_at(0, size).await
    }

    /// Reads a list of extents (offset, length) in one call, as few COMPOUNDs per server as
    /// fit (the list I/O of PVFS and MPI-IO). Bypasses the block cache. Each result is
    /// clamped to the file's size.
    pub async fn read_list(&self, extents: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        self.flush_siblings().await;
        {
            let mut d = self.data_settled().await;
            if extents.iter().any(|&(o, l)| overlaps(&d.dirty, o, l)) {
                self.send_dirty(&mut d).await?;
            }
        }
        let size = self.size();
        let clamped: Vec<(u64, u64)> = extents
            .iter()
            .map(|&(o, l)| (o, size.saturating_sub(o).min(l)))
            .collect();
        self.fetch(&clamped).await
    }

    /// Fetches ranges from the server(s): through the layout, or the MDS.
    async fn fetch(&self, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let want: Vec<(u64, u64)> = ranges.iter().copied().filter(|r| r.1 > 0).collect();
        let mut got = if want.is_empty() {
            Vec::new()
        } else {
            self.with_state(false, |s| self.fetch_once(s, &want))
                .await?
        }
        .into_iter();
        Ok(ranges
            .iter()
            .map(|r| {
                if r.1 > 0 {
                    got.next().unwrap_or_default()
                } else {
                    Bytes::new()
                }
            })
            .collect())
    }

    async fn fetch_once(&self, stateid: Stateid4, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        if let Some(p) = &self.client.inner.pnfs {
            if let Some(out) = p.read(&self.open.fh, stateid, ranges).await? {
                return Ok(out);
            }
        }
        // Through the MDS: each range in I/O-size pieces.
        let max = self.io_size() as u64;
        let mut pieces = Vec::new();
        let mut place = Vec::new();
        for (i, &(off, len)) in ranges.iter().enumerate() {
            for (o, n, at) in io::cut(off, len, max) {
                pieces.push((o, n));
                place.push((i, at));
            }
        }
        let got = io::read(&self.mds_target(), stateid, &pieces).await?;
        let mut parts: Vec<Vec<(usize, Bytes)>> = vec![Vec::new(); ranges.len()];
        let mut total = 0;
        for ((i, at), piece) in place.into_iter().zip(got) {
            total += piece.data.len() as u64;
            parts[i].push((at, piece.data));
        }
        let out = ranges
            .iter()
            .zip(parts)
            .map(|(&(_, len), p)| io::assemble(len as usize, p))
            .collect();
        Counters::add(&self.client.inner.counters.mds_bytes_read, total);
        Ok(out)
    }
}

/// The bytes `offset..end` of the file from its blocks, as slices of them in order; a block
/// shorter than [`BLOCK`] inside the range is a hole, whose missing bytes come as a piece of
/// zeros.
fn pieces(blocks: &BTreeMap<u64, Bytes>, offset: u64, end: u64) -> Vec<Bytes> {
    let (first, last) = (offset / BLOCK, (end - 1) / BLOCK);
    let mut out = Vec::with_capacity((last - first + 1) as usize);
    for b in first..=last {
        let block = blocks.get(&b).cloned().unwrap_or_default();
        let bstart = b * BLOCK;
        let from = offset.max(bstart) - bstart;
        let to = (end.min(bstart + BLOCK) - bstart).min(block.len() as u64);
        if from < to {
            out.push(block.slice(from as usize..to as usize));
        }
        let want = end.min(bstart + BLOCK) - offset.max(bstart);
        let have = to.saturating_sub(from);
        if have < want {
            out.push(Bytes::from(vec![0; (want - have) as usize]));
        }
    }
    out
}

/// `pieces` as one buffer: the piece itself when there is one, else copied together.
fn concat(mut pieces: Vec<Bytes>) -> Bytes {
    match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
            for p in &pieces {
                out.extend_from_slice(p);
            }
            out.freeze()
        }
    }
}
