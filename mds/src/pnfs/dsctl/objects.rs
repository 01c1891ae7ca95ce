//! The control procedures on objects' data and space: READ, WRITE and COMMIT (I/O through
//! the MDS, `crate::pnfs::datapath`), COPY and CLONE (server-side copies,
//! `crate::state::copies`), ALLOCATE, DEALLOCATE, SEEK and OBJECT_SPACE (space and extents,
//! `crate::pnfs::dsspace`).
//!
//! Apart from [`super`] (the connection, its authentication, and the procedures that keep a
//! data server's state in step with the MDS) because these carry file data and are called
//! from the data path, not from the registry.

use bytes::Bytes;
use nfs_proto::control::{
    CtlCommitArgs, CtlCommitRes, CtlCopyArgs, CtlCopyRes, CtlDeallocateRes, CtlDeallocated,
    CtlObjectSpace, CtlProc, CtlReadArgs, CtlReadOk, CtlReadRes, CtlSeekArgs, CtlSeekRes,
    CtlSeekWhat, CtlSpaceArgs, CtlWriteArgs, CtlWriteRes, ObjectSpaceArgs, ObjectSpaceRes,
    MAX_CTL_COPY, MAX_CTL_IO,
};
use nfs_proto::xdr;
use pfs_core::{Deallocated, ObjectId, SeekWhat, Stability};

use super::{ctl_object, CtlError, DsControl};

