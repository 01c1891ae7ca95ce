//! Space and holes of a [`File`] (RFC 7862 sections 15.1, 15.4 and 15.11): ALLOCATE,
//! DEALLOCATE and SEEK, what a FUSE mount answers `fallocate(2)` (mode 0, and
//! `PUNCH_HOLE | KEEP_SIZE`) and `lseek(2)`'s SEEK_DATA and SEEK_HOLE with.
//!
//! ```text
//!  allocate, deallocate: fsync this File and its siblings (every write made through this
//!                        client lands, and is stable, before the range changes)
//!    ─> ALLOCATE / DEALLOCATE, GETATTR (minor version 2, the stateid a WRITE would use)
//!    ─> cached bytes of the range go (this File's; every other File's by `data_gen`),
//!       the known size grows to offset + length (ALLOCATE), the attributes are the
//!       GETATTR's (size, change, times, space used: as the Linux client, which sends
//!       GETATTR after them too)
//!  seek: send the buffered writes of this File and its siblings
//!    ─> SEEK (minor version 2, the stateid a READ would use) ─> offset, or None
//! ```
//!
//! - **Writes first, and stable.** A write still buffered would land over the hole after
//!   DEALLOCATE; one sent UNSTABLE and not yet committed would be sent again over it if the
//!   server restarted before the COMMIT (a changed write verifier). So both operations start
//!   with an fsync of every File of the file. SEEK needs the bytes on the server, not
//!   stable: sending them is enough (as the Linux client's `nfs42_proc_llseek` writes back
//!   without committing).
//! - **Layouts need nothing more.** The MDS carries ALLOCATE and DEALLOCATE out on the data
//!   servers' objects of a striped file itself (`mds/src/pnfs/dsspace.rs`), and records the
//!   new size and change attribute before it answers; nothing goes through the client's
//!   layout, so no LAYOUTCOMMIT follows (the fsync before sent the one of earlier writes,
//!   so the MDS grows the file from its true size). The layout stays good: the objects
//!   are the same, grown or punched. A later LAYOUTCOMMIT only ever grows the size, so it
//!   does not undo an ALLOCATE's growth. What the client caches is what must follow: the
//!   bytes of the range, the size, and the attributes (change, mtime, `space_used`), from
//!   the GETATTR in the same COMPOUND (a File under a delegation answers `metadata` from
//!   what it knows, so forgetting them would not do).
//! - **Errors.** A server without NFSv4.2 or without the operation answers
//!   NFS4ERR_MINOR_VERS_MISMATCH, NFS4ERR_NOTSUPP or NFS4ERR_OP_ILLEGAL
//!   ([`Error::is_unsupported`], EOPNOTSUPP, as `fallocate(2)` on a file system without it);
//!   NFS4ERR_NOSPC is ENOSPC, NFS4ERR_FBIG EFBIG ([`Error::errno`]).
//! - **SEEK's end.** SEEK at or past the end of the file is NFS4ERR_NXIO, and SEEK for data
//!   where only holes follow is NFS4_OK with `sr_eof`: both are `None` here, which
//!   `lseek(2)` answers with ENXIO. The end of the file is a hole (SEEK_HOLE in the last
//!   run of data answers the size).

use super::*;

/// What [`File::seek`] looks for: `lseek(2)`'s SEEK_DATA or SEEK_HOLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seek {
    /// The next byte of data (SEEK_DATA; NFS4_CONTENT_DATA).
    Data,
    /// The next hole (SEEK_HOLE; NFS4_CONTENT_HOLE): the end of the file counts as one.
    Hole,
}

impl Seek {
    fn content(self) -> DataContent4 {
        match self {
            Seek::Data => DataContent4::NFS4_CONTENT_DATA,
            Seek::Hole => DataContent4::NFS4_CONTENT_HOLE,
        }
    }
}

impl File {
    /// ALLOCATE (RFC 7862 section 15.1): reserves space for `offset..offset + len`, so that
    /// later writes there do not fail for want of it; the file grows to `offset + len` when
    /// it was smaller, and the new bytes read as zeros (`fallocate(2)` mode 0). The bytes
    /// already there do not change.
    ///
    /// The File must be open for writing (else NFS4ERR_OPENMODE, EBADF as `fallocate(2)`
    /// answers for a descriptor not open for writing); `len` 0 is [`Error::Invalid`]
    /// (EINVAL, as `fallocate(2)`).
    pub async fn allocate(&self, offset: u64, len: u64) -> Result<()> {
        let attrs = self
            .space_op(NfsOpnum4::OP_ALLOCATE, offset, len, |s| {
                NfsArgop4::Allocate(AllocateArgs {
                    aa_stateid: s,
                    aa_offset: offset,
                    aa_length: len,
                })
            })
            .await?;
        self.space_changed(offset, len, true, attrs).await;
        Ok(())
    }

