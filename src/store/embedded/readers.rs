//! The reader connections, taken by each read off the async runtime, and each reader's
//! cache of feed pages.

use rusqlite::Connection;
use serde_json::Value;

use super::sql::run_query;
use super::sqlite::{configure, sql_error};
use crate::store::{Container, Page, PageRequest, Query, StoreResult};

/// A reader connection and the last feed pages it read.
pub(super) struct Reader {
    pub(super) conn: Connection,
    /// Most recent first, at most [`CACHED_FEED_PAGES`].
    feed: Vec<CachedPage>,
}

/// How many reader connections a store opens unless told: two per core, at least four. A
/// read of one partition runs on the async worker that asked (one per core), the wider reads
/// (the change feed's, the scans) on blocking threads beside them; none should wait for a
/// connection while a core is free. A reader costs a file handle, its prepared statements and
/// a page cache that stays small, since the pages it reads are mapped (see [`Reader::new`]).
pub fn default_readers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    cores.saturating_mul(2).max(4)
}

/// Statements each reader keeps prepared.
const READER_STATEMENTS: usize = 64;

/// Bytes of the database file each reader reads through a memory map: SQLite's own ceiling
/// (`SQLITE_MAX_MMAP_SIZE`, just under 2 GiB); a larger file reads its tail as before.
pub(super) const READER_MAP_BYTES: i64 = 0x7fff_0000;

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
    /// A reader on `conn`, with every connection's settings and a reader's own.
    pub(super) fn new(conn: Connection) -> StoreResult<Self> {
        configure(&conn)?;
        // Every kind of read keeps its statement prepared: the API's queries, the pump's,
        // and the rebuild's are a few dozen SQL texts, more than rusqlite's default of 16,
        // and a statement prepared again costs more than the read of a partition.
        conn.set_prepared_statement_cache_capacity(READER_STATEMENTS);
        // Reads land anywhere in the file (a post, then another user's posts), so most pages
        // miss a reader's own 2 MiB cache. Unmapped, each miss is a `pread` that copies the
        // page out of the OS cache: 40 % of SQLite's time under the post page. Mapped, the
        // page is read where the OS cache holds it. The cost: an I/O error on a mapped page
        // ends the process (SIGBUS) instead of failing one read, a crash the store survives
        // like any other (write-ahead log, `synchronous = FULL`). The writer is not mapped:
        // its writes go to the log.
        conn.pragma_update(None, "mmap_size", READER_MAP_BYTES)
            .map_err(sql_error)?;
        Ok(Self {
            conn,
            feed: Vec::new(),
        })
    }

    pub(super) fn feed_query(
        &mut self,
        query: &Query,
        page: &PageRequest,
    ) -> StoreResult<Page<Value>> {
        // Read the version before the data: a commit in between makes the page look older
        // than it is (one needless re-read), never newer.
        let data_version: i64 = self
            .conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
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
