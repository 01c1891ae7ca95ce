//! Write verifiers: 8 bytes that differ on every start.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Counts verifiers made by this process, so two made in the same second still differ.
static MADE: AtomicU64 = AtomicU64::new(0);

/// This process's random base for the low half, drawn on first use.
static BASE: OnceLock<u32> = OnceLock::new();

/// A new write verifier.
///
/// Bytes 0..4 are the wall-clock seconds since 1970 (low 32 bits, big-endian), so verifiers of
/// later starts are readable in a capture. Bytes 4..8 are a per-process random base plus the
/// number of verifiers this process made before (wrapping); the base is SipHash, keyed by the
/// operating system's randomness (std's `RandomState`), of the first call's time in
/// nanoseconds and the process id.
///
/// So two verifiers of one process never repeat (unless 2^32 are made within a second), and
/// two processes share one only if they start within the same second *and* their random
/// bases nearly coincide (odds about n^2 / 2^32 for n verifiers each); a clock stepped
/// backwards does not make a repeat likely either, because of the random base.
pub fn new_write_verifier() -> [u8; 8] {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let base = *BASE.get_or_init(|| {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(now.as_nanos());
        h.write_u32(std::process::id());
        let mix = h.finish();
        (mix ^ (mix >> 32)) as u32
    });
    let n = MADE.fetch_add(1, Ordering::Relaxed) as u32;
    let mut v = [0u8; 8];
    v[..4].copy_from_slice(&(now.as_secs() as u32).to_be_bytes());
    v[4..].copy_from_slice(&base.wrapping_add(n).to_be_bytes());
    v
}

/// A verifier that can be replaced (after a failed sync) while other threads read it.
#[derive(Debug)]
pub(crate) struct VerifierCell(AtomicU64);

impl VerifierCell {
    pub(crate) fn new(v: [u8; 8]) -> Self {
        VerifierCell(AtomicU64::new(u64::from_be_bytes(v)))
    }

    pub(crate) fn get(&self) -> [u8; 8] {
        self.0.load(Ordering::Acquire).to_be_bytes()
    }

    /// Replaces the verifier with a fresh one that differs from the current one.
    pub(crate) fn renew(&self) {
        let old = self.0.load(Ordering::Acquire);
        let mut new = u64::from_be_bytes(new_write_verifier());
        if new == old {
            new = new.wrapping_add(1);
        }
        self.0.store(new, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verifier_made_in_one_process_differs() {
        let all: std::collections::HashSet<_> = (0..10_000).map(|_| new_write_verifier()).collect();
        assert_eq!(all.len(), 10_000);
    }

    #[test]
    fn verifier_starts_with_the_wall_clock_seconds() {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as u32;
        let v = new_write_verifier();
        let got = u32::from_be_bytes(v[..4].try_into().unwrap());
        assert!(got.wrapping_sub(secs) <= 1, "{got} vs {secs}");
    }

    #[test]
    fn renewed_verifier_differs_from_the_old_one() {
        let cell = VerifierCell::new([1; 8]);
        cell.renew();
        assert_ne!(cell.get(), [1; 8]);
    }
}
