//! Looking at data servers' objects on disk, and waiting for what the cluster's background
//! tasks do.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pfs_core::ObjectId;

/// Where the `local` backend under `data_dir` keeps object `(file, stripe)`.
pub fn object_path(data_dir: &Path, file: u64, stripe: u32) -> PathBuf {
    data_dir
        .join("objects")
        .join(ObjectId { file, stripe }.relative_path())
}

/// Waits (up to 10 s) until `f` holds.
pub async fn until(what: &str, f: impl FnMut() -> bool) -> Duration {
    until_within(what, Duration::from_secs(10), f).await
}

/// Waits (up to `limit`) until `f` holds; returns how long it took.
pub async fn until_within(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    t0.elapsed()
}
