//! Striping math of the NFSv4.1 file layout (RFC 8881 sections 13.4.1-13.4.4): which stripe
//! index holds a file byte, and where in that data server's object.
//!
//! A file's bytes from `pattern_offset` on are cut into stripe units of `unit` bytes, dealt
//! round-robin over `count` stripe indices starting at `first`. With *sparse* packing a byte
//! keeps its file offset inside the object of its index (objects have holes where other
//! indices' units are); with *dense* packing each object holds only its own units, back to
//! back. Dense suits objects that are private files (the `local` backend); sparse suits one
//! shared file that every data server reaches (the `shared` backend), since then every index
//! writes its units in place.
//!
//! Bytes before `pattern_offset` belong to no stripe in the RFC; this server always uses a
//! pattern offset of 0, and the functions here treat earlier bytes as an error.

/// How units are placed in the data servers' objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Packing {
    /// Each object holds only its own units, contiguously (`NFL4_UFLG_DENSE`).
    Dense,
    /// Each byte keeps its file offset in the object of its index.
    Sparse,
}

/// Why a stripe map is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StripeError {
    /// A stripe unit of 0, or not a multiple of 64: `nfl_util` keeps flags in its low 6 bits
    /// (RFC 8881 section 13.3, `NFL4_UFLG_STRIPE_UNIT_SIZE_MASK`).
    #[error("stripe unit {0} must be a non-zero multiple of 64 below 2^32")]
    BadUnit(u32),
    /// No stripe indices, or the first index outside them.
    #[error("stripe count {count} with first index {first}")]
    BadCount {
        /// Indices.
        count: u32,
        /// First index.
        first: u32,
    },
    /// An offset before the pattern offset.
    #[error("offset {0} is before the pattern offset")]
    BeforePattern(u64),
}

/// The striping of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StripeMap {
    /// Stripe unit in bytes.
    pub unit: u32,
    /// Number of stripe indices (entries of the device's `nflda_stripe_indices`).
    pub count: u32,
    /// Stripe index of the unit at `pattern_offset` (`nfl_first_stripe_index`).
    pub first: u32,
    /// Where the pattern starts (`nfl_pattern_offset`).
    pub pattern_offset: u64,
    /// Dense or sparse.
    pub packing: Packing,
}

/// A piece of a file range that lies in one stripe unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Stripe index (`j` of RFC 8881 section 13.4.1): which filehandle and data server.
    pub index: u32,
    /// Offset in the file.
    pub file_offset: u64,
    /// Offset in the data server's object.
    pub object_offset: u64,
    /// Bytes.
    pub len: u64,
}

impl StripeMap {
    /// A map checked as the Linux file layout driver checks one (non-zero unit, first index
    /// below the count).
    pub fn new(
        unit: u32,
        count: u32,
        first: u32,
        pattern_offset: u64,
        packing: Packing,
    ) -> Result<Self, StripeError> {
        if unit == 0 || !unit.is_multiple_of(64) {
            return Err(StripeError::BadUnit(unit));
        }
        if count == 0 || first >= count {
            return Err(StripeError::BadCount { count, first });
        }
        Ok(Self {
            unit,
            count,
            first,
            pattern_offset,
            packing,
        })
    }

    fn relative(&self, offset: u64) -> Result<u64, StripeError> {
        offset
            .checked_sub(self.pattern_offset)
            .ok_or(StripeError::BeforePattern(offset))
    }

    /// The stripe index holding file byte `offset`.
    pub fn index_of(&self, offset: u64) -> Result<u32, StripeError> {
        let unit_no = self.relative(offset)? / u64::from(self.unit);
        Ok(((unit_no + u64::from(self.first)) % u64::from(self.count)) as u32)
    }

    /// Where file byte `offset` lives in its index's object.
    pub fn object_offset(&self, offset: u64) -> Result<u64, StripeError> {
        Ok(match self.packing {
            Packing::Sparse => offset,
            Packing::Dense => {
                let rel = self.relative(offset)?;
                let unit = u64::from(self.unit);
                let width = unit * u64::from(self.count);
                (rel / width) * unit + rel % unit
            }
        })
    }

