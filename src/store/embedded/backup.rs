//! Online backup of the database file while the server reads and writes it.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::open_reader;
use super::sqlite::{BUSY_TIMEOUT, configure, sql_error};
use crate::store::{StoreError, StoreResult};

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
    // Read-only, as `verify` and `export` read: a store on read-only media backs up too.
    let source = open_reader(database)?;
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
