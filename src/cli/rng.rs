//! Deterministic pseudo-random numbers and bytes for the client commands that make test data
//! (`bench`, `list-io`), without a dependency.

use bytes::Bytes;

/// Bytes that do not compress or repeat (xorshift64*), for the data written.
pub(crate) fn noise(len: usize, seed: u64) -> Bytes {
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

/// A small deterministic generator (xorshift64*): the same numbers for the same seed (the
/// random offsets of a bench run on both servers of `--compare`, list-io's extents).
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value).
    pub(crate) fn new(seed: u64) -> Rng {
        // Spread small seeds (0, 1, 2: the run numbers) over the state; never 0.
        Rng((seed ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9) | 1)
    }

    /// A generator whose state is `state` as is (not 0).
    pub(crate) fn from_state(state: u64) -> Rng {
        Rng(state)
    }

    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_does_not_repeat() {
        let n = noise(4096, 1);
        assert_eq!(n.len(), 4096);
        assert_ne!(n[..2048], n[2048..]);
    }
}
