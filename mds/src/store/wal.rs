//! The write-ahead log: what makes a change durable between the store's checkpoints.
//!
//! A durable redb commit costs far more than the fsync it ends with: redb writes its freed-page
//! lists, flips its commit slot and frees pages afterwards in a second commit. Measured on
//! this code's 6-table changes (issue 22): 109 us per durable commit on tmpfs against 72 us for
//! a commit with `Durability::None` plus a checkpoint every 1,024 commits; on an ext4 disk 413
//! us against 68 us, where a 512-byte log append with `fdatasync` costs 0.8 us (tmpfs) or 167
//! us (disk). So the committer commits redb without durability, and each batch's writes are
//! appended here as records of the keys and values it wrote; the batch is durable once its
//! record is (`fdatasync`). Every `StoreOptions::checkpoint_batches` batches (1,024), or once
//! the log holds
//! [`CHECKPOINT_BYTES`], one batch is committed durably in redb and the log starts over.
//!
//! **Replay.** At open, before anything else, [`replay`] applies every whole record of the log
//! in one redb transaction, commits it durably and empties the log. A record is a sequence of
//! absolute writes (insert this value, remove this key), so applying records that redb already
//! holds changes nothing: only the last write of each key counts, and replay starts from the
//! last durable redb commit, which the records in the log all follow. redb (version 4) keeps a
//! commit without durability in memory only, so after a crash the file holds exactly that last
//! durable commit.
//!
//! **Torn and stale records.** A record is `magic, length, generation, sequence, payload,
//! checksum` (XXH3 over all before it). Replay stops at the first record that is cut short,
//! fails its checksum, or does not follow its predecessor (same generation, next sequence
//! number). Each checkpoint empties the log (and syncs that) and draws a new random
//! generation, so the records of an earlier round that a crash might leave behind the new
//! ones are never taken for the new round's. What replay does not apply was never synced, so
//! no reply acknowledged it.
//!
//! ```text
//! record  = magic u32 "PWAL" | payload length u32 | generation u64 | sequence u64
//!         | payload | xxh3-64 of everything before it
//! payload = op*
//! op      = kind u8 (1 insert, 2 remove) | table name length u8 | table name
//!         | key length u32 | key | (insert only) value length u32 | value
//! ```
//! Keys and values are redb's own byte forms (`Key::as_bytes`), so the log needs no codec of
//! its own and follows the tables' types as they are.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use redb::{Database, Durability, Key, TableDefinition, TableHandle, Value, WriteTransaction};

use super::StoreError;

/// A checkpoint is due once the log is this long (or after `StoreOptions::checkpoint_batches`
/// batches): bounds what redb keeps in memory for its commits without durability, and the
/// replay at open.
pub(super) const CHECKPOINT_BYTES: u64 = 16 << 20;
/// The longest record replay accepts: a batch of at most `max_batch` jobs, each writing a few
/// keys, is far smaller; a longer length field is damage, not a record.
const MAX_RECORD: usize = 256 << 20;

const MAGIC: u32 = u32::from_be_bytes(*b"PWAL");
const HEADER: usize = 4 + 4 + 8 + 8;
const TRAILER: usize = 8;
const OP_INSERT: u8 = 1;
const OP_REMOVE: u8 = 2;

/// The log's path beside the store's file: `<store>-wal`.
pub(super) fn path_for(store: &Path) -> PathBuf {
    let mut p = store.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// The writes of the batch being run, in order ([`super::commit::Txn`] records into it).
#[derive(Debug, Default)]
pub(super) struct Ops {
    buf: Vec<u8>,
}

impl Ops {
    /// An insert of `key` (redb byte form) with `value` into table `table`.
    pub(super) fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) {
        self.op(OP_INSERT, table, key);
        self.bytes(value);
    }

    /// A removal of `key` from table `table`.
    pub(super) fn remove(&mut self, table: &str, key: &[u8]) {
        self.op(OP_REMOVE, table, key);
    }

    fn op(&mut self, kind: u8, table: &str, key: &[u8]) {
        // Table names are the store's own constants, all short.
        let name = table.as_bytes();
        let n = name.len().min(u8::MAX as usize);
        self.buf.push(kind);
        self.buf.push(n as u8);
        self.buf.extend_from_slice(&name[..n]);
        self.bytes(key);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(&(b.len() as u32).to_be_bytes());
        self.buf.extend_from_slice(b);
    }

    pub(super) fn clear(&mut self) {
        self.buf.clear();
    }
}

