//! `pnfs mount nfs://host[:port]/path MOUNTPOINT`: the client as a FUSE file system, in the
//! foreground until `umount` (or `fusermount3 -u`), SIGINT or SIGTERM (dirty data sent and
//! committed first), or with `--daemon` in the background once mounted; `pnfs revalidate`;
//! and `mount.fuse.pnfs`, the helper mount(8) runs for `mount -t fuse.pnfs` and fstab.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use tokio::signal::unix::{signal, SignalKind};

use super::{
    parse_url, Clients, CmdResult, Failure, MountArgs, RevalidateArgs, EXIT_ERROR, EXIT_USAGE,
};

/// Set in the environment of the process `--daemon` starts: it mounts and serves.
const DAEMON_ENV: &str = "PNFS_MOUNT_DAEMON";

/// What the daemon prints on its stdout once mounted (the starter then exits 0).
const READY: &str = "mounted";

/// The options of `a` (`-o` lists, fsname the URL).
fn options(a: &MountArgs) -> CmdResult<mount::MountOptions> {
    let mut opts = mount::MountOptions {
        fsname: a.url.clone(),
        ..mount::MountOptions::default()
    };
    for o in &a.options {
        opts.apply(o).map_err(Failure::usage)?;
    }
    Ok(opts)
}

/// Mounts and serves until unmounted or signalled.
pub(crate) async fn mount(clients: &mut Clients, a: &MountArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let opts = options(a)?;
    clients.tune(|c| {
        if let Some(u) = opts.uid {
            c.credentials.uid = u;
        }
        if let Some(g) = opts.gid {
            c.credentials.gid = g;
        }
        c.pnfs &= !opts.no_pnfs;
        if let Some(n) = opts.write_back {
            c.write_back = n;
        }
        if let Some(n) = opts.read_cache {
            c.read_cache = n;
        }
        if let Some(n) = opts.commit_every {
            c.commit_every = n;
        }
        c.attr_timeout = opts.attr_timeout;
    });
    let c = clients.get(&url).await?;
    let (root, meta) = c
        .node_of(&url.path)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    if meta.file_type != client::FileType::Dir {
        return Err(Failure::other(format!("{url}: not a directory")));
    }
    let log = opts.log.clone();
    let rt = tokio::runtime::Handle::current();
    let mut m = mount::mount(c, root, &a.mountpoint, opts, rt)
        .map_err(|e| Failure::io(a.mountpoint.display(), &e))?;
    if in_daemon() {
        detach(log.as_deref());
    }
    let mut term = signal(SignalKind::terminate()).map_err(|e| Failure::io("SIGTERM", &e))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| Failure::io("SIGINT", &e))?;
    tokio::select! {
        _ = m.unmounted() => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    // A busy mount is served until its files close; a second signal does not wait.
    let unmount = m.unmount();
    tokio::pin!(unmount);
    tokio::select! {
        r = &mut unmount => r.map_err(|e| Failure::io(a.mountpoint.display(), &e)),
        _ = term.recv() => Err(Failure::other("a second signal: not waiting for the files open on the mount")),
        _ = int.recv() => Err(Failure::other("a second signal: not waiting for the files open on the mount")),
    }
}

/// Whether this process is the daemon a `--daemon` mount started.
pub(crate) fn in_daemon() -> bool {
    std::env::var_os(DAEMON_ENV).is_some()
}

/// In the daemon, once mounted: tells the starter, and leaves its pipes for the log file
/// (or nothing), so that nothing it writes later blocks on or breaks a closed pipe.
fn detach(log: Option<&Path>) {
    println!("{READY}");
    let _ = std::io::stdout().flush();
    let sink = match log {
        Some(p) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p),
        None => std::fs::OpenOptions::new().write(true).open("/dev/null"),
    };
    match sink {
        Ok(f) => {
            let _ = rustix::stdio::dup2_stdout(&f);
            let _ = rustix::stdio::dup2_stderr(&f);
        }
        Err(e) => eprintln!("pnfs: the mount's log: {e}"),
    }
}

