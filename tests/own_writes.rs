//! What a client sees of its own writes through layouts before it LAYOUTCOMMITs them, against
//! `pnfs server` (an MDS and three data servers, files striped over them) as a child process.
//! The MDS leaves a client's own unreported writes out of the attributes it shows that
//! client (it asks the data servers only for other clients' writes), so the client counts
//! them in itself; a second client sees them through the MDS asking the data servers.

mod support;

use bytes::Bytes;
use client::{Client, ClientOptions};
use support::*;

const KIB: usize = 1 << 10;

#[test]
fn a_writer_sees_its_unreported_writes_and_so_does_another_client() {
    let s = Server::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // No delegation, so the size comes from the server; a small write-back buffer, so
        // the writes go to the data servers before any fsync.
        let opts = ClientOptions {
            delegations: false,
            write_back: 64 * KIB,
            ..ClientOptions::default()
        };
        let w = Client::connect_with(s.addr(), opts).await.unwrap();
        assert!(w.uses_pnfs());
        let f = w.create("/f", 0o644).await.unwrap();
        let data = Bytes::from(vec![7u8; 300 * KIB]);
        f.write_at(0, data).await.unwrap();
        // Sends what is buffered (no COMMIT, no LAYOUTCOMMIT) and asks for the attributes.
        assert_eq!(f.revalidate().await.unwrap().size, 300 * KIB as u64);
        assert!(w.stats().ds_bytes_written >= 300 * KIB as u64);
        // A GETATTR by path: the MDS answers its recorded size (0) to the writer, which
        // counts in the end of what it sent through its layout.
        assert_eq!(w.stat("/f").await.unwrap().size, 300 * KIB as u64);
        // Another client: the MDS asks the data servers for the writer's unreported bytes.
        let r = Client::connect(s.addr()).await.unwrap();
        assert_eq!(r.stat("/f").await.unwrap().size, 300 * KIB as u64);
        // A truncate by the writer: its unreported end stops at the new size.
        w.truncate("/f", 1000).await.unwrap();
        assert_eq!(w.stat("/f").await.unwrap().size, 1000);
        assert_eq!(r.stat("/f").await.unwrap().size, 1000);
        f.close().await.unwrap();
        assert_eq!(r.stat("/f").await.unwrap().size, 1000);
        r.shutdown().await;
        w.shutdown().await;
    });
}

/// A file written and closed under a write delegation is not LAYOUTCOMMITted at close (the
/// delegation's return carries it): the writer, another client's stat and, after the return
/// an open by that client forces, the recorded size all show the bytes written; a size that
/// only a LAYOUTCOMMIT or the data servers could have told.
#[test]
fn a_file_closed_under_a_write_delegation_keeps_its_size_until_and_after_the_return() {
    let s = Server::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let w = Client::connect(s.addr()).await.unwrap();
        let f = w.create("/d", 0o644).await.unwrap();
        f.write_at(0, Bytes::from(vec![5u8; 200 * KIB]))
            .await
            .unwrap();
        f.close().await.unwrap();
        assert_eq!(
            w.stats().delegations_held,
            1,
            "the create's write delegation"
        );
        let before = s.metrics();
        let commits = |page: &str| metric_sum(page, "pnfs_ops_total", &[("op", "OP_LAYOUTCOMMIT")]);
        assert_eq!(w.stat("/d").await.unwrap().size, 200 * KIB as u64);
        let r = Client::connect(s.addr()).await.unwrap();
        assert_eq!(r.stat("/d").await.unwrap().size, 200 * KIB as u64);
        assert_eq!(commits(&s.metrics()), commits(&before), "none yet");
        // The reader's open recalls the delegation; the return LAYOUTCOMMITs.
        let g = r.open("/d", &client::OpenOptions::read()).await.unwrap();
        assert_eq!(
            g.read_at(0, 300 * KIB as u64).await.unwrap().len(),
            200 * KIB
        );
        assert_eq!(commits(&s.metrics()) - commits(&before), 1.0);
        g.close().await.unwrap();
        assert_eq!(r.stat("/d").await.unwrap().size, 200 * KIB as u64);
        assert_eq!(w.stat("/d").await.unwrap().size, 200 * KIB as u64);
        r.shutdown().await;
        w.shutdown().await;
    });
}
