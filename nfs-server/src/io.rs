//! What the MDS and the data servers do alike around the object store: run its blocking
//! calls off the async workers, clip a WRITE's payload, read past an object's end as a hole,
//! check a COMMIT's range, and name the security flavors both accept.

use bytes::Bytes;
use nfs_proto::nfs4::{NfsStat4, Secinfo4};

/// The flavors the servers accept, most preferred first (SECINFO, SECINFO_NO_NAME).
pub fn secinfo_flavors() -> Vec<Secinfo4> {
    vec![
        Secinfo4::Flavor(1 /* AUTH_SYS */),
        Secinfo4::Flavor(0 /* AUTH_NONE */),
    ]
}

/// `data` read from an object, as `want` bytes: when the object ended (`object_ended`)
/// before `want`, the rest is a hole and reads as zeros. The copy happens only then, which
/// is rare on the paths that use it (a DS object shorter than the file's share of it, an
/// MDS object shorter than its recorded size); `want` is bounded by the caller's `max_io`.
pub fn hole_filled(data: Bytes, object_ended: bool, want: usize) -> Bytes {
    if !object_ended || data.len() >= want {
        return data;
    }
    let mut v = Vec::with_capacity(want);
    v.extend_from_slice(&data);
    v.resize(want, 0);
    Bytes::from(v)
}

/// Runs a blocking object-store call on tokio's blocking pool (pread/pwrite/fdatasync must
/// not stall the async workers) and maps its error to the NFS status it stands for.
pub async fn blocking<T, F>(f: F) -> Result<T, NfsStat4>
where
    F: FnOnce() -> Result<T, pfs_core::StoreError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| NfsStat4::NFS4ERR_SERVERFAULT)?
        .map_err(|e| NfsStat4(e.nfs_status()))
}

/// COMMIT's range check (RFC 8881 section 18.3.3): an offset + count past the largest
/// offset is NFS4ERR_INVAL.
pub fn check_commit_range(offset: u64, count: u32) -> Result<(), NfsStat4> {
    match offset.checked_add(u64::from(count)) {
        Some(_) => Ok(()),
        None => Err(NfsStat4::NFS4ERR_INVAL),
    }
}

/// The part of a WRITE's `data` at `offset` this server takes: at most `max_io` bytes (a
/// server may write less than sent, RFC 8881 section 18.32.3; slicing shares the receive
/// buffer), and NFS4ERR_FBIG when the end would pass the largest file offset (2^63 - 1).
pub fn clip_write(data: &Bytes, offset: u64, max_io: usize) -> Result<Bytes, NfsStat4> {
    let payload = if data.len() > max_io {
        data.slice(..max_io)
    } else {
        data.clone()
    };
    match offset.checked_add(payload.len() as u64) {
        Some(end) if end <= i64::MAX as u64 => Ok(payload),
        _ => Err(NfsStat4::NFS4ERR_FBIG),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_cut_at_max_io_and_refused_past_the_largest_offset() {
        let data = Bytes::from(vec![7u8; 100]);
        assert_eq!(clip_write(&data, 0, 64).unwrap().len(), 64);
        assert_eq!(clip_write(&data, 0, 4096).unwrap().len(), 100);
        assert_eq!(
            clip_write(&data, i64::MAX as u64 - 100, 4096)
                .unwrap()
                .len(),
            100
        );
        assert_eq!(
            clip_write(&data, i64::MAX as u64 - 99, 4096),
            Err(NfsStat4::NFS4ERR_FBIG)
        );
        assert_eq!(
            clip_write(&data, u64::MAX, 4096),
            Err(NfsStat4::NFS4ERR_FBIG)
        );
    }
}
