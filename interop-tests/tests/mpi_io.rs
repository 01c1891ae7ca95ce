//! MPI-IO over `pnfs mount`: the SYNC-BARRIER-SYNC check. An MPI program
//! (`mpi/sync_barrier_sync.c`, built here with the installed `mpicc`, MPI-IO through ROMIO's
//! UFS driver) runs two ranks, each on its own mount of one `pnfs server` (two client
//! processes, so two caches of the file), for [`ROUNDS`] rounds: rank 0 writes a block and
//! syncs, barrier, rank 1 does the mode's revalidation step and reads the block back.
//!
//! - `ioctl` (the recipe of `mount/include/pnfs_ioctl.h`): every read is fresh;
//! - `none` (no revalidation step): some read is stale, or the check above could not fail;
//! - `fsync` (the reader fsyncs its own descriptor) on mounts with and without
//!   `-o fsync_revalidate`: fresh with the option, stale without;
//! - `sync` (the standard second `MPI_File_sync`), likewise, provided the MPI's
//!   `MPI_File_sync` reaches the reader's file system at all. mpich 4.0's ROMIO does not on
//!   a rank that wrote nothing since its last sync (`ADIOI_GEN_Flush` skips the fsync), and
//!   then the option cannot act; Open MPI 4.1's ROMIO 3.2 fsyncs at every sync. The program
//!   counts the reader's fsync calls, and the test says which case it saw.
//!
//! Skips, saying why, without `mpicc`/`mpiexec` or FUSE, unless `PNFS_REQUIRE_MPI` (and
//! `PNFS_REQUIRE_FUSE`) are set, as `scripts/test.sh` sets them after installing Open MPI.
//! `PNFS_MPICC` and `PNFS_MPIEXEC` name the MPI's tools (the test command: `mpicc.openmpi`,
//! `mpiexec.openmpi`; default `mpicc`, `mpiexec`).

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use interop_tests::fuse::{skip_without_fuse, FuseMount};
use interop_tests::peers::PnfsCluster;

/// Rounds per run: enough that a stale cache shows more than once, few enough for two cores.
const ROUNDS: u32 = 100;

/// How long one `mpiexec` may run before it counts as hung (a round takes milliseconds).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The MPI compiler wrapper: `$PNFS_MPICC`, else `mpicc`.
fn mpicc() -> String {
    std::env::var("PNFS_MPICC").unwrap_or_else(|_| "mpicc".into())
}

/// The MPI launcher: `$PNFS_MPIEXEC`, else `mpiexec`.
fn mpiexec() -> String {
    std::env::var("PNFS_MPIEXEC").unwrap_or_else(|_| "mpiexec".into())
}

/// Why MPI programs cannot be built and run here, if they cannot.
fn mpi_unavailable_reason() -> Option<String> {
    for tool in [mpicc(), mpiexec()] {
        let found = Command::new(&tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !found.is_ok_and(|s| s.success()) {
            return Some(format!(
                "no working {tool} (apt-get install openmpi-bin libopenmpi-dev, or mpich libmpich-dev)"
            ));
        }
    }
    None
}

/// `true` (after printing why) when MPI is missing; a failure instead under
/// `PNFS_REQUIRE_MPI`.
fn skip_without_mpi(test: &str) -> bool {
    let Some(why) = mpi_unavailable_reason() else {
        return false;
    };
    assert!(
        std::env::var_os("PNFS_REQUIRE_MPI").is_none_or(|v| v.is_empty() || v == "0"),
        "PNFS_REQUIRE_MPI is set but {test} cannot run: {why}"
    );
    eprintln!("note: skipping {test}: {why}");
    true
}

/// Builds the program into `dir` with the installed MPI's compiler wrapper.
fn build_program(dir: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = manifest.join("mpi/sync_barrier_sync.c");
    let include = manifest.join("../mount/include");
    let exe = dir.join("sync_barrier_sync");
    let out = Command::new(mpicc())
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("mpicc runs");
    assert!(
        out.status.success(),
        "{} {}: {}",
        mpicc(),
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// What one run of the program reported (its `MPI_RESULT` line).
#[derive(Debug)]
struct Outcome {
    stale: u64,
    torn: u64,
    reader_fsyncs: u64,
    seconds: f64,
    /// Everything it printed, for a failure's message.
    output: String,
}

/// Runs `mpiexec -n 2 exe MODE ROUNDS p0 p1`: rank 0 on `p0`, rank 1 on `p1` (the same
/// file through two mounts).
fn run(exe: &Path, mode: &str, p0: &Path, p1: &Path) -> Outcome {
    let mut cmd = Command::new(mpiexec());
    if open_mpi() {
        // Open MPI refuses root without this, and counts slots by cores; its own MPI-IO
        // (OMPIO) knows no `ufs:` prefix, its ROMIO does.
        cmd.args(["--allow-run-as-root", "--oversubscribe"])
            .env("OMPI_MCA_io", "romio321");
    }
    cmd.args(["-n", "2"])
        .arg(exe)
        .args([mode, &ROUNDS.to_string()])
        .arg(p0)
        .arg(p1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a hung run is killed with its proxies and ranks.
        .process_group(0);
    let mut child = cmd.spawn().expect("mpiexec runs");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for mpiexec") {
            break Some(s);
        }
        if t.elapsed() > RUN_TIMEOUT {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    let Some(status) = status else {
        panic!("mode {mode}: mpiexec hung for {RUN_TIMEOUT:?}: {output}");
    };
    assert!(status.success(), "mode {mode}: mpiexec {status}: {output}");
    let line = output
        .lines()
        .find(|l| l.starts_with("MPI_RESULT "))
        .unwrap_or_else(|| panic!("mode {mode}: no MPI_RESULT line: {output}"));
    let fields: HashMap<&str, &str> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.split_once('='))
        .collect();
    let num = |k: &str| -> u64 {
        fields
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("mode {mode}: no {k} in {line}"))
    };
    assert_eq!(fields.get("mode"), Some(&mode), "{line}");
    assert_eq!(num("rounds"), u64::from(ROUNDS), "{line}");
    Outcome {
        stale: num("stale"),
        torn: num("torn"),
        reader_fsyncs: num("reader_fsyncs"),
        seconds: fields
            .get("seconds")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("mode {mode}: no seconds in {line}")),
        output,
    }
}

/// Whether the launcher is Open MPI's (mpich's hydra needs no extra flags as root).
fn open_mpi() -> bool {
    Command::new(mpiexec())
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            let v = String::from_utf8_lossy(&o.stdout);
            // `mpiexec (OpenRTE) 4.1.4`; later versions say `(Open MPI)`.
            v.contains("OpenRTE") || v.contains("Open MPI")
        })
}

