//! The object procedures: size, truncation, removal, space (ALLOCATE, DEALLOCATE, SEEK,
//! OBJECT_SPACE) and server-side copies (COPY, CLONE), applied to the object store.

use super::*;

impl ControlService {
    pub(super) async fn object_size(&self, a: ObjectSizeArgs) -> ObjectSizeRes {
        let r = self
            .blocking(move |s| {
                a.objects
                    .iter()
                    .map(|o| {
                        s.size(ObjectId {
                            file: o.file,
                            stripe: o.stripe,
                        })
                    })
                    .collect::<Result<Vec<u64>, StoreError>>()
            })
            .await;
        match r {
            Some(Ok(sizes)) => ObjectSizeRes::Ok(ObjectSizeOk { sizes }),
            Some(Err(e)) => ObjectSizeRes::Err(store_stat(e)),
            None => ObjectSizeRes::Err(CtlStat::CTL_IO),
        }
    }

    pub(super) async fn truncate(&self, a: TruncateArgs) -> CtlStatusRes {
        let mut seen = HashSet::new();
        if !a.sizes.iter().all(|s| seen.insert(s.stripe)) {
            return status(CtlStat::CTL_INVAL);
        }
        // Before the objects change: a READ from now on does not trust the old end.
        let stripes: Vec<u32> = a.sizes.iter().map(|s| s.stripe).collect();
        self.target.truncated(a.file, &stripes, a.version);
        let r = self
            .blocking(move |s| {
                a.sizes.iter().try_for_each(|t| {
                    s.truncate(
                        ObjectId {
                            file: a.file,
                            stripe: t.stripe,
                        },
                        t.size,
                    )
                })
            })
            .await;
        status(match r {
            Some(Ok(())) => CtlStat::CTL_OK,
            Some(Err(e)) => store_stat(e),
            None => CtlStat::CTL_IO,
        })
    }

    pub(super) async fn remove(&self, a: RemoveArgs) -> RemoveRes {
        self.target.removed(&a.files);
        let r = self
            .blocking(move |s| {
                a.files
                    .iter()
                    .try_fold(0u64, |n, &f| s.remove_file(f).map(|k| n + u64::from(k)))
            })
            .await;
        match r {
            Some(Ok(objects_removed)) => RemoveRes::Ok(RemoveOk { objects_removed }),
            Some(Err(e)) => RemoveRes::Err(store_stat(e)),
            None => RemoveRes::Err(CtlStat::CTL_IO),
        }
    }

    /// ALLOCATE: the range reserved (the object grown if it ends past its size), durably.
    pub(super) async fn allocate(&self, a: CtlSpaceArgs) -> CtlStatusRes {
        let store = self.store.clone();
        let (id, offset, len) = (object_id(a.object), a.offset, a.length);
        status(
            match blocking(move || store.allocate(id, offset, len)).await {
                Ok(()) => CtlStat::CTL_OK,
                Err(s) => CtlStat(s.0),
            },
        )
    }

    /// DEALLOCATE: the range (clipped to the object's size) reads as zeros, durably; says
    /// how, so the MDS knows whether anything changed.
    pub(super) async fn deallocate(&self, a: CtlSpaceArgs) -> CtlDeallocateRes {
        let store = self.store.clone();
        let (id, offset, len) = (object_id(a.object), a.offset, a.length);
        match blocking(move || store.deallocate(id, offset, len)).await {
            Ok(how) => CtlDeallocateRes::Ok(CtlDeallocateOk {
                how: match how {
                    Deallocated::Nothing => CtlDeallocated::CTL_DEALLOC_NOTHING,
                    Deallocated::HolePunched => CtlDeallocated::CTL_DEALLOC_PUNCHED,
                    Deallocated::ZerosWritten => CtlDeallocated::CTL_DEALLOC_ZEROED,
                },
            }),
            Err(s) => CtlDeallocateRes::Err(CtlStat(s.0)),
        }
    }

    /// SEEK: the object's next data or hole at or after the offset (`lseek`).
    pub(super) async fn seek(&self, a: CtlSeekArgs) -> CtlSeekRes {
        let what = match a.what {
            CtlSeekWhat::CTL_SEEK_DATA => SeekWhat::Data,
            CtlSeekWhat::CTL_SEEK_HOLE => SeekWhat::Hole,
            _ => return CtlSeekRes::Err(CtlStat::CTL_INVAL),
        };
        let store = self.store.clone();
        let (id, offset) = (object_id(a.object), a.offset);
        match blocking(move || store.seek(id, offset, what)).await {
            Ok(found) => CtlSeekRes::Ok(CtlSeekOk {
                found: found.is_some(),
                offset: found.unwrap_or(0),
            }),
            Err(s) => CtlSeekRes::Err(CtlStat(s.0)),
        }
    }

    /// OBJECT_SPACE: each object's size and allocated bytes, in order.
    pub(super) async fn object_space(&self, a: ObjectSpaceArgs) -> ObjectSpaceRes {
        let r = self
            .blocking(move |s| {
                a.objects
                    .iter()
                    .map(|&o| {
                        let id = object_id(o);
                        Ok(CtlObjectSpace {
                            size: s.size(id)?,
                            allocated: s.space_used(id)?,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
            })
            .await;
        match r {
            Some(Ok(objects)) => ObjectSpaceRes::Ok(ObjectSpaceOk { objects }),
            Some(Err(e)) => ObjectSpaceRes::Err(store_stat(e)),
            None => ObjectSpaceRes::Err(CtlStat::CTL_IO),
        }
    }

    /// COPY: at most [`MAX_CTL_COPY`] bytes from one object to another, durable before the
    /// reply (the store syncs the destination), holes kept.
    pub(super) async fn copy(&self, a: CtlCopyArgs) -> CtlCopyRes {
        if a.count > MAX_CTL_COPY {
            return CtlCopyRes::Err(CtlStat::CTL_INVAL);
        }
        let store = self.store.clone();
        let (src, dst) = (object_id(a.src), object_id(a.dst));
        let (so, d, n) = (a.src_offset, a.dst_offset, a.count);
        match blocking(move || store.copy_range(src, dst, so, d, n)).await {
            Ok(copied) => {
                self.copy_bytes.fetch_add(copied, Ordering::Relaxed);
                CtlCopyRes::Ok(CtlCopyOk { copied })
            }
            Err(s) => CtlCopyRes::Err(CtlStat(s.0)),
        }
    }

    /// CLONE: reflink of a range, durable before the reply; `CTL_NOTSUPP` where the store
    /// cannot share blocks.
    pub(super) async fn clone_range(&self, a: CtlCopyArgs) -> CtlStatusRes {
        let store = self.store.clone();
        let (src, dst) = (object_id(a.src), object_id(a.dst));
        let (so, d, n) = (a.src_offset, a.dst_offset, a.count);
        match blocking(move || store.clone_range(src, dst, so, d, n)).await {
            Ok(()) => status(CtlStat::CTL_OK),
            Err(s) => status(CtlStat(s.0)),
        }
    }
}
