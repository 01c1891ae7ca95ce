//! Where files end, as far as a data server knows: what it may answer at the end of a file.
//!
//! A data server holds objects, not files: under dense packing an object ends where its last
//! stripe unit ends, which says nothing of where the *file* ends (the next unit may be on
//! another data server, or a hole). So a READ past an object's end is either a hole inside
//! the file (zeros) or the end of the file (no bytes, `eof`), and only the MDS knows which.
//! It tells the data servers in SIZE_HINT calls ([`ObjectEnd`]: the file's end in one
//! object's offsets, read with the file's change attribute), which this table keeps.
//!
//! Hints are advisory and can only be too small or missing, never too large:
//! - a hint is taken only if its version (the file's change attribute on the MDS) is newer
//!   than what is known of the object; a TRUNCATE forgets the end and keeps the version the
//!   truncate was planned at, so a hint sent before a shrinking truncate and delivered after
//!   it is refused;
//! - writes through the layouts make files longer than any hint: a READ that finds the object
//!   reaching past the hinted end takes the hint as stale;
//! - when the table is full it is emptied, and the newest version of a forgotten end
//!   (`floor`) is kept: a hint is taken only if newer than that (so an old hint cannot bring
//!   back an end a truncate forgot).
//!
//! When the end is unknown or the client could not take the answer (below), the data server
//! sends the READ to the MDS ([`Judged::ToMds`]), which knows the size.
//!
//! # Why a data server rarely says `eof`
//! The Linux client judges a READ's `eof` as `offset sent + count - file offset of the
//! request` (`nfs_readpage_result`), with the *object* offset it sent to the data server. Under
//! dense packing those differ except in the first stripe unit of index 0, and an `eof` there
//! would cut good data short or be ignored. So a data server says `eof` only where object and
//! file offsets are the same ([`ObjectEnd::same_offsets_below`]); elsewhere a READ that
//! reaches the file's end goes to the MDS.

use std::collections::HashMap;
use std::sync::Mutex;

use nfs_proto::control::ObjectEnd;
use pfs_core::ObjectId;

/// How many files' ends a data server keeps before it forgets them all (about 64 bytes a
/// file: 16 MiB).
pub const MAX_FILES: usize = 1 << 18;

/// What is known of where a file ends in one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Known {
    /// The file's change attribute this was learned at.
    version: u64,
    /// The end, or `None` after a truncate (until a newer hint).
    end: Option<End>,
}

/// A file's end in one object's offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// The file's last byte + 1, in object offsets.
    pub end: u64,
    /// Object offsets below this equal file offsets (see the module documentation).
    pub same_offsets_below: u64,
}

#[derive(Debug, Default)]
struct Table {
    files: HashMap<u64, Vec<(u32, Known)>>,
    /// Hints of this version or older are refused (the newest version forgotten).
    floor: u64,
}

/// The ends of files in this data server's objects (see the module documentation).
#[derive(Debug)]
pub struct FileEnds {
    table: Mutex<Table>,
    max_files: usize,
}

impl Default for FileEnds {
    fn default() -> Self {
        Self::with_capacity(MAX_FILES)
    }
}

