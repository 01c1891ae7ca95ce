//! Reading a [`File`]: through the per-open block cache, with read-ahead for small reads,
//! from the layout's data servers or the MDS.

use super::*;

/// Most blocks a sequential reader's read fetches past what it asked for.
const READ_AHEAD: u64 = 8;

impl File {
    /// Reads up to `len` bytes at `offset` (fewer at the end of the file).
    pub async fn read_at(&self, offset: u64, len: u64) -> Result<Bytes> {
        self.flush_siblings().await;
        let mut d = self.open.data.lock().await;
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
            return Ok(Bytes::new());
        }
        let end = size.min(offset.saturating_add(len));
        let first = offset / BLOCK;
        let last = (end - 1) / BLOCK;
        // Read-ahead: a reader going on where it stopped gets the next blocks fetched with
        // these, in parallel over the data servers, in a window that doubles up to
        // READ_AHEAD blocks (and starts again at a jump). A FUSE mount reads 1 MiB per
        // request, one at a time per file: without this each request would wait for one
        // data server.
        d.ahead = if offset == d.read_next && offset > 0 {
            (d.ahead * 2).clamp(1, READ_AHEAD)
        } else {
            0
        };
        d.read_next = end;
        let ahead_end = (last + 1 + d.ahead).min(size.div_ceil(BLOCK));
        let missing: Vec<u64> = (first..ahead_end)
            .filter(|b| !d.cache.map.contains_key(b))
            .collect();
        let missing_now = missing.iter().any(|b| *b <= last);
        if missing_now {
            let ranges: Vec<(u64, u64)> = missing
                .iter()
                .map(|b| (b * BLOCK, BLOCK.min(size - b * BLOCK)))
                .collect();
            let got = self.fetch(&ranges).await?;
            if d.cache.bytes > self.client.inner.opts.read_cache {
                // Blocks behind a sequential reader go first, then everything.
                let behind: Vec<u64> = d.cache.map.range(..first).map(|(b, _)| *b).collect();
                for b in behind {
                    if let Some(x) = d.cache.map.remove(&b) {
                        d.cache.bytes -= x.len();
                    }
                }
                if d.cache.bytes > self.client.inner.opts.read_cache {
                    d.cache.clear();
                }
            }
            for (b, data) in missing.into_iter().zip(got) {
                d.cache.bytes += data.len();
                d.cache.map.insert(b, data);
            }
        }
        if first == last {
            // Inside one cached block: a slice of it, not a copy.
            let block = d.cache.map.get(&first).cloned().unwrap_or_default();
            let (from, to) = (
                (offset - first * BLOCK) as usize,
                (end - first * BLOCK) as usize,
            );
            if to <= block.len() {
                return Ok(block.slice(from..to));
            }
        }
        let mut out = BytesMut::with_capacity((end - offset) as usize);
        for b in first..=last {
            let block = d.cache.map.get(&b).cloned().unwrap_or_default();
            let bstart = b * BLOCK;
            let from = offset.max(bstart) - bstart;
            let to = (end.min(bstart + BLOCK) - bstart).min(block.len() as u64);
            if from < to {
                out.extend_from_slice(&block[from as usize..to as usize]);
            }
            let want = end.min(bstart + BLOCK) - offset.max(bstart);
            let have = to.saturating_sub(from);
            if have < want {
                // A short block inside the file's size: a hole; zeros.
                out.resize(out.len() + (want - have) as usize, 0);
            }
        }
        Ok(out.freeze())
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
            let mut d = self.open.data.lock().await;
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
