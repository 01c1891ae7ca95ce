//! Byte-range locks of a [`File`]: POSIX locks on behalf of many lock owners (`lock_as` and
//! its siblings, for a FUSE mount: fcntl's F_SETLK, F_SETLKW and F_GETLK, and flock), and
//! the client-wide owner's (`lock`, `try_lock`, `unlock`: the command line's `pnfs lock`).
//! The owners' state, shared by the Files of one file, and its requests are in `locks.rs`.

use std::future::Future;
use std::time::Instant;

use super::*;
use crate::client::LockKind;
use crate::deleg::ServerOpen;
use crate::locks::{span, Conflict};

/// The longest pause between two tries of a lock another owner holds.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// How often a wait for a lock asks whether to go on waiting.
const ASK_EVERY: Duration = Duration::from_millis(50);

impl File {
    /// Takes a lock of the client-wide owner, waiting while another owner holds a
    /// conflicting one (another client, or an owner of [`File::lock_as`]). `len == 0` locks
    /// to the end of the file. All Files of the file in this client share the owner: they
    /// never conflict with each other, and the close of any of them releases its locks
    /// ([`File::close`]).
    pub async fn lock(&self, kind: LockKind, offset: u64, len: u64) -> Result<()> {
        self.take(LockOwner::Client, kind, (offset, len), true, || true)
            .await
    }

    /// Takes a lock of the client-wide owner ([`File::lock`]) or fails at once with
    /// NFS4ERR_DENIED.
    pub async fn try_lock(&self, kind: LockKind, offset: u64, len: u64) -> Result<()> {
        self.take(LockOwner::Client, kind, (offset, len), false, || true)
            .await
    }

    /// Releases the client-wide owner's locks on `offset..offset + len` (`len == 0`: to the
    /// end of the file).
    pub async fn unlock(&self, offset: u64, len: u64) -> Result<()> {
        self.give(LockOwner::Client, (offset, len)).await
    }

    /// Takes, or changes, a lock of `owner` on `offset..offset + len` (`len == 0`: to the end
    /// of the file), as fcntl's F_SETLK does for a process: what `owner` held there is
    /// replaced (a read lock over its write lock downgrades it, a write lock over its read
    /// lock upgrades it; touching locks of one kind merge). Locks of other owners conflict,
    /// of this client or not. A conflict fails at once with NFS4ERR_DENIED (errno EAGAIN),
    /// unless `wait` (F_SETLKW): then the lock is tried again, after pauses growing to a
    /// second or as soon as another owner of this client unlocks part of the file, while
    /// `keep_waiting` says so (it is asked every 50 ms); when it says stop,
    /// [`Error::Interrupted`] (EINTR). It is asked between tries, never during one: a LOCK
    /// sent is always answered and recorded, even when the caller stops waiting for this
    /// call (the request runs in a task of its own).
    ///
    /// The owner's locks are the same through every File of the file in this client (POSIX
    /// locks are the process's); closing a File does not release them
    /// ([`File::release_owner`] does).
    pub async fn lock_as(
        &self,
        owner: u64,
        kind: LockKind,
        offset: u64,
        len: u64,
        wait: bool,
        keep_waiting: impl FnMut() -> bool,
    ) -> Result<()> {
        self.take(
            LockOwner::Posix(owner),
            kind,
            (offset, len),
            wait,
            keep_waiting,
        )
        .await
    }

    /// Releases `owner`'s locks on `offset..offset + len` (`len == 0`: to the end of the
    /// file); a lock partly inside keeps the part outside (POSIX). Sends nothing when the
    /// owner holds nothing there.
    pub async fn unlock_as(&self, owner: u64, offset: u64, len: u64) -> Result<()> {
        self.give(LockOwner::Posix(owner), (offset, len)).await
    }

    /// F_GETLK: whether `owner` could take `kind` on `offset..offset + len` (LOCKT). `None`
    /// when nothing is in the way (the owner's own locks never are), else one lock that is,
    /// with its holder: another owner of this client (which one) or another client.
    pub async fn test_lock_as(
        &self,
        owner: u64,
        kind: LockKind,
        offset: u64,
        len: u64,
    ) -> Result<Option<Conflict>> {
        let range = span(offset, len)?;
        self.client
            .inner
            .test_lock(&self.open.fh, LockOwner::Posix(owner), kind, range)
            .await
    }