    /// DEALLOCATE (RFC 7862 section 15.4): punches a hole in `offset..offset + len`, which
    /// reads as zeros afterwards, its space freed where the server's file system can; the
    /// size does not change, and the part of the range past the end of the file is ignored
    /// (`fallocate(2)` with `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`).
    ///
    /// Every write made through this client to the file before the call lands before the
    /// hole is punched (none lands over it afterwards). The File must be open for writing;
    /// `len` 0 is [`Error::Invalid`].
    pub async fn deallocate(&self, offset: u64, len: u64) -> Result<()> {
        let attrs = self
            .space_op(NfsOpnum4::OP_DEALLOCATE, offset, len, |s| {
                NfsArgop4::Deallocate(DeallocateArgs {
                    da_stateid: s,
                    da_offset: offset,
                    da_length: len,
                })
            })
            .await?;
        self.space_changed(offset, len, false, attrs).await;
        Ok(())
    }

    /// SEEK (RFC 7862 section 15.11): the first offset at or after `offset` where data (or a
    /// hole, `what`) starts, as the server's file system knows its holes. The end of the file
    /// is a hole: [`Seek::Hole`] inside the last run of data answers the size. `None` when
    /// there is none before the end: `offset` at or past the end, or only holes from there
    /// on for [`Seek::Data`] (`lseek(2)` answers ENXIO for both).
    ///
    /// The writes of this client to the file are sent first, so the server sees their data.
    pub async fn seek(&self, offset: u64, what: Seek) -> Result<Option<u64>> {
        self.flush_siblings().await;
        {
            let mut d = self.data_settled().await;
            self.send_dirty(&mut d).await?;
        }
        let fh = &self.open.fh;
        let r = self
            .with_state(false, |s| {
                let req = vec![
                    putfh(fh),
                    NfsArgop4::Seek(SeekArgs {
                        sa_stateid: s,
                        sa_offset: offset,
                        sa_what: what.content(),
                    }),
                ];
                async move {
                    let r = self.client.run_v42(NfsOpnum4::OP_SEEK, req).await?;
                    ops::find(&r, NfsOpnum4::OP_SEEK, |x| match x {
                        NfsResop4::Seek(SeekRes::Ok(ok)) => Some(*ok),
                        _ => None,
                    })
                }
            })
            .await;
        seek_answer(what, offset, r).map_err(|e| match e {
            Answer::Error(e) => e,
            Answer::Before(found) => self.client.protocol(&format!(
                "SEEK from offset {offset} answered offset {found}, before it"
            )),
        })
    }