/// The open log: appended to by the batch runner only (one batch at a time).
#[derive(Debug)]
pub(super) struct Wal {
    file: File,
    generation: u64,
    next_seq: u64,
    len: u64,
    /// Records appended since the last `fdatasync`.
    unsynced: bool,
    /// Batches since the last checkpoint.
    batches: u64,
    /// A checkpoint after this many batches.
    checkpoint_batches: u64,
    record: Vec<u8>,
}

impl Wal {
    /// Opens the log at `path` (empty: [`replay`] ran first), creating it and syncing its
    /// directory the first time.
    pub(super) fn open(path: &Path, checkpoint_batches: u64) -> Result<Self, StoreError> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if file.metadata()?.len() != 0 {
            file.set_len(0)?;
            file.sync_all()?;
        }
        if !existed {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)?.sync_all()?;
            }
        }
        Ok(Self {
            file,
            generation: random_generation(0),
            next_seq: 0,
            len: 0,
            unsynced: false,
            batches: 0,
            checkpoint_batches: checkpoint_batches.max(1),
            record: Vec::new(),
        })
    }

    /// Whether the next batch should be committed durably in redb (and the log emptied).
    pub(super) fn checkpoint_due(&self) -> bool {
        self.batches + 1 >= self.checkpoint_batches || self.len >= CHECKPOINT_BYTES
    }

    /// Appends a batch's writes as one record (not synced yet).
    pub(super) fn append(&mut self, ops: &Ops) -> Result<(), StoreError> {
        let payload = &ops.buf;
        if payload.len() > MAX_RECORD {
            return Err(StoreError::Internal("a batch too large for one log record"));
        }
        let r = &mut self.record;
        r.clear();
        r.extend_from_slice(&MAGIC.to_be_bytes());
        r.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        r.extend_from_slice(&self.generation.to_be_bytes());
        r.extend_from_slice(&self.next_seq.to_be_bytes());
        r.extend_from_slice(payload);
        let sum = xxhash_rust::xxh3::xxh3_64(r);
        r.extend_from_slice(&sum.to_be_bytes());
        self.file.write_all_at(r, self.len)?;
        self.len += r.len() as u64;
        self.next_seq += 1;
        self.batches += 1;
        self.unsynced = true;
        Ok(())
    }

    /// Makes every appended record durable (`fdatasync`); nothing to do when none is new.
    pub(super) fn sync(&mut self) -> Result<(), StoreError> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Whether records were appended since the last sync.
    pub(super) fn unsynced(&self) -> bool {
        self.unsynced
    }

    /// After a durable redb commit that holds everything logged: empties the log and starts
    /// a new generation. The new round starts at the log's beginning even if emptying it
    /// failed: its generation tells its records from whatever is left behind them, and the
    /// records left are all in redb already. So an error here is only worth a warning.
    pub(super) fn checkpointed(&mut self) -> Result<(), StoreError> {
        let emptied = if self.len != 0 {
            self.file.set_len(0).and_then(|()| self.file.sync_data())
        } else {
            Ok(())
        };
        self.generation = random_generation(self.generation);
        self.next_seq = 0;
        self.len = 0;
        self.unsynced = false;
        self.batches = 0;
        Ok(emptied?)
    }
}

/// A generation unlike the last: random, or (without `/dev/urandom`) the clock mixed with
/// the last one.
fn random_generation(last: u64) -> u64 {
    let mut b = [0u8; 8];
    match File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)) {
        Ok(()) => u64::from_be_bytes(b),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            xxhash_rust::xxh3::xxh3_64(&[last.to_be_bytes(), nanos.to_be_bytes()].concat())
        }
    }
}

/// Applies the log at `path` to `db` (see the module docs): returns how many records were
/// applied. The log is left as it is; [`Wal::open`] empties it once this returned.
pub(super) fn replay(db: &Database, path: &Path) -> Result<usize, StoreError> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let records = records(&data);
    if records.is_empty() {
        return Ok(0);
    }
    let mut wtx = db.begin_write()?;
    wtx.set_durability(Durability::Immediate)?;
    for payload in &records {
        apply(&wtx, payload)?;
    }
    wtx.commit()?;
    Ok(records.len())
}

