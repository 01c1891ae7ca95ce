//! `pnfs mount` for real (FUSE on `/dev/fuse`, so root and the fuse module are needed; the
//! test says so and passes without them, unless PNFS_REQUIRE_FUSE is set, as the test command
//! sets it) against `pnfs server` with three data servers:
//! a 20 MiB file written and read back through std::fs (sha256), 2,000 files created,
//! listed, renamed and removed, directories, links, a fifo, chmod and truncate with stat,
//! errno of the usual failures, the bytes going to the data servers (the client's counters,
//! printed with -v at unmount), and unmounting by SIGTERM and by `umount`.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use support::*;

const MIB: usize = 1 << 20;

fn sha256(b: &[u8]) -> Vec<u8> {
    Sha256::digest(b).to_vec()
}

fn fuse_usable() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    root && Path::new("/dev/fuse").exists()
}

fn mounted(at: &Path) -> bool {
    let at = at.canonicalize().unwrap();
    fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(at.to_str().unwrap()))
}

/// `pnfs mount -v URL DIR` as a child (stderr to `log`), once the mount is up.
fn start_mount(url: &str, at: &Path, log: &Path) -> Child {
    let child = Command::new(PNFS)
        .args(["mount", "-v", url, path_str(at)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !mounted(at) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "not mounted after 30 s: {}",
            fs::read_to_string(log).unwrap_or_default()
        );
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

/// A number after `label` in the -v counters line (`data servers: wrote 123 B`).
fn counter(log: &str, label: &str) -> u64 {
    let at = log
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {log}"));
    log[at + label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {log}"))
}

fn errno_of(r: std::io::Result<impl Sized>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

#[test]
fn mount_serves_the_core_file_operations() {
    if !fuse_usable() {
        assert!(
            std::env::var_os("PNFS_REQUIRE_FUSE").is_none(),
            "PNFS_REQUIRE_FUSE is set but FUSE is not usable (needs root and /dev/fuse)"
        );
        eprintln!("skipped: needs root and /dev/fuse");
        return;
    }
    let server = Server::start();
    let base = tempfile::tempdir().unwrap();
    let mnt: PathBuf = base.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let log = base.path().join("mount.log");
    let child = start_mount(&server.url("/"), &mnt, &log);

    // A 20 MiB file through std::fs, read back whole and in part.
    let big = noise(20 * MIB, 7);
    let t = Instant::now();
    fs::write(mnt.join("big"), &big).unwrap();
    let wrote = t.elapsed();
    let t = Instant::now();
    let back = fs::read(mnt.join("big")).unwrap();
    let read = t.elapsed();
    assert_eq!(back.len(), big.len());
    assert!(sha256(&back) == sha256(&big), "20 MiB read back differs");
    eprintln!(
        "20 MiB: write {:.1} MB/s, read {:.1} MB/s (debug build)",
        20.0 * 1.048_576 / wrote.as_secs_f64(),
        20.0 * 1.048_576 / read.as_secs_f64()
    );
    let mut f = fs::File::open(mnt.join("big")).unwrap();
    f.seek(SeekFrom::Start(5 * MIB as u64 + 3)).unwrap();
    let mut part = vec![0; 4096];
    f.read_exact(&mut part).unwrap();
    assert_eq!(part, big[5 * MIB + 3..5 * MIB + 3 + 4096]);
    drop(f);
    // The same bytes through the library path (`pnfs cat` on its own client).
    let via_cat = pnfs(&["cat", &server.url("/big")]);
    assert!(via_cat.status.success());
    assert!(sha256(&via_cat.stdout) == sha256(&big));

    // O_EXCL, O_APPEND, O_TRUNC.
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

    // chmod, truncate (through an open file and by path), stat.
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o600);
    let f = fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(10_000).unwrap();
    assert_eq!(f.metadata().unwrap().len(), 10_000);
    drop(f);
    assert_eq!(fs::metadata(&p).unwrap().len(), 10_000);
    let data = fs::read(&p).unwrap();
    assert_eq!(&data[..3], b"new");
    assert!(data[3..].iter().all(|b| *b == 0));
    fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(2)
        .unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"ne");

    // Directories, 2,000 entries, rename, unlink.
    let d = mnt.join("many");
    fs::create_dir(&d).unwrap();
    for i in 0..2000 {
        fs::write(d.join(format!("f{i:04}")), format!("{i}")).unwrap();
    }
    let names: BTreeSet<String> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let want: BTreeSet<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    assert_eq!(names, want);
    for i in (0..2000).step_by(2) {
        fs::rename(d.join(format!("f{i:04}")), d.join(format!("r{i:04}"))).unwrap();
    }
    assert_eq!(fs::read_to_string(d.join("r1998")).unwrap(), "1998");
    assert_eq!(errno_of(fs::metadata(d.join("f1998"))), libc::ENOENT);
    assert_eq!(errno_of(fs::remove_dir(&d)), libc::ENOTEMPTY);
    for e in fs::read_dir(&d).unwrap() {
        fs::remove_file(e.unwrap().path()).unwrap();
    }
    assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    fs::remove_dir(&d).unwrap();
    assert_eq!(errno_of(fs::metadata(&d)), libc::ENOENT);

    // Rename over an existing file, into another directory.
    fs::create_dir(mnt.join("a")).unwrap();
    fs::write(mnt.join("a/x"), b"x").unwrap();
    fs::write(mnt.join("y"), b"y").unwrap();
    fs::rename(mnt.join("y"), mnt.join("a/x")).unwrap();
    assert_eq!(fs::read(mnt.join("a/x")).unwrap(), b"y");
    assert_eq!(errno_of(fs::remove_file(mnt.join("a"))), libc::EISDIR);
    assert_eq!(errno_of(fs::remove_dir(mnt.join("a/x"))), libc::ENOTDIR);

    // Hard link, symlink, fifo; unlink of an open file.
    fs::hard_link(mnt.join("a/x"), mnt.join("hl")).unwrap();
    assert_eq!(fs::metadata(mnt.join("hl")).unwrap().nlink(), 2);
    assert_eq!(
        fs::metadata(mnt.join("hl")).unwrap().ino(),
        fs::metadata(mnt.join("a/x")).unwrap().ino()
    );
    std::os::unix::fs::symlink("a/x", mnt.join("sl")).unwrap();
    assert_eq!(fs::read_link(mnt.join("sl")).unwrap(), Path::new("a/x"));
    assert_eq!(fs::read(mnt.join("sl")).unwrap(), b"y");
    let fifo = mnt.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    let mut open = fs::File::open(mnt.join("hl")).unwrap();
    fs::remove_file(mnt.join("hl")).unwrap();
    let mut s = String::new();
    open.read_to_string(&mut s).unwrap();
    assert_eq!(s, "y");
    drop(open);

    // Close-to-open against another client (`pnfs put`): a re-open sees its bytes, of the
    // same size (the kernel's cached pages must go) and longer (its cached size too).
    let cto = mnt.join("cto");
    fs::write(&cto, b"first version").unwrap();
    assert_eq!(fs::read(&cto).unwrap(), b"first version");
    let local = base.path().join("cto.local");
    fs::write(&local, b"SECOND version").unwrap();
    ok(&["put", path_str(&local), &server.url("/cto")]);
    assert_eq!(fs::read(&cto).unwrap(), b"SECOND version");
    fs::write(&local, b"third, a longer version").unwrap();
    ok(&["put", path_str(&local), &server.url("/cto")]);
    assert_eq!(fs::read(&cto).unwrap(), b"third, a longer version");

    // statfs answers.
    let df = Command::new("df").arg(&mnt).output().unwrap();
    assert!(df.status.success(), "df: {df:?}");

    // SIGTERM: unmounted, exit 0, the counters show the bytes went to the data servers.
    let pid = child.id().to_string();
    assert!(Command::new("kill").arg(&pid).status().unwrap().success());
    let status = wait(child, &log);
    let out = fs::read_to_string(&log).unwrap();
    assert!(status.success(), "pnfs mount: {status:?}: {out}");
    assert!(!mounted(&mnt));
    let ds_written = counter(&out, "data servers: wrote");
    let mds_written = counter(&out, "MDS: wrote");
    assert!(
        ds_written >= 20 * MIB as u64,
        "data servers got {ds_written} B: {out}"
    );
    assert!(
        mds_written < MIB as u64,
        "the MDS got {mds_written} B of writes: {out}"
    );

    // An outside umount ends the process too (exit 0); what was written is there.
    let child = start_mount(&server.url("/"), &mnt, &log);
    assert_eq!(fs::read(mnt.join("a/x")).unwrap(), b"y");
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    let status = wait(child, &log);
    assert!(status.success(), "{}", fs::read_to_string(&log).unwrap());
    // And `fusermount3 -u`, where installed (scripts/test.sh installs it).
    if Command::new("fusermount3").arg("-V").output().is_ok() {
        let child = start_mount(&server.url("/a"), &mnt, &log);
        assert_eq!(fs::read(mnt.join("x")).unwrap(), b"y");
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
}
