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
//! the log holds [`CHECKPOINT_BYTES`], a checkpoint follows the batch (after its record, never
//! in its place): the log synced, an empty durable redb commit, and a new round of the log.
//!
//! **A log that keeps its length.** A round starts at the file's beginning and writes over
//! what the rounds before left; the file grows, by zeros a megabyte at a time, only when a
//! round outgrows it. So an append changes no file metadata and its `fdatasync` writes data
//! blocks only: a file system with a journal commits no transaction for it (on this
//! machine's ext4, 512-byte appends with `fdatasync` took 98-137 us each in a file that
//! keeps its length, 157-184 us in one that grows, as the log did when each checkpoint
//! emptied it).
//!
//! **Replay.** At open, before anything else, [`replay`] applies every whole record of the log
//! in one redb transaction, commits it durably, and the log starts a new round. A record is a sequence of
//! absolute writes (insert this value, remove this key), so applying records that redb already
//! holds changes nothing: only the last write of each key counts, and replay starts from the
//! last durable redb commit, which the records in the log all follow. redb (version 4) keeps a
//! commit without durability in memory only, so after a crash the file holds exactly that last
//! durable commit.
//!
//! **Torn and stale records.** A record is `magic, length, generation, sequence, payload,
//! checksum` (XXH3 over all before it). Replay stops at the first record that is cut short,
//! fails its checksum, or does not follow its predecessor (same generation, next sequence
//! number). Each round begins with a record of its own new random generation and no writes,
//! synced before the round's first batch: the records of earlier rounds behind it never
//! follow it, so they are never taken for the new round's. What replay does not apply was
//! never synced, so no reply acknowledged it.
//!
//! **Why the checkpoint follows a logged batch.** Until a new round's first record is
//! durable, a crash leaves the round before it in the log, and replay applies that over
//! redb's last durable commit. It changes nothing only if that commit holds nothing newer
//! than the round's last record. When a checkpoint committed its own batch durably instead of
//! logging it, a crash between that commit and the log's emptying replayed the older
//! records over the batch, undoing its writes (a file it removed came back):
//! `commit::tests::a_crash_right_after_a_checkpoint_undoes_nothing_on_replay`.
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
/// The log file grows by this much at a time (written with zeros).
const GROW_BYTES: u64 = 1 << 20;
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
    /// Where the next record goes: the end of this round's records.
    len: u64,
    /// The file's length: records are written over what earlier rounds left (or zeros), so
    /// an append below it changes no file metadata and its `fdatasync` writes data only.
    allocated: u64,
    /// Records appended since the last `fdatasync`.
    unsynced: bool,
    /// Batches since the last checkpoint.
    batches: u64,
    /// A checkpoint after this many batches.
    checkpoint_batches: u64,
    record: Vec<u8>,
    /// Tests: new rounds are not started, as if the process had died just before.
    #[cfg(test)]
    dead: bool,
}

