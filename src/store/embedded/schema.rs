//! The database's tables and indexes, the layout it was created with, and what the query
//! planner is told about the data.

use std::path::Path;

use rusqlite::Connection;

use super::sqlite::sql_error;
use crate::store::{Container, StoreError, StoreResult, Tenancy};

pub(super) const SCHEMA: &str = "
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
-- A partition's items of one type in the order the list queries sort them, the sort key
-- exactly as they write it: a page is read from the index in order, without sorting the
-- partition. It replaces an index on the bare date, which served the filter only.
CREATE INDEX IF NOT EXISTS items_by_type_and_sort_date ON items (
    container, pk, json_extract(body, '$.type'),
    COALESCE(json_extract(body, '$.creationDate'), ''), id);
DROP INDEX IF EXISTS items_by_type_and_date;
CREATE INDEX IF NOT EXISTS items_by_user ON items (container, json_extract(body, '$.userId'));
CREATE TABLE IF NOT EXISTS log_sequence (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    last_lsn INTEGER NOT NULL
);
INSERT OR IGNORE INTO log_sequence (singleton, last_lsn) VALUES (1, 0);
";

/// How many groups of writes touched each logical partition of the [`COUNTED_CONTAINERS`],
/// by any process: a reader that kept a page of such a partition serves it again while the
/// count is the same (see `PartitionVersion`). The feed's and the leases' writes are not
/// counted. A partition never written since the table was made has no row (0).
///
/// The rule every writer keeps: while this table exists, each group transaction adds one to
/// the count of every counted partition it wrote, in the same transaction (`group_commit`),
/// so a count and the items it describes are never seen apart. The first process that keeps
/// pages makes the table ([`super::EmbeddedStore::count_changes`]); only
/// [`super::stop_counting`], which runs while no other process has the file open, removes
/// it. A process that keeps no pages writes no count while no table is there: nobody could
/// read one, and a process that starts keeping pages later reads its pages after the table
/// is made, so every write it has not counted is already in what it reads.
pub(super) const CREATE_CHANGES_TABLE: &str = "
CREATE TABLE IF NOT EXISTS partition_changes (
    container TEXT NOT NULL,
    pk TEXT NOT NULL,
    changes INTEGER NOT NULL,
    PRIMARY KEY (container, pk)
) WITHOUT ROWID;
";

/// Adds one to a partition's count of changes: run once per partition per group.
pub(super) const COUNT_A_CHANGE: &str = "
INSERT INTO partition_changes (container, pk, changes) VALUES (?1, ?2, 1)
    ON CONFLICT (container, pk) DO UPDATE SET changes = changes + 1";

/// Whether the database counts its partitions' writes (holds the table of [`CREATE_CHANGES_TABLE`]); read in the
/// writing transaction by every writer before it counts, and by readers at start.
pub(super) const COUNTS_CHANGES: &str = "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'partition_changes')";

/// The triggers that counted every row written before the writer counted each group itself
/// (stores made by earlier versions): dropped when such a store is opened for writing, the
/// table and its counts kept.
const LEGACY_TRIGGERS: [&str; 4] = [
    "items_inserted_count_a_change",
    "items_updated_count_a_change",
    "items_moved_count_a_change",
    "items_deleted_count_a_change",
];

/// The containers whose partitions' writes are counted: those whose lists readers keep (Q3 in
/// `users`, Q4 and Q5 in `posts`, and the point reads Q1 and Q2). A page of any other is
/// never versioned.
pub(super) const COUNTED_CONTAINERS: [Container; 2] = [Container::Users, Container::Posts];

/// Whether the database counts its partitions' writes.
pub(super) fn counts_changes(conn: &Connection) -> StoreResult<bool> {
    conn.prepare_cached(COUNTS_CHANGES)
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(sql_error)
}

/// SQL that drops the [`LEGACY_TRIGGERS`] (a no-op where there are none).
pub(super) fn drop_legacy_triggers() -> String {
    LEGACY_TRIGGERS
        .iter()
        .map(|name| format!("DROP TRIGGER IF EXISTS {name};"))
        .collect()
}

/// The layout a database was created with (its partition keys), once recorded.
const LAYOUT_TABLE: &str = "
CREATE TABLE IF NOT EXISTS layout (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    tenancy TEXT NOT NULL
)";

/// Records the layout of a new database, or checks that an existing one was created with
/// `tenancy`: the keys of its items depend on it. Databases from before layouts were
/// recorded hold items, and all in the `single` layout.
pub(super) fn check_layout(conn: &Connection, tenancy: Tenancy, path: &Path) -> StoreResult<()> {
    conn.execute_batch(LAYOUT_TABLE).map_err(sql_error)?;
    let has_items = exists(conn, HAS_ITEMS).map_err(sql_error)?;
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
        return Err(layout_mismatch(&recorded, tenancy, path));
    }
    Ok(())
}

