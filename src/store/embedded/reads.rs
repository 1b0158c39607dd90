//! Where a read runs: on a free reader connection, on the calling thread when it touches
//! one partition and a reader is free, off the async runtime otherwise.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use super::EmbeddedStore;
use super::readers::Reader;
use super::sqlite::lock;
use crate::store::{StoreError, StoreResult};

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
    use super::super::readers::READER_MAP_BYTES;
    use super::*;
    use crate::store::{Container, PageRequest, PartitionKey, Query, SortOrder, Store, Tenancy};

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

    /// The readers of a store and of a backup opened read-only read through a memory map of
    /// the size asked for: SQLite would quietly map less (or nothing) past its build's limit.
    #[test]
    fn every_reader_reads_through_a_memory_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let writable = EmbeddedStore::open(&path).unwrap();
        let read_only = EmbeddedStore::open_read_only(&path, Tenancy::Single).unwrap();
        for store in [&writable, &read_only] {
            for reader in &store.shared.readers {
                let mapped: i64 = lock(reader)
                    .conn
                    .query_row("PRAGMA mmap_size", [], |row| row.get(0))
                    .unwrap();
                assert_eq!(mapped, READER_MAP_BYTES);
            }
        }
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
