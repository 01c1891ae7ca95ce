//! Striped files whose `space_used` GETATTR asks their data servers for.
//!
//! A striped file's blocks are on its data servers, so its true `space_used` costs one
//! control call per data server. The Linux client asks for `space_used` in every GETATTR
//! and READDIR, so asking for every file would put a round trip to every data server under
//! each `stat` and `ls -l` entry. The MDS asks only for files whose space can differ from
//! their size in ways the size does not show: those given an ALLOCATE or DEALLOCATE this
//! boot (and any file while RW layouts of it are out, when the data servers are asked for
//! the size anyway: `dsobjects::sized`). Others report what the store records.

use std::collections::HashSet;
use std::sync::Mutex;

/// How many files are watched before the set is emptied (8 bytes each: 512 KiB).
pub const MAX_WATCHED: usize = 1 << 16;

/// The watched files (see the module documentation).
#[derive(Debug, Default)]
pub struct SpaceWatch {
    files: Mutex<HashSet<u64>>,
}

impl SpaceWatch {
    /// Watches `fileid` from now on (an ALLOCATE or DEALLOCATE changed its blocks).
    pub fn watch(&self, fileid: u64) {
        let mut f = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if f.len() >= MAX_WATCHED && !f.contains(&fileid) {
            // Forgetting costs accuracy only: those files report their recorded space.
            f.clear();
        }
        f.insert(fileid);
    }

    /// Whether GETATTR asks the data servers for `fileid`'s space.
    pub fn is_watched(&self, fileid: u64) -> bool {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&fileid)
    }

    /// `fileid` is gone.
    pub fn forget(&self, fileid: u64) {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fileid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_files_are_remembered_and_a_full_set_starts_again() {
        let w = SpaceWatch::default();
        assert!(!w.is_watched(1));
        w.watch(1);
        assert!(w.is_watched(1));
        for f in 2..=MAX_WATCHED as u64 {
            w.watch(f);
        }
        assert!(w.is_watched(1));
        w.watch(u64::MAX);
        assert!(!w.is_watched(1) && w.is_watched(u64::MAX));
        w.forget(u64::MAX);
        assert!(!w.is_watched(u64::MAX));
    }
}