impl FileEnds {
    /// A table that forgets everything when it holds `max_files` files.
    pub fn with_capacity(max_files: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            max_files: max_files.max(1),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the hints newer than what is known of their objects.
    pub fn learn(&self, hints: &[ObjectEnd]) {
        let mut t = self.table();
        for h in hints {
            let end = End {
                end: h.end,
                same_offsets_below: h.same_offsets_below,
            };
            t.set(
                self.max_files,
                h.object.file,
                h.object.stripe,
                Known {
                    version: h.version,
                    end: Some(end),
                },
                false,
            );
        }
    }

    /// The MDS truncates `stripes` of `file`, planned at change attribute `version`: their
    /// ends are unknown until a hint newer than that.
    pub fn truncated(&self, file: u64, stripes: impl IntoIterator<Item = u32>, version: u64) {
        let mut t = self.table();
        for stripe in stripes {
            t.set(
                self.max_files,
                file,
                stripe,
                Known { version, end: None },
                true,
            );
        }
    }

    /// The file is gone: its objects with it.
    pub fn removed(&self, file: u64) {
        self.table().files.remove(&file);
    }

    /// Where the file ends in this object, if known.
    pub fn end(&self, object: ObjectId) -> Option<End> {
        self.table()
            .files
            .get(&object.file)?
            .iter()
            .find(|(s, _)| *s == object.stripe)
            .and_then(|(_, k)| k.end)
    }
}

impl Table {
    /// Records `known` for the object if it is newer than what is known; a truncate's
    /// forgetting (`force`) always applies.
    fn set(&mut self, max_files: usize, file: u64, stripe: u32, known: Known, force: bool) {
        let newer = |old: u64| known.version > old || (force && known.version >= old);
        if !newer(self.floor) && !force {
            return;
        }
        if !self.files.contains_key(&file) && self.files.len() >= max_files {
            let newest = self
                .files
                .values()
                .flatten()
                .map(|(_, k)| k.version)
                .max()
                .unwrap_or(0);
            self.floor = self.floor.max(newest);
            self.files.clear();
            tracing::info!(
                files = max_files,
                "forgot where files end (table full): reads at their ends go to the MDS until new hints"
            );
            if !newer(self.floor) && !force {
                return;
            }
        }
        let objects = self.files.entry(file).or_default();
        match objects.iter_mut().find(|(s, _)| *s == stripe) {
            // A truncate always forgets the end: one learned meanwhile (a newer version) may
            // tell the size from before the truncate was recorded.
            Some((_, k)) if force => {
                *k = Known {
                    version: k.version.max(known.version),
                    end: None,
                }
            }
            Some((_, k)) if newer(k.version) => *k = known,
            Some(_) => {}
            None => objects.push((stripe, known)),
        }
    }
}

/// What a data server answers to a READ of `count` bytes at object offset `offset` whose
/// store read got `got` bytes and reached the object's end or not (`object_ended`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The first `len` bytes of the range: what was read, then zeros (a hole of the file)
    /// when `len` is more than `got`; `eof` as given.
    Data {
        /// Bytes to answer.
        len: u64,
        /// The file ends at `offset + len`.
        eof: bool,
    },
    /// The data server cannot tell where the file ends here, or the client could not take
    /// an `eof` from it: the client must read this range through the MDS.
    ToMds,
}

