//! Byte-range locks of a [`File`]: LOCK (waiting, or trying once) and LOCKU.

use super::*;

impl File {
    /// Takes a byte-range lock, waiting while another owner holds a conflicting one.
    /// `len == 0` locks to the end of the file.
    pub async fn lock(&self, kind: LockKind, offset: u64, len: u64) -> Result<()> {
        let mut pause = Duration::from_millis(50);
        loop {
            match self.try_lock(kind, offset, len).await {
                Err(e) if e.is(NfsStat4::NFS4ERR_DENIED) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                r => return r,
            }
        }
    }

    /// Takes a byte-range lock or fails at once with NFS4ERR_DENIED.
    pub async fn try_lock(&self, kind: LockKind, offset: u64, len: u64) -> Result<()> {
        let inner = &self.client.inner;
        self.with_state(false, |_| {
            self.open
                .send_lock(&inner.mds, &inner.owner, kind, offset, len, false)
        })
        .await
    }

    /// Releases a byte-range lock taken with the same `offset` and `len`.
    pub async fn unlock(&self, offset: u64, len: u64) -> Result<()> {
        let Some(stateid) = lock(&self.open.locks).stateid else {
            return Ok(());
        };
        let kind = lock(&self.open.locks)
            .held
            .iter()
            .find(|h| h.1 == offset && h.2 == len)
            .map_or(LockKind::Write, |h| h.0);
        let r = self
            .client
            .inner
            .mds
            .compound(vec![
                putfh(&self.open.fh),
                NfsArgop4::LockU(LockUArgs {
                    locktype: lock_type(kind, false),
                    seqid: 0,
                    lock_stateid: stateid,
                    offset,
                    length: nfs_len(len),
                }),
            ])
            .await?;
        let res = r.ok()?;
        let mut l = lock(&self.open.locks);
        if let Some(NfsResop4::LockU(LockURes::Ok(s))) = res.last() {
            l.stateid = Some(*s);
        }
        l.held.retain(|h| !(h.1 == offset && h.2 == len));
        Ok(())
    }
}
