//! Read caches of open Files stay the file's: a sibling File's write, or another client's
//! write that an OPEN's change attribute reveals, makes every cached copy go (on a file
//! striped over three data servers).

use bytes::Bytes;
use client::{Client, OpenOptions};
use testkit::loopback::cluster::start_cluster;

fn fill(len: usize, b: u8) -> Bytes {
    Bytes::from(vec![b; len])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_siblings_write_is_read_through_a_file_that_cached_the_old_bytes() {
    let (_k, _mds, addr) = start_cluster(3, |c| c.cluster.layouts = true).await;
    let c = Client::connect(addr).await.unwrap();
    let f = c.create("/f", 0o644).await.unwrap();
    f.write_at(0, fill(3 << 20, b'a')).await.unwrap();
    f.close().await.unwrap();
    let reader = c.open("/f", &OpenOptions::read()).await.unwrap();
    assert_eq!(reader.read_at(1 << 20, 4).await.unwrap(), "aaaa");
    let writer = c.open("/f", &OpenOptions::read_write()).await.unwrap();
    writer.write_at(1 << 20, fill(4, b'b')).await.unwrap();
    writer.fsync().await.unwrap();
    assert_eq!(reader.read_at(1 << 20, 4).await.unwrap(), "bbbb");
    writer.close().await.unwrap();
    reader.close().await.unwrap();
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_granted_later_does_not_vouch_for_bytes_cached_before_it() {
    let (_k, _mds, addr) = start_cluster(3, |c| c.cluster.layouts = true).await;
    let a = Client::connect(addr).await.unwrap();
    let b = Client::connect(addr).await.unwrap();
    let f = a.create("/f", 0o644).await.unwrap();
    f.write_at(0, fill(2 << 20, b'a')).await.unwrap();
    f.close().await.unwrap();
    // Client A reads and keeps the file open (its bytes cached).
    let kept = a.open("/f", &OpenOptions::read()).await.unwrap();
    assert_eq!(kept.read_at(0, 4).await.unwrap(), "aaaa");
    // Client B rewrites it in place (A's delegation, if any, is recalled first).
    let w = b.open("/f", &OpenOptions::read_write()).await.unwrap();
    w.write_at(0, fill(2 << 20, b'b')).await.unwrap();
    w.close().await.unwrap();
    // A opens it again: the OPEN's change attribute is new, whatever delegation it brings.
    let again = a.open("/f", &OpenOptions::read()).await.unwrap();
    assert_eq!(again.read_at(0, 4).await.unwrap(), "bbbb");
    // The File kept open through it reads B's bytes after revalidating (or at once).
    kept.revalidate().await.unwrap();
    assert_eq!(kept.read_at(0, 4).await.unwrap(), "bbbb");
    assert_eq!(kept.read_at((2 << 20) - 4, 4).await.unwrap(), "bbbb");
    again.close().await.unwrap();
    kept.close().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_across_blocks_comes_as_the_cached_blocks_themselves_holes_as_zeros() {
    let (_k, _mds, addr) = start_cluster(3, |c| c.cluster.layouts = true).await;
    let c = Client::connect(addr).await.unwrap();
    // Block 0 written, block 1 a hole, block 2 half written (the file ends there).
    let f = c.create("/f", 0o644).await.unwrap();
    f.write_at(0, fill(1 << 20, b'a')).await.unwrap();
    f.write_at(2 << 20, fill(512 << 10, b'c')).await.unwrap();
    f.close().await.unwrap();
    let r = c.open("/f", &OpenOptions::read()).await.unwrap();
    let (off, len) = (512 << 10, 3 << 20);
    let pieces = r.read_pieces_at(off, len).await.unwrap();
    let mut want = vec![b'a'; 512 << 10];
    want.extend(vec![0; 1 << 20]);
    want.extend(vec![b'c'; 512 << 10]);
    let got: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
    assert_eq!(got.len(), want.len(), "clipped at the end of the file");
    assert!(
        got == want,
        "the pieces hold the file's bytes, the hole as zeros"
    );
    assert!(
        pieces.len() >= 3,
        "one piece per block at least: {}",
        pieces.len()
    );
    // Not copied: asked again, the same memory (the cached blocks) comes back.
    let again = r.read_pieces_at(off, len).await.unwrap();
    assert_eq!(again[0].as_ptr(), pieces[0].as_ptr());
    assert_eq!(
        again.last().unwrap().as_ptr(),
        pieces.last().unwrap().as_ptr()
    );
    // read_at gives the same bytes as one buffer.
    assert!(r.read_at(off, len).await.unwrap() == want);
    r.close().await.unwrap();
    c.shutdown().await;
}
