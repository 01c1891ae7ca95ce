//! The `pnfs` client commands against a `pnfs server` (MDS and three data servers in one
//! process, on free loopback ports), each command run as its own process as a user would.

mod support;

use support::*;

#[test]
fn a_five_mib_file_put_with_sha256_lists_with_its_size_and_comes_back_byte_for_byte() {
    let s = Server::start();
    ok(&["mkdir", "-p", &s.url("/in/deep")]);
    let data = noise(5 << 20, 7);
    let src = s.local("five.bin");
    std::fs::write(&src, &data).unwrap();
    let put = pnfs(&[
        "put",
        path_str(&src),
        &s.url("/in/deep/"),
        "--sha256",
        "--no-progress",
        "-v",
    ]);
    let stderr = String::from_utf8_lossy(&put.stderr);
    assert!(put.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&put.stdout);
    assert!(
        stdout.contains(&s.url("/in/deep/five.bin")),
        "the digest line names the destination: {stdout}"
    );
    // The bytes went to the data servers, not through the MDS.
    assert!(
        stderr.contains(&format!("data servers: wrote {} B", 5 << 20)),
        "{stderr}"
    );
    assert!(stderr.contains("MDS: wrote 0 B"), "{stderr}");

    let listing = ok(&["ls", "-l", &s.url("/in/deep")]);
    let line = listing
        .lines()
        .find(|l| l.ends_with(" five.bin"))
        .unwrap_or_else(|| panic!("five.bin not listed: {listing}"));
    assert!(line.starts_with("-rw"), "{line}");
    assert!(
        line.split_whitespace()
            .any(|w| w == (5u64 << 20).to_string()),
        "{line}"
    );

    let back = s.local("back.bin");
    let got = ok(&[
        "get",
        &s.url("/in/deep/five.bin"),
        path_str(&back),
        "--sha256",
    ]);
    assert_eq!(
        got.split_whitespace().next(),
        stdout.split_whitespace().next(),
        "the same digest both ways"
    );
    assert!(std::fs::read(&back).unwrap() == data, "bytes differ");
    // Into a device, which cannot be fsynced: the copy still succeeds.
    ok(&["get", &s.url("/in/deep/five.bin"), "/dev/null"]);

    // nfs -> nfs, then read back through cat.
    ok(&["cp", &s.url("/in/deep/five.bin"), &s.url("/copy.bin")]);
    let cat = pnfs(&["cat", &s.url("/copy.bin")]);
    assert!(cat.status.success());
    assert!(cat.stdout == data, "cat of the copy differs");
}

#[test]
fn small_files_cat_move_lock_and_remove() {
    let s = Server::start();
    let hello = s.local("hello.txt");
    std::fs::write(&hello, "hello, pnfs\n").unwrap();
    ok(&["mkdir", &s.url("/d")]);
    ok(&["put", path_str(&hello), &s.url("/d/h.txt")]);
    assert_eq!(ok(&["cat", &s.url("/d/h.txt")]), "hello, pnfs\n");

    ok(&["mv", &s.url("/d/h.txt"), &s.url("/moved.txt")]);
    let root = ok(&["ls", &s.url("/")]);
    assert_eq!(root.lines().collect::<Vec<_>>(), ["d", "moved.txt"]);
    assert_eq!(ok(&["ls", &s.url("/d")]), "");
    let stat = ok(&["stat", &s.url("/moved.txt")]);
    assert!(stat.contains("Size: 12\n"), "{stat}");
    assert!(stat.contains("Type: regular file"), "{stat}");

    let lock = pnfs(&["lock", &s.url("/moved.txt"), "--hold", "0"]);
    assert!(lock.status.success());
    assert!(
        String::from_utf8_lossy(&lock.stderr).contains("acquired the write lock"),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    // The command's exit code comes through.
    let lock = pnfs(&[
        "lock",
        &s.url("/moved.txt"),
        "--read",
        "--",
        "sh",
        "-c",
        "echo locked; exit 4",
    ]);
    assert_eq!(lock.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&lock.stdout), "locked\n");

    // A directory needs -r.
    let rm = pnfs(&["rm", &s.url("/d")]);
    assert_eq!(rm.status.code(), Some(1));
    ok(&["put", path_str(&hello), &s.url("/d/again.txt")]);
    ok(&["rm", "-r", &s.url("/d")]);
    ok(&["rm", &s.url("/moved.txt")]);
    assert_eq!(ok(&["ls", &s.url("/")]), "");
}

#[test]
fn errors_exit_with_distinct_codes_and_name_the_nfs_status() {
    let s = Server::start();
    let out = pnfs(&["stat", &s.url("/missing")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NFS4ERR_NOENT"), "{err}");
    assert!(err.contains(&s.url("/missing")), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = pnfs(&["get", &s.url("/missing"), path_str(&s.local("x"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPEN: NFS4ERR_NOENT"));

    // Usage errors: clap's own, and arguments that cannot go together.
    assert_eq!(pnfs(&["ls"]).status.code(), Some(2));
    assert_eq!(pnfs(&["cp", "a", "b"]).status.code(), Some(2));
    assert_eq!(pnfs(&["stat", "nfs:/x"]).status.code(), Some(2));
    let other = s.url("/x").replace("127.0.0.1", "localhost");
    assert_eq!(
        pnfs(&["mv", &s.url("/x"), &format!("{other}2")])
            .status
            .code(),
        Some(2)
    );
}