impl DsControl {
    /// READ: up to `count` bytes (at most `MAX_CTL_IO`) of `object` at `offset`. The reply
    /// is short only at the object's end (`eof`); the data is a slice of the reply record.
    pub async fn read(
        &self,
        object: ObjectId,
        offset: u64,
        count: u32,
    ) -> Result<CtlReadOk, CtlError> {
        if count > MAX_CTL_IO {
            return Err(CtlError::TooLong(count as usize));
        }
        let args = CtlReadArgs {
            object: ctl_object(object),
            offset,
            count,
        };
        match self.call(CtlProc::CTLPROC_READ, &args).await? {
            CtlReadRes::Ok(ok) if ok.data.len() > count as usize => Err(CtlError::Mismatch(
                format!("READ of {count} bytes answered {}", ok.data.len()),
            )),
            CtlReadRes::Ok(ok) if ok.data.len() < count as usize && !ok.eof => {
                Err(CtlError::Mismatch(format!(
                    "READ of {count} bytes answered {} before the object's end",
                    ok.data.len()
                )))
            }
            CtlReadRes::Ok(ok) => Ok(ok),
            CtlReadRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// WRITE: the concatenation of `data` (at most `MAX_CTL_IO` bytes) at `offset` of
    /// `object`, as durable as `stable` asks. The pieces are sent as they are, not joined:
    /// slices of a client's WRITE go from its record to the data server's socket.
    pub async fn write(
        &self,
        object: ObjectId,
        offset: u64,
        stable: Stability,
        data: &[Bytes],
    ) -> Result<Written, CtlError> {
        let len: usize = data.iter().map(Bytes::len).sum();
        if len > MAX_CTL_IO as usize {
            return Err(CtlError::TooLong(len));
        }
        let results = self
            .call_raw(CtlProc::CTLPROC_WRITE, |_, _| {
                CtlWriteArgs::encode_gathered(ctl_object(object), offset, stable.as_u32(), data)
            })
            .await?;
        match xdr::from_bytes::<CtlWriteRes>(results).map_err(CtlError::Decode)? {
            CtlWriteRes::Ok(ok) => {
                let committed = Stability::from_u32(ok.committed).ok_or_else(|| {
                    CtlError::Mismatch(format!("WRITE committed as {}", ok.committed))
                })?;
                if ok.count as usize > len {
                    return Err(CtlError::Mismatch(format!(
                        "WRITE of {len} bytes answered {}",
                        ok.count
                    )));
                }
                Ok(Written {
                    count: ok.count,
                    committed,
                    verifier: ok.verifier,
                })
            }
            CtlWriteRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// COMMIT: earlier writes to `object` durable (`count` 0: to its end); returns the data
    /// server's write verifier after the commit.
    pub async fn commit(
        &self,
        object: ObjectId,
        offset: u64,
        count: u32,
    ) -> Result<[u8; 8], CtlError> {
        let args = CtlCommitArgs {
            object: ctl_object(object),
            offset,
            count,
        };
        match self.call(CtlProc::CTLPROC_COMMIT, &args).await? {
            CtlCommitRes::Ok(ok) => Ok(ok.verifier),
            CtlCommitRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// COPY: `[src_offset, src_offset + count)` of `src` to `dst` at `dst_offset` inside this
    /// data server, durable on return; `count` at most `MAX_CTL_COPY` (the caller cuts longer
    /// copies). Returns the bytes copied (short only at the source object's end).
    pub async fn copy(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_offset: u64,
        dst_offset: u64,
        count: u64,
    ) -> Result<u64, CtlError> {
        if count > MAX_CTL_COPY {
            return Err(CtlError::TooLong(
                usize::try_from(count).unwrap_or(usize::MAX),
            ));
        }
        let args = CtlCopyArgs {
            src: ctl_object(src),
            dst: ctl_object(dst),
            src_offset,
            dst_offset,
            count,
        };
        match self.call(CtlProc::CTLPROC_COPY, &args).await? {
            CtlCopyRes::Ok(ok) if ok.copied > count => Err(CtlError::Mismatch(format!(
                "COPY of {count} bytes answered {}",
                ok.copied
            ))),
            CtlCopyRes::Ok(ok) => Ok(ok.copied),
            CtlCopyRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// CLONE: reflink of `[src_offset, src_offset + count)` of `src` into `dst` at
    /// `dst_offset`, durable on return; `Status(CTL_NOTSUPP)` where the store cannot.
    pub async fn clone_range(
        &self,
        src: ObjectId,
        dst: ObjectId,
        src_offset: u64,
        dst_offset: u64,
        count: u64,
    ) -> Result<(), CtlError> {
        let args = CtlCopyArgs {
            src: ctl_object(src),
            dst: ctl_object(dst),
            src_offset,
            dst_offset,
            count,
        };
        self.status_call(CtlProc::CTLPROC_CLONE, &args).await
    }
    /// ALLOCATE: reserves `[offset, offset + length)` of `object` (growing it if the range
    /// ends past its size); durable when this returns.
    pub async fn allocate(
        &self,
        object: ObjectId,
        offset: u64,
        length: u64,
    ) -> Result<(), CtlError> {
        let args = CtlSpaceArgs {
            object: ctl_object(object),
            offset,
            length,
        };
        self.status_call(CtlProc::CTLPROC_ALLOCATE, &args).await
    }

    /// DEALLOCATE: `[offset, offset + length)` of `object` (clipped to its size) reads as
    /// zeros, durably; returns how the data server did it.
    pub async fn deallocate(
        &self,
        object: ObjectId,
        offset: u64,
        length: u64,
    ) -> Result<Deallocated, CtlError> {
        let args = CtlSpaceArgs {
            object: ctl_object(object),
            offset,
            length,
        };
        match self.call(CtlProc::CTLPROC_DEALLOCATE, &args).await? {
            CtlDeallocateRes::Ok(ok) => match ok.how {
                CtlDeallocated::CTL_DEALLOC_NOTHING => Ok(Deallocated::Nothing),
                CtlDeallocated::CTL_DEALLOC_PUNCHED => Ok(Deallocated::HolePunched),
                CtlDeallocated::CTL_DEALLOC_ZEROED => Ok(Deallocated::ZerosWritten),
                other => Err(CtlError::Mismatch(format!("DEALLOCATE done as {other:?}"))),
            },
            CtlDeallocateRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// SEEK: where the next data or hole of `object` at or after `offset` starts (object
    /// offsets), as [`pfs_core::ObjectStore::seek`] says: `None` past the end, or for data
    /// when only holes follow.
    pub async fn seek(
        &self,
        object: ObjectId,
        offset: u64,
        what: SeekWhat,
    ) -> Result<Option<u64>, CtlError> {
        let args = CtlSeekArgs {
            object: ctl_object(object),
            offset,
            what: match what {
                SeekWhat::Data => CtlSeekWhat::CTL_SEEK_DATA,
                SeekWhat::Hole => CtlSeekWhat::CTL_SEEK_HOLE,
            },
        };
        match self.call(CtlProc::CTLPROC_SEEK, &args).await? {
            CtlSeekRes::Ok(ok) if !ok.found => Ok(None),
            CtlSeekRes::Ok(ok) if ok.offset < offset => Err(CtlError::Mismatch(format!(
                "SEEK from {offset} answered {}",
                ok.offset
            ))),
            CtlSeekRes::Ok(ok) => Ok(Some(ok.offset)),
            CtlSeekRes::Err(s) => Err(CtlError::Status(s)),
        }
    }

    /// OBJECT_SPACE: the size and allocated bytes of each object, in order.
    pub async fn object_space(
        &self,
        objects: &[ObjectId],
    ) -> Result<Vec<CtlObjectSpace>, CtlError> {
        self.per_object(
            CtlProc::CTLPROC_OBJECT_SPACE,
            objects,
            |objects| ObjectSpaceArgs { objects },
            |res| match res {
                ObjectSpaceRes::Ok(ok) => Ok(ok.objects),
                ObjectSpaceRes::Err(s) => Err(s),
            },
            "answers",
        )
        .await
    }
}

/// What a control WRITE did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Bytes written.
    pub count: u32,
    /// How durable they are.
    pub committed: Stability,
    /// The data server's write verifier after the write.
    pub verifier: [u8; 8],
}
