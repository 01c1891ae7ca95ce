//! What the tests of the `pnfs` binary share: a `pnfs server` child process (an MDS and three
//! data servers on free loopback ports) and running `pnfs` commands against it.
// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const PNFS: &str = env!("CARGO_BIN_EXE_pnfs");

/// A loopback port free now and never handed out before by this process: the kernel may
/// give the same ephemeral port to two binds in a row once the first listener is closed, and
/// tests starting servers at once would then configure one port twice.
pub(crate) fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A `pnfs server` child with its own data directory; killed when dropped.
pub(crate) struct Server {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
    mds: u16,
    metrics: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub(crate) fn start() -> Server {
        Self::start_with("")
    }

    /// [`Self::start`] with more top-level configuration (YAML lines: `exports:`, ...).
    pub(crate) fn start_with(extra_yaml: &str) -> Server {
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
        yaml.push_str(extra_yaml);
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
            mds,
            metrics,
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

    /// The server process's id.
    #[allow(dead_code)] // not every test binary that shares this module uses it
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The MDS's address.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.mds))
    }

    /// The MDS's metrics page now.
    pub(crate) fn metrics(&self) -> String {
        metrics_page(self.metrics)
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub(crate) fn local(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

pub(crate) fn metrics_page(port: u16) -> String {
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
pub(crate) fn pnfs(args: &[&str]) -> Output {
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
pub(crate) fn ok(args: &[&str]) -> String {
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
pub(crate) fn noise(len: usize, seed: u64) -> Vec<u8> {
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

pub(crate) fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The sum of the samples on a metrics page named `name` that carry these labels (and any
/// others); 0 when none does.
pub(crate) fn metric_sum(page: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(key, _)| {
            key.split('{').next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| key.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .sum()
}