/// The payloads of the whole, consecutive records at the start of `data`.
fn records(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut expect: Option<(u64, u64)> = None;
    while data.len() - at >= HEADER + TRAILER {
        let h = &data[at..at + HEADER];
        let magic = u32::from_be_bytes(h[0..4].try_into().unwrap_or_default());
        let len = u32::from_be_bytes(h[4..8].try_into().unwrap_or_default()) as usize;
        let generation = u64::from_be_bytes(h[8..16].try_into().unwrap_or_default());
        let seq = u64::from_be_bytes(h[16..24].try_into().unwrap_or_default());
        if magic != MAGIC || len > MAX_RECORD || data.len() - at - HEADER - TRAILER < len {
            break;
        }
        if expect.is_some_and(|e| e != (generation, seq)) {
            break;
        }
        let end = at + HEADER + len;
        let sum = u64::from_be_bytes(data[end..end + TRAILER].try_into().unwrap_or_default());
        if xxhash_rust::xxh3::xxh3_64(&data[at..end]) != sum {
            break;
        }
        out.push(&data[at + HEADER..end]);
        expect = Some((generation, seq.wrapping_add(1)));
        at = end + TRAILER;
    }
    out
}

/// One write read back from a record.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Op<'a> {
    pub(super) table: &'a str,
    pub(super) key: &'a [u8],
    /// `None`: remove the key.
    pub(super) value: Option<&'a [u8]>,
}

/// The writes of one record's payload, in order; an error if it does not parse (a record
/// that passed its checksum but that this version cannot read).
pub(super) fn ops(mut p: &[u8]) -> Result<Vec<Op<'_>>, StoreError> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Result<&'a [u8], StoreError> {
        if p.len() < n {
            return Err(StoreError::Corrupt("log record cut short"));
        }
        let (a, b) = p.split_at(n);
        *p = b;
        Ok(a)
    }
    fn sized<'a>(p: &mut &'a [u8]) -> Result<&'a [u8], StoreError> {
        let n = take(p, 4)?;
        let n = u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize;
        take(p, n)
    }
    let mut out = Vec::new();
    while !p.is_empty() {
        let kind = take(&mut p, 1)?[0];
        let n = take(&mut p, 1)?[0] as usize;
        let table = std::str::from_utf8(take(&mut p, n)?)
            .map_err(|_| StoreError::Corrupt("log record table name"))?;
        let key = sized(&mut p)?;
        let value = match kind {
            OP_INSERT => Some(sized(&mut p)?),
            OP_REMOVE => None,
            _ => return Err(StoreError::Corrupt("log record operation")),
        };
        out.push(Op { table, key, value });
    }
    Ok(out)
}

fn apply(wtx: &WriteTransaction, payload: &[u8]) -> Result<(), StoreError> {
    for op in ops(payload)? {
        if !super::schema::replay_op(wtx, &op)? {
            return Err(StoreError::Corrupt("log record names an unknown table"));
        }
    }
    Ok(())
}

