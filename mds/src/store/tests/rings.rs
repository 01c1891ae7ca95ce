//! Ring generations: kept while the data server list stays, new when it changes.

use super::*;

#[test]
fn the_same_servers_keep_their_generation_and_a_change_makes_a_new_one() {
    let (_d, s) = fresh();
    assert!(s.rings().unwrap().is_empty());
    assert_eq!(s.adopt_ring(vec![1, 2, 3]).wait().unwrap(), 1);
    assert_eq!(s.adopt_ring(vec![1, 2, 3, 3]).wait().unwrap(), 1);
    assert_eq!(s.adopt_ring(vec![1, 2, 3, 4]).wait().unwrap(), 2);
    assert_eq!(s.adopt_ring(vec![1, 2, 3]).wait().unwrap(), 3);
    // The order is the ring's (failure domains interleave ids): another order is another
    // ring, since windows are runs of consecutive positions.
    assert_eq!(s.adopt_ring(vec![1, 3, 2]).wait().unwrap(), 4);
    let rings = s.rings().unwrap();
    assert_eq!(rings[&1], vec![1, 2, 3]);
    assert_eq!(rings[&2], vec![1, 2, 3, 4]);
    assert_eq!(rings[&3], vec![1, 2, 3]);
    assert_eq!(rings[&4], vec![1, 3, 2]);
}

#[test]
fn ring_generations_survive_a_reopen() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("m.redb");
    {
        let s = open_at(&path);
        assert_eq!(s.adopt_ring(vec![1, 2]).wait().unwrap(), 1);
        assert_eq!(s.adopt_ring(vec![1, 2, 5]).wait().unwrap(), 2);
    }
    let s = open_at(&path);
    assert_eq!(s.rings().unwrap()[&1], vec![1, 2]);
    assert_eq!(s.adopt_ring(vec![1, 2, 5]).wait().unwrap(), 2);
}
