//! The process's file descriptor limit. Every connection costs a descriptor; the default soft
//! RLIMIT_NOFILE (1024 on most distributions) is far below what a server with many clients
//! needs, while the hard limit (what an unprivileged process may raise it to) is usually much
//! higher. A server raises the soft limit to the hard one once at start, and sizes its
//! connection caps below the result so that `accept` refuses clients at the cap instead of
//! failing with EMFILE.

use std::io;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Descriptors kept out of the connection caps: stores, object files opened for I/O, the
/// listeners, connections to data servers, log files.
pub const RESERVED_FDS: u64 = 128;

/// The fewest connections an automatic cap allows on one listener.
pub const MIN_AUTO_CONNECTIONS: usize = 16;

/// The soft RLIMIT_NOFILE now (`u64::MAX` when unlimited).
pub fn nofile() -> u64 {
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Raises the soft RLIMIT_NOFILE to the hard limit and returns the soft limit in effect
/// afterwards. An unlimited hard limit is taken as the kernel's `fs.nr_open` (Linux refuses a
/// soft limit above it). Raising never lowers: a soft limit already at the hard one stays.
pub fn raise_nofile() -> io::Result<u64> {
    let now = getrlimit(Resource::Nofile);
    let hard = match now.maximum {
        Some(h) => h,
        None => std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1 << 20),
    };
    let soft = now.current.unwrap_or(u64::MAX);
    if soft >= hard {
        return Ok(soft);
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: now.maximum,
        },
    )?;
    Ok(nofile())
}

/// The connection cap of each of `listeners` listeners of a process whose soft limit is
/// `nofile`: the descriptors past [`RESERVED_FDS`] shared evenly, so that all listeners full
/// still leave the process descriptors for its files. A pNFS client holds one connection to
/// the MDS and one to each data server, so even shares fit the way clients connect.
pub fn auto_max_connections(nofile: u64, listeners: usize) -> usize {
    let share = nofile.saturating_sub(RESERVED_FDS) / listeners.max(1) as u64;
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .max(MIN_AUTO_CONNECTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_caps_leave_a_reserve_and_share_the_rest() {
        assert_eq!(auto_max_connections(1024, 1), 896);
        // `pnfs server` with three data servers: the MDS, and each DS's NFS and control.
        assert_eq!(auto_max_connections(1024, 7), 128);
        assert_eq!(auto_max_connections(100, 2), MIN_AUTO_CONNECTIONS);
        assert_eq!(
            auto_max_connections(u64::MAX, 0) as u64,
            u64::MAX - RESERVED_FDS
        );
    }

    #[test]
    fn raising_reaches_the_hard_limit() {
        // Raising the soft limit to the hard one is harmless to other tests of this process.
        let soft = raise_nofile().unwrap();
        let hard = getrlimit(Resource::Nofile).maximum.unwrap_or(u64::MAX);
        assert!(soft == hard || hard == u64::MAX, "{soft} < {hard}");
        assert_eq!(nofile(), soft);
    }
}