/// Applies `op` to `def` if that is the table it names; `Ok(false)` if it is not.
pub(super) fn apply_to<K: Key + 'static, V: Value + 'static>(
    wtx: &WriteTransaction,
    def: TableDefinition<'_, K, V>,
    op: &Op<'_>,
) -> Result<bool, StoreError> {
    if def.name() != op.table {
        return Ok(false);
    }
    let mut t = wtx.open_table(def)?;
    match op.value {
        Some(v) => {
            t.insert(K::from_bytes(op.key), V::from_bytes(v))?;
        }
        None => {
            t.remove(K::from_bytes(op.key))?;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ops: &[Op<'_>]) -> Ops {
        let mut o = Ops::default();
        for op in ops {
            match op.value {
                Some(v) => o.insert(op.table, op.key, v),
                None => o.remove(op.table, op.key),
            }
        }
        o
    }

    fn put<'a>(table: &'a str, key: &'a [u8], value: &'a [u8]) -> Op<'a> {
        Op {
            table,
            key,
            value: Some(value),
        }
    }

    fn del<'a>(table: &'a str, key: &'a [u8]) -> Op<'a> {
        Op {
            table,
            key,
            value: None,
        }
    }

    fn written(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap()
    }

    #[test]
    fn records_read_back_in_order_with_their_ops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-wal");
        let mut wal = Wal::open(&path, 1024).unwrap();
        wal.append(&batch(&[
            put("inodes", b"k1", b"v1"),
            del("dirents", b"k2"),
        ]))
        .unwrap();
        wal.append(&batch(&[del("inodes", b"k1")])).unwrap();
        wal.sync().unwrap();
        let data = written(&path);
        let r = records(&data);
        assert_eq!(r.len(), 2);
        assert_eq!(
            ops(r[0]).unwrap(),
            vec![
                Op {
                    table: "inodes",
                    key: b"k1",
                    value: Some(b"v1")
                },
                Op {
                    table: "dirents",
                    key: b"k2",
                    value: None
                },
            ]
        );
        assert_eq!(
            ops(r[1]).unwrap(),
            vec![Op {
                table: "inodes",
                key: b"k1",
                value: None
            }]
        );
    }

    /// A log of three records of the same size, and its path (in the returned directory).
    fn three_records() -> (tempfile::TempDir, PathBuf, Wal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-wal");
        let mut wal = Wal::open(&path, 1024).unwrap();
        for i in 0..3u8 {
            wal.append(&batch(&[put("t", &[i], &[i; 10])])).unwrap();
        }
        (dir, path, wal)
    }

    #[test]
    fn a_torn_or_damaged_tail_ends_the_replay_there() {
        let (_dir, path, _wal) = three_records();
        let data = written(&path);
        let one = data.len() / 3;
        // Cut anywhere inside the last record: two records.
        for cut in [data.len() - 1, 2 * one + HEADER, 2 * one + 1] {
            assert_eq!(records(&data[..cut]).len(), 2, "cut at {cut}");
        }
        // A flipped byte in the second record's payload: one.
        let mut bad = data.clone();
        bad[one + HEADER + 3] ^= 1;
        assert_eq!(records(&bad).len(), 1);
        // A huge length field: nothing is allocated or read past the end.
        let mut bad = data.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(records(&bad).is_empty());
    }

    #[test]
    fn records_of_an_earlier_round_behind_the_new_ones_are_not_replayed() {
        let (_dir, path, mut wal) = three_records();
        let old = written(&path);
        // A checkpoint, one record of the new round, and then a crash that kept the old
        // file's tail behind it (as if the truncation had not reached the disk).
        wal.checkpointed().unwrap();
        wal.append(&batch(&[put("t", &[9], &[9; 10])])).unwrap();
        let new = written(&path);
        assert_eq!(new.len(), old.len() / 3, "records of the same size");
        let mut mixed = new.clone();
        mixed.extend_from_slice(&old[new.len()..]);
        let r = records(&mixed);
        assert_eq!(r.len(), 1, "only the new round's record");
        assert_eq!(ops(r[0]).unwrap()[0].key, &[9]);
    }

    #[test]
    fn every_table_a_store_has_is_replayable() {
        use redb::ReadableDatabase;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        let now = nfs_proto::nfs4::Nfstime4 {
            seconds: 1,
            nseconds: 0,
        };
        drop(super::super::Store::open(&path, &Default::default(), now).unwrap());
        let db = Database::open(&path).unwrap();
        let r = db.begin_read().unwrap();
        let known = super::super::schema::table_names();
        let mut n = 0;
        for t in r.list_tables().unwrap() {
            assert!(
                known.contains(&t.name()),
                "table {} is not replayable",
                t.name()
            );
            n += 1;
        }
        assert!(n >= 15, "the store opens its tables at open ({n})");
    }

    #[test]
    fn a_payload_that_does_not_parse_is_an_error_not_a_panic() {
        for p in [
            &[1u8][..],
            &[1, 200, b'a'],
            &[3, 1, b't', 0, 0, 0, 0],
            &[1, 1, b't', 0, 0, 0, 9],
        ] {
            assert!(ops(p).is_err(), "{p:?}");
        }
    }

    proptest::proptest! {
        /// The log is read back from disk after a crash: any bytes at all parse or stop the
        /// replay, and never panic.
        #[test]
        fn any_bytes_are_read_without_a_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4096)) {
            for p in records(&data) {
                let _ = ops(p);
            }
            let _ = ops(&data);
        }
    }
}
