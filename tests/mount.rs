//! `pnfs mount` for real (FUSE on `/dev/fuse`, so root and the fuse module are needed; the
//! tests say so and pass without them, unless PNFS_REQUIRE_FUSE is set, as the test command
//! sets it) against `pnfs server` with three data servers, as users start and stop it:
//! the errno of the usual failures and the open flags; SIGTERM with a file still open and
//! written (its bytes committed, the mount detached and served until the file closes);
//! `umount` and `fusermount3 -u`; `--daemon`; and an fstab line through `mount.fuse.pnfs`.
//! The workload on the mount (the guest suite's checks, two mounts, nfs-ganesha) is
//! interop-tests/tests/mount_workload.rs.

mod support;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

const MIB: usize = 1 << 20;

fn fuse_usable() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    let usable = root && Path::new("/dev/fuse").exists();
    if !usable {
        assert!(
            std::env::var_os("PNFS_REQUIRE_FUSE").is_none(),
            "PNFS_REQUIRE_FUSE is set but FUSE is not usable (needs root and /dev/fuse)"
        );
        eprintln!("skipped: needs root and /dev/fuse");
    }
    usable
}

fn mounted(at: &Path) -> bool {
    let at = at.canonicalize().unwrap();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(at.to_str().unwrap()))
}

