//! Tests of the write buffer's range arithmetic (file.rs).

use super::*;

#[test]
fn coalescing_joins_adjacent_writes_and_cuts_large_ones() {
    let w = vec![
        (0, Bytes::from(vec![1u8; 10])),
        (10, Bytes::from(vec![2u8; 10])),
        (100, Bytes::from(vec![3u8; 25])),
        (5, Bytes::from(vec![4u8; 2])),
    ];
    let out = coalesce(w, 16);
    let shape: Vec<(u64, usize)> = out.iter().map(|(o, d)| (*o, d.len())).collect();
    assert_eq!(shape, vec![(0, 10), (10, 10), (100, 16), (116, 9), (5, 2)]);
    let out = coalesce(
        vec![
            (0, Bytes::from(vec![1u8; 4])),
            (4, Bytes::from(vec![2u8; 4])),
        ],
        16,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0].1[..], &[1, 1, 1, 1, 2, 2, 2, 2]);
}

#[test]
fn a_cut_drops_covered_writes_and_keeps_the_parts_outside_in_order() {
    let piece = |o: u64, n: usize, v: u8| (o, Bytes::from(vec![v; n]));
    let mut w = vec![
        piece(0, 10, 1),   // left edge: keeps 0..5
        piece(6, 2, 2),    // inside: goes
        piece(8, 10, 3),   // right edge: keeps 12..18
        piece(30, 5, 4),   // outside: stays
        piece(100, 50, 5), // not touched
    ];
    let cut = cut_out(&mut w, 5, 12, |(o, b)| (*o, b), |_, o, b| (o, b));
    assert_eq!(cut, 5 + 2 + 4);
    let shape: Vec<(u64, usize, u8)> = w.iter().map(|(o, b)| (*o, b.len(), b[0])).collect();
    assert_eq!(shape, vec![(0, 5, 1), (12, 6, 3), (30, 5, 4), (100, 50, 5)]);
    // A write over the middle of another splits it in two; nothing else moves.
    let mut w = vec![(0, Bytes::from((0u8..20).collect::<Vec<u8>>()))];
    assert_eq!(cut_out(&mut w, 5, 8, |(o, b)| (*o, b), |_, o, b| (o, b)), 3);
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].0, &w[0].1[..]), (0, &[0u8, 1, 2, 3, 4][..]));
    assert_eq!((w[1].0, w[1].1[0], w[1].1.len()), (8, 8, 12));
    // Nothing overlapping: nothing cut.
    assert_eq!(cut_out(&mut w, 5, 8, |(o, b)| (*o, b), |_, o, b| (o, b)), 0);
    assert_eq!(w.len(), 2);
}

#[test]
fn overlap_is_half_open() {
    let d = vec![(10, Bytes::from(vec![0u8; 10]))];
    assert!(!overlaps(&d, 0, 10));
    assert!(overlaps(&d, 0, 11));
    assert!(overlaps(&d, 19, 5));
    assert!(!overlaps(&d, 20, 5));
}
