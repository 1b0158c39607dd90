//! The embedded store: one SQLite database file (WAL journal, full sync) holding every
//! container's items, so a laptop gets the whole platform with no service to run, and
//! nothing written is lost on restart or crash.
//!
//! Cosmos DB semantics it keeps: items addressed by (container, partition key, id); the item's
//! partition key must match the partition addressed; etags change on every write; batches
//! are atomic; the change log delivers the latest version of each item in commit order.
//! Every write takes the next number of one global log sequence number (LSN), stored in the
//! same transaction, so a reader that has seen LSN n has seen everything committed before.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;
use tokio::sync::Notify;

use super::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, FilterOp, Page,
    PageRequest, PartitionKey, Query, QueryScope, SortOrder, Store, StoreError, StoreResult,
    Tenancy, checked_item,
};

/// Connections kept for readers; SQLite in WAL mode lets them read while the writer writes.
const READERS: usize = 4;
/// Page cache of the writer connection, in KiB (a negative `cache_size` is KiB).
const WRITER_CACHE_KIB: i64 = 32 * 1024;
/// How long a connection waits for another process's write lock (e.g. `rebuild` while the
/// server runs) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    container TEXT NOT NULL,
    pk TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    lsn INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    expires_at INTEGER,
    PRIMARY KEY (container, pk, id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS items_by_lsn ON items (container, lsn);
CREATE INDEX IF NOT EXISTS items_by_type_and_date ON items (
    container, pk, json_extract(body, '$.type'), json_extract(body, '$.creationDate'), id);
CREATE INDEX IF NOT EXISTS items_by_user ON items (container, json_extract(body, '$.userId'));
CREATE TABLE IF NOT EXISTS log_sequence (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    last_lsn INTEGER NOT NULL
);
INSERT OR IGNORE INTO log_sequence (singleton, last_lsn) VALUES (1, 0);
";

/// The layout a database was created with (its partition keys), once recorded.
const LAYOUT_TABLE: &str = "
CREATE TABLE IF NOT EXISTS layout (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    tenancy TEXT NOT NULL
)";

/// Records the layout of a new database, or checks that an existing one was created with
/// `tenancy`: the keys of its items depend on it. Databases from before layouts were
/// recorded hold items, and all in the `single` layout.
fn check_layout(conn: &Connection, tenancy: Tenancy, path: &Path) -> StoreResult<()> {
    conn.execute_batch(LAYOUT_TABLE).map_err(sql_error)?;
    let has_items: bool = conn
        .query_row("SELECT EXISTS (SELECT 1 FROM items)", [], |row| row.get(0))
        .map_err(sql_error)?;
    let new_layout = if has_items { Tenancy::Single } else { tenancy };
    // A no-op once recorded, also when another process recorded it meanwhile.
    conn.execute(
        "INSERT OR IGNORE INTO layout (singleton, tenancy) VALUES (1, ?1)",
        [new_layout.name()],
    )
    .map_err(sql_error)?;
    let recorded: String = conn
        .query_row("SELECT tenancy FROM layout", [], |row| row.get(0))
        .map_err(sql_error)?;
    if recorded != tenancy.name() {
        return Err(StoreError::BadRequest(format!(
            "the embedded store at {} holds the {recorded} layout but BLOG_TENANCY is {tenancy}; \
             the layouts key their items differently: set BLOG_TENANCY={recorded}, or use \
             another BLOG_DATA_DIR for a {tenancy} deployment",
            path.display()
        )));
    }
    Ok(())
}

/// Stores created before time-to-live existed lack its column; adding it (empty: none of
/// their items had a `ttl`) brings them up to [`SCHEMA`].
const ADD_EXPIRY_COLUMN: &str = "ALTER TABLE items ADD COLUMN expires_at INTEGER";
/// Finds what the purge removes without scanning the live items.
const EXPIRY_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS items_by_expiry ON items (expires_at) WHERE expires_at IS NOT NULL";

/// The condition that hides expired items from reads, as Cosmos DB hides them before its
/// background purge: an item whose time-to-live has run out is gone for every read at once.
const LIVE: &str = "(expires_at IS NULL OR expires_at > unixepoch())";

/// How often the background purge deletes expired items.
const PURGE_INTERVAL: Duration = Duration::from_secs(60);

/// What the query planner is told about the data, instead of measuring it with `ANALYZE`:
/// many containers' items, partitions of a few dozen items, a few dozen items per user.
/// Without statistics SQLite prefers the primary key (it covers the whole row) over the
/// expression indexes, so a cross-partition query on `userId` (the username fan-out of
/// SPEC 5.1, run for every user by `rebuild`) scanned the whole container: at 100 users
/// `rebuild` took 30 s, most of it there. Fixed figures keep the plans the same for an
/// empty store and a large one, and opening cheap (no `ANALYZE` of a big file at start-up).
/// Rows: `(index, "rows rows-per-container rows-per-next-column ...")`.
const PLANNER_STATS: [(&str, &str); 4] = [
    ("items", "1000000 300000 20 1"),
    ("items_by_lsn", "1000000 300000 1"),
    ("items_by_type_and_date", "1000000 300000 20 10 2 1"),
    ("items_by_user", "1000000 300000 50"),
];

/// Writes [`PLANNER_STATS`] (idempotent) and makes this connection use them; connections
/// opened afterwards read them with the schema.
fn set_planner_stats(conn: &Connection) -> StoreResult<()> {
    let has_stats: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1')",
            [],
            |row| row.get(0),
        )
        .map_err(sql_error)?;
    if !has_stats {
        // ANALYZE of any table creates sqlite_stat1; this one has a single row.
        conn.execute_batch("ANALYZE log_sequence")
            .map_err(sql_error)?;
    }
    let mut sql = String::from("BEGIN IMMEDIATE; DELETE FROM sqlite_stat1 WHERE tbl = 'items';");
    for (index, stat) in PLANNER_STATS {
        sql.push_str(&format!(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('items', '{index}', '{stat}');"
        ));
    }
    sql.push_str("COMMIT; ANALYZE sqlite_schema;");
    conn.execute_batch(&sql).map_err(sql_error)
}

