//! The [`Store`] operations of the embedded store: reads on a reader connection, writes
//! through the writer thread.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use serde_json::value::to_raw_value;

use super::EmbeddedStore;
use super::reads::Reach;
use super::schema::{COUNTED_CONTAINERS, LIVE};
use super::sql::{PageRead, run_query, run_query_json};
use super::sqlite::{etag_for, parse_body, parse_checkpoint, raw_body, sql_error};
use super::writer::{apply, written};
use crate::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, JsonPage, Page,
    PageRequest, PartitionKey, PartitionVersion, Query, QueryScope, RawItem, Store, StoreError,
    StoreResult, Tenancy,
};

#[async_trait]
impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn tenancy(&self) -> Tenancy {
        self.shared.tenancy
    }

    fn holds_unchanged(&self, known: &PartitionVersion) -> bool {
        self.counts_changes() && known.holds_at(self.shared.versioning.commits(), unix_now())
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let (pk, id) = (pk.to_json_array(), id.to_owned());
        self.read(Reach::Partition, move |conn| {
            read_row(conn, container, &pk, &id)?
                .map(|row| {
                    Ok(Document {
                        item: parse_body(&row.body)?,
                        etag: etag_for(row.lsn),
                    })
                })
                .transpose()
        })
        .await
    }

    async fn read_item_json(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        let (pk, id) = (pk.to_json_array(), id.to_owned());
        let partition = self.versions_of(container).then(|| pk.clone());
        self.versioned_read(container, partition, Reach::Partition, known, move |conn| {
            let row = read_row(conn, container, &pk, &id)?;
            Ok(PageRead {
                live_until: row.as_ref().and_then(|row| row.expires_at),
                page: Page::of_one(row.map(|row| raw_body(row.body)).transpose()?),
                bounded: true,
            })
        })
        .await
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_one(container, pk, BatchOperation::Create { item })
            .await
            .and_then(written)
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        self.write_one(container, pk, BatchOperation::Upsert { item })
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
        let if_match = if_match.cloned();
        self.write_one(container, pk, BatchOperation::Replace { item, if_match })
            .await
            .and_then(written)
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let id = id.to_owned();
        let delete = BatchOperation::Delete { id, if_match: None };
        self.write_one(container, pk, delete).await.map(|_| ())
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
                .with_reader(Reach::Partition, move |reader| {
                    reader.feed_query(&query, &page)
                })
                .await;
        }
        self.read(reach_of(&query), move |conn| {
            run_query(conn, container, &query, &page)
        })
        .await
    }

    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        // The feed's pages are kept parsed by each reader (see `feed_query`); the list
        // queries read the stored text as it is.
        if container == Container::Feed {
            let page = self.query(container, query, page).await?;
            return Ok(JsonPage::unversioned(Page {
                items: page
                    .items
                    .iter()
                    .map(to_raw_value)
                    .collect::<Result<_, _>>()
                    .map_err(|e| StoreError::Internal(format!("item does not serialise: {e}")))?,
                continuation: page.continuation,
            }));
        }
        let partition = match &query.scope {
            QueryScope::Partition(pk) if self.versions_of(container) => Some(pk.to_json_array()),
            _ => None,
        };
        let query = query.clone();
        self.versioned_read(container, partition, reach_of(&query), known, move |conn| {
            run_query_json(conn, container, &query, &page)
        })
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
        self.read(Reach::Wide, move |conn| {
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

    async fn keep_partition_versions(&self) -> StoreResult<bool> {
        if self.shared.read_only {
            return Ok(false);
        }
        self.count_changes().await.map(|()| true)
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        self.changes().wait(container, timeout).await;
    }
}

impl EmbeddedStore {
    /// Whether pages of `container`'s partitions are versioned: its writes are counted.
    fn versions_of(&self, container: Container) -> bool {
        self.counts_changes() && COUNTED_CONTAINERS.contains(&container)
    }

    /// What `read` reads of one partition, or the word that the page `known` was read at is
    /// still the answer. `partition`: the partition's key as its versions name it, `None`
    /// when its pages are not versioned.
    async fn versioned_read(
        &self,
        container: Container,
        partition: Option<String>,
        reach: Reach,
        known: Option<&PartitionVersion>,
        read: impl FnOnce(&Connection) -> StoreResult<PageRead<RawItem>> + Send + 'static,
    ) -> StoreResult<JsonPage> {
        // Read before anything else: a commit after it makes the page look older than it is.
        let commits = self.shared.versioning.commits();
        if let (Some(known), Some(pk)) = (known, &partition)
            && known.holds_without_commits(container, pk, commits, unix_now())
        {
            return Ok(JsonPage::Unchanged { renewed: None });
        }
        let known = known.cloned();
        self.read(reach, move |conn| {
            // The count before the page: a write in between makes the page look older than
            // it is (one needless read later), never newer.
            let changes = partition
                .as_deref()
                .map(|pk| partition_changes(conn, container, pk))
                .transpose()?;
            if let (Some(known), Some(pk), Some(changes)) = (&known, &partition, changes)
                && known.still_holds(container, pk, changes, unix_now())
            {
                return Ok(JsonPage::Unchanged {
                    renewed: Some(known.renewed(commits)),
                });
            }
            let read = read(conn)?;
            let version = partition
                .zip(changes)
                .filter(|_| read.bounded)
                .map(|(pk, changes)| {
                    PartitionVersion::new(container, pk, changes, read.live_until, commits)
                });
            Ok(JsonPage::Read {
                page: read.page,
                version,
            })
        })
        .await
    }
}

/// How many times the partition was written (0: never), as the triggers of the schema count.
fn partition_changes(conn: &Connection, container: Container, pk: &str) -> StoreResult<i64> {
    conn.prepare_cached("SELECT changes FROM partition_changes WHERE container = ?1 AND pk = ?2")
        .map_err(sql_error)?
        .query_row((container.name(), pk), |row| row.get(0))
        .optional()
        .map(|changes| changes.unwrap_or(0))
        .map_err(sql_error)
}

/// Unix seconds, as SQLite's `unixepoch()` counts them when it hides expired items.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}

/// Where a query runs: a partition's on the calling thread when it can, anything wider on a
/// blocking thread.
fn reach_of(query: &Query) -> Reach {
    match query.scope {
        QueryScope::Partition(_) => Reach::Partition,
        QueryScope::Prefix(_) | QueryScope::CrossPartition => Reach::Wide,
    }
}

/// The SQL of a point read: the live item at its id in its partition.
static POINT_READ: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT body, lsn, expires_at FROM items
         WHERE container = ?1 AND pk = ?2 AND id = ?3 AND {LIVE}"
    )
});

