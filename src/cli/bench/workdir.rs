//! Where a benchmark writes on one server: a fresh directory `pnfs-bench-<pid>-<n>` below
//! the URL given, made at the start and removed with everything in it at the end (also when
//! a phase failed or the run was interrupted), so a benchmark leaves the export as it was.

use client::url::NfsUrl;
use client::{Client, Node};
use nfs_proto::nfs4::NfsStat4;

use super::error::BenchError;
use crate::cli::{nfs_join, Clients};

/// Names tried for the directory before giving up (another benchmark of this pid's number
/// on another machine may hold the first).
const NAME_TRIES: u32 = 1000;

/// One server under test: its client and the benchmark's directory there.
pub(crate) struct Target {
    /// `A`, or `B` for `--compare`'s.
    pub label: &'static str,
    /// The URL the user gave.
    pub url: NfsUrl,
    /// The client (shared by every phase and task on this server).
    pub client: Client,
    /// The benchmark's directory.
    pub dir: Node,
    /// Its path on the server.
    pub dir_path: String,
}

impl Target {
    /// Connects to `url`'s server and makes the fresh directory below `url`.
    pub(crate) async fn make(
        clients: &mut Clients,
        label: &'static str,
        url: NfsUrl,
    ) -> Result<Target, BenchError> {
        let client = clients.get(&url).await.map_err(|f| {
            // The message already names the URL and the cause.
            BenchError::Connect(f.message)
        })?;
        let (parent, meta) = client
            .node_of(&url.path)
            .await
            .map_err(|e| BenchError::nfs(&url, "looking up the directory", e))?;
        if !meta.is_dir() {
            return Err(BenchError::NotADirectory(url.to_string()));
        }
        let pid = std::process::id();
        for n in 0..NAME_TRIES {
            let name = format!("pnfs-bench-{pid}-{n}");
            match client.mkdir_in(&parent, &name, 0o755).await {
                Ok((dir, _)) => {
                    return Ok(Target {
                        label,
                        dir_path: nfs_join(&url.path, &name),
                        url,
                        client,
                        dir,
                    })
                }
                Err(e) if e.is(NfsStat4::NFS4ERR_EXIST) => continue,
                Err(e) => {
                    return Err(BenchError::nfs(
                        url.with_path(&nfs_join(&url.path, &name)),
                        "creating the bench directory",
                        e,
                    ))
                }
            }
        }
        Err(BenchError::NoFreeName(url.to_string(), NAME_TRIES))
    }

    /// The URL of `name` in the benchmark's directory (for messages).
    pub(crate) fn url_of(&self, name: &str) -> NfsUrl {
        self.url.with_path(&nfs_join(&self.dir_path, name))
    }

    /// The benchmark directory's URL.
    pub(crate) fn dir_url(&self) -> NfsUrl {
        self.url.with_path(&self.dir_path)
    }

    /// Removes the benchmark's directory and everything below it.
    pub(crate) async fn remove(&self) -> Result<(), BenchError> {
        crate::cli::fsops::remove_tree(&self.client, &self.url, self.dir_path.clone())
            .await
            .map_err(|f| BenchError::Cleanup(self.dir_url().to_string(), f.message))
    }
}
