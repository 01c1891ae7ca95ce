//! Store identities: 16 random bytes that name one store's contents for as long as it keeps
//! them. A data server tells the MDS its store's identity when it registers; another one
//! than last time means the objects the MDS put there are gone (a replaced disk, an emptied
//! directory, a new machine under the old id), so the MDS re-silvers the mirrored copies it
//! held instead of trusting them.
//!
//! A directory store keeps its identity in `<root>/store.id` (32 hex digits), written once
//! when the store is first opened: with a new objects directory, or for a store made before
//! identities existed (whose objects are still the ones the MDS knows: the MDS records the
//! first identity it hears and compares later ones).

use std::io::Write;
use std::path::Path;

use crate::{Result, StoreError};

/// What a `store.id` that does not hold 32 hex digits is (not trusted: the store may be
/// anything).
const BAD: StoreError = StoreError::Io {
    op: "store.id holds no identity",
    errno: rustix::io::Errno::INVAL,
};

/// The file of a directory store's identity.
pub const IDENTITY_FILE: &str = "store.id";

/// 16 bytes from the operating system's random source.
pub fn new_identity() -> [u8; 16] {
    let mut id = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut id));
    if filled.is_err() {
        // No /dev/urandom (a sandbox): std's randomly keyed hasher, twice, with time and pid.
        use std::hash::{BuildHasher, Hasher};
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        for half in id.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(now);
            h.write_u32(std::process::id());
            half.copy_from_slice(&h.finish().to_be_bytes());
        }
    }
    id
}

/// The identity kept in `root`, made and written (durably: file and directory synced) if
/// `root` has none. Two processes opening one new shared directory at once agree: the file
/// is created exclusively and the loser reads the winner's.
pub fn load_or_create(root: &Path) -> Result<[u8; 16]> {
    let path = root.join(IDENTITY_FILE);
    let io = |what: &'static str| {
        move |e: std::io::Error| StoreError::from_errno(what, crate::local::io_errno(e), 0, 0)
    };
    for _ in 0..2 {
        match std::fs::read_to_string(&path) {
            Ok(text) => return parse(text.trim()).ok_or(BAD),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("read store.id")(e)),
        }
        let id = new_identity();
        let tmp = root.join(format!("{IDENTITY_FILE}.{}", std::process::id()));
        let mut f = std::fs::File::create(&tmp).map_err(io("create store.id"))?;
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        f.write_all(format!("{hex}\n").as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(io("write store.id"))?;
        drop(f);
        // A hard link fails if another process made the file first; then read its.
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                std::fs::File::open(root)
                    .and_then(|d| d.sync_all())
                    .map_err(io("fsync store root"))?;
                return Ok(id);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io("link store.id")(e)),
        }
    }
    Err(BAD)
}

fn parse(hex: &str) -> Option<[u8; 16]> {
    if hex.len() != 32 || !hex.is_ascii() {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_is_made_once_and_kept_and_a_new_directory_gets_another() {
        let d = tempfile::tempdir().unwrap();
        let a = load_or_create(d.path()).unwrap();
        assert_eq!(load_or_create(d.path()).unwrap(), a);
        let text = std::fs::read_to_string(d.path().join(IDENTITY_FILE)).unwrap();
        assert_eq!(text.trim().len(), 32);
        let e = tempfile::tempdir().unwrap();
        assert_ne!(load_or_create(e.path()).unwrap(), a);
        std::fs::write(d.path().join(IDENTITY_FILE), "not hex\n").unwrap();
        assert!(load_or_create(d.path()).is_err());
    }
}
