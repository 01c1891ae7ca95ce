//! Mounting: the FUSE session on its own threads, and taking it down cleanly.
//!
//! As root the mount is a mount(2) of `/dev/fuse` done here, of type `fuse.pnfs` (what
//! `findmnt -t fuse.pnfs`, `umount -t` and fstab name); otherwise fuser's `fusermount3`
//! path (which names the subtype too). fuser's own direct mount would say `fuse`.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use client::{Client, Node};
use fuser::{Config, MountOption, SessionACL};
use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, UnmountFlags};
use tokio::runtime::Handle;

use crate::fs::{PnfsFs, Shared};
use crate::options::MountOptions;

/// fuser's threads: they only read the kernel's requests and hand them to tasks.
const READERS: usize = 2;

/// The file system type of a mount made here.
const FS_TYPE: &str = "fuse.pnfs";

/// How the mount is undone.
enum Unmounter {
    /// Mounted here: umount(2).
    Own,
    /// Mounted by fuser (fusermount3).
    Fuser(fuser::SessionUnmounter),
}

/// A mounted file system: its session runs on its own threads until [`Mounted::unmount`]
/// or an outside `umount`.
pub struct Mounted {
    shared: Arc<Shared>,
    at: PathBuf,
    unmounter: Unmounter,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
    done: tokio::sync::watch::Receiver<bool>,
}

/// mount(2) of a new `/dev/fuse` connection at `at`: the kernel side of the session.
fn mount_fuse(at: &Path, opts: &MountOptions) -> io::Result<OwnedFd> {
    let fd = rustix::fs::open("/dev/fuse", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())?;
    let root_mode = rustix::fs::stat(at)?.st_mode & libc::S_IFMT;
    let mut data = format!(
        "fd={},rootmode={root_mode:o},user_id={},group_id={},default_permissions",
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    if opts.allow_other {
        data.push_str(",allow_other");
    }
    let mut flags = MountFlags::NOSUID | MountFlags::NODEV;
    if opts.read_only {
        flags |= MountFlags::RDONLY;
    }
    let data = std::ffi::CString::new(data).map_err(io::Error::other)?;
    rustix::mount::mount(opts.fsname.as_str(), at, FS_TYPE, flags, data.as_c_str())?;
    Ok(fd)
}

/// Sets the kernel's read-ahead of the mount's bdi (`/sys/class/bdi/0:N/read_ahead_kb`):
/// the kernel offers FUSE its default of 128 KiB at INIT, so a sequential read would reach
/// the file system in 128 KiB requests, one or two at a time; with a few MiB it sends 1 MiB
/// requests (max_pages), several in parallel. Root only; a failure is said, not fatal.
fn set_read_ahead(at: &Path, bytes: usize) {
    let dev = match rustix::fs::stat(at) {
        Ok(st) => st.st_dev,
        Err(e) => return tracing::debug!("read-ahead not set: {e}"),
    };
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let path = format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb");
    if let Err(e) = std::fs::write(&path, (bytes / 1024).to_string()) {
        tracing::info!("{path}: {e}: the kernel reads ahead 128 KiB on this mount");
    }
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
    let acl = if opts.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.acl = acl;
    config.n_threads = Some(READERS);
    let uid = opts
        .uid
        .unwrap_or_else(|| rustix::process::geteuid().as_raw());
    let as_root = rustix::process::geteuid().is_root();
    let own = if as_root {
        Some(mount_fuse(mountpoint, &opts)?)
    } else {
        None
    };
    let shared = Arc::new(Shared::new(client, root, opts, rt, uid));
    let fs = PnfsFs(shared.clone());
    let (mut session, unmounter) = match own {
        Some(fd) => {
            let session = fuser::Session::from_fd(fs, fd, acl, config).inspect_err(|_| {
                let _ = rustix::mount::unmount(mountpoint, UnmountFlags::DETACH);
            })?;
            (session, None)
        }
        None => (fuser::Session::new(fs, mountpoint, &config)?, Some(())),
    };
    let unmounter = match unmounter {
        Some(()) => Unmounter::Fuser(session.unmount_callable()),
        None => Unmounter::Own,
    };
    let _ = shared.notifier.set(session.notifier());
    let (tx, done) = tokio::sync::watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("pnfs-fuse".into())
        .spawn(move || {
            let r = match session.run() {
                // The kernel ended the connection as the mount went away: a detached mount
                // whose last file closed, or an abort through /sys/fs/fuse. The reader that
                // got DESTROY ends cleanly, another may read ECONNABORTED instead of ENODEV
                // (fuser counts only ENODEV as the end), depending on which came first.
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => {
                    tracing::debug!("FUSE connection ended by the kernel: {e}");
                    Ok(())
                }
                r => r,
            };
            let _ = tx.send(true);
            r
        })?;
    // (Once the session serves: finding the mount's device asks the file system.)
    set_read_ahead(mountpoint, shared.opts.read_ahead);
    Ok(Mounted {
        shared,
        at: mountpoint.to_path_buf(),
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
    /// the session to end and closes what the kernel left open. A mount with files still
    /// open (EBUSY) is detached (`umount -l`): gone from the namespace at once, and served
    /// until the last of them closes, each close sending its writes.
    pub async fn unmount(mut self) -> io::Result<()> {
        self.shared.flush_all().await;
        let unmounter = std::mem::replace(&mut self.unmounter, Unmounter::Own);
        let thread = self.thread.take();
        let at = self.at.clone();
        let ended = *self.done.borrow();
        let r = tokio::task::spawn_blocking(move || {
            let u = if ended {
                Ok(())
            } else {
                match unmounter {
                    Unmounter::Fuser(mut u) => u.unmount(),
                    Unmounter::Own => {
                        rustix::mount::unmount(&at, UnmountFlags::empty()).map_err(io::Error::from)
                    }
                }
            };
            let u = match u {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    tracing::warn!(
                        "{}: busy (files open there): detached, and served until they close",
                        at.display()
                    );
                    rustix::mount::unmount(&at, UnmountFlags::DETACH).map_err(io::Error::from)
                }
                r => r,
            };
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
