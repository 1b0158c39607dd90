//! The embedded store: one SQLite database file (WAL journal, full sync) holding every
//! container's items, so a laptop gets the whole platform with no service to run, and
//! nothing written is lost on restart or crash.
//!
//! Cosmos DB semantics it keeps: items addressed by (container, partition key, id); the item's
//! partition key must match the partition addressed; etags change on every write; batches
//! are atomic; the change log delivers the latest version of each item in commit order.
//! Every write takes the next number of one global log sequence number (LSN), stored in the
//! same transaction, so a reader that has seen LSN n has seen everything committed before.

mod backup;
mod commits;
mod group_commit;
mod purge;
mod readers;
mod reads;
mod schema;
mod sql;
mod sqlite;
mod store_impl;
mod writer;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::{ChangeSignal, StoreError, StoreResult, Tenancy};

pub use backup::backup;
use commits::{ForeignCommits, Versioning};
use group_commit::{WriteJob, run_writer};
use readers::Reader;
pub use readers::default_readers;
use schema::{
    CREATE_CHANGES_TABLE, SCHEMA, add_expiry, check_layout, check_layout_read_only, counts_changes,
    drop_legacy_triggers, set_planner_stats,
};
use sqlite::{configure, sql_error};
/// Page cache of the writer connection, in KiB (a negative `cache_size` is KiB).
///
/// Larger is not better here: when an insert splits a page, SQLite renumbers the new pages
/// through the lock-byte page's number (262,145 with 4 KiB pages), far past the end of a
/// smaller file, and at the end of that transaction it then walks every page of the writer's
/// cache to drop those past the end. Under a steady stream of small commits, a 32 MiB cache
/// (8,192 pages, most of them cold) made that walk a seventh of the server's CPU.
const WRITER_CACHE_KIB: i64 = 4 * 1024;

/// Cheap to clone: clones share the connections.
#[derive(Clone)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
}

struct Shared {
    /// Writes go to the writer thread, which owns the one writing connection.
    writes: std::sync::mpsc::Sender<WriteJob>,
    /// Reader connections; SQLite in WAL mode lets them read while the writer writes.
    readers: Vec<Mutex<Reader>>,
    /// One permit per reader: a read holding one finds a reader free.
    free_readers: Arc<Semaphore>,
    changes: ChangeSignal,
    tenancy: Tenancy,
    /// Opened by [`EmbeddedStore::open_read_only`]: there is no writer, and writes are
    /// refused.
    read_only: bool,
    /// Whether pages of a partition are versioned, and the commits their versions are read
    /// at, counted by the writer thread: a version read at the current count needs no look at
    /// the partition's count of changes.
    versioning: Arc<Versioning>,
}

impl EmbeddedStore {
    /// Opens (creating if needed) the database at `path`, in the `single` layout.
    pub fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, Tenancy::Single)
    }

    /// Opens (creating if needed) the database at `path` in the `tenancy` layout; refuses a
    /// database that holds the other layout. Reads through [`default_readers`] connections.
    pub fn open_with(path: &Path, tenancy: Tenancy) -> StoreResult<Self> {
        Self::open_with_readers(path, tenancy, default_readers())
    }

    /// [`Self::open_with`], reading through `readers` connections (at least one): as many
    /// reads run at once, and a read waits while all of them are taken.
    pub(crate) fn open_with_readers(
        path: &Path,
        tenancy: Tenancy,
        readers: usize,
    ) -> StoreResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let writer = Connection::open(path).map_err(sql_error)?;
        configure(&writer)?;
        // Writes touch pages all over the indexes (ids and user ids are random): a larger
        // cache than SQLite's 2 MiB spares the writer re-reading them from the OS. A
        // maximum, filled as used.
        writer
            .pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
            .map_err(sql_error)?;
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(sql_error)?;
        writer.execute_batch(SCHEMA).map_err(sql_error)?;
        writer
            .execute_batch(&drop_legacy_triggers())
            .map_err(sql_error)?;
        add_expiry(&writer)?;
        check_layout(&writer, tenancy, path)?;
        set_planner_stats(&writer)?;
        let versioning = Arc::new(Versioning::new(counts_changes(&writer)?));
        let readers = (0..readers.max(1))
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(sql_error)?;
                Ok(Mutex::new(Reader::new(reader)?))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let (writes, jobs) = std::sync::mpsc::channel();
        let counted = Arc::clone(&versioning);
        let foreign = ForeignCommits::seen_by(&writer);
        std::thread::Builder::new()
            .name("embedded-store-writer".into())
            .spawn(move || run_writer(writer, jobs, &counted, foreign))
            .map_err(|e| StoreError::Internal(format!("cannot start the writer thread: {e}")))?;
        let store = Self {
            shared: Arc::new(Shared {
                writes,
                free_readers: Arc::new(Semaphore::new(readers.len())),
                readers,
                changes: Default::default(),
                tenancy,
                read_only: false,
                versioning,
            }),
        };
        store.start_purge()?;
        Ok(store)
    }

    /// Opens the existing database at `path` for reading only, for the commands that write
    /// nothing (`verify`, `export`): no schema, planner statistics or purge are written, so
    /// a copy on read-only media or without write permission can be checked, and every
    /// write is refused. A database in WAL mode needs its `-shm` file, which SQLite creates
    /// beside it; where it cannot (a read-only folder) and no `-wal` file holds commits the
    /// database file lacks, the file is opened as immutable instead.
    pub fn open_read_only(path: &Path, tenancy: Tenancy) -> StoreResult<Self> {
        let readers = (0..default_readers())
            .map(|_| Reader::new(open_reader(path)?))
            .collect::<StoreResult<Vec<_>>>()?;
        if let Some(first) = readers.first() {
            check_layout_read_only(&first.conn, tenancy, path)?;
        }
        // No writer thread: the receiver is dropped, and `read_only` refuses writes first.
        let (writes, _) = std::sync::mpsc::channel();
        Ok(Self {
            shared: Arc::new(Shared {
                writes,
                free_readers: Arc::new(Semaphore::new(readers.len())),
                readers: readers.into_iter().map(Mutex::new).collect(),
                changes: Default::default(),
                tenancy,
                read_only: true,
                // A copy being checked: nothing of it is kept.
                versioning: Arc::new(Versioning::new(false)),
            }),
        })
    }

    /// Makes the database count the writes to each partition whose lists readers keep, so
    /// that pages of them are versioned: every process writing the file counts from then on,
    /// until [`stop_counting`] (see `schema::CREATE_CHANGES_TABLE` for the rule). Refused on
    /// a read-only store.
    pub(crate) async fn count_changes(&self) -> StoreResult<()> {
        if self.counts_changes() {
            return Ok(());
        }
        self.on_writer(|tx| tx.execute_batch(CREATE_CHANGES_TABLE).map_err(sql_error))
            .await?;
        // Only once the table is committed: a count read before would not be kept up.
        self.shared.versioning.start_counting();
        // The writer thread sleeps between writes while nothing is versioned: a write (of
        // nothing) wakes it to look for other processes' commits from now on.
        self.on_writer(|_| Ok(())).await
    }

    /// Whether pages of a partition are versioned.
    fn counts_changes(&self) -> bool {
        self.shared.versioning.counts_changes()
    }
}