/// Brings a store of an earlier version up to the time-to-live schema (idempotent).
fn add_expiry(conn: &Connection) -> StoreResult<()> {
    let has_column: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('items') WHERE name = 'expires_at')",
            [],
            |row| row.get(0),
        )
        .map_err(sql_error)?;
    if !has_column {
        conn.execute_batch(ADD_EXPIRY_COLUMN).map_err(sql_error)?;
    }
    conn.execute_batch(EXPIRY_INDEX).map_err(sql_error)
}

/// When an item with this body, written at `written_at` (Unix seconds), expires: its `ttl`
/// field, as on Cosmos DB, is a number of seconds after the last write; absent or -1 means
/// never (the containers' default time-to-live is "on, no default").
fn expiry_of(item: &Value, written_at: i64) -> Option<i64> {
    item.get("ttl")
        .and_then(Value::as_i64)
        .filter(|ttl| *ttl > 0)
        .map(|ttl| written_at.saturating_add(ttl))
}

/// A reader connection and the last feed pages it read.
struct Reader {
    conn: Connection,
    /// Most recent first, at most [`CACHED_FEED_PAGES`].
    feed: Vec<CachedPage>,
}

/// Feed pages a reader keeps: one per feed in the `single` layout, and in `multi` the feeds
/// of the tenants read most recently (each tenant has its own).
const CACHED_FEED_PAGES: usize = 16;

/// The feed is the most read and the most expensive query (a hundred items, sorted and
/// parsed), and it changes only when the change-feed handler writes it. So each reader keeps
/// its last feed pages, each valid while the connection's `PRAGMA data_version` is unchanged:
/// that number changes on every commit of any other connection — this process's writer or
/// another process (`rebuild` while the server runs) — so a page is never served stale.
struct CachedPage {
    data_version: i64,
    query: Query,
    page: PageRequest,
    result: Page<Value>,
}

impl Reader {
    fn feed_query(&mut self, query: &Query, page: &PageRequest) -> StoreResult<Page<Value>> {
        // Read the version before the data: a commit in between makes the page look older
        // than it is (one needless re-read), never newer.
        let data_version: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .map_err(sql_error)?;
        // Pages of an older version can never be served again.
        self.feed
            .retain(|cached| cached.data_version == data_version);
        if let Some(position) = self
            .feed
            .iter()
            .position(|cached| &cached.query == query && &cached.page == page)
        {
            let cached = self.feed.remove(position);
            let result = cached.result.clone();
            self.feed.insert(0, cached);
            return Ok(result);
        }
        let result = run_query(&self.conn, Container::Feed, query, page)?;
        self.feed.truncate(CACHED_FEED_PAGES - 1);
        self.feed.insert(
            0,
            CachedPage {
                data_version,
                query: query.clone(),
                page: page.clone(),
                result: result.clone(),
            },
        );
        Ok(result)
    }
}

/// Cheap to clone: clones share the connections.
#[derive(Clone)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
}

