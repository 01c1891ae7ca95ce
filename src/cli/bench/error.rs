//! Why `pnfs bench` failed: arguments that cannot work (exit code 2, before anything is
//! sent), or a server, local file or chart that failed while it ran (exit code 1).

use std::path::PathBuf;

use crate::cli::{Failure, EXIT_ERROR, EXIT_USAGE};

/// A failure of `pnfs bench`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    /// Arguments that cannot go together (a value clap's parsers cannot judge alone).
    #[error("{0}")]
    Usage(String),
    /// The server could not be reached (the message names the URL and the cause).
    #[error("{0}")]
    Connect(String),
    /// The server answered an operation with an error.
    #[error("{url}: {what}: {source}")]
    Nfs {
        /// The file or directory concerned.
        url: String,
        /// What the benchmark was doing (`creating the bench directory`, `seq-write`, ...).
        what: String,
        /// The library's error (boxed: it is large, and errors travel in every `Result`).
        source: Box<client::Error>,
    },
    /// A read returned fewer bytes than the file holds there.
    #[error("{url}: {phase}: read {got} bytes at offset {offset}, expected {want}")]
    ShortRead {
        /// The file.
        url: String,
        /// The phase reading it.
        phase: &'static str,
        /// Where.
        offset: u64,
        /// Bytes received.
        got: u64,
        /// Bytes asked for (all inside the file).
        want: u64,
    },
    /// The URL to benchmark names something that is not a directory.
    #[error("{0}: not a directory (pnfs bench makes its files in a directory below the URL)")]
    NotADirectory(String),
    /// Every candidate name for the bench directory was taken.
    #[error("{0}: no free pnfs-bench-<pid>-<n> name after {1} tries")]
    NoFreeName(String, u32),
    /// The chart could not be drawn or written.
    #[error("--plot {path}: {why}", path = .0.display(), why = .1)]
    Plot(PathBuf, String),
    /// A tokio task of the metadata phase ended without an answer (it panicked).
    #[error("a task of {0} failed: {1}")]
    Task(&'static str, String),
    /// The benchmark's directory could not be removed at the end.
    #[error("{0}: removing the bench directory: {1}")]
    Cleanup(String, String),
    /// SIGINT arrived: the run stopped (its directory was removed).
    #[error("interrupted")]
    Interrupted,
}

impl BenchError {
    /// A library error about `url` while doing `what`.
    pub(crate) fn nfs(url: impl ToString, what: impl Into<String>, source: client::Error) -> Self {
        BenchError::Nfs {
            url: url.to_string(),
            what: what.into(),
            source: Box::new(source),
        }
    }

    /// The process's exit code for this failure: 2 for usage errors, 1 for everything else.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            BenchError::Usage(_) => EXIT_USAGE,
            _ => EXIT_ERROR,
        }
    }
}

impl From<BenchError> for Failure {
    fn from(e: BenchError) -> Failure {
        Failure {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_proto::nfs4::{NfsOpnum4, NfsStat4};

    #[test]
    fn usage_errors_exit_2_and_others_1_with_the_url_in_the_message() {
        let f = Failure::from(BenchError::Usage("--size 0".into()));
        assert_eq!((f.code, f.message.as_str()), (EXIT_USAGE, "--size 0"));
        let e = client::Error::Nfs {
            op: NfsOpnum4::OP_OPEN,
            status: NfsStat4::NFS4ERR_ACCESS,
        };
        let f = Failure::from(BenchError::nfs("nfs://h:1/d", "seq-write", e));
        assert_eq!(f.code, EXIT_ERROR);
        assert_eq!(f.message, "nfs://h:1/d: seq-write: OPEN: NFS4ERR_ACCESS");
    }
}