    /// The file offset of byte `object_offset` of index `index`'s object (the inverse of
    /// [`Self::index_of`] + [`Self::object_offset`]; for sparse packing, `None` when that byte
    /// of the object belongs to another index).
    pub fn file_offset(&self, index: u32, object_offset: u64) -> Option<u64> {
        let unit = u64::from(self.unit);
        let count = u64::from(self.count);
        match self.packing {
            Packing::Sparse => {
                (self.index_of(object_offset).ok()? == index).then_some(object_offset)
            }
            Packing::Dense => {
                // The k-th unit of this object is round `k`; within a round, index `index`
                // holds the unit at position (index - first) mod count.
                let k = object_offset / unit;
                let unit_no = k.checked_mul(count)?.checked_add(self.position(index))?;
                unit_no
                    .checked_mul(unit)?
                    .checked_add(object_offset % unit)?
                    .checked_add(self.pattern_offset)
            }
        }
    }

    /// Where index `index` stands in each round of `count` units (its units are those whose
    /// number is this modulo `count`).
    fn position(&self, index: u32) -> u64 {
        let count = u64::from(self.count);
        (u64::from(index) + count - u64::from(self.first) % count) % count
    }

    /// The number of index `index`'s last unit at or before unit `unit_no`, if it has one.
    fn last_own_unit(&self, index: u32, unit_no: u64) -> Option<u64> {
        let count = u64::from(self.count);
        let back = (unit_no % count + count - self.position(index)) % count;
        unit_no.checked_sub(back)
    }

    /// Cuts `len` bytes at `offset` into per-unit pieces, in file order.
    pub fn extents(&self, offset: u64, len: u64) -> Result<Vec<Extent>, StripeError> {
        let mut out = Vec::new();
        let end = offset.saturating_add(len);
        let unit = u64::from(self.unit);
        let mut at = offset;
        while at < end {
            let rel = self.relative(at)?;
            let to_boundary = unit - rel % unit;
            let n = to_boundary.min(end - at);
            out.push(Extent {
                index: self.index_of(at)?,
                file_offset: at,
                object_offset: self.object_offset(at)?,
                len: n,
            });
            at += n;
        }
        Ok(out)
    }

    /// The size index `index`'s object must have for the file to be `file_size` bytes long
    /// (for truncate): the end of that index's last byte below `file_size`, or 0.
    pub fn object_size(&self, index: u32, file_size: u64) -> u64 {
        if file_size <= self.pattern_offset {
            return 0;
        }
        let unit = u64::from(self.unit);
        let count = u64::from(self.count);
        let rel = file_size - 1 - self.pattern_offset;
        let unit_no = rel / unit;
        let Some(own) = self.last_own_unit(index, unit_no) else {
            // The file ends before this index's first unit: its object holds nothing.
            return 0;
        };
        let own_end_rel = if own == unit_no {
            rel + 1
        } else {
            (own + 1) * unit
        };
        match self.packing {
            Packing::Sparse => self.pattern_offset + own_end_rel,
            Packing::Dense => (own / count) * unit + (own_end_rel - own * unit),
        }
    }

