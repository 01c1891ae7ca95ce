use bytes::Bytes;
use client::{Client, OpenOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scratch_restart() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("client=debug")
        .with_test_writer()
        .try_init();
    let addr = std::env::var("SCRATCH_ADDR").unwrap().parse().unwrap();
    let c = Client::connect(addr).await.unwrap();
    let data: Bytes = (0..(32u32 << 20))
        .map(|i| (i * 13 + i / 4093) as u8)
        .collect::<Vec<u8>>()
        .into();
    let f = c.create("/restart", 0o644).await.unwrap();
    let mut off = 0;
    let t0 = std::time::Instant::now();
    while off < data.len() {
        let n = (data.len() - off).min(1 << 20);
        f.write_at(off as u64, data.slice(off..off + n))
            .await
            .unwrap();
        off += n;
        if off % (4 << 20) == 0 {
            f.fsync().await.unwrap();
            eprintln!("{:?} synced {off}", t0.elapsed());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    f.close().await.unwrap();
    eprintln!("done {:?} {:?}", t0.elapsed(), c.stats());
    let g = c.open("/restart", &OpenOptions::read()).await.unwrap();
    let back = g.read_to_end().await.unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == data);
    g.close().await.unwrap();
}
