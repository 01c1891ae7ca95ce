//! `pnfs mount nfs://host[:port]/path MOUNTPOINT`: the client as a FUSE file system, in the
//! foreground until `umount` (or `fusermount3 -u`), SIGINT or SIGTERM; on a signal, dirty
//! data is sent and committed before the unmount.

use tokio::signal::unix::{signal, SignalKind};

use super::{parse_url, Clients, CmdResult, Failure, MountArgs};

/// Mounts and serves until unmounted or signalled.
pub(crate) async fn mount(clients: &mut Clients, a: &MountArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let mut opts = mount::MountOptions {
        fsname: a.url.clone(),
        ..mount::MountOptions::default()
    };
    for o in &a.options {
        opts.apply(o).map_err(Failure::usage)?;
    }
    let c = clients.get(&url).await?;
    let (root, meta) = c
        .node_of(&url.path)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    if meta.file_type != client::FileType::Dir {
        return Err(Failure::other(format!("{url}: not a directory")));
    }
    let rt = tokio::runtime::Handle::current();
    let mut m = mount::mount(c, root, &a.mountpoint, opts, rt)
        .map_err(|e| Failure::io(a.mountpoint.display(), &e))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| Failure::io("SIGTERM", &e))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| Failure::io("SIGINT", &e))?;
    tokio::select! {
        _ = m.unmounted() => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    m.unmount()
        .await
        .map_err(|e| Failure::io(a.mountpoint.display(), &e))
}
