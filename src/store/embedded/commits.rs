//! The store's count of commits, which lets a reader vouch for a kept page without asking
//! SQLite.
//!
//! Asking SQLite whether a partition changed costs a read transaction: a pair of `fcntl`
//! locks on the write-ahead log's shared memory and a lookup, more than the rest of a kept
//! page's request. Most of the time nothing at all was written since the page was read. The
//! writer thread counts each group it commits, and each commit of another process it
//! notices: while the count is the one a page's version was read at, the page is still what
//! the store holds, and no SQL runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::Connection;

/// How often the idle writer thread looks for another process's commits (`rebuild`,
/// `import`, `verify --repair` beside the server). Those reach a kept page at most this
/// late; this process's own writes reach it before their writers are answered.
pub(super) const FOREIGN_COMMIT_POLL: Duration = Duration::from_millis(50);

/// Whether the store versions its partitions' pages, and the count of commits their versions
/// are read at: shared by the readers and the writer thread.
#[derive(Debug, Default)]
pub(super) struct Versioning {
    /// The database counts its partitions' writes ([`super::schema::change_counting`]), so
    /// pages of a partition can be versioned. Until it does, nothing reads `commits`, and the
    /// writer thread does not look for other processes' commits.
    counts_changes: AtomicBool,
    /// Commits this process has seen: its own writer's groups, and the other processes'
    /// commits it noticed. Only grows.
    commits: AtomicU64,
}

impl Versioning {
    pub(super) fn new(counts_changes: bool) -> Self {
        Self {
            counts_changes: AtomicBool::new(counts_changes),
            commits: AtomicU64::new(0),
        }
    }

    /// Whether pages of a partition are versioned.
    pub(super) fn counts_changes(&self) -> bool {
        self.counts_changes.load(Ordering::Acquire)
    }

    /// From now on pages are versioned: only once the database counts every write.
    pub(super) fn start_counting(&self) {
        self.counts_changes.store(true, Ordering::Release);
    }

    /// The count of commits now. Read before the data a version vouches for: a commit in
    /// between makes the version look older than the data (one needless read later), never
    /// newer.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Acquire)
    }

    /// Counts a commit: after it is durable, before its writers are answered.
    pub(super) fn count_commit(&self) {
        self.commits.fetch_add(1, Ordering::AcqRel);
    }
}

/// What the writer connection last saw of other connections' commits: SQLite's
/// `data_version` of a connection changes with every commit of any other connection, and
/// with none of its own. The readers of this process never commit, so a change is another
/// process's write.
pub(super) struct ForeignCommits {
    data_version: Option<i64>,
}

impl ForeignCommits {
    /// What `writer` sees now: taken before any reader can read a version, so that no commit
    /// of another process falls between the first versions and the first look.
    pub(super) fn seen_by(writer: &Connection) -> Self {
        Self {
            data_version: data_version(writer),
        }
    }

    /// Whether another process committed since the last look (always, when the version
    /// cannot be read: counting a commit that did not happen costs one read, missing one
    /// would serve a stale page).
    pub(super) fn noticed(&mut self, writer: &Connection) -> bool {
        let now = data_version(writer);
        let changed = now.is_none() || now != self.data_version;
        self.data_version = now;
        changed
    }
}

fn data_version(writer: &Connection) -> Option<i64> {
    writer
        .prepare_cached("PRAGMA data_version")
        .and_then(|mut statement| statement.query_row([], |row| row.get::<_, i64>(0)))
        .ok()
}
