//! Where a read runs: on a free reader connection, on the calling thread when it touches
//! one partition, off the async runtime otherwise; a read that finds every reader taken
//! waits for one without holding a thread.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use super::EmbeddedStore;
use super::readers::Reader;
use crate::store::{StoreError, StoreResult};

/// How much a read may touch, which decides where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// One item or one logical partition (a page of at most a hundred items): from the page
    /// cache this takes microseconds, less than handing it to another thread and back (the
    /// wake-ups of that hop were a fifth of the server's samples under a query load), so it
    /// runs on the calling thread.
    Partition,
    /// Many partitions or the change log: may take long, so it runs on a blocking thread,
    /// off the async runtime.
    Wide,
}

impl EmbeddedStore {
    /// Runs `work` on a free reader connection: a [`Reach::Partition`] read on the calling
    /// thread, anything else off the async runtime.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        reach: Reach,
        work: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.with_reader(reach, move |reader| work(&reader.conn))
            .await
    }

    /// Runs `work` on a reader of its own: once one of the readers' permits is taken, one of
    /// them is free. A read that finds none waits for a permit without holding a thread.
    pub(super) async fn with_reader<T: Send + 'static>(
        &self,
        reach: Reach,
        work: impl FnOnce(&mut Reader) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let free = &self.shared.free_readers;
        let closed = |_| StoreError::Internal("the store's readers are closed".into());
        if reach == Reach::Partition {
            let permit = match free.try_acquire() {
                Ok(permit) => permit,
                Err(_) => free.acquire().await.map_err(closed)?,
            };
            let mut reader = take_reader(&self.shared.readers);
            let answer = work(&mut reader);
            // The reader before its permit: no more readers are taken than permits held.
            drop(reader);
            drop(permit);
            return answer;
        }
        let permit = Arc::clone(free).acquire_owned().await.map_err(closed)?;
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || {
            let mut reader = take_reader(&shared.readers);
            let answer = work(&mut reader);
            drop(reader);
            drop(permit);
            answer
        })
        .await
        .map_err(|e| StoreError::Internal(format!("store task failed: {e}")))?
    }
}

/// A free reader, for a caller holding one of the readers' permits: at most one reader per
/// other permit is taken, so one is free; a reader given back while the others were tried
/// is found on the next pass. The first free one is taken, so that reads one at a time use
/// the same reader (and its kept feed pages).
fn take_reader(readers: &[Mutex<Reader>]) -> MutexGuard<'_, Reader> {
    loop {
        if let Some(reader) = readers.iter().find_map(|reader| reader.try_lock().ok()) {
            return reader;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::readers::{READER_MAP_BYTES, default_readers};
    use super::super::sqlite::lock;
    use super::*;
    use crate::store::{Container, PageRequest, PartitionKey, Query, SortOrder, Store, Tenancy};

    /// The ids in the feed partition `pk`, newest first.
    async fn feed_ids(store: &EmbeddedStore, pk: PartitionKey) -> Vec<String> {
        let newest_first = Query::in_partition(pk)
            .of_type("post")
            .order_by("creationDate", SortOrder::Descending);
        let page = store
            .query(Container::Feed, &newest_first, PageRequest::first(100))
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
        let readers = store.shared.readers.len();
        // Reads one at a time use the same reader, which then serves its cached page.
        for _ in 0..readers * 2 {
            assert_eq!(feed_ids(&store, PartitionKey::single("post")).await, ["a"]);
        }
        put(&store, "b", "2026-01-02T00:00:00.0000000Z").await;
        for _ in 0..readers * 2 {
            assert_eq!(
                feed_ids(&store, PartitionKey::single("post")).await,
                ["b", "a"]
            );
        }
        // Another process (e.g. `rebuild` while the server runs) has its own connections.
        let other = EmbeddedStore::open(&path).unwrap();
        other
            .delete_item(Container::Feed, &PartitionKey::single("post"), "b")
            .await
            .unwrap();
        for _ in 0..readers * 2 {
            assert_eq!(feed_ids(&store, PartitionKey::single("post")).await, ["a"]);
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
        let ids_in = |tenant| feed_ids(&store, feed_of(tenant));
        put_in("t1", "a").await;
        put_in("t2", "b").await;
        let readers = store.shared.readers.len();
        for _ in 0..readers * 2 {
            assert_eq!(ids_in("t1").await, ["a"]);
            assert_eq!(ids_in("t2").await, ["b"]);
        }
        put_in("t2", "c").await;
        for _ in 0..readers * 2 {
            assert_eq!(ids_in("t1").await, ["a"]);
            assert_eq!(ids_in("t2").await, ["c", "b"]);
        }
    }

    /// As many reads as there are readers run at once: each of `readers` reads, having read
    /// the database, waits until all of them are in flight. Queued behind fewer readers, the
    /// last reads would wait for the first to end and the first for the last to begin; the
    /// wait is bounded only so that such a failure ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn as_many_reads_overlap_as_there_are_readers() {
        use std::sync::Condvar;
        use std::time::Duration;

        let readers = default_readers().max(4) * 2;
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_with_readers(
            &dir.path().join("db.sqlite3"),
            Tenancy::Single,
            readers,
        )
        .unwrap();
        put(&store, "a", "2026-01-01T00:00:00.0000000Z").await;
        let in_flight = Arc::new((Mutex::new(0_usize), Condvar::new()));
        let reads = (0..readers).map(|n| {
            let store = store.clone();
            let in_flight = Arc::clone(&in_flight);
            // Both kinds of read: on a blocking thread, and on the calling task's thread.
            let reach = if n % 2 == 0 {
                Reach::Wide
            } else {
                Reach::Partition
            };
            let read = async move {
                store
                    .read(reach, move |conn| {
                        let items: i64 = conn
                            .query_row("SELECT count(*) FROM items", [], |row| row.get(0))
                            .map_err(super::super::sqlite::sql_error)?;
                        let (count, all_in) = &*in_flight;
                        let mut count = lock(count);
                        *count += 1;
                        all_in.notify_all();
                        let (count, waited) = all_in
                            .wait_timeout_while(count, Duration::from_secs(20), |count| {
                                *count < readers
                            })
                            .unwrap();
                        Ok((items, !waited.timed_out() && *count >= readers))
                    })
                    .await
            };
            // Partition reads block the thread they run on: each on a thread of its own.
            tokio::task::spawn_blocking(move || tokio::runtime::Handle::current().block_on(read))
        });
        let answers = futures::future::join_all(reads).await;
        for answer in answers {
            let (items, overlapped) = answer.unwrap().unwrap();
            assert_eq!(items, 1);
            assert!(overlapped, "{readers} reads did not all run at once");
        }
    }

    #[test]
    fn the_readers_are_sized_from_the_cores() {
        let cores = std::thread::available_parallelism().unwrap().get();
        assert!(default_readers() >= cores.max(4));
    }
}
