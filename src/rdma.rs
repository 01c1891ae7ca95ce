//! NFS over RDMA beside TCP: the MDS listens on `rdma_listen` (port 20049, as knfsd) when the
//! binary is built with the `rdma` feature and an RDMA device has the address. Either way the
//! server prints one line saying whether RDMA is on and, if not, why.

use std::sync::Arc;

use mds::{Config, Mds};

/// Starts the MDS's RDMA listener if it can; returns the line to print.
#[cfg(feature = "rdma")]
pub(crate) fn start_mds(mds: &Arc<Mds>, cfg: &Config, host: &str) -> String {
    let Some(addr) = cfg.rdma_listen else {
        return "RDMA:           off (rdma_listen: null)".into();
    };
    match rdma::Listener::bind(addr, rdma::Config::default()) {
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

/// Without the `rdma` feature there is nothing to start.
#[cfg(not(feature = "rdma"))]
pub(crate) fn start_mds(_mds: &Arc<Mds>, cfg: &Config, _host: &str) -> String {
    if cfg.rdma_listen.is_none() {
        return "RDMA:           off (rdma_listen: null)".into();
    }
    "RDMA:           off (built without the rdma feature: cargo build --release --features rdma, which needs cmake and clang)".into()
}
