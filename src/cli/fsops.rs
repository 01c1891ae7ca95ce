//! `pnfs cat`, `rm`, `mkdir`, `mv`: namespace operations and reading to stdout.

use client::url::NfsUrl;
use client::{Client, FileType, OpenOptions};
use futures::future::BoxFuture;
use futures::FutureExt;
use nfs_proto::nfs4::NfsStat4;

use super::ls::write_stdout;
use super::{
    nfs_basename, nfs_join, parse_url, Clients, CmdResult, Failure, MkdirArgs, MvArgs, RmArgs,
    UrlArgs,
};

/// Bytes read per call.
const CHUNK: u64 = 4 << 20;

/// Writes the file to stdout in chunks.
pub(super) async fn cat(clients: &mut Clients, a: &UrlArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let c = clients.get(&url).await?;
    let f = c
        .open(&url.path, &OpenOptions::read())
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    let size = f.size();
    let mut off = 0;
    let mut result = Ok(());
    while off < size {
        // The client's pieces as they are: no copy into one buffer first.
        match f.read_pieces_at(off, CHUNK.min(size - off)).await {
            Ok(pieces) if pieces.is_empty() => break,
            Ok(pieces) => {
                off += pieces.iter().map(|b| b.len() as u64).sum::<u64>();
                if let Err(e) = pieces.iter().try_for_each(|b| write_stdout(b)) {
                    result = Err(e);
                    break;
                }
            }
            Err(e) => {
                result = Err(Failure::nfs(&url, &e));
                break;
            }
        }
    }
    let closed = f.close().await;
    result?;
    closed.map_err(|e| Failure::nfs(&url, &e))
}

/// Removes each URL; directories only with `-r` (their contents first).
pub(super) async fn rm(clients: &mut Clients, a: &RmArgs) -> CmdResult {
    for u in &a.urls {
        let url = parse_url(u)?;
        if nfs_basename(&url.path).is_none() {
            return Err(Failure::usage(format!(
                "{url}: refusing to remove the root"
            )));
        }
        let c = clients.get(&url).await?;
        let meta = c
            .stat(&url.path)
            .await
            .map_err(|e| Failure::nfs(&url, &e))?;
        if meta.is_dir() {
            if !a.recursive {
                return Err(Failure::other(format!(
                    "{url}: is a directory (use -r to remove it and its contents)"
                )));
            }
            remove_tree(&c, &url, url.path.clone()).await?;
        } else {
            c.remove(&url.path)
                .await
                .map_err(|e| Failure::nfs(&url, &e))?;
        }
    }
    Ok(())
}

/// Removes directory `path` of `base`'s server and everything below it, depth first.
pub(super) fn remove_tree<'a>(
    c: &'a Client,
    base: &'a NfsUrl,
    path: String,
) -> BoxFuture<'a, CmdResult> {
    async move {
        let here = base.with_path(&path);
        let entries = c
            .readdir(&path)
            .await
            .map_err(|e| Failure::nfs(&here, &e))?;
        for e in entries {
            let child = nfs_join(&path, &e.name);
            let is_dir = match &e.meta {
                Some(m) => m.file_type == FileType::Dir,
                None => c
                    .stat(&child)
                    .await
                    .map_err(|err| Failure::nfs(base.with_path(&child), &err))?
                    .is_dir(),
            };
            if is_dir {
                remove_tree(c, base, child).await?;
            } else {
                c.remove(&child)
                    .await
                    .map_err(|err| Failure::nfs(base.with_path(&child), &err))?;
            }
        }
        c.remove(&path).await.map_err(|e| Failure::nfs(&here, &e))
    }
    .boxed()
}

/// Makes each directory; with `-p`, its missing parents too, and an existing directory is
/// no error.
pub(super) async fn mkdir(clients: &mut Clients, a: &MkdirArgs) -> CmdResult {
    for u in &a.urls {
        let url = parse_url(u)?;
        let c = clients.get(&url).await?;
        if !a.parents {
            c.mkdir(&url.path, a.mode)
                .await
                .map_err(|e| Failure::nfs(&url, &e))?;
            continue;
        }
        let mut path = String::new();
        for name in url.path.split('/').filter(|n| !n.is_empty()) {
            path = nfs_join(&path, name);
            match c.mkdir(&path, a.mode).await {
                Ok(()) => {}
                Err(e) if e.is(NfsStat4::NFS4ERR_EXIST) => {
                    let here = url.with_path(&path);
                    let m = c.stat(&path).await.map_err(|e| Failure::nfs(&here, &e))?;
                    if !m.is_dir() {
                        return Err(Failure::nfs(&here, &e));
                    }
                }
                Err(e) => return Err(Failure::nfs(url.with_path(&path), &e)),
            }
        }
    }
    Ok(())
}

/// Renames on one server; an existing directory as the target receives the source's name.
pub(super) async fn mv(clients: &mut Clients, a: &MvArgs) -> CmdResult {
    let from = parse_url(&a.from)?;
    let to = parse_url(&a.to)?;
    if (from.host.as_str(), from.port) != (to.host.as_str(), to.port) {
        return Err(Failure::usage(format!(
            "{from} -> {to}: mv works within one server (use cp and rm between servers)"
        )));
    }
    let Some(name) = nfs_basename(&from.path) else {
        return Err(Failure::usage(format!("{from}: cannot move the root")));
    };
    let c = clients.get(&from).await?;
    let target = match c.stat(&to.path).await {
        Ok(m) if m.is_dir() => nfs_join(&to.path, name),
        Ok(_) => to.path.clone(),
        Err(e) if e.is(NfsStat4::NFS4ERR_NOENT) => to.path.clone(),
        Err(e) => return Err(Failure::nfs(&to, &e)),
    };
    if target.starts_with(&format!("{}/", from.path.trim_end_matches('/'))) {
        return Err(Failure::usage(format!(
            "{from} -> {to}: cannot move into itself"
        )));
    }
    c.rename(&from.path, &target)
        .await
        .map_err(|e| Failure::nfs(format!("{from} -> {}", to.with_path(&target)), &e))
}