struct Shared {
    /// Writes go to the writer thread, which owns the one writing connection.
    writes: std::sync::mpsc::Sender<WriteJob>,
    readers: Vec<Mutex<Reader>>,
    changes: [Notify; 4],
    tenancy: Tenancy,
}

/// Writes committed together at most: a group pays one fsync instead of one per write.
const MAX_GROUP: usize = 64;

/// One write waiting for the writer thread. `run` does the work inside the group's
/// transaction and says whether it succeeded (a failed write is rolled back to its own
/// savepoint, leaving the others); `finish` learns whether the group committed.
struct WriteJob {
    run: Box<dyn FnOnce(&Transaction<'_>) -> bool + Send>,
    finish: Box<dyn FnOnce(Option<StoreError>) + Send>,
}

/// The writer thread: takes the writes waiting and commits them as one transaction (group
/// commit). Every write is answered only after its group's commit is durable, so
/// `synchronous=FULL` keeps its promise while concurrent writers share the fsync.
fn run_writer(mut conn: Connection, jobs: std::sync::mpsc::Receiver<WriteJob>) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let (runs, finishes): (Vec<_>, Vec<_>) =
            group.into_iter().map(|job| (job.run, job.finish)).unzip();
        let outcome = commit_group(&mut conn, runs);
        for finish in finishes {
            finish(outcome.as_ref().err().map(sql_error_ref));
        }
    }
}

type WriteRun = Box<dyn FnOnce(&Transaction<'_>) -> bool + Send>;

fn commit_group(conn: &mut Connection, runs: Vec<WriteRun>) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for run in runs {
        run_cached(&tx, "SAVEPOINT write_job")?;
        // A panicking write counts as a failed one; the thread must outlive it.
        let succeeded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&tx))).unwrap_or(false);
        if !succeeded {
            run_cached(&tx, "ROLLBACK TO write_job")?;
        }
        run_cached(&tx, "RELEASE write_job")?;
    }
    tx.commit()
}

/// Runs one statement from the connection's statement cache. The writer runs the same few
/// statements for every write: preparing them anew each time was about a tenth of the
/// process's CPU under the harness's saturating write mix.
fn run_cached(tx: &Transaction<'_>, sql: &str) -> rusqlite::Result<usize> {
    tx.prepare_cached(sql)?.execute([])
}

