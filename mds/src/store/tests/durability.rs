//! Restart, crash and group-commit tests, and a benchmark (ignored by default).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

// Real time is the point of these tests (a child killed at a random moment of real work, a
// benchmark of commits per second): they read the system clock.
use bytes::Bytes;
use nfs_server::{Clock, SystemClock};

use super::*;

fn client(id: u64, epoch: u64) -> ClientRecord {
    ClientRecord {
        clientid: id,
        owner: Bytes::from(format!("owner-{id}")),
        verifier: [id as u8; 8],
        principal: format!("nfs/host{id}@EXAMPLE"),
        boot_epoch: epoch,
    }
}

#[test]
fn restart_keeps_the_namespace_handles_change_counter_and_clients() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");

    let s = open_at(&path);
    assert_eq!(s.boot_epoch(), 1);
    let key = *s.server_key();
    let d = mkdir(&s, ROOT_FILEID, "d");
    let f = mkfile(&s, d.fileid, "f");
    s.link(f.fileid, ROOT_FILEID, b"g", t(11)).wait().unwrap();
    let f = s.record_write(f.fileid, 1234, t(12)).wait().unwrap();
    let fh = s.fh(&f);
    let change = s.change_counter().unwrap();
    let listing = s.readdir(ROOT_FILEID, 0, 10).unwrap();
    s.put_client(client(7, 1)).wait().unwrap();
    s.put_client(client(8, 1)).wait().unwrap();
    s.remove_client(8).wait().unwrap();
    drop(s);

    let s = open_at(&path);
    assert_eq!(s.boot_epoch(), 2);
    assert_eq!(s.server_key(), &key);
    assert_eq!(s.resolve(&fh).unwrap().1, f, "the old handle still works");
    assert_eq!(s.lookup(d.fileid, b"f").unwrap(), f);
    assert_eq!(s.lookupp(d.fileid).unwrap().fileid, ROOT_FILEID);
    assert_eq!(s.readdir(ROOT_FILEID, 0, 10).unwrap(), listing);
    let cookie = listing.entries[0].cookie;
    assert!(
        s.readdir(ROOT_FILEID, cookie, 10).is_ok(),
        "cookies survive"
    );
    // The counter resumes at the ceiling reserved on disk: at or above the last value
    // handed out, at most a block above it (`store::counters`).
    let resumed = s.change_counter().unwrap();
    assert!(
        (change..change + 1024).contains(&resumed),
        "{resumed} resumes {change}"
    );
    let g = mkfile(&s, ROOT_FILEID, "new");
    assert!(g.change > change, "change attribute keeps growing");
    assert!(g.fileid > f.fileid, "file ids are not reused");
    assert_eq!(s.previous_clients(), [client(7, 1)]);
    s.put_client(client(9, 2)).wait().unwrap();
    assert_eq!(s.previous_clients(), [client(7, 1)], "fixed at open");
    drop(s);

    let s = open_at(&path);
    assert_eq!(s.boot_epoch(), 3);
    assert_eq!(s.previous_clients(), [client(7, 1), client(9, 2)]);
}

#[test]
fn orphans_survive_a_restart_until_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    let f = mkfile(&s, ROOT_FILEID, "f");
    let g = mkfile(&s, ROOT_FILEID, "g");
    s.remove(ROOT_FILEID, b"f", t(2), None).wait().unwrap();
    s.rename(ROOT_FILEID, b"g", ROOT_FILEID, b"h", t(2))
        .wait()
        .unwrap();
    let h = mkfile(&s, ROOT_FILEID, "x");
    s.rename(ROOT_FILEID, b"x", ROOT_FILEID, b"h", t(3))
        .wait()
        .unwrap();
    drop(s);

    let s = open_at(&path);
    let mut orphans = s.orphans().unwrap();
    orphans.sort();
    assert_eq!(
        orphans,
        [(f.fileid, 1), (g.fileid, 1)],
        "with the boot that orphaned them"
    );
    assert_eq!(s.getattr(f.fileid).unwrap().nlink, 0);
    assert!(s.delete_orphan(f.fileid, no_ds).wait().unwrap());
    drop(s);

    let s = open_at(&path);
    assert_eq!(orphan_ids(&s), [g.fileid]);
    assert_eq!(s.lookup(ROOT_FILEID, b"h").unwrap().fileid, h.fileid);
}

