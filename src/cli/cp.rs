//! `pnfs cp`, `put`, `get`: copy a file between a local path and a server, or between
//! servers, in 4 MiB chunks with reading and writing overlapped (a reader task feeds the
//! writer through a short queue; the library buffers and stripes the writes). Optional
//! progress bar and sha256 check of what arrived.
//!
//! The payload is not copied on the way: a local file is read and written with positional
//! I/O on the blocking pool, straight into and out of the chunk's buffer (`tokio::fs` goes
//! through a buffer of its own, at most 2 MiB a call, and copies), and a server's file is
//! read as the pieces its client caches ([`File::read_pieces_at`]), handed on as they are.
//!
//! Within one server (both URLs name the same server address) the server copies
//! (COPY, RFC 7862: [`File::copy_to`]) and no byte goes through this client; a server that
//! cannot (NFS4ERR_NOTSUPP, no NFSv4.2, two exports: [`client::Error::is_no_server_copy`])
//! gets the copy through the client instead, as does `--no-server-copy`.

use std::fmt;
use std::io::{self, IsTerminal};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client::url::NfsUrl;
use client::{File, OpenOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nfs_proto::nfs4::NfsStat4;
use sha2::{Digest, Sha256};

use super::{nfs_basename, nfs_join, Clients, CmdResult, CopyOpts, Failure, Location};
use super::{EXIT_ERROR, EXIT_MISMATCH};

/// Bytes per read and per write call.
const CHUNK: usize = 4 << 20;
/// Chunks read ahead of the writer.
const QUEUE: usize = 4;

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Nfs(u) => write!(f, "{u}"),
        }
    }
}

/// An open source file.
enum Reader {
    Local(Arc<std::fs::File>),
    Nfs(File),
}

/// An open destination file.
enum Writer {
    Local(Arc<std::fs::File>),
    Nfs(File),
}

/// A chunk of the file in pieces, in order (one for a local source; a server's file comes
/// as its client's blocks).
type Chunk = Vec<Bytes>;

/// Copies `src` to `dst` (at least one of them on a server).
pub(super) async fn copy(
    clients: &mut Clients,
    src: Location,
    dst: Location,
    opts: &CopyOpts,
) -> CmdResult {
    if let (Location::Local(_), Location::Local(_)) = (&src, &dst) {
        return Err(Failure::usage(format!(
            "{src} -> {dst}: one side must be an nfs:// URL (use cp(1) for local copies)"
        )));
    }
    let (mut reader, size, mode) = open_source(clients, &src).await?;
    let dst = match resolve_destination(clients, &src, dst).await {
        Ok(d) => d,
        Err(f) => {
            close_reader(reader).await;
            return Err(f);
        }
    };
    let writer = match open_destination(clients, &dst, mode).await {
        Ok(w) => w,
        Err(f) => {
            close_reader(reader).await;
            return Err(f);
        }
    };
    let bar = progress(opts, size, &format!("{src} -> {dst}"));
    let writer = if opts.no_server_copy || !clients.same_server(&src, &dst) {
        writer
    } else {
        match server_copy(&reader, writer, size, &src, &dst, opts, &bar).await {
            Ok(ServerCopy::Done) => {
                close_reader(reader).await;
                bar.finish_and_clear();
                return check_digests(clients, &src, &dst, opts).await;
            }
            Ok(ServerCopy::Refused(writer)) => writer,
            Err(f) => {
                close_reader(reader).await;
                bar.finish_and_clear();
                return Err(f);
            }
        }
    };
    let copied = pump(&mut reader, &src, size, writer, &dst, opts.sha256, &bar).await;
    close_reader(reader).await;
    bar.finish_and_clear();
    let (copied_bytes, src_digest) = copied?;
    let Some(src_digest) = src_digest else {
        return Ok(());
    };
    let bar = progress(opts, copied_bytes, &format!("verifying {dst}"));
    let dst_digest = digest_of(clients, &dst, &bar).await;
    bar.finish_and_clear();
    let dst_digest = dst_digest?;
    if dst_digest != src_digest {
        return Err(Failure {
            code: EXIT_MISMATCH,
            message: format!(
                "sha256 mismatch: source {src} {src_digest}, destination {dst} {dst_digest}"
            ),
        });
    }
    println!("{dst_digest}  {dst}");
    Ok(())
}

/// How a server-side copy went.
enum ServerCopy {
    /// Copied, and the destination closed.
    Done,
    /// The server cannot copy these files: the destination, still open, for a copy
    /// through the client.
    Refused(Writer),
}

