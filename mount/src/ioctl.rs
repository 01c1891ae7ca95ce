//! The mount's ioctls, for programs: the numbers of `include/pnfs_ioctl.h` and a safe call.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// `_IO(PNFS_IOC_MAGIC, 1)` of `pnfs_ioctl.h`: drop a file's cached data and attributes
/// (this client's and the kernel's page cache) so the next read sees what other clients
/// made stable. Its number only has to be unique among this file system's ioctls: an ioctl
/// on a file of the mount reaches no other driver.
pub const PNFS_IOC_REVALIDATE: u32 = (PNFS_IOC_MAGIC << 8) | 1;

/// The ioctl type byte of `pnfs_ioctl.h`.
pub const PNFS_IOC_MAGIC: u32 = 0xB7;

/// The C header (`#include "pnfs_ioctl.h"`), for a program or script that ships it.
pub const C_HEADER: &str = include_str!("../include/pnfs_ioctl.h");

/// `ioctl(fd, PNFS_IOC_REVALIDATE)` on an open file of a `pnfs mount`: its writes sent,
/// its caches dropped; the next read returns what other clients wrote and made stable.
/// ENOTTY when the file is not on a `pnfs mount`.
pub fn revalidate(file: &impl AsFd) -> io::Result<()> {
    let fd = file.as_fd().as_raw_fd();
    // SAFETY: an ioctl without an argument (`_IO`): the kernel reads and writes no memory of
    // this process for it, and `fd` is a descriptor borrowed for the call.
    #[allow(unsafe_code)]
    let r = unsafe { libc::ioctl(fd, PNFS_IOC_REVALIDATE as _) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust constant is what a C program including the header gets (compiled with the
    /// system's compiler, where there is one).
    #[test]
    fn the_constant_is_the_c_headers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pnfs_ioctl.h"), C_HEADER).unwrap();
        let c = dir.path().join("t.c");
        std::fs::write(
            &c,
            "#include <stdio.h>\n#include \"pnfs_ioctl.h\"\n\
             int main(void) { printf(\"%lu\\n\", (unsigned long)PNFS_IOC_REVALIDATE); return 0; }\n",
        )
        .unwrap();
        let exe = dir.path().join("t");
        match std::process::Command::new("cc")
            .arg(&c)
            .arg("-o")
            .arg(&exe)
            .status()
        {
            Ok(s) if s.success() => {}
            _ => {
                assert!(
                    std::env::var_os("PNFS_REQUIRE_FUSE").is_none(),
                    "no C compiler to check pnfs_ioctl.h with"
                );
                eprintln!("skipped: no C compiler");
                return;
            }
        }
        let out = std::process::Command::new(&exe).output().unwrap();
        let got: u32 = String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(got, PNFS_IOC_REVALIDATE);
    }

    #[test]
    fn a_file_elsewhere_answers_enotty() {
        let f = tempfile::tempfile().unwrap();
        let e = revalidate(&f).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
    }
}
