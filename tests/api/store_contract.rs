//! The contract of the `Store` trait, run against both backends from one set of test bodies:
//! the embedded SQLite store and the Cosmos DB store on the SDK's in-memory emulator. What
//! the domain code relies on (errors, atomicity, paging, the change feed) must hold on both.

use std::collections::BTreeSet;
use std::sync::Arc;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{
    BatchOperation, Checkpoint, Container, Document, ETag, FilterOp, PageRequest, PartitionKey,
    Query, SortOrder, Store, StoreError,
};
use serde_json::{Value, json};

/// Declares each contract test three times: `embedded::<name>`, `metered::<name>` (the
/// embedded store behind the `MeteredStore` wrapper, which must change nothing but count)
/// and `cosmos::<name>`.
macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        testkit::test_module!(
            #[tokio::test] embedded, (super::embedded_store(&super::temporary_dir())): $($name),*
        );
        testkit::test_module!(
            #[tokio::test] metered,
            (std::sync::Arc::new(testkit::metered::meter(super::embedded_store(
                &super::temporary_dir()
            )))): $($name),*
        );
        testkit::test_module!(
            #[tokio::test] cosmos, (testkit::emulator::emulator_store().await): $($name),*
        );
    };
}

/// A temporary directory for a test's embedded store, removed when dropped.
pub(crate) fn temporary_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// A fresh embedded store of the `single` layout in `dir`.
fn embedded_store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    Arc::new(EmbeddedStore::open(&dir.path().join("blog.sqlite3")).expect("embedded store"))
}

fn comment(post: &str, id: &str, date: &str) -> Value {
    json!({
        "id": id, "type": "comment", "postId": post, "userId": "u1",
        "userUsername": "ada", "content": format!("comment {id}"), "creationDate": date,
    })
}

fn post(post: &str, user: &str, name: &str, date: &str) -> Value {
    json!({
        "id": post, "type": "post", "postId": post, "userId": user, "userUsername": name,
        "title": "t", "content": "c", "commentCount": 0, "likeCount": 0, "creationDate": date,
    })
}

/// The batch every count change is: `item` (the post with its new count) if it is still
/// `etag`, and the `child` it counts, created with it or not at all.
pub fn count_and_child(item: Value, etag: ETag, child: Value) -> Vec<BatchOperation> {
    vec![
        BatchOperation::Replace {
            item,
            if_match: Some(etag),
        },
        BatchOperation::Create { item: child },
    ]
}

/// What `store` holds at `id` in `container` under `pk`, or `None`. No contract test expects
/// the read itself to fail, so a failed read fails the test here, once for all of them.
pub(crate) async fn stored(
    store: &Arc<dyn Store>,
    container: Container,
    pk: &PartitionKey,
    id: &str,
) -> Option<Document> {
    store
        .read_item(container, pk, id)
        .await
        .unwrap_or_else(|error| panic!("read {container:?} {id}: {error}"))
}

fn date(n: u32) -> String {
    format!("2026-01-01T00:00:{n:02}.0000000Z")
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Every page of `query`, checking that none exceeds `size`.
pub(crate) async fn all_pages(
    store: &Arc<dyn Store>,
    container: Container,
    query: &Query,
    size: u32,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut continuation = None;
    for _ in 0..1_000 {
        let page = store
            .query(
                container,
                query,
                PageRequest {
                    max_items: size,
                    continuation: continuation.take(),
                },
            )
            .await
            .expect("query");
        assert!(page.items.len() <= size as usize, "page larger than asked");
        items.extend(page.items);
        match page.continuation {
            Some(next) => continuation = Some(next),
            None => return items,
        }
    }
    panic!("the query never ended");
}

/// The embedded store's time-to-live, as Cosmos DB's: an item whose `ttl` has run out is
/// gone for every read at once, the change log still delivers it until the purge, and the
/// purge removes it. (The Cosmos DB SDK's in-memory emulator does not expire items, so this
/// runs on the embedded store only; the platform never relies on expiry for correctness.)
mod time_to_live {
    use std::time::Duration;

    use cosmos_blog::store::embedded::EmbeddedStore;
    use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query, Store, StoreError};
    use serde_json::json;

    use testkit::eventually;

    #[tokio::test]
    async fn expired_items_vanish_from_reads_and_then_from_the_log() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).expect("embedded store");
        let pk = PartitionKey::single("p");
        let item = |id: &str, ttl: serde_json::Value| json!({"id": id, "postId": "p", "type": "tombstone", "ttl": ttl});
        store
            .create_item(Container::Posts, &pk, item("short", json!(1)))
            .await
            .expect("create short-lived");
        store
            .create_item(Container::Posts, &pk, item("forever", json!(-1)))
            .await
            .expect("create never-expiring");
        // Visible while its ttl runs: shown with an item whose ttl cannot run out during the
        // test (the 1-second one may already have, on a loaded machine).
        store
            .create_item(Container::Posts, &pk, item("later", json!(3600)))
            .await
            .expect("create long-lived");
        let listed = || async {
            let page = store
                .query(
                    Container::Posts,
                    &Query::in_partition(pk.clone()),
                    PageRequest::first(10),
                )
                .await
                .expect("query");
            let mut ids: Vec<String> = page
                .items
                .iter()
                .filter_map(|item| item["id"].as_str().map(str::to_owned))
                .collect();
            ids.sort();
            ids
        };
        let before = listed().await;
        assert!(
            ["forever", "later"]
                .iter()
                .all(|id| before.iter().any(|b| b == id)),
            "{before:?}"
        );

        eventually(Duration::from_secs(10), || async {
            let read = store
                .read_item(Container::Posts, &pk, "short")
                .await
                .expect("read");
            read.is_none().then_some(())
        })
        .await;
        assert_eq!(
            listed().await,
            ["forever", "later"],
            "queries no longer see it either"
        );
        assert!(matches!(
            store.delete_item(Container::Posts, &pk, "short").await,
            Err(StoreError::NotFound)
        ));
        let log = store
            .read_changes(Container::Posts, None, 10)
            .await
            .expect("change log");
        assert_eq!(log.items.len(), 3, "the log still carries the expired item");

        let purged = tokio::task::spawn_blocking(move || store.purge_expired().map(|n| (n, store)))
            .await
            .expect("purge task");
        let (purged, store) = purged.expect("purge");
        assert_eq!(purged, 1);
        let log = store
            .read_changes(Container::Posts, None, 10)
            .await
            .expect("change log");
        let mut logged: Vec<&str> = log.items.iter().filter_map(|i| i["id"].as_str()).collect();
        logged.sort();
        assert_eq!(logged, ["forever", "later"]);

        // An id whose item expired can be created again.
        store
            .create_item(Container::Posts, &pk, item("short", json!(60)))
            .await
            .expect("create again");
    }
}

/// Reads the change feed from `since` until it has nothing more.
pub(crate) async fn drain_changes(
    store: &Arc<dyn Store>,
    container: Container,
    mut since: Option<Checkpoint>,
    max_items: usize,
) -> (Vec<Value>, Option<Checkpoint>) {
    let mut items = Vec::new();
    for _ in 0..100 {
        let batch = store
            .read_changes(container, since.as_ref(), max_items)
            .await
            .expect("read changes");
        assert!(batch.items.len() <= max_items, "batch larger than asked");
        let done = batch.items.is_empty();
        items.extend(batch.items);
        since = Some(batch.checkpoint);
        if done {
            return (items, since);
        }
    }
    panic!("the change feed never ran dry: it is not incremental");
}

mod batches;
mod change_feed;
mod points;
mod queries;
