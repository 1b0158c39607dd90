//! What every part of the embedded store shares about SQLite: a connection's settings, the
//! mapping of its errors, the lock of a connection, and the store's encodings of etags,
//! checkpoints and item bodies.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::config::DbConfig;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::store::{Checkpoint, ETag, RawItem, StoreError, StoreResult};

/// How long a connection waits for another process's write lock (e.g. `rebuild` while the
/// server runs) before giving up.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn configure(conn: &Connection) -> StoreResult<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error)?;
    // FULL: a commit is on disk before the API answers, so an acknowledged write survives
    // a power cut, not just a process crash.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql_error)?;
    // The query planner's stability guarantee: a plan never depends on the values bound to
    // it. Without it, SQLite prepares a statement again whenever a new value is bound to a
    // `LIMIT ?` or `OFFSET ?`, that is on every page of every list query: parsing and
    // planning cost more than reading a partition. Plans come from the fixed statistics in
    // the schema, not from sampled values, so no plan is lost.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(sql_error)?;
    Ok(())
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a transaction open (rusqlite rolls back
    // on drop), so the connection is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn sql_error(error: rusqlite::Error) -> StoreError {
    sql_error_ref(&error)
}

pub(super) fn sql_error_ref(error: &rusqlite::Error) -> StoreError {
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

pub(super) fn etag_for(lsn: i64) -> ETag {
    ETag(format!("\"{lsn:016x}\""))
}

pub(super) fn now_seconds() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

pub(super) fn parse_body(body: &str) -> StoreResult<Value> {
    serde_json::from_str(body).map_err(|e| StoreError::Internal(format!("corrupt item: {e}")))
}

/// A body as stored JSON text, checked to be JSON but not parsed into anything.
pub(super) fn raw_body(body: String) -> StoreResult<RawItem> {
    RawValue::from_string(body).map_err(|e| StoreError::Internal(format!("corrupt item: {e}")))
}

pub(super) fn parse_checkpoint(checkpoint: Option<&Checkpoint>) -> StoreResult<i64> {
    match checkpoint {
        None => Ok(0),
        Some(Checkpoint(text)) => text
            .parse::<i64>()
            .map_err(|_| StoreError::BadRequest(format!("not an embedded checkpoint: {text:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;

    #[test]
    fn a_new_page_size_does_not_prepare_the_statement_again() {
        let conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        let sql = "SELECT x FROM t ORDER BY x LIMIT ? OFFSET ?";
        for (limit, offset) in [(1, 0), (2, 1), (3, 0), (50, 2)] {
            let mut statement = conn.prepare_cached(sql).unwrap();
            let rows: Vec<i64> = statement
                .query_map([limit, offset], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(rows.len(), (3 - offset).min(limit) as usize);
        }
        let statement = conn.prepare_cached(sql).unwrap();
        assert_eq!(statement.get_status(StatementStatus::RePrepare), 0);
    }
}
