//! Two sends of one file asking for its layout at once, on a file striped over three data
//! servers: each gets one (two LAYOUTGETs) and the table keeps the one answered last, so the
//! writes of the other went through a layout that is no longer there. The size the MDS
//! shows another client right after the close must still cover every byte written: the end
//! of what went to the data servers is the file's, whichever layout carried it.

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOptions};
use testkit::loopback::cluster::start_cluster;

const MIB: u64 = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_a_replaced_layout_are_in_the_size_another_client_sees() {
    let (_k, _mds, addr) = start_cluster(3, |c| {
        c.lease_time = 10;
        c.cluster.layouts = true;
    })
    .await;
    // No delegation: each close LAYOUTCOMMITs at once, under the layout in the table.
    let opts = ClientOptions {
        delegations: false,
        ..ClientOptions::default()
    };
    let writer = Client::connect_with(addr, opts.clone()).await.unwrap();
    let reader = Client::connect_with(addr, opts).await.unwrap();
    let mut raced = 0;
    for i in 0..16u64 {
        let path = format!("/f{i}");
        // Created and closed empty: the open for writing below carries no LAYOUTGET, so
        // the first WRITEs ask for the layout.
        writer
            .create(&path, 0o644)
            .await
            .unwrap()
            .close()
            .await
            .unwrap();
        let layouts = writer.stats().layouts;
        let a = writer
            .open(&path, &OpenOptions::read_write())
            .await
            .unwrap();
        let b = writer
            .open(&path, &OpenOptions::read_write())
            .await
            .unwrap();
        // Two Files of one open: two sends at once, each with its own half (alternating
        // which one ends further, so either layout may be the one replaced).
        let (lo, hi) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let low = [(0, Bytes::from(vec![1u8; MIB as usize]))];
        let high = [(MIB, Bytes::from(vec![2u8; MIB as usize]))];
        let (x, y) = tokio::join!(lo.write_list(&low), hi.write_list(&high));
        x.unwrap();
        y.unwrap();
        if writer.stats().layouts - layouts >= 2 {
            raced += 1;
        }
        a.close().await.unwrap();
        b.close().await.unwrap();
        let f = reader.open(&path, &OpenOptions::read()).await.unwrap();
        let size = f.metadata().await.unwrap().size;
        f.close().await.unwrap();
        assert_eq!(size, 2 * MIB, "{path}: the size another client sees");
    }
    let stats = writer.stats();
    eprintln!("{raced} of 16 files got two layouts at once; {stats:?}");
    assert!(stats.ds_bytes_written > 0, "{stats:?}");
    writer.shutdown().await;
    reader.shutdown().await;
}