impl EmbeddedStore {
    /// Opens (creating if needed) the database at `path`, in the `single` layout.
    pub fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with(path, Tenancy::Single)
    }

    /// Opens (creating if needed) the database at `path` in the `tenancy` layout; refuses a
    /// database that holds the other layout.
    pub fn open_with(path: &Path, tenancy: Tenancy) -> StoreResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let writer = Connection::open(path).map_err(sql_error)?;
        configure(&writer)?;
        // Writes touch pages all over the indexes (ids and user ids are random): a larger
        // cache than SQLite's 2 MiB spares the writer re-reading them from the OS (measured
        // on a 170k-item import: a third less system time). A maximum, filled as used.
        writer
            .pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
            .map_err(sql_error)?;
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(sql_error)?;
        writer.execute_batch(SCHEMA).map_err(sql_error)?;
        add_expiry(&writer)?;
        check_layout(&writer, tenancy, path)?;
        set_planner_stats(&writer)?;
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(sql_error)?;
                configure(&reader)?;
                Ok(Mutex::new(Reader {
                    conn: reader,
                    feed: Vec::new(),
                }))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let (writes, jobs) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("embedded-store-writer".into())
            .spawn(move || run_writer(writer, jobs))
            .map_err(|e| StoreError::Internal(format!("cannot start the writer thread: {e}")))?;
        let store = Self {
            shared: Arc::new(Shared {
                writes,
                readers,
                changes: Default::default(),
                tenancy,
            }),
        };
        store.start_purge()?;
        Ok(store)
    }

    /// Deletes the items whose time-to-live has run out; returns how many. Reads stop
    /// seeing them at once (see [`LIVE`]); this frees their space, and until it runs the
    /// change log still delivers them, as Cosmos DB's does until its own purge.
    /// Blocks until done: call it from a thread of its own (or `spawn_blocking`), not from
    /// async code.
    pub fn purge_expired(&self) -> StoreResult<usize> {
        self.submit(|tx| {
            tx.execute(
                "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= unixepoch()",
                [],
            )
            .map_err(sql_error)
        })?
        .blocking_recv()
        .map_err(|_| StoreError::Internal("the writer thread dropped the purge".into()))?
    }

    /// A thread that purges expired items every [`PURGE_INTERVAL`] while the store is open
    /// (it holds no strong reference, so dropping the store ends it).
    fn start_purge(&self) -> StoreResult<()> {
        let shared = Arc::downgrade(&self.shared);
        std::thread::Builder::new()
            .name("embedded-store-purge".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(PURGE_INTERVAL);
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    match (EmbeddedStore { shared }).purge_expired() {
                        Ok(0) => {}
                        Ok(purged) => tracing::debug!(purged, "purged expired items"),
                        Err(e) => tracing::warn!(error = %e, "purge of expired items failed"),
                    }
                }
            })
            .map(|_| ())
            .map_err(|e| StoreError::Internal(format!("cannot start the purge thread: {e}")))
    }

    fn notifier(&self, container: Container) -> &Notify {
        let index = Container::ALL
            .iter()
            .position(|c| *c == container)
            .unwrap_or(0);
        &self.shared.changes[index]
    }

    /// Runs `work` in the writer thread's next group transaction (its own savepoint), and
    /// wakes change-log waiters of `container` once the group has committed.
    async fn write<T: Send + 'static>(
        &self,
        container: Container,
        work: impl FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let answer = self.submit(work)?;
        let result = answer
            .await
            .map_err(|_| StoreError::Internal("the writer thread dropped a write".into()))?;
        if result.is_ok() {
            self.notifier(container).notify_one();
        }
        result
    }

    /// Queues `work` for the writer thread; the answer comes once its group has committed
    /// (or with the error that rolled it back).
    fn submit<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<tokio::sync::oneshot::Receiver<StoreResult<T>>> {
        let slot = Arc::new(Mutex::new(None::<StoreResult<T>>));
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = WriteJob {
            run: Box::new({
                let slot = Arc::clone(&slot);
                move |tx| {
                    let result = work(tx);
                    let succeeded = result.is_ok();
                    *lock(&slot) = Some(result);
                    succeeded
                }
            }),
            finish: Box::new(move |group_failure| {
                let result = match (lock(&slot).take(), group_failure) {
                    (Some(Err(own)), _) => Err(own),
                    (_, Some(group)) => Err(group),
                    (Some(Ok(output)), None) => Ok(output),
                    (None, None) => Err(StoreError::Internal("the write did not run".into())),
                };
                let _ = reply.send(result);
            }),
        };
        self.shared
            .writes
            .send(job)
            .map_err(|_| StoreError::Unavailable("the writer thread has stopped".into()))?;
        Ok(answer)
    }

    /// Runs `work` on a free reader connection, off the async runtime.
    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.with_reader(move |reader| work(&reader.conn)).await
    }

    async fn with_reader<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Reader) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let mut reader = shared
                .readers
                .iter()
                .find_map(|reader| reader.try_lock().ok())
                .unwrap_or_else(|| lock(&shared.readers[0]));
            work(&mut reader)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))?
    }
}

fn configure(conn: &Connection) -> StoreResult<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error)?;
    // FULL: a commit is on disk before the API answers, so an acknowledged write survives
    // a power cut, not just a process crash.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql_error)?;
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a transaction open (rusqlite rolls back
    // on drop), so the connection is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn sql_error(error: rusqlite::Error) -> StoreError {
    sql_error_ref(&error)
}

fn sql_error_ref(error: &rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Unavailable(format!("database busy: {error}"))
        }
        Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::CannotOpen) => {
            StoreError::Unavailable(error.to_string())
        }
        _ => StoreError::Internal(error.to_string()),
    }
}

fn etag_for(lsn: i64) -> ETag {
    ETag(format!("\"{lsn:016x}\""))
}

fn now_seconds() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn next_lsn(tx: &Transaction<'_>) -> StoreResult<i64> {
    tx.prepare_cached(
        "UPDATE log_sequence SET last_lsn = last_lsn + 1 WHERE singleton = 1 RETURNING last_lsn",
    )
    .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
    .map_err(sql_error)
}

fn current_lsn(
    tx: &Transaction<'_>,
    container: Container,
    pk: &str,
    id: &str,
) -> StoreResult<Option<i64>> {
    tx.prepare_cached(&format!(
        "SELECT lsn FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 AND {LIVE}"
    ))
    .and_then(|mut statement| {
        statement
            .query_row((container.name(), pk, id), |row| row.get(0))
            .optional()
    })
    .map_err(sql_error)
}