fn until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "{what}: not after {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `pnfs mount -v URL DIR` as a child (stderr to `log`), once the mount is up.
fn start_mount(url: &str, at: &Path, log: &Path) -> Child {
    let mut child = Command::new(PNFS)
        .args(["mount", "-v", url, path_str(at)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !mounted(at) {
        if t.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!(
                "not mounted: {}",
                fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Waits for the mount process to exit (at most 60 s); its exit status.
fn wait(mut child: Child, log: &Path) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!(
                "pnfs mount did not exit: {}",
                fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn errno_of(r: std::io::Result<impl Sized>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

fn sigterm(child: &Child) {
    assert!(Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success());
}

/// A mount point in a fresh temporary directory, detached (`umount -l`, which ends its
/// mount process) when the test ends, failed or not.
struct MountPoint {
    base: tempfile::TempDir,
    at: PathBuf,
}

impl Drop for MountPoint {
    fn drop(&mut self) {
        if mounted(&self.at) {
            let _ = Command::new("umount").arg("-l").arg(&self.at).status();
        }
    }
}

fn mount_point() -> MountPoint {
    let base = tempfile::tempdir().unwrap();
    let at = base.path().join("mnt");
    fs::create_dir(&at).unwrap();
    MountPoint { base, at }
}

/// `pnfs server` and a `pnfs mount -v` of its root: the server, the mount point, the mount's
/// log and its process.
fn server_and_mount() -> (Server, MountPoint, PathBuf, Child) {
    let server = Server::start();
    let mp = mount_point();
    let log = mp.base.path().join("mount.log");
    let child = start_mount(&server.url("/"), &mp.at, &log);
    (server, mp, log, child)
}

#[test]
fn the_mount_answers_errnos_and_open_flags_as_posix_says() {
    if !fuse_usable() {
        return;
    }
    let (_server, mp, log, child) = server_and_mount();
    let mnt = mp.at.clone();

    // O_EXCL, O_APPEND, O_TRUNC, the mode of a created file.
    let p = mnt.join("small");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .open(&p)
        .unwrap()
        .write_all(b"hello")
        .unwrap();
    assert_eq!(
        errno_of(fs::OpenOptions::new().write(true).create_new(true).open(&p)),
        libc::EEXIST
    );
    fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(b" world")
        .unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"hello world");
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o640
    );
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&p)
        .unwrap()
        .write_all(b"new")
        .unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"new");

    // ftruncate through an open file (its size seen at once), truncate by path.
    let f = fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(10_000).unwrap();
    assert_eq!(f.metadata().unwrap().len(), 10_000);
    drop(f);
    let data = fs::read(&p).unwrap();
    assert_eq!((&data[..3], data.len()), (&b"new"[..], 10_000));
    assert!(data[3..].iter().all(|b| *b == 0));
    assert!(Command::new("truncate")
        .args(["-s", "2"])
        .arg(&p)
        .status()
        .unwrap()
        .success());
    assert_eq!(fs::read(&p).unwrap(), b"ne");

    // The errno of the usual failures.
    assert_eq!(errno_of(fs::metadata(mnt.join("nothing"))), libc::ENOENT);
    assert_eq!(errno_of(fs::read(mnt.join("nothing/x"))), libc::ENOENT);
    assert_eq!(errno_of(fs::read(p.join("x"))), libc::ENOTDIR);
    fs::create_dir(mnt.join("a")).unwrap();
    fs::write(mnt.join("a/x"), b"x").unwrap();
    assert_eq!(errno_of(fs::create_dir(mnt.join("a"))), libc::EEXIST);
    assert_eq!(errno_of(fs::remove_dir(mnt.join("a"))), libc::ENOTEMPTY);
    assert_eq!(errno_of(fs::remove_file(mnt.join("a"))), libc::EISDIR);
    assert_eq!(errno_of(fs::remove_dir(mnt.join("a/x"))), libc::ENOTDIR);
    assert_eq!(errno_of(fs::write(mnt.join("a"), b"")), libc::EISDIR);
    assert_eq!(
        errno_of(fs::write(mnt.join("n".repeat(300)), b"")),
        libc::ENAMETOOLONG
    );
    assert_eq!(
        errno_of(fs::rename(mnt.join("a"), mnt.join("a/inside"))),
        libc::EINVAL
    );
    // Rename over an existing file; a hard link shares the inode; a fifo is a fifo.
    fs::write(mnt.join("y"), b"y").unwrap();
    fs::rename(mnt.join("y"), mnt.join("a/x")).unwrap();
    assert_eq!(fs::read(mnt.join("a/x")).unwrap(), b"y");
    fs::hard_link(mnt.join("a/x"), mnt.join("hl")).unwrap();
    assert_eq!(
        fs::metadata(mnt.join("hl")).unwrap().ino(),
        fs::metadata(mnt.join("a/x")).unwrap().ino()
    );
    assert!(Command::new("mkfifo")
        .arg(mnt.join("fifo"))
        .status()
        .unwrap()
        .success());
    assert!(fs::symlink_metadata(mnt.join("fifo"))
        .unwrap()
        .file_type()
        .is_fifo());

    sigterm(&child);
    let status = wait(child, &log);
    assert!(status.success(), "{}", fs::read_to_string(&log).unwrap());
    assert!(!mounted(&mnt));
}

#[test]
fn sigterm_commits_a_file_left_open_and_serves_it_until_it_closes() {
    if !fuse_usable() {
        return;
    }
    let (server, mp, log, child) = server_and_mount();
    let mnt = mp.at.clone();

    // Written, not closed: the bytes sit in the client's write-back buffer.
    let data = noise(5 * MIB, 3);
    let mut open = fs::File::create(mnt.join("open")).unwrap();
    open.write_all(&data).unwrap();
    sigterm(&child);
    // The mount is busy: detached at once, its process still serving the open file.
    until("detached", Duration::from_secs(30), || !mounted(&mnt));
    // Its bytes were sent and committed before the detach.
    let cat = pnfs(&["cat", &server.url("/open")]);
    assert!(cat.status.success(), "{cat:?}");
    assert!(
        cat.stdout == data,
        "the file left open is not on the server whole"
    );
    // Still served: the open file takes more, and its close sends it.
    open.write_all(b"tail").unwrap();
    drop(open);
    let status = wait(child, &log);
    let out = fs::read_to_string(&log).unwrap();
    assert!(status.success(), "pnfs mount: {status:?}: {out}");
    assert!(out.contains("busy"), "{out}");
    let cat = pnfs(&["cat", &server.url("/open")]);
    assert_eq!(cat.stdout.len(), 5 * MIB + 4);
    assert!(cat.stdout.ends_with(b"tail"));
}

#[test]
fn umount_fusermount3_and_daemon_mounts_end_cleanly() {
    if !fuse_usable() {
        return;
    }
    let server = Server::start();
    fs::write(server.local("x"), b"on the server").unwrap();
    ok(&["put", path_str(&server.local("x")), &server.url("/x")]);
    let mp = mount_point();
    let (base, mnt) = (&mp.base, mp.at.clone());
    let log = base.path().join("mount.log");

    // An outside umount ends the process (exit 0).
    let child = start_mount(&server.url("/"), &mnt, &log);
    assert_eq!(fs::read(mnt.join("x")).unwrap(), b"on the server");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    let status = wait(child, &log);
    assert!(status.success(), "{}", fs::read_to_string(&log).unwrap());

    // And `fusermount3 -u`, where installed (scripts/test.sh installs it).
    if Command::new("fusermount3").arg("-V").output().is_ok() {
        let child = start_mount(&server.url("/"), &mnt, &log);
        assert!(Command::new("fusermount3")
            .arg("-u")
            .arg(&mnt)
            .status()
            .unwrap()
            .success());
        let status = wait(child, &log);
        assert!(status.success(), "{}", fs::read_to_string(&log).unwrap());
        assert!(!mounted(&mnt));
    }

    // --daemon: returns once mounted (exit 0), the mount serves on; umount ends it.
    let out = Command::new(PNFS)
        .args(["mount", "--daemon", &server.url("/"), path_str(&mnt)])
        .args(["-o", "attr_timeout=0.5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(mounted(&mnt), "--daemon returned before the mount");
    assert_eq!(fs::read(mnt.join("x")).unwrap(), b"on the server");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    assert!(!mounted(&mnt));
    // A daemon that cannot mount says why and fails.
    let out = Command::new(PNFS)
        .args(["mount", "--daemon", "nfs://127.0.0.1:1/", path_str(&mnt)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).is_empty(), "{out:?}");
    assert!(!mounted(&mnt));
}

/// `/sbin/mount.fuse.pnfs`, the helper mount(8) runs for type `fuse.pnfs`, for the test's
/// life (a link to the binary under test; one that was there is put back).
struct Helper {
    kept: Option<PathBuf>,
}

const HELPER: &str = "/sbin/mount.fuse.pnfs";

impl Helper {
    fn install() -> Helper {
        let kept = fs::symlink_metadata(HELPER).is_ok().then(|| {
            let k = PathBuf::from(format!("{HELPER}.kept-by-test"));
            fs::rename(HELPER, &k).unwrap();
            k
        });
        std::os::unix::fs::symlink(PNFS, HELPER).unwrap();
        Helper { kept }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = fs::remove_file(HELPER);
        if let Some(k) = &self.kept {
            let _ = fs::rename(k, HELPER);
        }
    }
}

#[test]
fn an_fstab_line_of_type_fuse_pnfs_mounts_through_mount_8() {
    if !fuse_usable() {
        return;
    }
    if !Path::new("/sbin").is_dir() {
        eprintln!("skipped: no /sbin for mount(8)'s helpers");
        return;
    }
    let server = Server::start();
    let mp = mount_point();
    let (base, mnt) = (&mp.base, mp.at.clone());
    let _helper = Helper::install();
    let fstab = base.path().join("fstab");
    fs::write(
        &fstab,
        format!(
            "# pnfs, as /etc/fstab would have it\n{} {} fuse.pnfs noauto,_netdev,attr_timeout=0.5 0 0\n",
            server.url("/"),
            mnt.display()
        ),
    )
    .unwrap();
    let out = Command::new("mount")
        .arg("--fstab")
        .arg(&fstab)
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(out.status.success(), "mount: {out:?}");
    assert!(mounted(&mnt));
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info
        .lines()
        .find(|l| l.split(' ').nth(4) == mnt.canonicalize().unwrap().to_str())
        .unwrap();
    assert!(line.contains("fuse.pnfs"), "{line}");
    fs::write(mnt.join("via-fstab"), b"hello").unwrap();
    assert_eq!(fs::read(mnt.join("via-fstab")).unwrap(), b"hello");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    assert!(!mounted(&mnt));
    assert_eq!(pnfs(&["cat", &server.url("/via-fstab")]).stdout, b"hello");
}