#[test]
fn a_confirmation_replaces_older_records_of_its_owner_and_unreclaimed_old_owners_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    for id in 1..=3 {
        s.put_client(client(id, 1)).wait().unwrap();
    }
    drop(s);

    let s = open_at(&path);
    assert_eq!(s.boot_epoch(), 2);
    // owner-1 comes back under a client id of this boot: its first-boot record goes.
    let back = ClientRecord {
        clientid: 11,
        ..client(1, 2)
    };
    s.put_client(back.clone()).wait().unwrap();
    assert_eq!(
        s.clients().unwrap(),
        [client(2, 1), client(3, 1), back.clone()]
    );
    // The grace period ends with owner-1 and owner-2 not done: owner-2's first-boot record
    // goes, owner-1's record of this boot stays, owner-3 (done) is not named.
    let owners = vec![client(1, 1).owner, client(2, 1).owner];
    assert_eq!(s.remove_unreclaimed(owners).wait().unwrap(), 1);
    assert_eq!(s.clients().unwrap(), [client(3, 1), back]);
}

/// The owner index as it is on disk.
fn owner_index(path: &std::path::Path) -> Vec<(Vec<u8>, u64)> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(path).unwrap();
    let r = db.begin_read().unwrap();
    let t = r.open_table(schema::CLIENT_OWNERS).unwrap();
    t.iter()
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.value().to_vec(), v.value())
        })
        .collect()
}

#[test]
fn a_store_without_the_client_owner_index_gets_it_rebuilt_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    for id in 1..=3 {
        s.put_client(client(id, 1)).wait().unwrap();
    }
    drop(s);
    let before = owner_index(&path);
    assert_eq!(before.len(), 3);
    {
        // As a store of a binary that did not have the index: the table is missing.
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        assert!(w.delete_table(schema::CLIENT_OWNERS).unwrap());
        w.commit().unwrap();
    }
    let s = open_at(&path);
    drop(s);
    assert_eq!(owner_index(&path), before, "rebuilt at open");
    {
        // As if an older binary replaced owner-2's record without updating the index.
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        {
            let mut t = w.open_table(schema::CLIENTS).unwrap();
            t.remove(2).unwrap();
            let newer = ClientRecord {
                clientid: 20,
                ..client(2, 1)
            };
            t.insert(20, &schema::encode_client(&newer)[..]).unwrap();
        }
        w.commit().unwrap();
    }
    let s = open_at(&path);
    // owner-2 confirms again: the index must name record 20 for it to be replaced.
    let again = ClientRecord {
        clientid: 21,
        ..client(2, 2)
    };
    s.put_client(again.clone()).wait().unwrap();
    assert_eq!(s.clients().unwrap(), [client(1, 1), client(3, 1), again]);
}

#[test]
fn persisting_a_client_reads_no_other_record() {
    // A record that does not decode, under another owner: a put that decoded every record
    // (as it once did, at a cost growing with the number of clients) would fail on it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    let s = open_at(&path);
    s.put_client(client(1, 1)).wait().unwrap();
    s.write(|tx| {
        tx.open(schema::CLIENTS)?
            .write()
            .insert(99, &b"not a record"[..])?;
        Ok(())
    })
    .wait()
    .unwrap();
    let newer = ClientRecord {
        clientid: 5,
        ..client(1, 1)
    };
    s.put_client(newer).wait().unwrap();
    s.put_client(client(2, 1)).wait().unwrap();
    assert!(s.remove_client(2).wait().unwrap());
    assert!(matches!(s.clients(), Err(StoreError::Corrupt(_))));
    drop(s);
    let index: Vec<u64> = owner_index(&path).into_iter().map(|(_, id)| id).collect();
    assert_eq!(
        index,
        [5],
        "owner-1 names its newer record, owner-2 is gone"
    );
}

#[test]
fn store_written_by_an_unknown_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mds.redb");
    drop(open_at(&path));
    {
        let db = redb::Database::open(&path).unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(schema::META)
            .unwrap()
            .insert(schema::K_FORMAT, &9u32.to_be_bytes()[..])
            .unwrap();
        w.commit().unwrap();
    }
    let e = Store::open(&path, &StoreOptions::default(), t(1)).unwrap_err();
    assert!(matches!(e, StoreError::Format(9)), "{e:?}");
}

#[test]
fn a_second_open_of_the_same_file_is_refused_while_the_first_is_open() {
    let (d, _s) = fresh();
    let e = Store::open(d.path().join("mds.redb"), &StoreOptions::default(), t(1)).unwrap_err();
    assert!(e.is_storage(), "{e:?}");
}