fn write_item(
    tx: &Transaction<'_>,
    container: Container,
    pk: &str,
    id: &str,
    item: &Value,
) -> StoreResult<ETag> {
    let lsn = next_lsn(tx)?;
    let now = now_seconds();
    tx.prepare_cached(
        "INSERT INTO items (container, pk, id, body, lsn, ts, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (container, pk, id) DO UPDATE SET
             body = excluded.body, lsn = excluded.lsn, ts = excluded.ts,
             expires_at = excluded.expires_at",
    )
    .and_then(|mut statement| {
        statement.execute((
            container.name(),
            pk,
            id,
            item.to_string(),
            lsn,
            now,
            expiry_of(item, now),
        ))
    })
    .map_err(sql_error)?;
    Ok(etag_for(lsn))
}

/// Applies one operation inside the caller's transaction.
fn apply(
    tx: &Transaction<'_>,
    tenancy: Tenancy,
    container: Container,
    pk: &PartitionKey,
    operation: BatchOperation,
) -> StoreResult<Option<ETag>> {
    let pk_text = pk.to_json_array();
    match operation {
        BatchOperation::Create { mut item } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            if current_lsn(tx, container, &pk_text, &id)?.is_some() {
                return Err(StoreError::Conflict);
            }
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Upsert { mut item } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Replace { mut item, if_match } => {
            let id = checked_item(tenancy, container, pk, &mut item)?;
            let lsn = current_lsn(tx, container, &pk_text, &id)?.ok_or(StoreError::NotFound)?;
            if if_match.is_some_and(|expected| expected != etag_for(lsn)) {
                return Err(StoreError::PreconditionFailed);
            }
            write_item(tx, container, &pk_text, &id, &item).map(Some)
        }
        BatchOperation::Delete { id } => {
            let deleted = tx
                .prepare_cached(&format!(
                    "DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 AND {LIVE}"
                ))
                .and_then(|mut statement| statement.execute((container.name(), &pk_text, &id)))
                .map_err(sql_error)?;
            if deleted == 0 {
                return Err(StoreError::NotFound);
            }
            Ok(None)
        }
    }
}

/// The SQL expression of a top-level field of the item body.
fn field_expr(field: &str) -> String {
    // Every write checks that the body's id is the key's (`checked_item`): the key column
    // answers for it, through the primary key (import asks a partition for ids).
    if field == "id" {
        return "id".to_owned();
    }
    // Field names come from the platform's code and are identifiers (checked by `Query`).
    format!("json_extract(body, '$.{field}')")
}

fn filter_param(value: &Value) -> SqlValue {
    match value {
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Null => SqlValue::Null,
        other => SqlValue::Text(other.to_string()),
    }
}

/// Keyset position after the last item of a page: (sort value, partition key, id).
fn encode_position(position: &(String, String, String)) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(position).unwrap_or_default())
}

fn decode_position(token: &str) -> StoreResult<(String, String, String)> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| StoreError::BadRequest("malformed continuation token".into()))
}