impl Wal {
    /// Opens the log at `path` ([`replay`] ran first), creating it and syncing its
    /// directory the first time, and starts a round (see [`Wal::checkpointed`]). What an
    /// earlier process left in it stays as the space the new round writes over.
    pub(super) fn open(path: &Path, checkpoint_batches: u64) -> Result<Self, StoreError> {
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if !existed {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                File::open(dir)?.sync_all()?;
            }
        }
        let allocated = file.metadata()?.len();
        let mut wal = Self {
            file,
            generation: 0,
            next_seq: 0,
            len: 0,
            allocated,
            unsynced: false,
            batches: 0,
            checkpoint_batches: checkpoint_batches.max(1),
            record: Vec::new(),
            #[cfg(test)]
            dead: false,
        };
        wal.checkpointed()?;
        Ok(wal)
    }

    /// Whether redb should now commit durably and the log start a new round: after
    /// `checkpoint_batches` batches, or once the round's records reach [`CHECKPOINT_BYTES`].
    pub(super) fn checkpoint_due(&self) -> bool {
        self.batches >= self.checkpoint_batches || self.len >= CHECKPOINT_BYTES
    }

    /// Appends a batch's writes as one record (not synced yet).
    pub(super) fn append(&mut self, ops: &Ops) -> Result<(), StoreError> {
        self.write_record(&ops.buf)?;
        self.batches += 1;
        self.unsynced = true;
        Ok(())
    }

    /// Writes the record of `payload` at the end of this round's records.
    fn write_record(&mut self, payload: &[u8]) -> Result<(), StoreError> {
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
        let end = self.len + r.len() as u64;
        if end > self.allocated {
            // Zeros, not `fallocate`: a file system's unwritten extents would need their
            // metadata changed on every write into them. The next `fdatasync` covers the
            // new length, once per GROW_BYTES of log.
            let to = end.div_ceil(GROW_BYTES) * GROW_BYTES;
            let zeros = vec![0u8; (to - self.allocated) as usize];
            self.file.write_all_at(&zeros, self.allocated)?;
            self.allocated = to;
        }
        self.file.write_all_at(&self.record, self.len)?;
        self.len = end;
        self.next_seq += 1;
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

    /// After a durable redb commit that holds everything logged: starts a new round, with
    /// a new generation, at the log's beginning, and makes its first record (empty) durable.
    /// The records of the rounds before stay behind it; replay stops at the first of them,
    /// which does not follow that record. Writing over them instead of emptying the file
    /// keeps the length, so appends change no file metadata (see `allocated`).
    ///
    /// Should this fail, the log still begins with the round just ended, whose records end
    /// with the last batch that redb's durable commit holds (the checkpoint comes after a
    /// logged batch, never in place of one): replaying them changes nothing. The new round
    /// starts at the beginning all the same, so an error here is only worth a warning.
    pub(super) fn checkpointed(&mut self) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.dead {
            return Ok(());
        }
        self.generation = random_generation(self.generation);
        self.next_seq = 0;
        self.len = 0;
        self.batches = 0;
        self.unsynced = false;
        self.write_record(&[])?;
        self.file.sync_data()?;
        Ok(())
    }
}

#[cfg(test)]
impl Wal {
    /// From now on no new round starts: the log stays as a process that died right after a
    /// checkpoint's durable commit left it.
    pub(super) fn die_before_next_round(&mut self) {
        self.dead = true;
    }
}

