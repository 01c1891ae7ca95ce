//! `pnfs lock`: take a byte-range lock on a server's file (waiting while another client holds
//! a conflicting one), say so, hold it for a time, while a command runs, or until
//! interrupted, then release it. The library renews the lease meanwhile; if this process dies,
//! the server releases the lock when the lease expires (RFC 8881 section 8.3).

use std::time::Duration;

use client::{LockKind, OpenOptions};
use nfs_proto::nfs4::NfsStat4;

use super::{parse_url, Clients, CmdResult, Failure, LockArgs, EXIT_ERROR};

/// The byte range as people read it: `bytes 0..` or `bytes 10..15`.
fn range(offset: u64, len: u64) -> String {
    if len == 0 {
        format!("bytes {offset}..")
    } else {
        format!("bytes {offset}..{}", offset.saturating_add(len))
    }
}

/// Takes, holds and releases the lock.
pub(super) async fn lock(clients: &mut Clients, a: &LockArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let c = clients.get(&url).await?;
    // A write lock needs an open for writing (RFC 8881 section 18.10.4: NFS4ERR_OPENMODE).
    let (how, kind, kind_name) = if a.read {
        (OpenOptions::read(), LockKind::Read, "read")
    } else {
        (OpenOptions::read_write(), LockKind::Write, "write")
    };
    let f = c
        .open(&url.path, &how)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    let what = format!("{kind_name} lock on {url} {}", range(a.offset, a.len));
    let taken = match f.try_lock(kind, a.offset, a.len).await {
        Err(e) if e.is(NfsStat4::NFS4ERR_DENIED) => {
            eprintln!("pnfs: waiting for the {what} (another client holds a conflicting lock)");
            f.lock(kind, a.offset, a.len).await
        }
        r => r,
    };
    if let Err(e) = taken {
        let _ = f.close().await;
        return Err(Failure::nfs(&url, &e));
    }
    eprintln!("pnfs: acquired the {what}");
    let held = hold(a).await;
    let unlocked = f.unlock(a.offset, a.len).await;
    let closed = f.close().await;
    let code = held?;
    unlocked.map_err(|e| Failure::nfs(&url, &e))?;
    closed.map_err(|e| Failure::nfs(&url, &e))?;
    eprintln!("pnfs: released the {what}");
    match code {
        0 => Ok(()),
        code => Err(Failure {
            code,
            message: String::new(),
        }),
    }
}

/// Holds: runs the command (its exit code), sleeps, or waits for Ctrl-C. Ctrl-C ends the
/// wait in every case so the lock is released rather than left to lease expiry.
async fn hold(a: &LockArgs) -> CmdResult<u8> {
    let interrupted = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    if let Some((prog, args)) = a.command.split_first() {
        let mut child = tokio::process::Command::new(prog)
            .args(args)
            .spawn()
            .map_err(|e| Failure::io(format!("running {prog}"), &e))?;
        let status = tokio::select! {
            s = child.wait() => s.map_err(|e| Failure::io(format!("waiting for {prog}"), &e))?,
            () = interrupted => {
                let _ = child.kill().await;
                return Ok(130);
            }
        };
        // A command killed by a signal: 128 + the signal, as shells report it.
        let code = status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            status.signal().map_or(i32::from(EXIT_ERROR), |s| 128 + s)
        });
        return Ok(u8::try_from(code).unwrap_or(EXIT_ERROR));
    }
    match a.hold {
        Some(secs) => tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(secs)) => Ok(0),
            () = interrupted => Ok(130),
        },
        None => {
            eprintln!("pnfs: holding it until interrupted (Ctrl-C)");
            interrupted.await;
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_print_open_ended_for_zero_length() {
        assert_eq!(range(0, 0), "bytes 0..");
        assert_eq!(range(10, 5), "bytes 10..15");
        assert_eq!(
            range(u64::MAX, 5),
            format!("bytes {}..{}", u64::MAX, u64::MAX)
        );
    }
}