fn report(label: &str, o: &Outcome) {
    eprintln!(
        "{label:<40} stale {:>3}/{ROUNDS} (torn {}), reader fsyncs {:>3}, {:.2} s",
        o.stale, o.torn, o.reader_fsyncs, o.seconds
    );
}

#[test]
fn sync_barrier_sync_reads_fresh_data_across_two_mounts() {
    let test = "the MPI-IO sync-barrier-sync check";
    if skip_without_mpi(test) || skip_without_fuse(test) {
        return;
    }
    let t = Instant::now();
    let build = tempfile::tempdir().expect("a build directory");
    let exe = build_program(build.path());

    let server = PnfsCluster::start().expect("pnfs server");
    let url = format!("nfs://{}/", server.mds_addr());
    let (m1, m2) = (
        FuseMount::start(&url, "").expect("mount 1"),
        FuseMount::start(&url, "").expect("mount 2"),
    );
    let (r1, r2) = (
        FuseMount::start(&url, "fsync_revalidate").expect("mount 3 (fsync_revalidate)"),
        FuseMount::start(&url, "fsync_revalidate").expect("mount 4 (fsync_revalidate)"),
    );
    // One file per run, so no run starts with what another cached.
    let run_on = |a: &FuseMount, b: &FuseMount, mode: &str, name: &str| {
        run(&exe, mode, &a.path().join(name), &b.path().join(name))
    };
    let ioctl = run_on(&m1, &m2, "ioctl", "ioctl");
    let none = run_on(&m1, &m2, "none", "none");
    let fsync_plain = run_on(&m1, &m2, "fsync", "fsync");
    let fsync_option = run_on(&r1, &r2, "fsync", "fsync-revalidate");
    let sync_plain = run_on(&m1, &m2, "sync", "sync");
    let sync_option = run_on(&r1, &r2, "sync", "sync-revalidate");

    eprintln!("\n== MPI-IO sync-barrier-sync, {ROUNDS} rounds, 2 ranks on 2 mounts ==");
    report("ioctl(PNFS_IOC_REVALIDATE)", &ioctl);
    report("no revalidation", &none);
    report("fsync(2)", &fsync_plain);
    report("fsync(2), -o fsync_revalidate", &fsync_option);
    report("MPI_File_sync", &sync_plain);
    report("MPI_File_sync, -o fsync_revalidate", &sync_option);
    eprintln!("(whole test {:.1} s)", t.elapsed().as_secs_f64());

    assert_eq!(
        ioctl.stale, 0,
        "the revalidate ioctl left stale reads: {}",
        ioctl.output
    );
    assert!(
        none.stale >= 1,
        "without revalidation no read was stale, so the check cannot tell: {}",
        none.output
    );
    assert_eq!(
        fsync_option.stale, 0,
        "fsync on an fsync_revalidate mount left stale reads: {}",
        fsync_option.output
    );
    assert!(
        fsync_plain.stale >= 1,
        "fsync without fsync_revalidate gave only fresh reads, so the option shows nothing: {}",
        fsync_plain.output
    );
    // Without the option a sync revalidates nothing, fsync or not.
    assert!(
        sync_plain.stale >= 1,
        "MPI_File_sync without fsync_revalidate gave only fresh reads: {}",
        sync_plain.output
    );
    // With it, what counts is whether the reader's MPI_File_sync reached the mount.
    match sync_option.reader_fsyncs {
        0 => {
            eprintln!(
                "note: this MPI's MPI_File_sync never called fsync on the reading rank \
                 (mpich's ROMIO skips it on a rank with no writes since its last sync), so \
                 -o fsync_revalidate could not act; {} of {ROUNDS} reads were stale",
                sync_option.stale
            );
            assert!(
                sync_option.stale >= 1,
                "nothing reached the reader's mount, yet every read was fresh: {}",
                sync_option.output
            );
        }
        n if n >= u64::from(ROUNDS) => assert_eq!(
            sync_option.stale, 0,
            "MPI_File_sync fsynced on the reader's fsync_revalidate mount, yet reads were \
             stale: {}",
            sync_option.output
        ),
        n => panic!(
            "the reader's MPI_File_sync called fsync {n} times in {ROUNDS} rounds: in some \
             rounds only? {}",
            sync_option.output
        ),
    }
}