    /// The file size implied by the sizes of the objects of every index (`sizes[i]` for index
    /// `i`): the end of the furthest byte any object holds. This is how the MDS learns a
    /// file's size from the data servers while clients write through layouts.
    pub fn file_size(&self, sizes: &[u64]) -> u64 {
        sizes
            .iter()
            .enumerate()
            .filter(|(_, &s)| s > 0)
            .filter_map(|(i, &s)| match self.packing {
                // A sparse object's size is a file offset already, but it may include holes
                // that belong to others: its last byte may be another index's. Only bytes the
                // index owns count: walk back to the end of its own last unit.
                Packing::Sparse => {
                    let unit = u64::from(self.unit);
                    let unit_no = (s - 1).checked_sub(self.pattern_offset)? / unit;
                    let own = self.last_own_unit(i as u32, unit_no)?;
                    Some(if own == unit_no {
                        s
                    } else {
                        self.pattern_offset + (own + 1) * unit
                    })
                }
                Packing::Dense => self.file_offset(i as u32, s - 1).map(|o| o + 1),
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(unit: u32, count: u32, first: u32, packing: Packing) -> StripeMap {
        StripeMap::new(unit, count, first, 0, packing).unwrap()
    }

    #[test]
    fn units_are_dealt_round_robin_from_the_first_index() {
        let m = map(64, 3, 1, Packing::Dense);
        let idx: Vec<_> = (0..7).map(|u| m.index_of(u * 64).unwrap()).collect();
        assert_eq!(idx, [1, 2, 0, 1, 2, 0, 1]);
    }

    #[test]
    fn dense_objects_hold_their_units_back_to_back() {
        let m = map(64, 3, 0, Packing::Dense);
        // Units 0, 3, 6 go to index 0 at object offsets 0, 64, 128.
        assert_eq!(m.object_offset(0).unwrap(), 0);
        assert_eq!(m.object_offset(3 * 64 + 5).unwrap(), 64 + 5);
        assert_eq!(m.object_offset(6 * 64).unwrap(), 128);
        // Unit 4 goes to index 1 at its second slot.
        assert_eq!(m.index_of(4 * 64).unwrap(), 1);
        assert_eq!(m.object_offset(4 * 64 + 1).unwrap(), 65);
    }

    #[test]
    fn sparse_objects_keep_file_offsets() {
        let m = map(128, 4, 2, Packing::Sparse);
        assert_eq!(m.object_offset(1000).unwrap(), 1000);
        assert_eq!(m.file_offset(m.index_of(1000).unwrap(), 1000), Some(1000));
        assert_eq!(
            m.file_offset((m.index_of(1000).unwrap() + 1) % 4, 1000),
            None
        );
    }

    #[test]
    fn bad_maps_are_refused() {
        assert_eq!(
            StripeMap::new(0, 1, 0, 0, Packing::Dense),
            Err(StripeError::BadUnit(0))
        );
        assert_eq!(
            StripeMap::new(100, 1, 0, 0, Packing::Dense),
            Err(StripeError::BadUnit(100))
        );
        assert!(StripeMap::new(64, 0, 0, 0, Packing::Dense).is_err());
        assert!(StripeMap::new(64, 2, 2, 0, Packing::Dense).is_err());
        let m = StripeMap::new(64, 2, 0, 4096, Packing::Dense).unwrap();
        assert_eq!(m.index_of(10), Err(StripeError::BeforePattern(10)));
    }

    #[test]
    fn extents_split_at_unit_boundaries() {
        let m = map(64, 2, 0, Packing::Dense);
        let e = m.extents(60, 80).unwrap();
        assert_eq!(
            e,
            [
                Extent {
                    index: 0,
                    file_offset: 60,
                    object_offset: 60,
                    len: 4
                },
                Extent {
                    index: 1,
                    file_offset: 64,
                    object_offset: 0,
                    len: 64
                },
                Extent {
                    index: 0,
                    file_offset: 128,
                    object_offset: 64,
                    len: 12
                },
            ]
        );
        assert!(m.extents(5, 0).unwrap().is_empty());
    }

    fn any_map() -> impl Strategy<Value = StripeMap> {
        (1u32..64, 1u32..9, any::<bool>(), 0u64..3).prop_flat_map(|(u, c, dense, po)| {
            (0..c).prop_map(move |first| StripeMap {
                unit: u * 64,
                count: c,
                first,
                pattern_offset: po * 4096,
                packing: if dense {
                    Packing::Dense
                } else {
                    Packing::Sparse
                },
            })
        })
    }

    proptest! {
        #[test]
        fn file_offset_inverts_index_and_object_offset(m in any_map(), off in 0u64..1 << 40) {
            let off = off + m.pattern_offset;
            let i = m.index_of(off).unwrap();
            let o = m.object_offset(off).unwrap();
            prop_assert_eq!(m.file_offset(i, o), Some(off));
        }

        #[test]
        fn extents_cover_the_range_exactly_with_each_piece_in_one_unit(
            m in any_map(), off in 0u64..1 << 20, len in 0u64..1 << 16,
        ) {
            let off = off + m.pattern_offset;
            let e = m.extents(off, len).unwrap();
            prop_assert_eq!(e.iter().map(|x| x.len).sum::<u64>(), len);
            let mut at = off;
            for x in &e {
                prop_assert_eq!(x.file_offset, at);
                prop_assert_eq!(m.index_of(at + x.len - 1).unwrap(), x.index);
                prop_assert_eq!(m.object_offset(at + x.len - 1).unwrap(), x.object_offset + x.len - 1);
                at += x.len;
            }
        }

        /// Writing every byte of a file of `size` through the map leaves objects whose sizes
        /// are `object_size`, and `file_size` of those sizes is `size` again.
        #[test]
        fn object_sizes_and_file_size_agree_with_writing_every_byte(
            m in any_map(), size in 0u64..1 << 16,
        ) {
            let size = size + m.pattern_offset;
            let mut sizes = vec![0u64; m.count as usize];
            if size > m.pattern_offset {
                for x in m.extents(m.pattern_offset, size - m.pattern_offset).unwrap() {
                    let s = &mut sizes[x.index as usize];
                    *s = (*s).max(x.object_offset + x.len);
                }
            }
            for (i, &s) in sizes.iter().enumerate() {
                prop_assert_eq!(m.object_size(i as u32, size), s, "index {}", i);
            }
            let expect = if size > m.pattern_offset { size } else { 0 };
            prop_assert_eq!(m.file_size(&sizes), expect);
        }
    }
}
