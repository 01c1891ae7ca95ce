//! `pnfs ls` and `pnfs stat`: what a server says about names and their attributes.

use std::time::{SystemTime, UNIX_EPOCH};

use client::{FileType, Metadata};

use super::{nfs_basename, parse_url, Clients, CmdResult, Failure, LsArgs, UrlArgs};

/// Lists a directory (sorted by name), or names a single file like `ls` does.
pub(super) async fn ls(clients: &mut Clients, a: &LsArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let c = clients.get(&url).await?;
    let meta = c
        .stat(&url.path)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    let mut lines = Vec::new();
    if meta.is_dir() {
        let mut entries = c
            .readdir(&url.path)
            .await
            .map_err(|e| Failure::nfs(&url, &e))?;
        entries.sort_by(|x, y| x.name.cmp(&y.name));
        for e in entries {
            lines.push(match (&e.meta, a.long) {
                (Some(m), true) => long_line(m, &e.name),
                (None, true) => format!("?????????? (no attributes) {}", e.name),
                (_, false) => e.name,
            });
        }
    } else {
        let name = nfs_basename(&url.path).unwrap_or("/");
        lines.push(if a.long {
            long_line(&meta, name)
        } else {
            name.to_string()
        });
    }
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    write_stdout(out.as_bytes())
}

/// Prints every attribute the library fetches, one per line.
pub(super) async fn stat(clients: &mut Clients, a: &UrlArgs) -> CmdResult {
    let url = parse_url(&a.url)?;
    let c = clients.get(&url).await?;
    let m = c
        .stat(&url.path)
        .await
        .map_err(|e| Failure::nfs(&url, &e))?;
    let text = format!(
        "  File: {url}\n  Type: {}\n  Size: {}\n  Mode: {:04o} ({})\n Inode: {}\n Links: {}\n Owner: {}\n Group: {}\nModify: {}\nChange: {}\n  Used: {}\nChange attribute: {}\n",
        type_name(m.file_type),
        m.size,
        m.mode & 0o7777,
        mode_string(m.file_type, m.mode),
        m.fileid,
        m.nlink,
        m.owner,
        m.group,
        format_time(m.mtime, true),
        format_time(m.ctime, true),
        m.space_used,
        m.change,
    );
    write_stdout(text.as_bytes())
}

/// Writes to stdout; a closed pipe (`pnfs ls ... | head`) ends the command quietly.
pub(super) fn write_stdout(b: &[u8]) -> CmdResult {
    match write_all_raw(b) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::other("")),
        Err(e) => Err(Failure::io("stdout", &e)),
    }
}

/// Writes `b` to stdout's descriptor itself, past std's line buffering: that scans every
/// buffer for its last newline (the whole of a 1 MiB piece of `pnfs cat` without any: most
/// of its CPU on a file of zeros) and copies what follows it. What std buffered before goes
/// first.
fn write_all_raw(mut b: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.flush()?;
    while !b.is_empty() {
        match rustix::io::write(&out, b) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => b = &b[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::File => "regular file",
        FileType::Dir => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::BlockDevice => "block special file",
        FileType::CharDevice => "character special file",
        FileType::Other => "other",
    }
}

/// `ls -l`'s line: `drwxr-xr-x  2 owner group  4096 2026-11-22 20:01 name`.
fn long_line(m: &Metadata, name: &str) -> String {
    format!(
        "{} {:>3} {:<8} {:<8} {:>12} {} {name}",
        mode_string(m.file_type, m.mode),
        m.nlink,
        m.owner,
        m.group,
        m.size,
        format_time(m.mtime, false),
    )
}

/// `-rwxr-xr-x` with setuid, setgid and sticky shown as `ls` does.
pub(super) fn mode_string(t: FileType, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(match t {
        FileType::File => '-',
        FileType::Dir => 'd',
        FileType::Symlink => 'l',
        FileType::Fifo => 'p',
        FileType::Socket => 's',
        FileType::BlockDevice => 'b',
        FileType::CharDevice => 'c',
        FileType::Other => '?',
    });
    let special = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (i, (bit, on, off)) in special.iter().enumerate() {
        let shift = 6 - 3 * i;
        let r = mode >> shift & 4 != 0;
        let w = mode >> shift & 2 != 0;
        let x = mode >> shift & 1 != 0;
        s.push(if r { 'r' } else { '-' });
        s.push(if w { 'w' } else { '-' });
        s.push(match (mode & bit != 0, x) {
            (true, true) => *on,
            (true, false) => *off,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// UTC `YYYY-MM-DD HH:MM` (with seconds and nanoseconds when `precise`).
pub(super) fn format_time(t: SystemTime, precise: bool) -> String {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => (-(e.duration().as_secs() as i64), 0),
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    if precise {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{nanos:09} UTC")
    } else {
        format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn modes_print_as_ls_prints_them() {
        assert_eq!(mode_string(FileType::File, 0o644), "-rw-r--r--");
        assert_eq!(mode_string(FileType::Dir, 0o755), "drwxr-xr-x");
        assert_eq!(mode_string(FileType::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(FileType::File, 0o4644), "-rwSr--r--");
        assert_eq!(mode_string(FileType::File, 0o2755), "-rwxr-sr-x");
        assert_eq!(mode_string(FileType::Symlink, 0o777), "lrwxrwxrwx");
    }

    #[test]
    fn times_print_as_utc_dates() {
        assert_eq!(format_time(UNIX_EPOCH, false), "1970-01-01 00:00");
        // 2000-02-29 12:34:56 UTC: a leap day of a century leap year.
        let t = UNIX_EPOCH + Duration::new(951_827_696, 5);
        assert_eq!(format_time(t, false), "2000-02-29 12:34");
        assert_eq!(format_time(t, true), "2000-02-29 12:34:56.000000005 UTC");
        // 2026-11-22 00:00 UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_795_305_600);
        assert_eq!(format_time(t, false), "2026-11-22 00:00");
        // Before the epoch.
        let t = UNIX_EPOCH - Duration::from_secs(86_400);
        assert_eq!(format_time(t, false), "1969-12-31 00:00");
    }
}