// ---------------------------------------------------------------------------------------------
// Crash: kill -9 a process in the middle of acknowledged creates and removes.

const CRASH_CHILD_ENV: &str = "MDS_STORE_CRASH_CHILD_PATH";
const CRASH_CHILD_TEST: &str = "store::tests::durability::crash_child_creates_until_killed";

/// Not a test on its own: when the crash test re-runs this binary with the environment
/// variable set, this creates files from several threads forever and prints `ACK <name>` after
/// each create is acknowledged; every file with an even number is removed again, and `GONE
/// <name>` printed once that is acknowledged.
#[test]
fn crash_child_creates_until_killed() {
    let Ok(path) = std::env::var(CRASH_CHILD_ENV) else {
        return;
    };
    // Checkpoints every few batches, so that kills land before, in and after them.
    let opts = StoreOptions {
        checkpoint_batches: 16,
        ..StoreOptions::default()
    };
    let s = Store::open(&path, &opts, t(1)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|th| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let name = format!("t{th}-{i}");
                    s.create(ROOT_FILEID, name.as_bytes(), file_spec(), t(2))
                        .wait()
                        .unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ACK {name}").unwrap();
                    out.flush().unwrap();
                    drop(out);
                    if i % 2 == 0 {
                        s.remove(ROOT_FILEID, name.as_bytes(), t(3), None)
                            .wait()
                            .unwrap();
                        let mut out = std::io::stdout().lock();
                        writeln!(out, "GONE {name}").unwrap();
                        out.flush().unwrap();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        let _ = th.join();
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    u64::from_le_bytes(b)
}

/// The write-ahead log (`store::wal`) is what makes these changes durable: the test checks
/// that the child left records in it, so that the reopen replays them.
#[test]
fn acknowledged_creates_and_removes_survive_kill_9() {
    let mut replayed_rounds = 0;
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mds.redb");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                CRASH_CHILD_TEST,
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let gone = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let acked = acked.clone();
            let gone = gone.clone();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            std::thread::spawn(move || {
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match out.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    // A line cut by the kill has no newline: it was not acknowledged.
                    let Some(line) = line.strip_suffix(b"\n") else {
                        continue;
                    };
                    // The test harness prints `test <name> ... ` without a newline before
                    // the child's first line, so a marker may follow other text.
                    let after = |marker: &[u8]| {
                        line.windows(marker.len())
                            .rposition(|w| w == marker)
                            .map(|at| {
                                String::from_utf8(line[at + marker.len()..].to_vec()).unwrap()
                            })
                    };
                    if let Some(name) = after(b"ACK ") {
                        acked.lock().unwrap().push(name);
                    } else if let Some(name) = after(b"GONE ") {
                        gone.lock().unwrap().push(name);
                    }
                }
            })
        };
        // Wait for some progress, then kill at a random moment.
        let deadline = SystemClock.now() + Duration::from_secs(60);
        while acked.lock().unwrap().len() < 20 && SystemClock.now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(random_u64() % 300));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        let acked = acked.lock().unwrap().clone();
        let gone = gone.lock().unwrap().clone();
        assert!(acked.len() >= 20, "round {round}: child made no progress");
        // Every removal follows its create's ACK: a GONE without one is a line misread.
        for name in &gone {
            assert!(
                acked.contains(name),
                "round {round}: GONE {name} without its ACK"
            );
        }
        let logged = super::super::wal::records_in(&super::super::wal::path_for(&path));
        replayed_rounds += usize::from(logged > 0);

        // One round reopens without the log: a leftover log is replayed all the same.
        let opts = StoreOptions {
            write_ahead_log: round != 1,
            ..StoreOptions::default()
        };
        let s = Store::open(&path, &opts, t(1)).unwrap();
        // Odd-numbered files are never removed; an even one whose removal was not
        // acknowledged may be there or not.
        let odd = |name: &str| {
            name.rsplit('-')
                .next()
                .and_then(|i| i.parse::<u64>().ok())
                .is_some_and(|i| i % 2 == 1)
        };
        let kept: Vec<&String> = acked.iter().filter(|n| odd(n)).collect();
        for name in &kept {
            s.lookup(ROOT_FILEID, name.as_bytes())
                .unwrap_or_else(|e| panic!("round {round}: acknowledged {name} lost: {e}"));
        }
        for name in &gone {
            assert!(
                matches!(
                    s.lookup(ROOT_FILEID, name.as_bytes()),
                    Err(StoreError::NoEnt)
                ),
                "round {round}: acknowledged removal of {name} undone"
            );
        }
        let listed = s.readdir(ROOT_FILEID, 0, usize::MAX).unwrap().entries;
        let on_disk = listed.len();
        // What is listed beyond the acknowledged creates not acknowledged removed, and
        // whether LOOKUP finds it (for a failure of the bound below).
        let extra = || -> Vec<String> {
            listed
                .iter()
                .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                .filter(|n| !acked.contains(n) || gone.contains(n))
                .map(|n| {
                    let found = s.lookup(ROOT_FILEID, n.as_bytes()).is_ok();
                    format!("{n} (lookup finds it: {found})")
                })
                .collect()
        };
        eprintln!(
            "crash round {round}: {} creates and {} removes acknowledged, {on_disk} files on \
             disk after kill -9, {logged} records in the log",
            acked.len(),
            gone.len()
        );
        assert!(on_disk >= kept.len());
        assert!(
            on_disk <= acked.len() - gone.len() + 4,
            "at most one create in flight per thread; listed beyond the acknowledged: {:?}",
            extra()
        );
    }
    assert!(replayed_rounds > 0, "no round left a log to replay");
}