    /// Sends ALLOCATE or DEALLOCATE (`op`, made by `arg` with the stateid a WRITE would
    /// use) of `offset..offset + len`, after every write of the file made through this
    /// client is stable on the server, and a GETATTR after it: the attributes the operation
    /// left (`None` if that GETATTR alone failed).
    async fn space_op(
        &self,
        op: NfsOpnum4,
        offset: u64,
        len: u64,
        arg: impl Fn(Stateid4) -> NfsArgop4,
    ) -> Result<Option<Metadata>> {
        if self.open.access & OPEN4_SHARE_ACCESS_WRITE == 0 {
            return Err(nfs_err(op, NfsStat4::NFS4ERR_OPENMODE));
        }
        if len == 0 {
            return Err(Error::Invalid(format!(
                "{}: an empty range at {offset} to allocate or deallocate",
                self.open.path
            )));
        }
        // A sibling's writes that cannot be sent now would land over the range later: the
        // operation fails rather than be undone (the sibling keeps them for its flush).
        for sibling in self.siblings() {
            sibling.fsync().await?;
        }
        self.fsync().await?;
        let fh = &self.open.fh;
        self.with_state(true, |s| {
            let req = vec![putfh(fh), arg(s), ops::getattr()];
            async move {
                match self.client.run_v42(op, req).await {
                    Ok(r) => Ok(ops::attrs_of(&r)),
                    // Done; only the attributes after it are missing.
                    Err(Error::Nfs {
                        op: NfsOpnum4::OP_GETATTR,
                        ..
                    }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        })
        .await
    }

    /// The server changed `offset..offset + len` (its bytes, or their space, and with
    /// `grows` the size up to its end) and answered `attrs` after: this File's cached blocks
    /// of the range go, every other File's cache is stale (`data_gen`), a write delegation
    /// counts a modification, and the attributes are the server's (`space_used`, change and
    /// times moved; under a delegation [`File::metadata`] answers them), or forgotten.
    async fn space_changed(&self, offset: u64, len: u64, grows: bool, attrs: Option<Metadata>) {
        let end = offset.saturating_add(len);
        let mut d = self.data_settled().await;
        drop_cached(&mut d, offset, end);
        self.open
            .server
            .changed(grows.then_some(end), None, &mut d.cache_gen);
        match attrs {
            Some(m) => {
                let pending = !d.dirty.is_empty() || !d.unstable.is_empty();
                self.took_attrs(m, pending);
            }
            None => self.client.inner.forget_attrs(&self.open.fh),
        }
    }
}

/// Why a SEEK gave no answer.
#[derive(Debug)]
enum Answer {
    /// The server's error.
    Error(Error),
    /// The server answered an offset before the one asked from (a broken server).
    Before(u64),
}

/// The answer of a SEEK for `what` from `offset` that got `reply`: NFS4ERR_NXIO (at or past
/// the end) and data not found (`sr_eof` for [`Seek::Data`], as the Linux client reads it)
/// are `None`; a hole is where the server says, the end of the file included.
fn seek_answer(
    what: Seek,
    offset: u64,
    reply: Result<SeekResOk>,
) -> std::result::Result<Option<u64>, Answer> {
    let ok = match reply {
        Ok(ok) => ok,
        Err(e) if e.is(NfsStat4::NFS4ERR_NXIO) => return Ok(None),
        Err(e) => return Err(Answer::Error(e)),
    };
    if what == Seek::Data && ok.sr_eof {
        return Ok(None);
    }
    if ok.sr_offset < offset {
        return Err(Answer::Before(ok.sr_offset));
    }
    Ok(Some(ok.sr_offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sr_eof: bool, sr_offset: u64) -> Result<SeekResOk> {
        Ok(SeekResOk { sr_eof, sr_offset })
    }

    fn err(status: NfsStat4) -> Result<SeekResOk> {
        Err(nfs_err(NfsOpnum4::OP_SEEK, status))
    }

    #[test]
    fn seek_answers_data_and_holes_where_the_server_says() {
        assert_eq!(
            seek_answer(Seek::Data, 10, ok(false, 4096)).unwrap(),
            Some(4096)
        );
        assert_eq!(
            seek_answer(Seek::Data, 10, ok(false, 10)).unwrap(),
            Some(10)
        );
        assert_eq!(
            seek_answer(Seek::Hole, 0, ok(false, 8192)).unwrap(),
            Some(8192)
        );
        // The virtual hole at the end of the file: sr_eof, and the size.
        assert_eq!(
            seek_answer(Seek::Hole, 0, ok(true, 9000)).unwrap(),
            Some(9000)
        );
    }

    #[test]
    fn no_data_before_the_end_and_offsets_past_it_are_none() {
        // Only holes follow: NFS4_OK with sr_eof (our MDS, RFC 7862 section 15.11.3).
        assert_eq!(seek_answer(Seek::Data, 10, ok(true, 9000)).unwrap(), None);
        // At or past the end: NFS4ERR_NXIO, for either kind.
        for what in [Seek::Data, Seek::Hole] {
            let r = seek_answer(what, 1 << 40, err(NfsStat4::NFS4ERR_NXIO));
            assert_eq!(r.unwrap(), None, "{what:?}");
        }
    }

    #[test]
    fn other_errors_pass_and_an_answer_before_the_offset_is_refused() {
        match seek_answer(Seek::Data, 0, err(NfsStat4::NFS4ERR_NOTSUPP)) {
            Err(Answer::Error(e)) => assert_eq!(e.errno(), 95, "EOPNOTSUPP"),
            r => panic!("{r:?}"),
        }
        match seek_answer(Seek::Hole, 100, ok(false, 99)) {
            Err(Answer::Before(99)) => {}
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn seek_kinds_are_the_wire_contents() {
        assert_eq!(Seek::Data.content(), DataContent4::NFS4_CONTENT_DATA);
        assert_eq!(Seek::Hole.content(), DataContent4::NFS4_CONTENT_HOLE);
    }
}