/// Judges a READ on a dense object (see the module documentation); `end` is what
/// [`FileEnds::end`] knows.
pub fn judge(offset: u64, count: u32, got: usize, object_ended: bool, end: Option<End>) -> Judged {
    let count = u64::from(count);
    let got = got as u64;
    if !object_ended || got >= count {
        // Every byte lies inside the object, so inside the file.
        return Judged::Data {
            len: got,
            eof: false,
        };
    }
    let Some(end) = end else {
        return Judged::ToMds;
    };
    if got > 0 && offset.saturating_add(got) > end.end {
        // The object reaches past the hinted end: written since; the hint is stale. (With
        // nothing read, the object ends at or before `offset`: that says nothing.)
        return Judged::ToMds;
    }
    let want_end = offset.saturating_add(count);
    if want_end <= end.end {
        // Inside the file: past the object's end is a hole.
        return Judged::Data {
            len: count,
            eof: false,
        };
    }
    if offset < end.same_offsets_below {
        return Judged::Data {
            len: end.end.saturating_sub(offset),
            eof: true,
        };
    }
    Judged::ToMds
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs_proto::control::CtlObject;

    fn hint(file: u64, stripe: u32, version: u64, end: u64) -> ObjectEnd {
        ObjectEnd {
            object: CtlObject { file, stripe },
            version,
            end,
            same_offsets_below: 0,
        }
    }

    const OBJ: ObjectId = ObjectId { file: 7, stripe: 1 };

    #[test]
    fn newer_hints_win_and_older_ones_are_refused() {
        let ends = FileEnds::default();
        assert_eq!(ends.end(OBJ), None);
        ends.learn(&[hint(7, 1, 10, 100)]);
        assert_eq!(ends.end(OBJ).map(|e| e.end), Some(100));
        ends.learn(&[hint(7, 1, 9, 500)]);
        assert_eq!(ends.end(OBJ).map(|e| e.end), Some(100));
        ends.learn(&[hint(7, 1, 11, 50)]);
        assert_eq!(ends.end(OBJ).map(|e| e.end), Some(50));
        // Another stripe of the same file is its own entry.
        assert_eq!(ends.end(ObjectId { file: 7, stripe: 2 }), None);
    }

    #[test]
    fn a_truncate_forgets_the_end_and_refuses_hints_from_before_it() {
        let ends = FileEnds::default();
        ends.learn(&[hint(7, 1, 10, 1000)]);
        ends.truncated(7, [1], 10);
        assert_eq!(ends.end(OBJ), None);
        // The hint sent before the truncate (version 10) arrives late: refused.
        ends.learn(&[hint(7, 1, 10, 1000)]);
        assert_eq!(ends.end(OBJ), None);
        // The size recorded by the truncate (a newer change attribute) is taken.
        ends.learn(&[hint(7, 1, 12, 4)]);
        assert_eq!(ends.end(OBJ).map(|e| e.end), Some(4));
        ends.removed(7);
        assert_eq!(ends.end(OBJ), None);
    }

    #[test]
    fn a_full_table_is_emptied_and_keeps_refusing_what_it_forgot() {
        let ends = FileEnds::with_capacity(2);
        ends.learn(&[hint(1, 0, 5, 10), hint(2, 0, 6, 10)]);
        ends.truncated(1, [0], 8);
        // A third file empties the table; the floor is the newest version forgotten (8).
        ends.learn(&[hint(3, 0, 9, 10)]);
        assert_eq!(
            ends.end(ObjectId { file: 3, stripe: 0 }).map(|e| e.end),
            Some(10)
        );
        assert_eq!(ends.end(ObjectId { file: 2, stripe: 0 }), None);
        // The truncated file's stale hint (version 8) cannot come back.
        ends.learn(&[hint(1, 0, 8, 1000)]);
        assert_eq!(ends.end(ObjectId { file: 1, stripe: 0 }), None);
        ends.learn(&[hint(1, 0, 10, 3)]);
        assert_eq!(
            ends.end(ObjectId { file: 1, stripe: 0 }).map(|e| e.end),
            Some(3)
        );
    }

    #[test]
    fn reads_inside_the_object_are_answered_as_read() {
        assert_eq!(
            judge(0, 10, 10, true, None),
            Judged::Data {
                len: 10,
                eof: false
            }
        );
        assert_eq!(
            judge(0, 10, 4, false, None),
            Judged::Data { len: 4, eof: false }
        );
    }

    #[test]
    fn past_the_object_without_a_known_end_goes_to_the_mds() {
        assert_eq!(judge(0, 10, 4, true, None), Judged::ToMds);
        assert_eq!(judge(100, 10, 0, true, None), Judged::ToMds);
    }

    #[test]
    fn holes_inside_the_file_are_zeros_and_the_end_is_said_only_where_offsets_agree() {
        let end = |end, same| {
            Some(End {
                end,
                same_offsets_below: same,
            })
        };
        // Object ends at 4, file (in this object) at 100: a hole, filled.
        assert_eq!(
            judge(0, 10, 4, true, end(100, 0)),
            Judged::Data {
                len: 10,
                eof: false
            }
        );
        // The read crosses the end where object and file offsets agree: eof.
        assert_eq!(
            judge(90, 20, 0, true, end(100, 1 << 20)),
            Judged::Data { len: 10, eof: true }
        );
        assert_eq!(
            judge(150, 20, 0, true, end(100, 1 << 20)),
            Judged::Data { len: 0, eof: true }
        );
        // Elsewhere the client would misjudge an eof: the MDS answers.
        assert_eq!(judge(90, 20, 0, true, end(100, 0)), Judged::ToMds);
        // The object reaches past the hint: stale, the MDS answers.
        assert_eq!(judge(90, 20, 15, true, end(100, 1 << 20)), Judged::ToMds);
        // Nothing read far past the end is still the end.
        assert_eq!(
            judge(8192, 20, 0, true, end(100, 1 << 20)),
            Judged::Data { len: 0, eof: true }
        );
    }
}