fn run_query(
    conn: &Connection,
    container: Container,
    query: &Query,
    page: &PageRequest,
) -> StoreResult<Page<Value>> {
    let sort_expr = match query.order_by {
        Some((field, _)) => format!("COALESCE({}, '')", field_expr(field)),
        None => "''".to_owned(),
    };
    let descending = matches!(query.order_by, Some((_, SortOrder::Descending)));
    let mut sql =
        format!("SELECT {sort_expr}, pk, id, body FROM items WHERE container = ? AND {LIVE}");
    let mut params: Vec<SqlValue> = vec![SqlValue::Text(container.name().to_owned())];
    match &query.scope {
        QueryScope::Partition(pk) => {
            sql.push_str(" AND pk = ?");
            params.push(SqlValue::Text(pk.to_json_array()));
        }
        // The keys under a prefix are one range of the primary key's text form.
        QueryScope::Prefix(prefix) => {
            let (low, high) = prefix.prefix_range();
            sql.push_str(" AND pk >= ? AND pk < ?");
            params.extend([SqlValue::Text(low), SqlValue::Text(high)]);
        }
        QueryScope::CrossPartition => {}
    }
    for filter in &query.filters {
        let expr = field_expr(filter.field);
        match (&filter.value, filter.op) {
            (Value::Null, FilterOp::Eq) => sql.push_str(&format!(" AND {expr} IS NULL")),
            (Value::Null, FilterOp::Ne) => sql.push_str(&format!(" AND {expr} IS NOT NULL")),
            (Value::Array(values), FilterOp::In) => {
                let marks = vec!["?"; values.len()].join(", ");
                sql.push_str(&format!(" AND {expr} IN ({marks})"));
                params.extend(values.iter().map(filter_param));
            }
            (value, op) => {
                sql.push_str(&format!(" AND {expr} {} ?", op.sql()));
                params.push(filter_param(value));
            }
        }
    }
    let direction = if descending { "DESC" } else { "ASC" };
    // Without a sort field the order is the primary key's, (pk, id): keyed on that alone, each
    // page is one range of the key (or of `items_by_user`, which ends with it), not a scan and
    // sort of the whole container per page.
    let sorted = query.order_by.is_some();
    if let Some(token) = &page.continuation {
        let (sort, pk, id) = decode_position(token)?;
        let after = if descending { "<" } else { ">" };
        if sorted {
            sql.push_str(&format!(" AND ({sort_expr}, pk, id) {after} (?, ?, ?)"));
            params.push(SqlValue::Text(sort));
        } else {
            sql.push_str(&format!(" AND (pk, id) {after} (?, ?)"));
        }
        params.extend([SqlValue::Text(pk), SqlValue::Text(id)]);
    }
    let sort_key = if sorted {
        format!("1 {direction}, ")
    } else {
        String::new()
    };
    sql.push_str(&format!(
        " ORDER BY {sort_key}pk {direction}, id {direction} LIMIT ? OFFSET ?"
    ));
    let max_items = page.max_items.max(1);
    params.push(SqlValue::Integer(i64::from(max_items) + 1));
    let offset = if page.continuation.is_some() {
        0
    } else {
        query.offset
    };
    params.push(SqlValue::Integer(i64::from(offset)));

    let mut statement = conn.prepare_cached(&sql).map_err(sql_error)?;
    let rows = statement
        .query_map(rusqlite::params_from_iter(params), |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
            ))
        })
        .map_err(sql_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_error)?;

    let has_more = rows.len() > max_items as usize;
    let mut items = Vec::with_capacity(rows.len().min(max_items as usize));
    let mut last = None;
    for (sort, pk, id, body) in rows.into_iter().take(max_items as usize) {
        items.push(parse_body(&body)?);
        last = Some((sort, pk, id));
    }
    let continuation = last.filter(|_| has_more).map(|pos| encode_position(&pos));
    Ok(Page {
        items,
        continuation,
    })
}

fn parse_body(body: &str) -> StoreResult<Value> {
    serde_json::from_str(body).map_err(|e| StoreError::Internal(format!("corrupt item: {e}")))
}

fn parse_checkpoint(checkpoint: Option<&Checkpoint>) -> StoreResult<i64> {
    match checkpoint {
        None => Ok(0),
        Some(Checkpoint(text)) => text
            .parse::<i64>()
            .map_err(|_| StoreError::BadRequest(format!("not an embedded checkpoint: {text:?}"))),
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn tenancy(&self) -> Tenancy {
        self.shared.tenancy
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let (pk, id) = (pk.to_json_array(), id.to_owned());
        self.read(move |conn| {
            let row = conn
                .prepare_cached(&format!(
                    "SELECT body, lsn FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3 \
                     AND {LIVE}"
                ))
                .map_err(sql_error)?
                .query_row((container.name(), pk, id), |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })
                .optional()
                .map_err(sql_error)?;
            row.map(|(body, lsn)| {
                Ok(Document {
                    item: parse_body(&body)?,
                    etag: etag_for(lsn),
                })
            })
            .transpose()
        })
        .await
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let pk = pk.clone();
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            apply(tx, tenancy, container, &pk, BatchOperation::Create { item })
        })
        .await
        .and_then(written)
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let pk = pk.clone();
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            apply(tx, tenancy, container, &pk, BatchOperation::Upsert { item })
        })
        .await
        .and_then(written)
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let (pk, if_match) = (pk.clone(), if_match.cloned());
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            apply(
                tx,
                tenancy,
                container,
                &pk,
                BatchOperation::Replace { item, if_match },
            )
        })
        .await
        .and_then(written)
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let (pk, id) = (pk.clone(), id.to_owned());
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            apply(tx, tenancy, container, &pk, BatchOperation::Delete { id })
        })
        .await
        .map(|_| ())
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        let pk = pk.clone();
        // An error returned from the closure drops the transaction, which rolls it back.
        let tenancy = self.shared.tenancy;
        self.write(container, move |tx| {
            operations
                .into_iter()
                .enumerate()
                .map(|(index, operation)| {
                    apply(tx, tenancy, container, &pk, operation).map_err(|cause| {
                        StoreError::BatchOperationFailed {
                            index,
                            cause: Box::new(cause),
                        }
                    })
                })
                .collect()
        })
        .await
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let query = query.clone();
        if container == Container::Feed {
            return self
                .with_reader(move |reader| reader.feed_query(&query, &page))
                .await;
        }
        self.read(move |conn| run_query(conn, container, &query, &page))
            .await
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let after = parse_checkpoint(since)?;
        let limit = i64::try_from(max_items.max(1)).unwrap_or(i64::MAX);
        self.read(move |conn| {
            let mut statement = conn
                .prepare_cached(
                    "SELECT body, lsn, ts FROM items WHERE container = ?1 AND lsn > ?2
                     ORDER BY lsn LIMIT ?3",
                )
                .map_err(sql_error)?;
            let rows = statement
                .query_map((container.name(), after, limit), |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                })
                .map_err(sql_error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql_error)?;
            let mut last = after;
            let mut items = Vec::with_capacity(rows.len());
            for (body, lsn, ts) in rows {
                let mut item = parse_body(&body)?;
                if let Value::Object(fields) = &mut item {
                    fields.insert("_etag".into(), Value::from(etag_for(lsn).0));
                    fields.insert("_lsn".into(), Value::from(lsn));
                    fields.insert("_ts".into(), Value::from(ts));
                }
                items.push(item);
                last = lsn;
            }
            Ok(ChangeBatch {
                items,
                checkpoint: Checkpoint(last.to_string()),
            })
        })
        .await
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.notifier(container).notified()).await;
    }
}

