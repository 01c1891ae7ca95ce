//! `data_server::start`: one data server of the shared configuration file, started without
//! the MDS (what `pnfs ds --id N` runs). Real sockets: binding them at start is the point.

use std::net::{SocketAddr, TcpListener};

use cluster::Config;
use data_server::StartError;

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A configuration with data server 1 at `nfs` (NFS) and `control` on loopback, its objects
/// and the generated secret under `dir`.
fn config(dir: &std::path::Path, nfs: u16, control: u16) -> Config {
    Config::parse(&format!(
        "listen: 127.0.0.1:{}\nmetrics_listen: null\ndata_dir: {}\n\
         cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:{nfs}]\n\
         \x20     listen: 127.0.0.1:{nfs}\n      control: 127.0.0.1:{control}\n",
        free_port(),
        dir.display()
    ))
    .unwrap()
}

#[tokio::test]
async fn an_id_the_configuration_does_not_name_is_refused() {
    let e = data_server::start(&Config::default(), 9).await.unwrap_err();
    assert!(matches!(e, StartError::NoSuchServer(9)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "bad configuration: cluster.data_servers has no data server with id 9"
    );
}

#[tokio::test]
async fn a_busy_port_is_reported_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let nfs = busy.local_addr().unwrap().port();
    let e = data_server::start(&config(dir.path(), nfs, free_port()), 1)
        .await
        .unwrap_err();
    let want: SocketAddr = ([127, 0, 0, 1], nfs).into();
    assert!(
        matches!(&e, StartError::Listen { addr, .. } if *addr == want),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("data server 1: listening on {want}: ")),
        "{e}"
    );
}

#[tokio::test]
async fn a_started_data_server_listens_for_its_mds_and_keeps_its_objects_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (nfs, control) = (free_port(), free_port());
    let cfg = config(dir.path(), nfs, control);
    data_server::start(&cfg, 1).await.unwrap();
    // The control service answers connections; the NFS port is taken (it is served once the
    // MDS registers).
    tokio::net::TcpStream::connect(("127.0.0.1", control))
        .await
        .unwrap();
    assert!(TcpListener::bind(("127.0.0.1", nfs)).is_err());
    // The secret was generated in the data directory, the objects live in `ds1`.
    assert!(dir.path().join(cluster::config::SECRET_FILE).exists());
    assert!(dir.path().join("ds1").is_dir());
}