/// An item as a point read finds it.
struct ItemRow {
    body: String,
    /// Its position in the change log, which its etag encodes.
    lsn: i64,
    /// When it expires (Unix seconds), if ever.
    expires_at: Option<i64>,
}

/// The live item `id` in the partition `pk` (a JSON array).
fn read_row(
    conn: &Connection,
    container: Container,
    pk: &str,
    id: &str,
) -> StoreResult<Option<ItemRow>> {
    conn.prepare_cached(&POINT_READ)
        .map_err(sql_error)?
        .query_row((container.name(), pk, id), |row| {
            Ok(ItemRow {
                body: row.get(0)?,
                lsn: row.get(1)?,
                expires_at: row.get(2)?,
            })
        })
        .optional()
        .map_err(sql_error)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::commits::FOREIGN_COMMIT_POLL;
    use super::*;

    fn comments_of(post: &str) -> Query {
        Query::in_partition(PartitionKey::single(post))
            .of_type("comment")
            .order_by("creationDate", crate::store::SortOrder::Ascending)
    }

    async fn comment(store: &EmbeddedStore, post: &str, id: &str, extra: Value) {
        let mut item = json!({"id": id, "type": "comment", "postId": post,
                              "creationDate": format!("2026-01-01T00:00:0{}.0000000Z", id.len())});
        if let (Value::Object(fields), Value::Object(more)) = (&mut item, extra) {
            fields.extend(more);
        }
        store
            .upsert_item(Container::Posts, &PartitionKey::single(post), item)
            .await
            .unwrap();
    }

    /// A store of `path` that counts its partitions' writes.
    async fn counting(path: &std::path::Path) -> EmbeddedStore {
        let store = EmbeddedStore::open(path).unwrap();
        assert!(store.keep_partition_versions().await.unwrap());
        store
    }

    #[tokio::test]
    async fn pages_are_versioned_only_once_asked_for_and_from_then_on_in_every_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = EmbeddedStore::open(&path).unwrap();
        comment(&store, "p1", "a", json!({})).await;
        let uncounted = unversioned(&store, Container::Posts, &comments_of("p1")).await;
        assert!(uncounted, "not counted by default");
        let asking = counting(&path).await;
        assert!(read(&asking, "p1", None).await.is_some());
        // Opened after the counting began: it counts too.
        let later = EmbeddedStore::open(&path).unwrap();
        assert!(read(&later, "p1", None).await.is_some());
    }

    /// Queries `post`'s comments handing `known` back: the version read, or `None` when the
    /// store vouched for `known`.
    async fn read(
        store: &EmbeddedStore,
        post: &str,
        known: Option<&PartitionVersion>,
    ) -> Option<PartitionVersion> {
        match store
            .query_json(
                Container::Posts,
                &comments_of(post),
                PageRequest::first(10),
                known,
            )
            .await
            .unwrap()
        {
            JsonPage::Unchanged { .. } => None,
            JsonPage::Read { version, .. } => {
                Some(version.expect("a partition's page is versioned"))
            }
        }
    }

    /// A write of another process to `post` since `known` was read reaches the store's count
    /// within the writer's poll (waiting up to 40 of them): `known` is then no longer vouched
    /// for.
    async fn assert_written_elsewhere_is_seen(
        store: &EmbeddedStore,
        post: &str,
        known: &PartitionVersion,
    ) {
        let deadline = std::time::Instant::now() + FOREIGN_COMMIT_POLL * 40;
        while read(store, post, Some(known)).await.is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "a write of another process is never seen"
            );
            tokio::time::sleep(FOREIGN_COMMIT_POLL / 5).await;
        }
    }

    #[tokio::test]
    async fn a_page_is_vouched_for_until_its_partition_is_written_by_anyone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = counting(&path).await;
        comment(&store, "p1", "a", json!({})).await;
        let first = read(&store, "p1", None).await.unwrap();
        assert_eq!(read(&store, "p1", Some(&first)).await, None, "unchanged");
        comment(&store, "p2", "b", json!({})).await;
        assert_eq!(
            read(&store, "p1", Some(&first)).await,
            None,
            "another partition written"
        );

        comment(&store, "p1", "c", json!({})).await;
        let second = read(&store, "p1", Some(&first))
            .await
            .expect("a write: read again");
        assert_eq!(read(&store, "p1", Some(&second)).await, None);
        store
            .delete_item(Container::Posts, &PartitionKey::single("p1"), "c")
            .await
            .unwrap();
        let third = read(&store, "p1", Some(&second))
            .await
            .expect("a delete: read again");

        // Another process (`rebuild`, `import`, `verify --repair` beside the server): its
        // commit reaches the store's count within the writer's poll.
        let other = EmbeddedStore::open(&path).unwrap();
        comment(&other, "p1", "d", json!({})).await;
        assert_written_elsewhere_is_seen(&store, "p1", &third).await;
    }

    /// The writer thread sleeps between writes until pages are versioned; once they are, it
    /// looks for other processes' commits though this process writes nothing more.
    #[tokio::test]
    async fn another_process_write_is_seen_when_versioning_starts_without_a_write_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = EmbeddedStore::open(&path).unwrap();
        let other = EmbeddedStore::open(&path).unwrap();
        comment(&other, "p1", "a", json!({})).await;
        assert!(store.keep_partition_versions().await.unwrap());
        let first = read(&store, "p1", None).await.unwrap();
        comment(&other, "p1", "b", json!({})).await;
        assert_written_elsewhere_is_seen(&store, "p1", &first).await;
    }

    /// Once anything is committed, a version is vouched for by a look at its partition's
    /// count, which renews it; the renewed version is vouched for without that look.
    #[tokio::test]
    async fn a_version_vouched_for_after_other_writes_comes_back_renewed() {
        let dir = tempfile::tempdir().unwrap();
        let store = counting(&dir.path().join("db.sqlite3")).await;
        comment(&store, "p1", "a", json!({})).await;
        let first = read(&store, "p1", None).await.unwrap();
        let answer = |known| renewal(&store, "p1", known);
        assert_eq!(answer(&first).await, None, "nothing committed since");
        comment(&store, "p2", "b", json!({})).await;
        let renewed = answer(&first)
            .await
            .expect("a commit since: vouched for by p1's count, and renewed");
        assert_ne!(renewed, first);
        assert_eq!(
            answer(&renewed).await,
            None,
            "nothing committed since renewal"
        );
    }

    /// The renewed version the store answers for `post`'s unwritten comments, handed `known`:
    /// `None` when it vouched for `known` as it is.
    async fn renewal(
        store: &EmbeddedStore,
        post: &str,
        known: &PartitionVersion,
    ) -> Option<PartitionVersion> {
        let page = PageRequest::first(10);
        match store
            .query_json(Container::Posts, &comments_of(post), page, Some(known))
            .await
            .unwrap()
        {
            JsonPage::Unchanged { renewed } => renewed,
            JsonPage::Read { .. } => panic!("{post} was not written"),
        }
    }

    /// Told without a call: a version holds while nothing at all was committed since it was
    /// read (or renewed), and no longer after any commit, wherever it went.
    #[tokio::test]
    async fn a_version_holds_unchanged_only_while_nothing_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = counting(&dir.path().join("db.sqlite3")).await;
        comment(&store, "p1", "a", json!({})).await;
        let first = read(&store, "p1", None).await.unwrap();
        assert!(store.holds_unchanged(&first), "nothing committed since");
        comment(&store, "p2", "b", json!({})).await;
        assert!(!store.holds_unchanged(&first), "a commit since, elsewhere");
        let renewed = renewal(&store, "p1", &first)
            .await
            .expect("p1 was not written: its version is renewed");
        assert!(
            store.holds_unchanged(&renewed),
            "nothing committed since renewal"
        );
        let uncounted = EmbeddedStore::open(&dir.path().join("other.sqlite3")).unwrap();
        assert!(
            !uncounted.holds_unchanged(&renewed),
            "a store that counts nothing tells nothing"
        );
    }

    #[tokio::test]
    async fn a_version_vouches_for_its_own_partition_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = counting(&dir.path().join("db.sqlite3")).await;
        comment(&store, "p1", "a", json!({})).await;
        comment(&store, "p2", "a", json!({})).await;
        let of_p1 = read(&store, "p1", None).await.unwrap();
        assert!(read(&store, "p2", Some(&of_p1)).await.is_some());
        let of_p2_in_users = match store
            .query_json(
                Container::Users,
                &comments_of("p2"),
                PageRequest::first(10),
                None,
            )
            .await
            .unwrap()
        {
            JsonPage::Read { version, .. } => version.unwrap(),
            JsonPage::Unchanged { .. } => panic!("nothing was handed in"),
        };
        assert!(read(&store, "p2", Some(&of_p2_in_users)).await.is_some());
    }

    #[tokio::test]
    async fn a_page_holds_until_its_first_item_expires() {
        let dir = tempfile::tempdir().unwrap();
        let store = counting(&dir.path().join("db.sqlite3")).await;
        let before = unix_now();
        comment(&store, "p1", "a", json!({"ttl": 3600})).await;
        comment(&store, "p1", "bb", json!({"ttl": 60})).await;
        comment(&store, "p1", "ccc", json!({})).await;
        let version = read(&store, "p1", None).await.unwrap();
        let until = version.live_until().expect("bounded by the items' expiry");
        assert!((before + 60..=unix_now() + 60).contains(&until), "{until}");
        assert_eq!(read(&store, "p1", Some(&version)).await, None);
    }

    #[tokio::test]
    async fn only_the_pages_of_one_partition_read_whole_are_versioned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = counting(&path).await;
        comment(&store, "p1", "a", json!({})).await;
        let across = Query::cross_partition().of_type("comment");
        let skipping = comments_of("p1").skip(1);
        for query in [across, skipping] {
            assert!(
                unversioned(&store, Container::Posts, &query).await,
                "{query:?}"
            );
        }
        // The leases' writes are not counted: a page of them could not be vouched for.
        let leases = unversioned(&store, Container::Leases, &comments_of("p1")).await;
        assert!(leases, "an uncounted container");
        let read_only = EmbeddedStore::open_read_only(&path, Tenancy::Single).unwrap();
        let backup = unversioned(&read_only, Container::Posts, &comments_of("p1")).await;
        assert!(backup, "a read-only store");
    }

    /// Whether `store` answers `query` on `container` with a page that has no version.
    async fn unversioned(store: &EmbeddedStore, container: Container, query: &Query) -> bool {
        let answer = store
            .query_json(container, query, PageRequest::first(10), None)
            .await
            .unwrap();
        matches!(answer, JsonPage::Read { version: None, .. })
    }

    /// The counting is stopped only while no process has the file open, and begins again
    /// with the next process that keeps pages, whose pages are then versioned as before.
    #[tokio::test]
    async fn the_counting_stops_only_with_the_file_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite3");
        let store = counting(&path).await;
        comment(&store, "p1", "a", json!({})).await;
        let refused = super::super::stop_counting(&path);
        assert!(
            matches!(refused, Err(StoreError::Unavailable(_))),
            "{refused:?}"
        );
        drop(store);
        // The writer thread closes its connection once it sees the store dropped.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let stopped = loop {
            match super::super::stop_counting(&path) {
                Err(StoreError::Unavailable(_)) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => break other,
            }
        };
        assert!(stopped.unwrap(), "it was counting");

        let uncounted = EmbeddedStore::open(&path).unwrap();
        comment(&uncounted, "p1", "b", json!({})).await;
        let tables: i64 = uncounted
            .read(Reach::Wide, |conn| {
                conn.query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE name = 'partition_changes'",
                    [],
                    |row| row.get(0),
                )
                .map_err(sql_error)
            })
            .await
            .unwrap();
        assert_eq!(tables, 0, "a writer that keeps no pages counts nothing");
        assert!(unversioned(&uncounted, Container::Posts, &comments_of("p1")).await);

        let keeping = counting(&path).await;
        let first = read(&keeping, "p1", None).await.unwrap();
        assert_eq!(read(&keeping, "p1", Some(&first)).await, None);
        // The writer opened while nothing was counted counts from now on.
        comment(&uncounted, "p1", "c", json!({})).await;
        assert_written_elsewhere_is_seen(&keeping, "p1", &first).await;
        assert!(!super::super::stop_counting(&path).is_ok_and(|counted| counted));
    }

    /// A group of writes to one partition counts one change, and a write that failed in the
    /// group counts none.
    #[tokio::test]
    async fn a_group_counts_each_partition_it_wrote_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = counting(&dir.path().join("db.sqlite3")).await;
        let pk = PartitionKey::single("p1");
        let item = |id: &str| json!({"id": id, "type": "comment", "postId": "p1"});
        store
            .create_item(Container::Posts, &pk, item("a"))
            .await
            .unwrap();
        let changes = |store: &EmbeddedStore| {
            let store = store.clone();
            async move {
                store
                    .read(Reach::Wide, |conn| {
                        partition_changes(conn, Container::Posts, "[\"p1\"]")
                    })
                    .await
                    .unwrap()
            }
        };
        let before = changes(&store).await;
        assert!(before > 0);
        store
            .execute_batch(
                Container::Posts,
                &pk,
                vec![
                    BatchOperation::Upsert { item: item("b") },
                    BatchOperation::Upsert { item: item("c") },
                    BatchOperation::Delete {
                        id: "a".into(),
                        if_match: None,
                    },
                ],
            )
            .await
            .unwrap();
        assert_eq!(changes(&store).await, before + 1);
        let failed = store.create_item(Container::Posts, &pk, item("b")).await;
        assert!(matches!(failed, Err(StoreError::Conflict)));
        assert_eq!(changes(&store).await, before + 1, "nothing written");
    }
}