/// The server copies `size` bytes of `reader` into `writer` (both files on one server),
/// then the destination is closed.
async fn server_copy(
    reader: &Reader,
    writer: Writer,
    size: u64,
    src: &Location,
    dst: &Location,
    opts: &CopyOpts,
    bar: &ProgressBar,
) -> CmdResult<ServerCopy> {
    let d = match writer {
        Writer::Nfs(d) => d,
        w => return Ok(ServerCopy::Refused(w)),
    };
    let Reader::Nfs(s) = reader else {
        return Ok(ServerCopy::Refused(Writer::Nfs(d)));
    };
    let copied = if size == 0 {
        Ok(0)
    } else {
        s.copy_to(0, &d, 0, size).await.map(|c| c.bytes)
    };
    let copied = match copied {
        Err(e) if e.is_no_server_copy() => {
            if opts.common.verbose {
                eprintln!(
                    "pnfs: {src} -> {dst}: no server-side copy ({e}); copying through this client"
                );
            }
            return Ok(ServerCopy::Refused(Writer::Nfs(d)));
        }
        other => other,
    };
    let closed = d.close().await.map_err(|e| Failure::nfs(dst, &e));
    let copied = copied.map_err(|e| Failure::nfs(format!("{src} -> {dst}"), &e))?;
    closed?;
    bar.set_position(copied);
    if copied < size {
        return Err(Failure {
            code: EXIT_ERROR,
            message: format!("{src}: {copied} bytes copied of {size} (the file shrank?)"),
        });
    }
    Ok(ServerCopy::Done)
}

/// With `--sha256`, after a server-side copy: the digests of source and destination, both
/// read back from the server.
async fn check_digests(
    clients: &mut Clients,
    src: &Location,
    dst: &Location,
    opts: &CopyOpts,
) -> CmdResult {
    if !opts.sha256 {
        return Ok(());
    }
    let bar = progress(opts, 0, &format!("verifying {src} and {dst}"));
    let src_digest = digest_of(clients, src, &bar).await;
    let dst_digest = digest_of(clients, dst, &bar).await;
    bar.finish_and_clear();
    let (src_digest, dst_digest) = (src_digest?, dst_digest?);
    if dst_digest != src_digest {
        return Err(Failure {
            code: EXIT_MISMATCH,
            message: format!(
                "sha256 mismatch: source {src} {src_digest}, destination {dst} {dst_digest}"
            ),
        });
    }
    println!("{dst_digest}  {dst}");
    Ok(())
}

