//! Clients of the in-memory cluster: the test kit's [`Client`] with a session on the MDS or on
//! a data server, over a new in-process connection, and waits on state that only an NFS
//! call can read.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use nfs_proto::transport::{CallHandler, Conn, NoCalls};

use super::{client_addr, Cluster, MDS_ADDR};
use crate::client::{CbClient, Client, Setup};

impl Cluster {
    /// A new connection to the MDS that answers no calls (no session yet).
    pub fn conn(&self) -> Conn {
        self.conn_with(Arc::new(NoCalls))
    }

    /// A new connection to the MDS whose callbacks go to `handler`.
    pub fn conn_with<H: CallHandler>(&self, handler: Arc<H>) -> Conn {
        crate::client::start_conn(self.connect_mds(), MDS_ADDR, client_addr(), handler)
    }

    /// A session with the MDS for `owner`, RECLAIM_COMPLETE sent ([`Setup::new`]).
    pub async fn client(&self, owner: &str) -> Client {
        self.client_with(&Setup::new(owner)).await
    }

    /// A session with the MDS set up as `setup` says, over a new connection that answers no
    /// calls.
    pub async fn client_with(&self, setup: &Setup) -> Client {
        Client::establish(self.conn(), setup).await
    }

    /// A session with the MDS set up as `setup` says, whose callbacks go to `handler`.
    pub async fn client_answering<H: CallHandler>(&self, setup: &Setup, handler: Arc<H>) -> Client {
        Client::establish(self.conn_with(handler), setup).await
    }

    /// A session whose connection is also its back channel, served by `cb`, with
    /// RECLAIM_COMPLETE sent (as [`crate::client::client_with_back_channel`] over TCP).
    pub async fn client_with_back_channel(&self, owner: &str, cb: Arc<CbClient>) -> Client {
        let setup = Setup::new(owner).back_channel();
        Client::establish(self.conn_with(cb), &setup).await
    }

    /// A session on data server `id` set up as `setup` says (it must be up).
    pub async fn ds_client_with(&self, id: u16, setup: &Setup) -> Client {
        let stream = self
            .connect_ds(id)
            .unwrap_or_else(|e| panic!("connect to data server {id}: {e}"));
        Client::over(stream, self.ds_addr(id), Arc::new(NoCalls), setup).await
    }

    /// A session on data server `id` for `owner`, set up as a plain client's ([`Setup::new`])
    /// (it must be up).
    pub async fn ds_client(&self, id: u16, owner: &str) -> Client {
        self.ds_client_with(id, &Setup::new(owner)).await
    }

    /// Waits (up to 10 s of the runtime's clock) until `f`'s future gives true, panicking
    /// with `what`: for state read through a call (a data server's answer).
    pub async fn until_async<F: Future<Output = bool>>(
        &self,
        what: &str,
        mut f: impl FnMut() -> F,
    ) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !f().await {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
