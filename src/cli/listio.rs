//! `pnfs list-io` (hidden, for tests): list I/O of many small extents through one client —
//! one `File::write_list` of N extents at scattered offsets, then one `File::read_list` of the
//! same extents — and a check that the bytes read are the bytes written. `--expect FILE`
//! also writes the image the server's file should now have, for a `pnfs cp` + `cmp` after.

use std::io::Write;

use bytes::Bytes;
use client::OpenOptions;

use super::rng::Rng;
use super::{parse_url, Clients, CmdResult, Failure, ListIoArgs, EXIT_MISMATCH};

/// `count` extents (offset, data), in order and apart: extent i lies in
/// `[i * 2 * max, (i + 1) * 2 * max)`, 1 to `max` bytes long.
fn extents(count: usize, max: u64, seed: u64) -> Vec<(u64, Bytes)> {
    let mut r = Rng::from_state(seed | 1);
    (0..count as u64)
        .map(|i| {
            let off = i * 2 * max + r.next() % max;
            let len = 1 + r.next() % max;
            let data: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            (off, Bytes::from(data))
        })
        .collect()
}

/// Runs the check.
pub(crate) async fn list_io(clients: &mut Clients, a: &ListIoArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let c = clients.get(&url).await?;
    let ext = extents(a.extents, a.max_extent.max(1), a.seed);
    let bytes: usize = ext.iter().map(|(_, d)| d.len()).sum();
    let f = c
        .create(&url.path, 0o644)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    f.write_list(&ext)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    f.fsync().await.map_err(|e| Failure::nfs(&url, &e))?;
    f.close().await.map_err(|e| Failure::nfs(&url, &e))?;
    let f = c
        .open(&url.path, &OpenOptions::read())
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    let list: Vec<(u64, u64)> = ext.iter().map(|(o, d)| (*o, d.len() as u64)).collect();
    let got = f
        .read_list(&list)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    f.close().await.map_err(|e| Failure::nfs(&url, &e))?;
    let bad = ext
        .iter()
        .zip(&got)
        .filter(|((_, want), got)| want != *got)
        .count()
        + ext.len().abs_diff(got.len());
    if let Some(path) = &a.expect {
        let end = ext.last().map_or(0, |(o, d)| *o as usize + d.len());
        let mut image = vec![0u8; end];
        for (o, d) in &ext {
            image[*o as usize..*o as usize + d.len()].copy_from_slice(d);
        }
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(&image))
            .map_err(|e| Failure::io(path.display(), &e))?;
    }
    if bad > 0 {
        return Err(Failure {
            code: EXIT_MISMATCH,
            message: format!(
                "{url}: list I/O: {bad} of {} extents read back differ",
                ext.len()
            ),
        });
    }
    println!(
        "list I/O: {} extents, {bytes} bytes written in one write_list and read back equal in one read_list",
        ext.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_are_apart_and_repeatable() {
        let a = extents(1000, 4096, 7);
        assert_eq!(a, extents(1000, 4096, 7));
        for w in a.windows(2) {
            assert!(w[0].0 + w[0].1.len() as u64 <= w[1].0);
        }
        assert!(a.iter().all(|(_, d)| !d.is_empty() && d.len() <= 4096));
    }
}