/// A progress bar on stderr (hidden when stderr is no terminal or with `--no-progress`).
fn progress(opts: &CopyOpts, total: u64, msg: &str) -> ProgressBar {
    if opts.no_progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{msg}\n[{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(msg.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Opens the source: its reader, size and permission bits.
async fn open_source(clients: &mut Clients, src: &Location) -> CmdResult<(Reader, u64, u32)> {
    match src {
        Location::Local(p) => {
            let f = std::fs::File::open(p).map_err(|e| Failure::io(p.display(), &e))?;
            let m = f.metadata().map_err(|e| Failure::io(p.display(), &e))?;
            if m.is_dir() {
                return Err(Failure::other(format!("{}: is a directory", p.display())));
            }
            use std::os::unix::fs::PermissionsExt;
            Ok((
                Reader::Local(Arc::new(f)),
                m.len(),
                m.permissions().mode() & 0o7777,
            ))
        }
        Location::Nfs(u) => {
            let c = clients.get(u).await?;
            let f = c
                .open(&u.path, &OpenOptions::read())
                .await
                .map_err(|e| Failure::nfs(u, &e))?;
            let mode = f.metadata().await.map(|m| m.mode & 0o7777).unwrap_or(0o644);
            let size = f.size();
            Ok((Reader::Nfs(f), size, mode))
        }
    }
}

/// The source's last name.
fn source_name(src: &Location) -> Option<String> {
    match src {
        Location::Local(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
        Location::Nfs(u) => nfs_basename(&u.path).map(str::to_string),
    }
}

/// An existing directory (or a path written with a trailing `/`) as the destination
/// receives the source's name, as with cp(1).
async fn resolve_destination(
    clients: &mut Clients,
    src: &Location,
    dst: Location,
) -> CmdResult<Location> {
    let name = source_name(src);
    match dst {
        Location::Local(p) => {
            let is_dir = std::fs::metadata(&p).map(|m| m.is_dir()).unwrap_or(false);
            Ok(Location::Local(local_target(p, is_dir, name.as_deref())?))
        }
        Location::Nfs(u) => {
            let c = clients.get(&u).await?;
            let is_dir = match c.stat(&u.path).await {
                Ok(m) => m.is_dir(),
                Err(e) if e.is(NfsStat4::NFS4ERR_NOENT) => false,
                Err(e) => return Err(Failure::nfs(&u, &e)),
            };
            if is_dir || u.path.ends_with('/') {
                let name = name.ok_or_else(|| {
                    Failure::usage(format!("{u}: a directory; name the destination file"))
                })?;
                Ok(Location::Nfs(u.with_path(&nfs_join(&u.path, &name))))
            } else {
                Ok(Location::Nfs(u))
            }
        }
    }
}

/// Where a local destination writes: into `p` when it is a directory.
fn local_target(p: PathBuf, is_dir: bool, name: Option<&str>) -> CmdResult<PathBuf> {
    if !is_dir {
        return Ok(p);
    }
    match name {
        Some(n) => Ok(p.join(n)),
        None => Err(Failure::usage(format!(
            "{}: a directory; name the destination file",
            p.display()
        ))),
    }
}

async fn open_destination(clients: &mut Clients, dst: &Location, mode: u32) -> CmdResult<Writer> {
    match dst {
        Location::Local(p) => {
            let f = std::fs::File::create(p).map_err(|e| Failure::io(p.display(), &e))?;
            Ok(Writer::Local(Arc::new(f)))
        }
        Location::Nfs(u) => {
            let c = clients.get(u).await?;
            let f = c
                .create(&u.path, mode)
                .await
                .map_err(|e| Failure::nfs(u, &e))?;
            Ok(Writer::Nfs(f))
        }
    }
}

async fn close_reader(r: Reader) {
    if let Reader::Nfs(f) = r {
        let _ = f.close().await;
    }
}

/// Reads up to `CHUNK` bytes at `off`; empty at the end.
async fn read_chunk(r: &mut Reader, src: &Location, off: u64, size: u64) -> CmdResult<Chunk> {
    match r {
        Reader::Local(f) => {
            let got = read_local(f.clone(), off)
                .await
                .map_err(|e| Failure::io(src, &e))?;
            Ok(if got.is_empty() {
                Vec::new()
            } else {
                vec![got]
            })
        }
        Reader::Nfs(f) => {
            if off >= size {
                return Ok(Vec::new());
            }
            f.read_pieces_at(off, (CHUNK as u64).min(size - off))
                .await
                .map_err(|e| Failure::nfs(src, &e))
        }
    }
}

/// Up to `CHUNK` bytes of a local file at `off` (fewer only at its end), read on the
/// blocking pool with positional reads into the buffer they are returned in, its memory not
/// zeroed first (that memset was an eighth of `pnfs put`'s CPU).
async fn read_local(f: Arc<std::fs::File>, off: u64) -> io::Result<Bytes> {
    blocking(move || {
        let mut buf = Vec::with_capacity(CHUNK);
        while buf.len() < CHUNK {
            let at = off + buf.len() as u64;
            match rustix::io::pread(&*f, rustix::buffer::spare_capacity(&mut buf), at) {
                Ok(0) => break,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Bytes::from(buf))
    })
    .await
}

/// Writes `chunk` into a local file at `off` with positional writes on the blocking pool.
async fn write_local(f: Arc<std::fs::File>, off: u64, chunk: Chunk) -> io::Result<()> {
    blocking(move || {
        let mut at = off;
        for piece in &chunk {
            f.write_all_at(piece, at)?;
            at += piece.len() as u64;
        }
        Ok(())
    })
    .await
}

/// Runs file I/O on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(format!("file I/O task failed: {e}"))))
}

/// Copies everything, then closes the destination (flush, COMMIT, LAYOUTCOMMIT: the data is
/// stable when this returns). Returns the bytes copied and, when asked, the source's sha256.
async fn pump(
    reader: &mut Reader,
    src: &Location,
    size: u64,
    mut writer: Writer,
    dst: &Location,
    hash: bool,
    bar: &ProgressBar,
) -> CmdResult<(u64, Option<String>)> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(QUEUE);
    let read = async move {
        let mut hasher = hash.then(Sha256::new);
        let mut off = 0u64;
        loop {
            let chunk = read_chunk(reader, src, off, size).await?;
            if chunk.is_empty() {
                break;
            }
            for piece in &chunk {
                off += piece.len() as u64;
                if let Some(h) = &mut hasher {
                    h.update(piece);
                }
            }
            if tx.send(chunk).await.is_err() {
                // The writer failed; its error is the one to report.
                break;
            }
        }
        drop(tx);
        Ok::<_, Failure>(hasher.map(|h| hex(&h.finalize())))
    };
    let write = async {
        let mut off = 0u64;
        let written = async {
            while let Some(chunk) = rx.recv().await {
                let n: u64 = chunk.iter().map(|p| p.len() as u64).sum();
                match &mut writer {
                    Writer::Local(f) => write_local(f.clone(), off, chunk)
                        .await
                        .map_err(|e| Failure::io(dst, &e))?,
                    Writer::Nfs(f) => {
                        let mut at = off;
                        for piece in chunk {
                            let len = piece.len() as u64;
                            f.write_at(at, piece)
                                .await
                                .map_err(|e| Failure::nfs(dst, &e))?;
                            at += len;
                        }
                    }
                }
                off += n;
                bar.inc(n);
            }
            Ok::<_, Failure>(())
        }
        .await;
        // Stop the reader when writing failed.
        rx.close();
        let closed = match writer {
            // A device such as /dev/null cannot be synced (EINVAL): only a regular file is.
            Writer::Local(f) => blocking(move || match f.metadata()?.is_file() {
                true => f.sync_all(),
                false => Ok(()),
            })
            .await
            .map_err(|e| Failure::io(dst, &e)),
            Writer::Nfs(f) => f.close().await.map_err(|e| Failure::nfs(dst, &e)),
        };
        written?;
        closed?;
        Ok::<_, Failure>(off)
    };
    let (digest, copied) = tokio::join!(read, write);
    let copied = copied?;
    let digest = digest?;
    if copied < size {
        // The source shrank while being copied: say so rather than pretend.
        return Err(Failure {
            code: EXIT_ERROR,
            message: format!("{src}: {copied} bytes copied of {size} (the file shrank?)"),
        });
    }
    Ok((copied, digest))
}

/// The sha256 of the destination, read back from where it was written.
async fn digest_of(clients: &mut Clients, dst: &Location, bar: &ProgressBar) -> CmdResult<String> {
    let mut h = Sha256::new();
    match dst {
        Location::Local(p) => digest_local(p, &mut h, bar).await?,
        Location::Nfs(u) => digest_nfs(clients, u, &mut h, bar).await?,
    }
    Ok(hex(&h.finalize()))
}

async fn digest_local(p: &Path, h: &mut Sha256, bar: &ProgressBar) -> CmdResult {
    let f = std::fs::File::open(p).map_err(|e| Failure::io(p.display(), &e))?;
    let f = Arc::new(f);
    let mut off = 0;
    loop {
        let got = read_local(f.clone(), off)
            .await
            .map_err(|e| Failure::io(p.display(), &e))?;
        if got.is_empty() {
            return Ok(());
        }
        off += got.len() as u64;
        h.update(&got);
        bar.inc(got.len() as u64);
    }
}

async fn digest_nfs(
    clients: &mut Clients,
    u: &NfsUrl,
    h: &mut Sha256,
    bar: &ProgressBar,
) -> CmdResult {
    let c = clients.get(u).await?;
    let f = c
        .open(&u.path, &OpenOptions::read())
        .await
        .map_err(|e| Failure::nfs(u, &e))?;
    let size = f.size();
    let mut off = 0;
    let mut result = Ok(());
    while off < size {
        match f.read_pieces_at(off, (CHUNK as u64).min(size - off)).await {
            Ok(pieces) if pieces.is_empty() => break,
            Ok(pieces) => {
                for b in pieces {
                    off += b.len() as u64;
                    h.update(&b);
                    bar.inc(b.len() as u64);
                }
            }
            Err(e) => {
                result = Err(Failure::nfs(u, &e));
                break;
            }
        }
    }
    let closed = f.close().await;
    result?;
    closed.map_err(|e| Failure::nfs(u, &e))
}

/// Lower-case hex.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_directory_destination_receives_the_source_name() {
        let p = local_target(PathBuf::from("/tmp/d"), true, Some("f.bin")).unwrap();
        assert_eq!(p, PathBuf::from("/tmp/d/f.bin"));
        let p = local_target(PathBuf::from("/tmp/x"), false, Some("f.bin")).unwrap();
        assert_eq!(p, PathBuf::from("/tmp/x"));
        assert!(local_target(PathBuf::from("/tmp/d"), true, None).is_err());
    }

    #[test]
    fn source_names_come_from_either_side() {
        let l = Location::parse("dir/file.txt").unwrap();
        assert_eq!(source_name(&l).as_deref(), Some("file.txt"));
        let n = Location::parse("nfs://h:1/a/b.dat").unwrap();
        assert_eq!(source_name(&n).as_deref(), Some("b.dat"));
        let root = Location::parse("nfs://h:1/").unwrap();
        assert_eq!(source_name(&root), None);
    }

    #[test]
    fn digests_print_as_sha256sum_does() {
        let d = Sha256::digest(b"abc");
        assert_eq!(
            hex(&d),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[tokio::test]
    async fn local_to_local_copies_are_usage_errors() {
        let mut clients = Clients::new(&Default::default());
        let f = copy(
            &mut clients,
            Location::Local("a".into()),
            Location::Local("b".into()),
            &CopyOpts::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(f.code, super::super::EXIT_USAGE);
    }
}
