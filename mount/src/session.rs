//! Mounting: the FUSE session on its own threads, and taking it down cleanly.

use std::io;
use std::path::Path;
use std::sync::Arc;

use client::{Client, Node};
use fuser::{Config, MountOption, SessionACL};
use tokio::runtime::Handle;

use crate::fs::{PnfsFs, Shared};
use crate::options::MountOptions;

/// fuser's threads: they only read the kernel's requests and hand them to tasks.
const READERS: usize = 2;

/// A mounted file system: its session runs on its own threads until [`Mounted::unmount`]
/// or an outside `umount`.
pub struct Mounted {
    shared: Arc<Shared>,
    unmounter: fuser::SessionUnmounter,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
    done: tokio::sync::watch::Receiver<bool>,
}

/// Mounts `root` of `client`'s server at `mountpoint`. The kernel's requests are answered
/// by tasks on `rt` (the client's runtime); the calling thread is not used after this
/// returns, and may be one of `rt`'s.
pub fn mount(
    client: Client,
    root: Node,
    mountpoint: &Path,
    opts: MountOptions,
    rt: Handle,
) -> io::Result<Mounted> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(opts.fsname.clone()),
        MountOption::Subtype("pnfs".into()),
        // The kernel checks permissions from the modes and owners it was given, as a
        // kernel NFS client's server would from the request's credential.
        MountOption::DefaultPermissions,
    ];
    if opts.read_only {
        config.mount_options.push(MountOption::RO);
    }
    if opts.allow_other {
        config.acl = SessionACL::All;
    }
    config.n_threads = Some(READERS);
    let uid = opts
        .uid
        .unwrap_or_else(|| rustix::process::geteuid().as_raw());
    let shared = Arc::new(Shared::new(client, root, opts, rt, uid));
    let mut session = fuser::Session::new(PnfsFs(shared.clone()), mountpoint, &config)?;
    let _ = shared.notifier.set(session.notifier());
    let unmounter = session.unmount_callable();
    let (tx, done) = tokio::sync::watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("pnfs-fuse".into())
        .spawn(move || {
            let r = session.run();
            let _ = tx.send(true);
            r
        })?;
    Ok(Mounted {
        shared,
        unmounter,
        thread: Some(thread),
        done,
    })
}

impl Mounted {
    /// Returns when the file system was unmounted from outside (`umount`, `fusermount3 -u`).
    pub async fn unmounted(&mut self) {
        let _ = self.done.wait_for(|d| *d).await;
    }

    /// Sends and commits every open file's writes, unmounts (if still mounted), waits for
    /// the session to end and closes what the kernel left open.
    pub async fn unmount(mut self) -> io::Result<()> {
        self.shared.flush_all().await;
        let mut unmounter = self.unmounter;
        let thread = self.thread.take();
        let r = tokio::task::spawn_blocking(move || {
            let u = unmounter.unmount();
            let t = match thread {
                Some(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the FUSE session panicked"))),
                None => Ok(()),
            };
            u.and(t)
        })
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)));
        self.shared.close_all().await;
        r
    }
}
