//! The peer tests' support: testkit's raw NFSv4.1 client against server processes
//! (nfs-ganesha, `pnfs server`), with a limit on every COMPOUND so a hung peer fails the test
//! and names itself. It shows that a peer speaks NFSv4.1 before the Rust client's own tests
//! rely on it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use testkit::{Client, Setup};

/// How long one COMPOUND may take before the test gives up on the server.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `f` to completion on a small runtime of its own (the tests are plain `#[test]`s, so
/// that starting a server, which blocks, runs on no runtime thread).
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// Connects, sets up a session for client owner `owner`, and sends RECLAIM_COMPLETE (RFC
/// 8881 section 18.51: a client with nothing to reclaim says so before its first OPEN); every
/// COMPOUND may take up to 20 s.
pub(crate) async fn client(addr: SocketAddr, owner: &str) -> Client {
    Client::connect(addr, &Setup::new(owner).timeout(CALL_TIMEOUT)).await
}