    /// Releases every lock `owner` holds on the file and frees its lock state on the server
    /// (POSIX's close, flock's release), whichever File took them. Sends nothing when it
    /// holds none.
    pub async fn release_owner(&self, owner: u64) -> Result<()> {
        self.give(LockOwner::Posix(owner), (0, 0)).await
    }

    /// Takes a lock of `owner`, trying again while `wait` and `keep_waiting` say so.
    async fn take(
        &self,
        owner: LockOwner,
        kind: LockKind,
        (offset, len): (u64, u64),
        wait: bool,
        mut keep_waiting: impl FnMut() -> bool,
    ) -> Result<()> {
        let range = span(offset, len)?;
        let mut pause = Duration::from_millis(50);
        loop {
            let released = self.open.server.locks.released();
            tokio::pin!(released);
            released.as_mut().enable();
            let denied = self
                .owner_request(owner, move |inner, so| async move {
                    inner.lock_once(&so, owner, kind, range, wait).await
                })
                .await?;
            if denied.is_none() {
                return Ok(());
            }
            if !wait {
                return Err(nfs_err(NfsOpnum4::OP_LOCK, NfsStat4::NFS4ERR_DENIED));
            }
            // Waits `pause`, or until an owner of this client unlocks, asking every
            // ASK_EVERY whether to go on.
            let until = tokio::time::Instant::now() + pause;
            loop {
                if !keep_waiting() {
                    return Err(Error::Interrupted);
                }
                let now = tokio::time::Instant::now();
                if now >= until {
                    break;
                }
                tokio::select! {
                    () = &mut released => break,
                    () = tokio::time::sleep((until - now).min(ASK_EVERY)) => {}
                }
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// Releases `owner`'s locks on a range.
    async fn give(&self, owner: LockOwner, (offset, len): (u64, u64)) -> Result<()> {
        let range = span(offset, len)?;
        self.owner_request(owner, move |inner, so| async move {
            inner.unlock_once(&so, owner, range).await
        })
        .await
    }

    /// Runs `request` (one LOCK or LOCKU of `owner`, in its turn) in a task of its own, so
    /// that its reply is recorded however this call ends. Tries again through the grace
    /// period after a server restart (waiting between tries, outside the owner's turn), and
    /// after lost state: the open is re-established if the server lost it (and with it the
    /// owners' locks), or else the owner's lock state alone is found gone. And at once after
    /// NFS4ERR_OLD_STATEID: another OPEN of the file by this client (its Files share one
    /// server open) moved the open stateid's seqid while the LOCK carried the one before,
    /// and a server may hold it to the newest (nfs-ganesha does, in open_to_lock_owner).
    async fn owner_request<T, Fut>(
        &self,
        owner: LockOwner,
        request: impl Fn(Arc<Inner>, Arc<ServerOpen>) -> Fut,
    ) -> Result<T>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let inner = &self.client.inner;
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        let mut lost = 0;
        let mut old = 0;
        loop {
            let task = tokio::spawn(request(inner.clone(), self.open.server.clone()));
            let r = task.await.map_err(|e| {
                Error::Io(std::io::Error::other(format!(
                    "a lock request did not finish: {e}"
                )))
            })?;
            match r {
                Err(e)
                    if e.is(NfsStat4::NFS4ERR_GRACE)
                        && started.elapsed() < inner.opts.retry_limit =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                Err(e) if e.is(NfsStat4::NFS4ERR_OLD_STATEID) && old < 10 => {
                    old += 1;
                    tracing::debug!(path = %self.open.path, "lock: {e}; again with the newest stateid");
                    tokio::task::yield_now().await;
                }
                Err(e) if e.is_state_lost() && lost < 5 => {
                    lost += 1;
                    tracing::info!(path = %self.open.path, "lock state lost ({e}); re-establishing");
                    tokio::time::sleep(Duration::from_millis(50 * lost)).await;
                    self.open.reclaim(inner, &inner.mds).await?;
                    inner.check_lock_state(&self.open.server, owner).await;
                }
                r => return r,
            }
        }
    }
}