// ---------------------------------------------------------------------------------------------
// Group commit

#[test]
fn concurrent_creates_from_threads_share_commits() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 25;
    let (_d, s) = fresh();
    let before = s.commit_stats();
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|th| {
            let s = s.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..PER_THREAD {
                    mkfile(&s, ROOT_FILEID, &format!("t{th}-{i}"));
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let after = s.commit_stats();
    let total = (THREADS * PER_THREAD) as u64;
    let commits = after.commits - before.commits;
    assert_eq!(after.jobs - before.jobs, total);
    assert!(commits < total, "{total} creates took {commits} commits");
    eprintln!(
        "{total} creates from {THREADS} threads: {commits} commits, largest batch {}",
        after.largest_batch
    );
    assert_eq!(
        s.readdir(ROOT_FILEID, 0, usize::MAX).unwrap().entries.len(),
        total as usize
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_async_creates_share_commits() {
    const N: u64 = 64;
    let (_d, s) = fresh();
    let before = s.commit_stats();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..N {
        let s = s.clone();
        tasks.spawn(async move {
            s.create(ROOT_FILEID, format!("f{i}").as_bytes(), file_spec(), t(2))
                .await
                .unwrap()
        });
    }
    while let Some(r) = tasks.join_next().await {
        assert!(r.unwrap().created);
    }
    let after = s.commit_stats();
    assert_eq!(after.jobs - before.jobs, N);
    assert!(after.commits - before.commits < N, "{after:?}");
}

/// Creates per second with group commit and with one commit per create, from 1, 4, 16 and
/// 64 threads. Run with
/// `cargo test -p mds --release -- --ignored --nocapture bench_creates` (set `MDS_BENCH_DIR`
/// to put the store on another file system).
#[test]
#[ignore]
fn bench_creates_group_commit_vs_one_commit_per_create() {
    let base = std::env::var("MDS_BENCH_DIR").unwrap_or_else(|_| ".".into());
    for (label, max_batch) in [("group commit", 1024), ("one commit per create", 1)] {
        for threads in [1usize, 4, 16, 64] {
            let dir = tempfile::tempdir_in(&base).unwrap();
            let opts = StoreOptions {
                max_batch,
                ..StoreOptions::default()
            };
            let s = Store::open(dir.path().join("mds.redb"), &opts, t(1)).unwrap();
            let before = s.commit_stats();
            let start = SystemClock.now();
            let run_for = Duration::from_secs(3);
            let handles: Vec<_> = (0..threads)
                .map(|th| {
                    let s = s.clone();
                    std::thread::spawn(move || {
                        let mut n = 0u64;
                        while start.elapsed() < run_for {
                            mkfile(&s, ROOT_FILEID, &format!("t{th}-{n}"));
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            let secs = start.elapsed().as_secs_f64();
            let after = s.commit_stats();
            let commits = after.commits - before.commits;
            println!(
                "{label:>22}, {threads:>2} threads: {:>8.0} creates/s ({total} creates, \
                 {commits} commits, {:.1} creates/commit)",
                total as f64 / secs,
                total as f64 / commits.max(1) as f64
            );
        }
    }
}