/// `pnfs mount --daemon`: starts this program again as the daemon (in a session of its
/// own, working directory `/`), waits until it says it mounted, and exits 0; or prints
/// why it did not and exits with its code.
pub(crate) fn daemonize(a: &MountArgs) -> ExitCode {
    // The daemon runs in `/`: a relative mount point is resolved here.
    let mountpoint = match std::fs::canonicalize(&a.mountpoint) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pnfs: {}: {e}", a.mountpoint.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("pnfs: finding this program to start the daemon: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // The daemon's command line, from what was parsed (this run may have been
    // `mount.fuse.pnfs`'s, whose arguments are not `pnfs mount`'s).
    let mut args: Vec<OsString> = vec!["mount".into(), a.url.clone().into(), mountpoint.into()];
    for o in &a.options {
        args.extend(["-o".into(), o.into()]);
    }
    if let Some(u) = a.common.uid {
        args.extend(["--uid".into(), u.to_string().into()]);
    }
    if let Some(g) = a.common.gid {
        args.extend(["--gid".into(), g.to_string().into()]);
    }
    if a.common.no_pnfs {
        args.push("--no-pnfs".into());
    }
    if a.common.verbose {
        args.push("-v".into());
    }
    if a.common.rdma {
        args.push("--rdma".into());
    }
    let child = Command::new(exe)
        .args(args)
        .env(DAEMON_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pnfs: starting the mount daemon: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // Its stderr is read aside, so that a long error cannot fill the pipe and stall it.
    let mut err = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let out = child.stdout.take().expect("piped stdout");
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l == READY);
    if ready {
        return ExitCode::SUCCESS;
    }
    let status = child.wait();
    let errors = errors.join().unwrap_or_default();
    eprint!("{errors}");
    match status {
        Ok(s) => ExitCode::from(
            s.code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(EXIT_ERROR),
        ),
        Err(e) => {
            eprintln!("pnfs: the mount daemon: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Called first in the daemon: a session of its own (no terminal's hangup reaches it) and
/// `/` as working directory (the mount point's file system can be unmounted).
pub(crate) fn enter_daemon() {
    if in_daemon() {
        let _ = rustix::process::setsid();
        let _ = std::env::set_current_dir("/");
    }
}

/// `pnfs revalidate FILE...`: the revalidate ioctl on each file.
pub(crate) fn revalidate(a: &RevalidateArgs) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for f in &a.files {
        let r = std::fs::File::open(f).and_then(|file| mount::ioctl::revalidate(&file));
        if let Err(e) = r {
            let why = if e.raw_os_error() == Some(libc::ENOTTY) {
                "not on a pnfs mount".to_string()
            } else {
                e.to_string()
            };
            eprintln!("pnfs: {}: {why}", f.display());
            code = ExitCode::from(EXIT_ERROR);
        }
    }
    code
}

/// The arguments of `pnfs` for a run as `mount.fuse.pnfs` (or `mount.pnfs`), the helper
/// mount(8) starts for `mount -t fuse.pnfs URL DIR` and fstab lines of that type:
/// `SOURCE DIR [-o OPTIONS] [-n] [-s] [-f] [-v]` becomes
/// `mount --daemon SOURCE DIR -o OPTIONS`. `None` when this is not such a run.
pub(crate) fn helper_args(argv: &[OsString]) -> Option<Vec<OsString>> {
    let name = Path::new(argv.first()?).file_name()?.to_str()?;
    if name != "mount.fuse.pnfs" && name != "mount.pnfs" {
        return None;
    }
    let mut out: Vec<OsString> = vec!["pnfs".into(), "mount".into(), "--daemon".into()];
    let mut positional = Vec::new();
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("-o") => {
                if let Some(o) = it.next() {
                    out.push("-o".into());
                    out.push(o.clone());
                }
            }
            Some(o) if o.starts_with("-o") => {
                out.push("-o".into());
                out.push(o[2..].into());
            }
            // mount(8)'s own flags (no mtab, sloppy, fake, verbose) and the type.
            Some("-n" | "-s" | "-f" | "-v") => {}
            Some("-t") => {
                it.next();
            }
            _ => positional.push(a.clone()),
        }
    }
    out.extend(positional);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_mount_helper_becomes_a_daemon_mount() {
        assert_eq!(
            helper_args(&os(&[
                "/sbin/mount.fuse.pnfs",
                "nfs://h:2049/x",
                "/mnt",
                "-o",
                "rw,noauto,attr_timeout=2",
                "-n"
            ])),
            Some(os(&[
                "pnfs",
                "mount",
                "--daemon",
                "-o",
                "rw,noauto,attr_timeout=2",
                "nfs://h:2049/x",
                "/mnt"
            ]))
        );
        assert_eq!(helper_args(&os(&["pnfs", "ls", "nfs://h/"])), None);
    }
}