/// Tests: how many records with writes the log at `path` begins with (what a replay would
/// apply).
#[cfg(test)]
pub(super) fn records_in(path: &Path) -> usize {
    with_writes(&std::fs::read(path).unwrap_or_default()).len()
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
/// applied. The log is left as it is; [`Wal::open`] starts a new round once this returned.
pub(super) fn replay(db: &Database, path: &Path) -> Result<usize, StoreError> {
    replay_with(db, path, super::schema::replay_op)
}

/// [`replay`] with `apply` applying each write (`Ok(false)`: it names no table it knows).
pub(super) fn replay_with(
    db: &Database,
    path: &Path,
    apply: impl Fn(&WriteTransaction, &Op<'_>) -> Result<bool, StoreError>,
) -> Result<usize, StoreError> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let records = with_writes(&data);
    if records.is_empty() {
        return Ok(0);
    }
    let mut wtx = db.begin_write()?;
    wtx.set_durability(Durability::Immediate)?;
    for payload in &records {
        for op in ops(payload)? {
            if !apply(&wtx, &op)? {
                return Err(StoreError::Corrupt("log record names an unknown table"));
            }
        }
    }
    wtx.commit()?;
    Ok(records.len())
}

/// [`records`] without the empty record each round begins with: what a replay applies.
fn with_writes(data: &[u8]) -> Vec<&[u8]> {
    records(data)
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
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

    /// The payloads of the records at the start of the log at `path`, without the empty
    /// record that begins each round.
    fn logged(path: &Path) -> Vec<Vec<u8>> {
        with_writes(&written(path))
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()
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
        let r = logged(&path);
        assert_eq!(r.len(), 2);
        assert_eq!(
            ops(&r[0]).unwrap(),
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
            ops(&r[1]).unwrap(),
            vec![Op {
                table: "inodes",
                key: b"k1",
                value: None
            }]
        );
    }

    /// A log of three records of the same size after the round's first (empty) record, and
    /// its path (in the returned directory).
    fn three_records() -> (tempfile::TempDir, PathBuf, Wal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-wal");
        let mut wal = Wal::open(&path, 1024).unwrap();
        for i in 0..3u8 {
            wal.append(&batch(&[put("t", &[i], &[i; 10])])).unwrap();
        }
        (dir, path, wal)
    }

    /// The length of the round's first record, and of each of [`three_records`].
    fn lengths(wal: &Wal) -> (usize, usize) {
        let start = HEADER + TRAILER;
        (start, (wal.len as usize - start) / 3)
    }

    #[test]
    fn a_torn_or_damaged_tail_ends_the_replay_there() {
        let (_dir, path, wal) = three_records();
        let (start, one) = lengths(&wal);
        let data = written(&path)[..wal.len as usize].to_vec();
        // Cut anywhere inside the last record: the first record and two more.
        for cut in [
            data.len() - 1,
            start + 2 * one + HEADER,
            start + 2 * one + 1,
        ] {
            assert_eq!(records(&data[..cut]).len(), 3, "cut at {cut}");
        }
        // A flipped byte in the second record's payload: the first record and one more.
        let mut bad = data.clone();
        bad[start + one + HEADER + 3] ^= 1;
        assert_eq!(records(&bad).len(), 2);
        // A huge length field: nothing is allocated or read past the end.
        let mut bad = data.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(records(&bad).is_empty());
    }

    #[test]
    fn records_of_an_earlier_round_behind_the_new_ones_are_not_replayed() {
        let (_dir, path, mut wal) = three_records();
        let old = written(&path);
        // A checkpoint and one record of the new round, written over the old round's
        // beginning: the old round's later records are still in the file behind it.
        wal.checkpointed().unwrap();
        wal.append(&batch(&[put("t", &[9], &[9; 10])])).unwrap();
        let new = written(&path);
        assert_eq!(new.len(), old.len(), "the file keeps its length");
        assert!(records(&old).len() == 4 && records(&new).len() == 2);
        let r = logged(&path);
        assert_eq!(r.len(), 1, "only the new round's record");
        assert_eq!(ops(&r[0]).unwrap()[0].key, &[9]);
        // A crash before the new round's first record reached the disk: the old round is
        // replayed whole (it ends with the last batch redb's durable commit holds).
        let mut before = new.clone();
        before[..old.len()].copy_from_slice(&old);
        assert_eq!(records(&before).len(), 4);
    }

    #[test]
    fn the_log_grows_by_whole_steps_and_appends_below_its_length_do_not_change_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s-wal");
        let mut wal = Wal::open(&path, 1024).unwrap();
        let len = || std::fs::metadata(&path).unwrap().len();
        assert_eq!(len(), GROW_BYTES, "the first record made the first step");
        let value = vec![7u8; 1000];
        let mut n = 0u32;
        while wal.len + 2000 < GROW_BYTES {
            wal.append(&batch(&[put("t", &n.to_be_bytes(), &value)]))
                .unwrap();
            n += 1;
            assert_eq!(len(), GROW_BYTES);
        }
        for _ in 0..3 {
            wal.append(&batch(&[put("t", &n.to_be_bytes(), &value)]))
                .unwrap();
            n += 1;
        }
        assert_eq!(len(), 2 * GROW_BYTES);
        wal.sync().unwrap();
        assert_eq!(logged(&path).len(), n as usize);
        // A new round writes over the old one; so does a new process.
        wal.checkpointed().unwrap();
        assert_eq!(len(), 2 * GROW_BYTES);
        assert!(logged(&path).is_empty());
        drop(wal);
        let wal = Wal::open(&path, 1024).unwrap();
        assert_eq!(
            (len(), wal.len as usize),
            (2 * GROW_BYTES, HEADER + TRAILER)
        );
    }

    #[test]
    fn a_checkpoint_is_due_after_its_batches() {
        let dir = tempfile::tempdir().unwrap();
        let mut wal = Wal::open(&dir.path().join("s-wal"), 3).unwrap();
        for _ in 0..2 {
            wal.append(&batch(&[put("t", b"k", b"v")])).unwrap();
            assert!(!wal.checkpoint_due());
        }
        wal.append(&batch(&[put("t", b"k", b"v")])).unwrap();
        assert!(wal.checkpoint_due());
        wal.checkpointed().unwrap();
        assert!(!wal.checkpoint_due());
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