/// Copies the embedded store at `database` into a new file `to`, consistent and complete,
/// while other processes (the server) read and write it; returns the copy's size in bytes.
///
/// SQLite's online backup API, in one step: the step reads one snapshot of the database in
/// one read transaction, and in WAL mode a reader and the writer never wait for each other
/// (a backup in several steps would start over whenever the server commits in between).
/// The copy is written beside `to` and renamed once it is on disk, so `to` never names a
/// partial copy; `to` must not exist.
pub fn backup(database: &Path, to: &Path) -> StoreResult<u64> {
    let refuse = |why: String| Err(StoreError::BadRequest(why));
    if !database.is_file() {
        return refuse(format!("no embedded store at {}", database.display()));
    }
    if to.exists() {
        return refuse(format!("{} exists: back up into a new file", to.display()));
    }
    let io = |e: std::io::Error| StoreError::Unavailable(format!("{}: {e}", to.display()));
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let source = Connection::open_with_flags(
        database,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_error)?;
    configure(&source)?;
    // A file that is not a store is refused before anything is written.
    source
        .query_row("SELECT count(*) FROM layout", [], |row| {
            row.get::<_, i64>(0)
        })
        .map_err(|e| StoreError::BadRequest(format!("not an embedded store: {e}")))?;
    let mut partial_name = to.as_os_str().to_owned();
    partial_name.push(".partial");
    let partial = std::path::PathBuf::from(partial_name);
    let _ = std::fs::remove_file(&partial);
    let copied = copy_database(&source, &partial);
    if copied.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    copied?;
    std::fs::File::open(&partial)
        .and_then(|file| file.sync_all())
        .and_then(|()| std::fs::rename(&partial, to))
        .map_err(io)?;
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io)?;
    }
    std::fs::metadata(to).map(|m| m.len()).map_err(io)
}

/// The backup itself, into a new file at `to`.
fn copy_database(source: &Connection, to: &Path) -> StoreResult<()> {
    use rusqlite::backup::{Backup, StepResult};
    let mut target = Connection::open(to).map_err(sql_error)?;
    let backup = Backup::new(source, &mut target).map_err(sql_error)?;
    // Busy or locked: the server holds a lock for a moment (a checkpoint); try again.
    for _ in 0..(BUSY_TIMEOUT.as_millis() / 50) {
        match backup.step(-1).map_err(sql_error)? {
            StepResult::Done => return Ok(()),
            StepResult::More | StepResult::Busy | StepResult::Locked => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {}
        }
    }
    Err(StoreError::Unavailable(
        "the store stayed locked; try the backup again".into(),
    ))
}

