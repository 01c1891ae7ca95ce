use bytes::Bytes;
use client::{Client, OpenOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scratch() {
    let addr = std::env::var("SCRATCH_ADDR").unwrap().parse().unwrap();
    let c = Client::connect(addr).await.unwrap();
    eprintln!("pnfs: {}", c.uses_pnfs());
    let data: Bytes = (0..(20u32 << 20) + 777)
        .map(|i| (i * 7 + i / 4093) as u8)
        .collect::<Vec<u8>>()
        .into();
    let t0 = std::time::Instant::now();
    let f = c.create("/big", 0o644).await.unwrap();
    let mut off = 0;
    while off < data.len() {
        let n = (data.len() - off).min(1 << 20);
        f.write_at(off as u64, data.slice(off..off + n))
            .await
            .unwrap();
        off += n;
    }
    f.close().await.unwrap();
    eprintln!("write {:?} {:?}", t0.elapsed(), c.stats());
    let st = c.stat("/big").await.unwrap();
    assert_eq!(st.size, data.len() as u64);
    let g = c.open("/big", &OpenOptions::read()).await.unwrap();
    let t0 = std::time::Instant::now();
    let back = g.read_to_end().await.unwrap();
    eprintln!("read {:?} {:?}", t0.elapsed(), c.stats());
    assert!(back == data);
    g.close().await.unwrap();
    c.shutdown().await;
}
