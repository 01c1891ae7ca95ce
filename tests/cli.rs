//! The `pnfs` client commands against a `pnfs server` (MDS and three data servers in one
//! process, on free loopback ports), each command run as its own process as a user would.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const PNFS: &str = env!("CARGO_BIN_EXE_pnfs");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A `pnfs server` child with its own data directory; killed when dropped.
struct Server {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let (mds, metrics) = (free_port(), free_port());
        let mut yaml = format!(
            "listen: 127.0.0.1:{mds}\nmetrics_listen: 127.0.0.1:{metrics}\ndata_dir: {}\n\
             grace_time: 0\ncluster:\n  secret: {}\n  data_servers:\n",
            dir.path().join("data").display(),
            "5a".repeat(32)
        );
        for id in 1..=3 {
            yaml.push_str(&format!(
                "    - {{ id: {id}, addresses: [127.0.0.1:{}], control: 127.0.0.1:{} }}\n",
                free_port(),
                free_port()
            ));
        }
        let cfg = dir.path().join("pnfs.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        // The file holds the cluster secret: the server refuses it unless only its owner
        // can read it.
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(PNFS)
            .arg("server")
            .arg("--config")
            .arg(&cfg)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Server {
            child,
            url: format!("nfs://127.0.0.1:{mds}"),
            dir,
        };
        // Ready when the MDS counts its three data servers up (registered, answering).
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if metrics_page(metrics).contains("pnfs_data_servers{state=\"up\"} 3\n") {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not come up: {}",
                std::fs::read_to_string(server.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn metrics_page(port: u16) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
    let mut page = String::new();
    let _ = s.read_to_string(&mut page);
    page
}

/// Runs `pnfs args...` (with a time limit, so a hang fails the test instead of stalling it).
/// Its output is collected while it runs (a full pipe would stall it).
fn pnfs(args: &[&str]) -> Output {
    let child = Command::new(PNFS)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("pnfs {args:?} did not finish in 120 s");
        }
    }
}

/// Runs a command that must succeed; returns its stdout.
fn ok(args: &[&str]) -> String {
    let out = pnfs(args);
    assert!(
        out.status.success(),
        "pnfs {args:?}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Deterministic bytes that do not compress or repeat (xorshift64*).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v.truncate(len);
    v
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_five_mib_file_put_with_sha256_lists_with_its_size_and_comes_back_byte_for_byte() {
    let s = Server::start();
    ok(&["mkdir", "-p", &s.url("/in/deep")]);
    let data = noise(5 << 20, 7);
    let src = s.local("five.bin");
    std::fs::write(&src, &data).unwrap();
    let put = pnfs(&[
        "put",
        path_str(&src),
        &s.url("/in/deep/"),
        "--sha256",
        "--no-progress",
        "-v",
    ]);
    let stderr = String::from_utf8_lossy(&put.stderr);
    assert!(put.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&put.stdout);
    assert!(
        stdout.contains(&s.url("/in/deep/five.bin")),
        "the digest line names the destination: {stdout}"
    );
    // The bytes went to the data servers, not through the MDS.
    assert!(
        stderr.contains(&format!("data servers: wrote {} B", 5 << 20)),
        "{stderr}"
    );
    assert!(stderr.contains("MDS: wrote 0 B"), "{stderr}");

    let listing = ok(&["ls", "-l", &s.url("/in/deep")]);
    let line = listing
        .lines()
        .find(|l| l.ends_with(" five.bin"))
        .unwrap_or_else(|| panic!("five.bin not listed: {listing}"));
    assert!(line.starts_with("-rw"), "{line}");
    assert!(
        line.split_whitespace()
            .any(|w| w == (5u64 << 20).to_string()),
        "{line}"
    );

    let back = s.local("back.bin");
    let got = ok(&[
        "get",
        &s.url("/in/deep/five.bin"),
        path_str(&back),
        "--sha256",
    ]);
    assert_eq!(
        got.split_whitespace().next(),
        stdout.split_whitespace().next(),
        "the same digest both ways"
    );
    assert!(std::fs::read(&back).unwrap() == data, "bytes differ");

    // nfs -> nfs, then read back through cat.
    ok(&["cp", &s.url("/in/deep/five.bin"), &s.url("/copy.bin")]);
    let cat = pnfs(&["cat", &s.url("/copy.bin")]);
    assert!(cat.status.success());
    assert!(cat.stdout == data, "cat of the copy differs");
}

#[test]
fn small_files_cat_move_lock_and_remove() {
    let s = Server::start();
    let hello = s.local("hello.txt");
    std::fs::write(&hello, "hello, pnfs\n").unwrap();
    ok(&["mkdir", &s.url("/d")]);
    ok(&["put", path_str(&hello), &s.url("/d/h.txt")]);
    assert_eq!(ok(&["cat", &s.url("/d/h.txt")]), "hello, pnfs\n");

    ok(&["mv", &s.url("/d/h.txt"), &s.url("/moved.txt")]);
    let root = ok(&["ls", &s.url("/")]);
    assert_eq!(root.lines().collect::<Vec<_>>(), ["d", "moved.txt"]);
    assert_eq!(ok(&["ls", &s.url("/d")]), "");
    let stat = ok(&["stat", &s.url("/moved.txt")]);
    assert!(stat.contains("Size: 12\n"), "{stat}");
    assert!(stat.contains("Type: regular file"), "{stat}");

    let lock = pnfs(&["lock", &s.url("/moved.txt"), "--hold", "0"]);
    assert!(lock.status.success());
    assert!(
        String::from_utf8_lossy(&lock.stderr).contains("acquired the write lock"),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    // The command's exit code comes through.
    let lock = pnfs(&[
        "lock",
        &s.url("/moved.txt"),
        "--read",
        "--",
        "sh",
        "-c",
        "echo locked; exit 4",
    ]);
    assert_eq!(lock.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&lock.stdout), "locked\n");

    // A directory needs -r.
    let rm = pnfs(&["rm", &s.url("/d")]);
    assert_eq!(rm.status.code(), Some(1));
    ok(&["put", path_str(&hello), &s.url("/d/again.txt")]);
    ok(&["rm", "-r", &s.url("/d")]);
    ok(&["rm", &s.url("/moved.txt")]);
    assert_eq!(ok(&["ls", &s.url("/")]), "");
}

#[test]
fn errors_exit_with_distinct_codes_and_name_the_nfs_status() {
    let s = Server::start();
    let out = pnfs(&["stat", &s.url("/missing")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NFS4ERR_NOENT"), "{err}");
    assert!(err.contains(&s.url("/missing")), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = pnfs(&["get", &s.url("/missing"), path_str(&s.local("x"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPEN: NFS4ERR_NOENT"));

    // Usage errors: clap's own, and arguments that cannot go together.
    assert_eq!(pnfs(&["ls"]).status.code(), Some(2));
    assert_eq!(pnfs(&["cp", "a", "b"]).status.code(), Some(2));
    assert_eq!(pnfs(&["stat", "nfs:/x"]).status.code(), Some(2));
    let other = s.url("/x").replace("127.0.0.1", "localhost");
    assert_eq!(
        pnfs(&["mv", &s.url("/x"), &format!("{other}2")])
            .status
            .code(),
        Some(2)
    );
}