/// The etag of a single-item write (only deletes have none).
fn written(etag: Option<ETag>) -> StoreResult<ETag> {
    etag.ok_or_else(|| StoreError::Internal("write produced no etag".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Concurrent writes share group commits; a failing write (a duplicate create, a batch
    /// with a failing operation) is rolled back alone and the rest of its group commits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_does_not_fail_its_group() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap();
        let pk = PartitionKey::single("p");
        let item = |id: &str| json!({"id": id, "postId": "p", "type": "like"});
        let creates = (0..40).map(|n| {
            let store = store.clone();
            let pk = pk.clone();
            // Ten writers race for the same id "dup"; thirty write ids of their own.
            let id = if n % 4 == 0 {
                "dup".to_owned()
            } else {
                format!("own-{n}")
            };
            async move { store.create_item(Container::Posts, &pk, item(&id)).await }
        });
        let broken_batch = store.execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Create {
                    item: item("batch-a"),
                },
                BatchOperation::Replace {
                    item: item("missing"),
                    if_match: None,
                },
            ],
        );
        let (results, batch) = tokio::join!(futures::future::join_all(creates), broken_batch);
        let created = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Conflict)))
            .count();
        assert_eq!((created, conflicts), (31, 9));
        assert!(matches!(
            batch,
            Err(StoreError::BatchOperationFailed { index: 1, .. })
        ));
        assert!(
            store
                .read_item(Container::Posts, &pk, "batch-a")
                .await
                .unwrap()
                .is_none(),
            "the failed batch left nothing behind"
        );
        let all = store
            .query(
                Container::Posts,
                &Query::in_partition(pk.clone()),
                PageRequest::first(100),
            )
            .await
            .unwrap();
        assert_eq!(all.items.len(), 31);
        let changes = store
            .read_changes(Container::Posts, None, 100)
            .await
            .unwrap();
        assert_eq!(
            changes.items.len(),
            31,
            "the change log holds each committed item once"
        );
    }

    fn feed_query() -> Query {
        Query::in_partition(PartitionKey::single("post"))
            .of_type("post")
            .order_by("creationDate", SortOrder::Descending)
    }

    async fn feed_ids(store: &EmbeddedStore) -> Vec<String> {
        let page = store
            .query(Container::Feed, &feed_query(), PageRequest::first(100))
            .await
            .unwrap();
        page.items
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn put(store: &EmbeddedStore, id: &str, date: &str) {
        let item = json!({"id": id, "type": "post", "creationDate": date});
        store
            .upsert_item(Container::Feed, &PartitionKey::single("post"), item)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_cached_feed_follows_writes_of_this_and_other_processes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = EmbeddedStore::open(&path).unwrap();
        put(&store, "a", "2026-01-01T00:00:00.0000000Z").await;
        // Reads one at a time use the same reader, which then serves its cached page.
        for _ in 0..READERS * 2 {
            assert_eq!(feed_ids(&store).await, ["a"]);
        }
        put(&store, "b", "2026-01-02T00:00:00.0000000Z").await;
        for _ in 0..READERS * 2 {
            assert_eq!(feed_ids(&store).await, ["b", "a"]);
        }
        // Another process (e.g. `rebuild` while the server runs) has its own connections.
        let other = EmbeddedStore::open(&path).unwrap();
        other
            .delete_item(Container::Feed, &PartitionKey::single("post"), "b")
            .await
            .unwrap();
        for _ in 0..READERS * 2 {
            assert_eq!(feed_ids(&store).await, ["a"]);
        }
    }

    #[tokio::test]
    async fn the_cached_feeds_of_several_tenants_stay_apart_and_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            EmbeddedStore::open_with(&dir.path().join("db.sqlite3"), Tenancy::Multi).unwrap();
        let feed_of = |tenant: &str| {
            PartitionKey::single(tenant)
                .extended(&PartitionKey::single("post"))
                .unwrap()
        };
        let put_in = |tenant: &'static str, id: &'static str| {
            let store = store.clone();
            async move {
                let item = json!({"id": id, "type": "post", "tenantId": tenant,
                                  "creationDate": "2026-01-01T00:00:00.0000000Z"});
                store
                    .upsert_item(Container::Feed, &feed_of(tenant), item)
                    .await
                    .unwrap();
            }
        };
        let ids_in = |tenant: &'static str| {
            let store = store.clone();
            async move {
                let query = Query::in_partition(feed_of(tenant))
                    .of_type("post")
                    .order_by("creationDate", SortOrder::Descending);
                let page = store
                    .query(Container::Feed, &query, PageRequest::first(100))
                    .await
                    .unwrap();
                page.items
                    .iter()
                    .map(|i| i["id"].as_str().unwrap().to_owned())
                    .collect::<Vec<_>>()
            }
        };
        put_in("t1", "a").await;
        put_in("t2", "b").await;
        for _ in 0..READERS * 2 {
            assert_eq!(ids_in("t1").await, ["a"]);
            assert_eq!(ids_in("t2").await, ["b"]);
        }
        put_in("t2", "c").await;
        for _ in 0..READERS * 2 {
            assert_eq!(ids_in("t1").await, ["a"]);
            assert_eq!(ids_in("t2").await, ["c", "b"]);
        }
    }
}