/// Stops the counting of each partition's writes in the store at `path` (begun by a process
/// that kept pages, [`EmbeddedStore::count_changes`]), so that writes stop paying for it: for
/// a store whose servers no longer keep pages. A server that keeps pages begins it again.
/// Refused while any other connection, of this process or another, has the file open: a
/// process that keeps pages relies on every write being counted, and every connection to a
/// database in WAL mode holds a shared lock on it from its first read until it closes, which
/// the exclusive lock taken here waits for. Answers whether the store was counting.
pub fn stop_counting(path: &Path) -> StoreResult<bool> {
    if !path.is_file() {
        return Err(StoreError::BadRequest(format!(
            "no embedded store at {}",
            path.display()
        )));
    }
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(sql_error)?;
    // Exclusive from the first read on, and no wait (rusqlite's connections wait 5 s for a
    // lock by default): an open server is refused at once.
    conn.busy_timeout(std::time::Duration::ZERO)
        .map_err(sql_error)?;
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(sql_error)?;
    let in_use = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Unavailable(format!(
                "the embedded store at {} is open in another process (a server?): stop it first",
                path.display()
            ))
        }
        _ => sql_error(e),
    };
    conn.execute_batch("BEGIN EXCLUSIVE").map_err(in_use)?;
    conn.query_row("SELECT count(*) FROM layout", [], |row| {
        row.get::<_, i64>(0)
    })
    .map_err(|e| StoreError::BadRequest(format!("not an embedded store: {e}")))?;
    let counted = counts_changes(&conn)?;
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS partition_changes; {} COMMIT;",
        drop_legacy_triggers()
    ))
    .map_err(in_use)?;
    Ok(counted)
}

/// A read-only connection that has read the schema: as SQLite opens it, or immutable when
/// the folder does not let SQLite create the `-shm` file and no `-wal` file is there.
fn open_reader(path: &Path) -> StoreResult<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let probe = |conn: Connection| -> Result<Connection, rusqlite::Error> {
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| {
            row.get::<_, i64>(0)
        })?;
        Ok(conn)
    };
    let first = Connection::open_with_flags(path, flags).and_then(probe);
    let cannot_share = |e: &rusqlite::Error| {
        matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
        )
    };
    match first {
        Err(e) if cannot_share(&e) && holds_wal_commits(path) => {
            Err(StoreError::Unavailable(format!(
                "{e}: the -wal file beside {} holds commits that are not in the file yet, and \
                 SQLite cannot create the -shm file it needs to read them in this folder: copy \
                 the folder somewhere writable and check the copy",
                path.display()
            )))
        }
        Err(e) if cannot_share(&e) => {
            Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI)
                .and_then(probe)
                .map_err(sql_error)
        }
        other => other.map_err(sql_error),
    }
}

/// Whether a `-wal` file beside `path` holds anything (commits not yet in the file itself).
fn holds_wal_commits(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).is_ok_and(|m| m.len() > 0)
}

/// `path` as an SQLite URI that opens it immutable (no locks, no `-shm`), its `%`, `?` and
/// `#` escaped.
fn immutable_uri(path: &Path) -> String {
    let mut escaped = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3f"),
            '#' => escaped.push_str("%23"),
            c => escaped.push(c),
        }
    }
    format!("file:{escaped}?immutable=1")
}

impl EmbeddedStore {
    fn changes(&self) -> &ChangeSignal {
        &self.shared.changes
    }
}
