//! READ, WRITE and COMMIT: the MDS's I/O for clients without a layout. They name an object
//! and carry no stateid; they run where the NFS side's do (`nfs_server::io::object_io`).

use super::*;

impl ControlService {
    /// READ: up to `count` bytes (at most [`MAX_CTL_IO`]) of the object, read until that much
    /// or the object's end, so a short reply always has `eof` (the rest of the range is a
    /// hole of the file, which the MDS fills with zeros).
    pub(super) async fn read(&self, a: CtlReadArgs) -> CtlReadRes {
        let want = a.count.min(MAX_CTL_IO);
        let r = object_io(&self.store, move |store| {
            let id = object_id(a.object);
            let first = store.read(id, a.offset, want)?;
            if first.eof || first.data.len() >= want as usize {
                return Ok(first);
            }
            // A backend may return less than asked before the end (a per-read cap): read on.
            let mut buf = bytes::BytesMut::from(&first.data[..]);
            let mut eof = false;
            while !eof && buf.len() < want as usize {
                let at = a.offset.saturating_add(buf.len() as u64);
                let more = store.read(id, at, want - buf.len() as u32)?;
                eof = more.eof || more.data.is_empty();
                buf.extend_from_slice(&more.data);
            }
            Ok(pfs_core::ReadDone {
                data: buf.freeze(),
                eof,
            })
        })
        .await;
        match r {
            Ok(done) => CtlReadRes::Ok(CtlReadOk {
                eof: done.eof,
                data: done.data,
            }),
            Err(s) => CtlReadRes::Err(CtlStat(s.0)),
        }
    }

    /// WRITE: the data at the offset, as durable as asked; the verifier is the store's after
    /// the write.
    pub(super) async fn write(&self, a: CtlWriteArgs) -> CtlWriteRes {
        let Some(stable) = Stability::from_u32(a.stable) else {
            return CtlWriteRes::Err(CtlStat::CTL_INVAL);
        };
        if a.data.is_empty() {
            return CtlWriteRes::Ok(CtlWriteOk {
                count: 0,
                committed: Stability::FileSync.as_u32(),
                verifier: self.store.verifier(),
            });
        }
        let (id, offset, data) = (object_id(a.object), a.offset, a.data);
        match object_write(&self.store, id, move |s| {
            s.write(id, offset, &[data], stable)
        })
        .await
        {
            Ok(done) => CtlWriteRes::Ok(CtlWriteOk {
                // At most MAX_CTL_IO, as the data was.
                count: u32::try_from(done.count).unwrap_or(u32::MAX),
                committed: done.committed.as_u32(),
                verifier: self.store.verifier(),
            }),
            Err(s) => CtlWriteRes::Err(CtlStat(s.0)),
        }
    }

    /// COMMIT: earlier writes to the object made durable; the verifier is the store's after.
    pub(super) async fn commit(&self, a: CtlCommitArgs) -> CtlCommitRes {
        let (id, offset, len) = (object_id(a.object), a.offset, u64::from(a.count));
        match object_io(&self.store, move |s| s.commit(id, offset, len)).await {
            Ok(()) => CtlCommitRes::Ok(CtlCommitOk {
                verifier: self.store.verifier(),
            }),
            Err(s) => CtlCommitRes::Err(CtlStat(s.0)),
        }
    }
}
