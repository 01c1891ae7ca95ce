//! NFS over RDMA beside TCP: the MDS listens on `rdma_listen` (port 20049, as knfsd) when an
//! RDMA device has the address. Either way the server prints one line saying whether RDMA is on
//! and, if not, why (no device, or a binary built without rdma-core's headers: the rdma crate's
//! error says which).

use std::sync::Arc;

use mds::{Config, Mds};

/// Starts the MDS's RDMA listener if it can; returns the line to print.
pub(crate) fn start_mds(mds: &Arc<Mds>, cfg: &Config, host: &str) -> String {
    let Some(addr) = cfg.rdma_listen else {
        return "RDMA:           off (rdma_listen: null)".into();
    };
    match rdma::Listener::bind(addr, data_server::start::rdma_config(cfg)) {
        Ok(l) => {
            let port = l.local_addr().port();
            tokio::spawn(nfs_server::serve_rdma(mds.clone(), l));
            format!(
                "RDMA:           NFS over RDMA on {addr}: mount -t nfs -o vers=4.1,proto=rdma,port={port} {host}:/ /mnt"
            )
        }
        Err(e) => format!("RDMA:           off ({addr}: {e})"),
    }
}
