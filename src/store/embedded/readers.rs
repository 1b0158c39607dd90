//! The reader connections, taken by each read off the async runtime, and each reader's
//! cache of feed pages.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;
use serde_json::Value;

use super::sql::run_query;
use super::{EmbeddedStore, lock, sql_error};
use crate::store::{Container, Page, PageRequest, Query, StoreError, StoreResult};

/// A reader connection and the last feed pages it read.
pub(super) struct Reader {
    conn: Connection,
    /// Most recent first, at most [`CACHED_FEED_PAGES`].
    feed: Vec<CachedPage>,
}

/// Statements each reader keeps prepared.
const READER_STATEMENTS: usize = 64;

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
    pub(super) fn new(conn: Connection) -> Self {
        // Every kind of read keeps its statement prepared: the API's queries, the pump's,
        // and the rebuild's are a few dozen SQL texts, more than rusqlite's default of 16,
        // and a statement prepared again costs more than the read of a partition.
        conn.set_prepared_statement_cache_capacity(READER_STATEMENTS);
        Self {
            conn,
            feed: Vec::new(),
        }
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

/// How much a read may touch, which decides where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// One item or one logical partition (a page of at most a hundred items): from the page
    /// cache this takes microseconds, less than handing it to another thread and back (the
    /// wake-ups of that hop were a fifth of the server's samples under a query load), so it
    /// runs on the calling thread when a reader is free.
    Partition,
    /// Many partitions or the change log: may take long, so it runs on a blocking thread,
    /// off the async runtime.
    Wide,
}

impl EmbeddedStore {
    /// Runs `work` on a free reader connection: a [`Reach::Partition`] read on the calling
    /// thread when a reader is free, anything else off the async runtime.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        reach: Reach,
        work: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.with_reader(reach, move |reader| work(&reader.conn))
            .await
    }

    pub(super) async fn with_reader<T: Send + 'static>(
        &self,
        reach: Reach,
        work: impl FnOnce(&mut Reader) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        if reach == Reach::Partition
            && let Some(mut reader) = free_reader(&self.shared.readers)
        {
            return work(&mut reader);
        }
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let mut reader =
                free_reader(&shared.readers).unwrap_or_else(|| lock(&shared.readers[0]));
            work(&mut reader)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))?
    }
}

fn free_reader(readers: &[Mutex<Reader>]) -> Option<MutexGuard<'_, Reader>> {
    readers.iter().find_map(|reader| reader.try_lock().ok())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::READERS;
    use super::*;
    use crate::store::{PartitionKey, SortOrder, Store, Tenancy};

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
