//! Object identity and where an object lives on disk.

use std::fmt;

/// One object: the part of regular file `file` kept by one data server of its stripe set.
///
/// `stripe` is the data server's index in the file's stripe set (0 for a file stored whole,
/// as when the MDS serves data itself). The pair is the object's whole name: creates touch
/// only the MDS, so an object exists as soon as someone writes to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    /// The file id (as in the MDS filehandle, bytes 4..12).
    pub file: u64,
    /// Index in the file's stripe set.
    pub stripe: u32,
}

/// How many queues the writes to objects wait in, [`ObjectId::write_queue`].
pub const WRITE_QUEUES: usize = 64;

impl ObjectId {
    /// The object of a file stored whole (stripe 0).
    pub const fn whole(file: u64) -> Self {
        ObjectId { file, stripe: 0 }
    }

    /// Which of [`WRITE_QUEUES`] queues the writes to this object wait in, one after the
    /// other (by a hash of the id). [`crate::LocalStore`] serializes a write with the lock of
    /// this queue; a caller that runs writes on async workers (an in-memory store) waits for
    /// the same queue asynchronously first, so that the store's lock never blocks a worker:
    /// two writes holding different queues never meet on the same lock.
    pub fn write_queue(&self) -> usize {
        lock_index(*self, WRITE_QUEUES)
    }

    /// Path of the object below `<root>/objects/` for [`crate::LocalStore`]:
    /// `<file & 0xff>/<(file >> 8) & 0xff>/<file as 16 hex digits>.<stripe in decimal>`, hex
    /// in lower case, e.g. file `0x0123456789abcdef` stripe 2 is `ef/cd/0123456789abcdef.2`.
    ///
    /// The fan-out takes the two *lowest* bytes of the file id because file ids are handed
    /// out by a counter: the low bytes change fastest, so consecutive files spread over all
    /// 65536 leaf directories and none of them gets millions of entries. This mapping is an
    /// on-disk format: changing it orphans every stored object.
    pub fn relative_path(&self) -> String {
        format!(
            "{:02x}/{:02x}/{:016x}.{}",
            self.file & 0xff,
            (self.file >> 8) & 0xff,
            self.file,
            self.stripe
        )
    }

    /// Inverse of [`ObjectId::relative_path`], for scrubbers that walk the object tree; `None`
    /// for anything this store did not create (including non-canonical spellings).
    pub fn from_relative_path(path: &str) -> Option<Self> {
        let mut parts = path.split('/');
        let (a, b, leaf) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let (hex, stripe) = leaf.split_once('.')?;
        if hex.len() != 16 || !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let file = u64::from_str_radix(hex, 16).ok()?;
        let stripe = stripe.parse::<u32>().ok()?;
        let id = ObjectId { file, stripe };
        (id.relative_path() == format!("{a}/{b}/{leaf}")).then_some(id)
    }
}

/// The stripe of the object of `file` whose name in its leaf directory is `name` (the last
/// component of [`ObjectId::relative_path`]: 16 lower-case hex digits, a dot, the stripe in
/// decimal without leading zeros); `None` for any other name. A data server removing a file
/// reads its leaf directory, which holds the objects of every file whose id shares the low
/// 16 bits: this checks each entry without building a path or a string.
pub(crate) fn stripe_in_leaf(name: &[u8], file: u64) -> Option<u32> {
    let (hex, rest) = name.split_at_checked(16)?;
    let digits = rest.strip_prefix(b".")?;
    let want = file.to_be_bytes();
    let lower_hex = |n: u8| match n {
        0..=9 => b'0' + n,
        _ => b'a' + n - 10,
    };
    let same = want
        .iter()
        .zip(hex.chunks_exact(2))
        .all(|(&b, h)| h[0] == lower_hex(b >> 4) && h[1] == lower_hex(b & 0xf));
    if !same
        || digits.is_empty()
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
    {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}.{}", self.file, self.stripe)
    }
}

/// Which of `n` locks guards object `id`.
pub(crate) fn lock_index(id: ObjectId, n: usize) -> usize {
    let h = (id.file ^ (u64::from(id.stripe) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58) as usize % n
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn path_fans_out_on_the_two_lowest_bytes_of_the_file_id() {
        let id = ObjectId {
            file: 0x0123_4567_89ab_cdef,
            stripe: 2,
        };
        assert_eq!(id.relative_path(), "ef/cd/0123456789abcdef.2");
        assert_eq!(
            ObjectId::whole(1).relative_path(),
            "01/00/0000000000000001.0"
        );
    }

    #[test]
    fn consecutive_file_ids_land_in_different_leaf_directories() {
        let dir = |f| ObjectId::whole(f).relative_path()[..5].to_string();
        let dirs: std::collections::HashSet<_> = (0..256u64).map(dir).collect();
        assert_eq!(dirs.len(), 256);
    }

    #[test]
    fn a_leaf_entry_names_an_object_of_the_file_only_in_canonical_form() {
        let file = 0x0123_4567_89ab_cdef;
        for (name, want) in [
            ("0123456789abcdef.2", Some(2)),
            ("0123456789abcdef.0", Some(0)),
            ("0123456789abcdef.4294967295", Some(u32::MAX)),
            ("0123456789abcdef.4294967296", None),
            ("0123456789ABCDEF.2", None),
            ("0123456789abcdee.2", None),
            ("0123456789abcdef.02", None),
            ("0123456789abcdef.+2", None),
            ("0123456789abcdef.", None),
            ("0123456789abcdef", None),
            ("0123456789abcdef.2.tmp", None),
            ("123456789abcdef.2", None),
            (".", None),
            ("..", None),
        ] {
            assert_eq!(stripe_in_leaf(name.as_bytes(), file), want, "{name}");
        }
    }

    #[test]
    fn non_canonical_paths_are_not_objects() {
        for p in [
            "ef/cd/123456789abcdef.2",
            "ef/cd/0123456789ABCDEF.2",
            "00/cd/0123456789abcdef.2",
            "ef/cd/0123456789abcdef.02",
            "ef/cd/0123456789abcdef.+2",
            "ef/cd/0123456789abcdef",
            "ef/cd/0123456789abcdef.2/x",
            "ef/0123456789abcdef.2",
        ] {
            assert_eq!(ObjectId::from_relative_path(p), None, "{p}");
        }
    }

    proptest! {
        #[test]
        fn relative_path_round_trips(file: u64, stripe: u32) {
            let id = ObjectId { file, stripe };
            prop_assert_eq!(ObjectId::from_relative_path(&id.relative_path()), Some(id));
        }

        /// The leaf-entry check agrees with the path parser on any name, for the file it
        /// names and for another one.
        #[test]
        fn a_leaf_entry_is_what_the_path_parser_says(file: u64, stripe: u32, other: u64, junk in "[0-9a-f.]{0,24}") {
            let id = ObjectId { file, stripe };
            let path = id.relative_path();
            let name = &path[6..];
            prop_assert_eq!(stripe_in_leaf(name.as_bytes(), file), Some(stripe));
            prop_assert_eq!(stripe_in_leaf(name.as_bytes(), other), (other == file).then_some(stripe));
            let parsed = ObjectId::from_relative_path(&format!("{}/{junk}", &path[..5]))
                .filter(|p| p.file == file)
                .map(|p| p.stripe);
            prop_assert_eq!(stripe_in_leaf(junk.as_bytes(), file), parsed);
        }
    }
}