/// [`check_layout`] for a connection that cannot write: a database without a recorded layout
/// holds the `single` one if it holds items, and any (it is empty) otherwise. A database of
/// a version before time-to-live is refused: it must be opened for writing once.
pub(super) fn check_layout_read_only(
    conn: &Connection,
    tenancy: Tenancy,
    path: &Path,
) -> StoreResult<()> {
    let not_a_store = |e: rusqlite::Error| {
        StoreError::BadRequest(format!("{}: not an embedded store: {e}", path.display()))
    };
    let has_items = exists(conn, HAS_ITEMS).map_err(not_a_store)?;
    let has_expiry = exists(conn, HAS_EXPIRY_COLUMN).map_err(sql_error)?;
    if !has_expiry {
        return Err(StoreError::BadRequest(format!(
            "the embedded store at {} is of an earlier version: open it once for writing \
             (serve, or verify --repair) to bring it up to date",
            path.display()
        )));
    }
    let has_layout = exists(
        conn,
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'layout')",
    )
    .map_err(sql_error)?;
    let recorded: Option<String> = if has_layout {
        conn.query_row("SELECT tenancy FROM layout", [], |row| row.get(0))
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(sql_error(e)),
            })?
    } else {
        None
    };
    let recorded = recorded.unwrap_or_else(|| {
        let implied = if has_items { Tenancy::Single } else { tenancy };
        implied.name().to_owned()
    });
    if recorded != tenancy.name() {
        return Err(layout_mismatch(&recorded, tenancy, path));
    }
    Ok(())
}

fn layout_mismatch(recorded: &str, tenancy: Tenancy, path: &Path) -> StoreError {
    StoreError::BadRequest(format!(
        "the embedded store at {} holds the {recorded} layout but BLOG_TENANCY is {tenancy}; \
             the layouts key their items differently: set BLOG_TENANCY={recorded}, or use \
             another BLOG_DATA_DIR for a {tenancy} deployment",
        path.display()
    ))
}

/// Stores created before time-to-live existed lack its column; adding it (empty: none of
/// their items had a `ttl`) brings them up to [`SCHEMA`].
const ADD_EXPIRY_COLUMN: &str = "ALTER TABLE items ADD COLUMN expires_at INTEGER";
/// Finds what the purge removes without scanning the live items.
const EXPIRY_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS items_by_expiry ON items (expires_at) WHERE expires_at IS NOT NULL";

const HAS_ITEMS: &str = "SELECT EXISTS (SELECT 1 FROM items)";

/// Whether the store has the time-to-live column (a store of an earlier version has not).
const HAS_EXPIRY_COLUMN: &str =
    "SELECT EXISTS (SELECT 1 FROM pragma_table_info('items') WHERE name = 'expires_at')";

/// The answer of a `SELECT EXISTS (...)` query.
fn exists(conn: &Connection, query: &str) -> rusqlite::Result<bool> {
    conn.query_row(query, [], |row| row.get(0))
}

/// The condition that hides expired items from reads, as Cosmos DB hides them before its
/// background purge: an item whose time-to-live has run out is gone for every read at once.
pub(super) const LIVE: &str = "(expires_at IS NULL OR expires_at > unixepoch())";

/// What the query planner is told about the data, instead of measuring it with `ANALYZE`:
/// many containers' items, partitions of a few dozen items, a few dozen items per user.
/// Without statistics SQLite prefers the primary key (it covers the whole row) over the
/// expression indexes, so a cross-partition query on `userId` (the username fan-out that
/// follows a rename, run for every user by `rebuild`) scanned the whole container: at 100 users
/// `rebuild` took 30 s, most of it there. Fixed figures keep the plans the same for an
/// empty store and a large one, and opening cheap (no `ANALYZE` of a big file at start-up).
/// Rows: `(index, "rows rows-per-container rows-per-next-column ...")`.
const PLANNER_STATS: [(&str, &str); 4] = [
    ("items", "1000000 300000 20 1"),
    ("items_by_lsn", "1000000 300000 1"),
    ("items_by_type_and_sort_date", "1000000 300000 20 10 2 1"),
    ("items_by_user", "1000000 300000 50"),
];

/// Writes [`PLANNER_STATS`] (idempotent) and makes this connection use them; connections
/// opened afterwards read them with the schema.
pub(super) fn set_planner_stats(conn: &Connection) -> StoreResult<()> {
    let has_stats = exists(
        conn,
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1')",
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
pub(super) fn add_expiry(conn: &Connection) -> StoreResult<()> {
    if !exists(conn, HAS_EXPIRY_COLUMN).map_err(sql_error)? {
        conn.execute_batch(ADD_EXPIRY_COLUMN).map_err(sql_error)?;
    }
    conn.execute_batch(EXPIRY_INDEX).map_err(sql_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store of an earlier version counted with triggers: opened, its triggers are gone and
    /// its counts kept, and it still counts.
    #[test]
    fn the_legacy_triggers_are_dropped_and_the_counts_kept() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(CREATE_CHANGES_TABLE).unwrap();
        for name in LEGACY_TRIGGERS {
            conn.execute_batch(&format!(
                "CREATE TRIGGER {name} AFTER DELETE ON items BEGIN SELECT 1; END;"
            ))
            .unwrap();
        }
        conn.execute(COUNT_A_CHANGE, ("posts", "[\"p\"]")).unwrap();
        conn.execute_batch(&drop_legacy_triggers()).unwrap();
        let triggers: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(triggers, 0);
        assert!(counts_changes(&conn).unwrap());
        let kept: i64 = conn
            .query_row("SELECT changes FROM partition_changes", [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(kept, 1);
    }
}
