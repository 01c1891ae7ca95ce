//! Random reads through the library, for comparing with the same on a `pnfs mount`
//! (`scripts/bench-mount.sh` runs both):
//!
//! ```sh
//! cargo run --release -p client --example randread -- HOST:PORT /path/in/export BLOCK COUNT JOBS
//! ```
//!
//! Opens the file, reads COUNT blocks of BLOCK bytes at random aligned offsets with JOBS
//! reads in flight (each job its own `File`, so no read is served from another's cache),
//! and prints the reads per second and the bytes per second.

use std::net::SocketAddr;
use std::time::Instant;

use client::{Client, ClientOptions, OpenOptions};

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> T {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("argument {i}: {what}"))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr: SocketAddr = arg(&args, 1, "HOST:PORT");
    let path = args.get(2).expect("argument 2: path").clone();
    let block: u64 = arg(&args, 3, "block size");
    let count: u64 = arg(&args, 4, "reads");
    let jobs: u64 = arg(&args, 5, "reads in flight");
    let c = Client::connect_with(addr, ClientOptions::default())
        .await
        .expect("connect");
    let size = c.stat(&path).await.expect("stat").size;
    let blocks = size / block;
    assert!(blocks > 0, "{path} is smaller than one block");
    let t = Instant::now();
    let mut tasks = Vec::new();
    for j in 0..jobs {
        let f = c.open(&path, &OpenOptions::read()).await.expect("open");
        tasks.push(tokio::spawn(async move {
            // xorshift: a different sequence per job, no dependency.
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (j + 1);
            let mut n = 0u64;
            for _ in 0..count / jobs {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let b = f.read_at((x % blocks) * block, block).await.expect("read");
                n += b.len() as u64;
            }
            f.close().await.expect("close");
            n
        }));
    }
    let mut bytes = 0;
    for t in tasks {
        bytes += t.await.expect("a job");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "library randread: {} reads of {block} B in {secs:.2} s: {:.0} reads/s, {:.1} MB/s",
        count / jobs * jobs,
        (count / jobs * jobs) as f64 / secs,
        bytes as f64 / secs / 1e6
    );
    c.shutdown().await;
}
