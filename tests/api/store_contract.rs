//! The contract of the `Store` trait, run against both backends from one set of test bodies:
//! the embedded SQLite store and the Cosmos DB store on the SDK's in-memory emulator. What
//! the domain code relies on (errors, atomicity, paging, the change feed) must hold on both.

use std::collections::BTreeSet;
use std::sync::Arc;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{
    BatchOperation, Checkpoint, Container, ETag, FilterOp, PageRequest, PartitionKey, Query,
    SortOrder, Store, StoreError,
};
use serde_json::{Value, json};

/// Declares each contract test three times: `embedded::<name>`, `metered::<name>` (the
/// embedded store behind the `MeteredStore` wrapper, which must change nothing but count)
/// and `cosmos::<name>`.
macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("temporary directory");
                    let store = super::EmbeddedStore::open(&dir.path().join("blog.sqlite3"))
                        .expect("embedded store");
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
        mod metered {
            $(
                #[tokio::test]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("temporary directory");
                    let store = super::EmbeddedStore::open(&dir.path().join("blog.sqlite3"))
                        .expect("embedded store");
                    let metered = testkit::metered::meter(
                        std::sync::Arc::new(store),
                    );
                    super::$name(std::sync::Arc::new(metered)).await;
                }
            )*
        }
        mod cosmos {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(testkit::emulator::emulator_store().await).await;
                }
            )*
        }
    };
}

contract_tests!(
    point_operations_keep_cosmos_semantics,
    reads_strip_system_properties_and_keep_unicode,
    items_must_belong_to_the_partition_addressed,
    batches_are_atomic_and_name_the_failing_operation,
    single_partition_queries_page_in_order,
    cross_partition_queries_filter_every_partition,
    offset_skips_the_first_items,
    malformed_continuations_are_refused,
    change_feed_resumes_from_its_checkpoint,
    change_feed_delivers_the_latest_version_once,
    change_feed_pages_are_bounded,
    an_in_filter_matches_any_of_its_values,
);

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

async fn point_operations_keep_cosmos_semantics(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let item = post("p1", "u1", "ada", &date(1));

    let created = store
        .create_item(Container::Posts, &pk, item.clone())
        .await
        .expect("create");
    let read = store
        .read_item(Container::Posts, &pk, "p1")
        .await
        .expect("read")
        .expect("the item exists");
    assert_eq!(read.item, item);
    assert_eq!(read.etag, created);

    assert!(matches!(
        store.create_item(Container::Posts, &pk, item.clone()).await,
        Err(StoreError::Conflict)
    ));

    let mut edited = item.clone();
    edited["title"] = json!("edited");
    let upserted = store
        .upsert_item(Container::Posts, &pk, edited.clone())
        .await
        .expect("upsert");
    assert_ne!(upserted, created, "every write changes the etag");

    // Replace against the stale etag fails; against the current one it succeeds.
    edited["title"] = json!("replaced");
    assert!(matches!(
        store
            .replace_item(Container::Posts, &pk, edited.clone(), Some(&created))
            .await,
        Err(StoreError::PreconditionFailed)
    ));
    let replaced = store
        .replace_item(Container::Posts, &pk, edited.clone(), Some(&upserted))
        .await
        .expect("replace with the current etag");
    assert_ne!(replaced, upserted);
    let unconditional = store
        .replace_item(Container::Posts, &pk, edited.clone(), None)
        .await
        .expect("replace without precondition");
    let read = store
        .read_item(Container::Posts, &pk, "p1")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read.item["title"], "replaced");
    assert_eq!(read.etag, unconditional);

    let missing = post("p2", "u1", "ada", &date(2));
    assert!(matches!(
        store
            .replace_item(Container::Posts, &PartitionKey::single("p2"), missing, None)
            .await,
        Err(StoreError::NotFound)
    ));
    assert!(
        store
            .read_item(Container::Posts, &PartitionKey::single("p2"), "p2")
            .await
            .expect("read of a missing item")
            .is_none()
    );

    store
        .delete_item(Container::Posts, &pk, "p1")
        .await
        .expect("delete");
    assert!(matches!(
        store.delete_item(Container::Posts, &pk, "p1").await,
        Err(StoreError::NotFound)
    ));
    assert!(
        store
            .read_item(Container::Posts, &pk, "p1")
            .await
            .expect("read after delete")
            .is_none()
    );
}

async fn reads_strip_system_properties_and_keep_unicode(store: Arc<dyn Store>) {
    // A partition key with quotes and non-ASCII text travels in an HTTP header on Cosmos DB.
    let user = "zoë \"the\" 🦀";
    let pk = PartitionKey::single(user);
    let mut item = json!({
        "id": "ünïcode-1", "type": "user", "userId": user, "username": "Zoë",
        "nested": {"list": [1, 2.5, true, null, "x"]},
    });
    store
        .upsert_item(Container::Users, &pk, item.clone())
        .await
        .expect("upsert");
    let read = store
        .read_item(Container::Users, &pk, "ünïcode-1")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read.item, item);
    assert!(
        read.item
            .as_object()
            .is_some_and(|fields| fields.keys().all(|k| !k.starts_with('_'))),
        "system properties are stripped"
    );

    // System properties handed back in (e.g. from the change feed) are not stored.
    item["_etag"] = json!("\"stale\"");
    item["_ts"] = json!(1);
    store
        .upsert_item(Container::Users, &pk, item)
        .await
        .expect("upsert with system properties");
    let query = Query::in_partition(pk.clone()).of_type("user");
    let page = store
        .query(Container::Users, &query, PageRequest::first(10))
        .await
        .expect("query");
    assert_eq!(page.items.len(), 1);
    assert!(page.items[0].get("_etag").is_none());
    assert!(page.items[0].get("_rid").is_none());
    assert_eq!(page.items[0]["username"], "Zoë");
}

async fn items_must_belong_to_the_partition_addressed(store: Arc<dyn Store>) {
    let item = post("p1", "u1", "ada", &date(1));
    let elsewhere = PartitionKey::single("p2");
    assert!(matches!(
        store
            .create_item(Container::Posts, &elsewhere, item.clone())
            .await,
        Err(StoreError::BadRequest(_))
    ));
    assert!(matches!(
        store
            .upsert_item(Container::Posts, &elsewhere, item.clone())
            .await,
        Err(StoreError::BadRequest(_))
    ));
    let no_id = json!({"postId": "p2", "type": "post"});
    assert!(matches!(
        store.create_item(Container::Posts, &elsewhere, no_id).await,
        Err(StoreError::BadRequest(_))
    ));
    // A hierarchical key on a container partitioned by one path addresses no partition of it.
    let hierarchical = PartitionKey::hierarchical(vec![
        cosmos_blog::store::PartitionKeyValue::String("p1".into()),
        cosmos_blog::store::PartitionKeyValue::String("x".into()),
    ])
    .expect("two-level key");
    assert!(matches!(
        store
            .create_item(Container::Posts, &hierarchical, item)
            .await,
        Err(StoreError::BadRequest(_))
    ));
    assert!(
        store
            .read_item(Container::Posts, &PartitionKey::single("p1"), "p1")
            .await
            .expect("read")
            .is_none(),
        "nothing was written"
    );
}

async fn batches_are_atomic_and_name_the_failing_operation(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let etag = store
        .create_item(Container::Posts, &pk, post("p1", "u1", "ada", &date(1)))
        .await
        .expect("create post");

    // Count and comment change together.
    let mut counted = post("p1", "u1", "ada", &date(1));
    counted["commentCount"] = json!(1);
    let etags = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Replace {
                    item: counted.clone(),
                    if_match: Some(etag.clone()),
                },
                BatchOperation::Create {
                    item: comment("p1", "c1", &date(2)),
                },
            ],
        )
        .await
        .expect("batch");
    assert_eq!(etags.len(), 2);
    assert!(etags.iter().all(Option::is_some));
    let current = store
        .read_item(Container::Posts, &pk, "p1")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(current.item["commentCount"], 1);
    assert_eq!(Some(&current.etag), etags[0].as_ref());

    // A stale etag on the first operation: nothing happens, and the error says which.
    counted["commentCount"] = json!(2);
    let stale = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Replace {
                    item: counted.clone(),
                    if_match: Some(etag),
                },
                BatchOperation::Create {
                    item: comment("p1", "c2", &date(3)),
                },
            ],
        )
        .await;
    match stale {
        Err(StoreError::BatchOperationFailed { index: 0, cause }) => {
            assert!(
                matches!(*cause, StoreError::PreconditionFailed),
                "{cause:?}"
            );
        }
        other => panic!("expected operation 0 to fail, got {other:?}"),
    }
    assert!(
        store
            .read_item(Container::Posts, &pk, "c2")
            .await
            .expect("read")
            .is_none(),
        "the batch was rolled back"
    );

    // A conflict on the second operation rolls back the first.
    let conflict = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Replace {
                    item: counted.clone(),
                    if_match: Some(current.etag.clone()),
                },
                BatchOperation::Create {
                    item: comment("p1", "c1", &date(2)),
                },
            ],
        )
        .await;
    match conflict {
        Err(StoreError::BatchOperationFailed { index: 1, cause }) => {
            assert!(matches!(*cause, StoreError::Conflict), "{cause:?}");
        }
        other => panic!("expected operation 1 to fail, got {other:?}"),
    }
    let unchanged = store
        .read_item(Container::Posts, &pk, "p1")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(unchanged.item["commentCount"], 1);
    assert_eq!(unchanged.etag, current.etag);

    // A missing item to delete, after an upsert that must not stay.
    let missing = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Upsert {
                    item: comment("p1", "c3", &date(4)),
                },
                BatchOperation::Delete { id: "nope".into() },
            ],
        )
        .await;
    match missing {
        Err(StoreError::BatchOperationFailed { index: 1, cause }) => {
            assert!(matches!(*cause, StoreError::NotFound), "{cause:?}");
        }
        other => panic!("expected operation 1 to fail, got {other:?}"),
    }
    assert!(
        store
            .read_item(Container::Posts, &pk, "c3")
            .await
            .expect("read")
            .is_none()
    );

    // An item of another partition is refused as the operation it is.
    let misplaced = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![
                BatchOperation::Upsert {
                    item: comment("p1", "c4", &date(5)),
                },
                BatchOperation::Create {
                    item: comment("p2", "c5", &date(6)),
                },
            ],
        )
        .await;
    assert!(
        matches!(
            misplaced,
            Err(StoreError::BatchOperationFailed { index: 1, .. })
        ),
        "{misplaced:?}"
    );

    // Deletes succeed without an etag.
    let deleted = store
        .execute_batch(
            Container::Posts,
            &pk,
            vec![BatchOperation::Delete { id: "c1".into() }],
        )
        .await
        .expect("delete batch");
    assert_eq!(deleted, vec![None::<ETag>]);
}

async fn single_partition_queries_page_in_order(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    store
        .create_item(Container::Posts, &pk, post("p1", "u1", "ada", &date(0)))
        .await
        .expect("post");
    // Written out of order; another partition holds comments too.
    for n in [5u32, 1, 7, 3, 2, 6, 4] {
        store
            .create_item(
                Container::Posts,
                &pk,
                comment("p1", &format!("c{n}"), &date(n)),
            )
            .await
            .expect("comment");
    }
    store
        .create_item(
            Container::Posts,
            &PartitionKey::single("p2"),
            comment("p2", "other", &date(9)),
        )
        .await
        .expect("comment elsewhere");

    let oldest_first = Query::in_partition(pk.clone())
        .of_type("comment")
        .order_by("creationDate", SortOrder::Ascending);
    let items = all_pages(&store, Container::Posts, &oldest_first, 3).await;
    assert_eq!(ids(&items), ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]);

    let newest_first = Query::in_partition(pk.clone())
        .of_type("comment")
        .order_by("creationDate", SortOrder::Descending);
    let items = all_pages(&store, Container::Posts, &newest_first, 2).await;
    assert_eq!(ids(&items), ["c7", "c6", "c5", "c4", "c3", "c2", "c1"]);

    let first = store
        .query(Container::Posts, &newest_first, PageRequest::first(3))
        .await
        .expect("first page");
    assert_eq!(ids(&first.items), ["c7", "c6", "c5"]);
    assert!(first.continuation.is_some());
    let everything = store
        .query(Container::Posts, &newest_first, PageRequest::first(100))
        .await
        .expect("one page");
    assert_eq!(everything.items.len(), 7);
    assert_eq!(
        everything.continuation, None,
        "nothing more after the last item"
    );
}

async fn cross_partition_queries_filter_every_partition(store: Arc<dyn Store>) {
    for n in 0..6u32 {
        let id = format!("p{n}");
        let (user, name) = if n % 2 == 0 {
            ("u1", "old")
        } else {
            ("u2", "old")
        };
        let pk = PartitionKey::single(id.as_str());
        store
            .create_item(Container::Posts, &pk, post(&id, user, name, &date(n)))
            .await
            .expect("post");
        store
            .create_item(
                Container::Posts,
                &pk,
                json!({"id": format!("l{n}"), "type": "like", "postId": id, "userId": "u1",
                       "userUsername": if n == 0 { "new" } else { "old" }, "creationDate": date(n)}),
            )
            .await
            .expect("like");
    }
    // What the username fan-out asks: everything of u1 not already renamed, in any partition.
    let query = Query::cross_partition()
        .filter("userId", FilterOp::Eq, "u1")
        .filter("userUsername", FilterOp::Ne, "new");
    let items = all_pages(&store, Container::Posts, &query, 2).await;
    let found: BTreeSet<String> = ids(&items).into_iter().collect();
    let expected: BTreeSet<String> = ["p0", "p2", "p4", "l1", "l2", "l3", "l4", "l5"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(found, expected);
    assert_eq!(items.len(), expected.len(), "no item twice");

    // What `rebuild` asks: every item of one type.
    let posts = all_pages(
        &store,
        Container::Posts,
        &Query::cross_partition().of_type("post"),
        4,
    )
    .await;
    assert_eq!(posts.len(), 6);
}

async fn offset_skips_the_first_items(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("post");
    for n in 1..=5u32 {
        let mut item = post(&format!("p{n}"), "u1", "ada", &date(n));
        item["postId"] = json!(format!("p{n}"));
        // The feed container is partitioned by type: all posts share one partition.
        store
            .create_item(Container::Feed, &pk, item)
            .await
            .expect("feed item");
    }
    let beyond = Query::in_partition(pk)
        .of_type("post")
        .order_by("creationDate", SortOrder::Descending)
        .skip(2);
    let page = store
        .query(Container::Feed, &beyond, PageRequest::first(1_000))
        .await
        .expect("offset query");
    assert_eq!(ids(&page.items), ["p3", "p2", "p1"]);
    assert_eq!(page.continuation, None);
}

async fn malformed_continuations_are_refused(store: Arc<dyn Store>) {
    let query = Query::in_partition(PartitionKey::single("p1")).of_type("comment");
    let result = store
        .query(
            Container::Posts,
            &query,
            PageRequest {
                max_items: 10,
                continuation: Some("not a token".into()),
            },
        )
        .await;
    assert!(
        matches!(result, Err(StoreError::BadRequest(_))),
        "{result:?}"
    );
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

async fn change_feed_resumes_from_its_checkpoint(store: Arc<dyn Store>) {
    let (initial, checkpoint) = drain_changes(&store, Container::Users, None, 100).await;
    assert!(initial.is_empty());

    for n in 1..=3u32 {
        let id = format!("u{n}");
        store
            .create_item(
                Container::Users,
                &PartitionKey::single(id.as_str()),
                json!({"id": id, "type": "user", "userId": id, "username": format!("user {n}")}),
            )
            .await
            .expect("user");
    }
    let (changes, checkpoint) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    let mut changed = ids(&changes);
    changed.sort();
    assert_eq!(changed, ["u1", "u2", "u3"]);
    for item in &changes {
        for field in ["_etag", "_ts"] {
            assert!(item.get(field).is_some(), "{field} missing from {item}");
        }
        // The service puts `_lsn` on every change; the SDK's in-memory emulator does not
        // (nor in the change's metadata), so only the embedded store is held to it here.
        if store.backend() == "embedded" {
            assert!(item.get("_lsn").is_some(), "_lsn missing from {item}");
        }
    }

    // Nothing new: nothing delivered, however often one asks.
    let (again, checkpoint) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    assert!(again.is_empty(), "already delivered: {again:?}");

    store
        .upsert_item(
            Container::Users,
            &PartitionKey::single("u2"),
            json!({"id": "u2", "type": "user", "userId": "u2", "username": "renamed"}),
        )
        .await
        .expect("rename");
    let (renamed, _) = drain_changes(&store, Container::Users, checkpoint, 100).await;
    assert_eq!(ids(&renamed), ["u2"]);
    assert_eq!(renamed[0]["username"], "renamed");
}

async fn change_feed_delivers_the_latest_version_once(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    let mut item = post("p1", "u1", "ada", &date(1));
    store
        .create_item(Container::Posts, &pk, item.clone())
        .await
        .expect("create");
    for count in 1..=3 {
        item["likeCount"] = json!(count);
        store
            .upsert_item(Container::Posts, &pk, item.clone())
            .await
            .expect("update");
    }
    let (changes, _) = drain_changes(&store, Container::Posts, None, 100).await;
    assert_eq!(ids(&changes), ["p1"], "one item, once");
    assert_eq!(changes[0]["likeCount"], 3, "its latest version");
}

async fn change_feed_pages_are_bounded(store: Arc<dyn Store>) {
    for n in 0..7u32 {
        let id = format!("p{n}");
        store
            .create_item(
                Container::Posts,
                &PartitionKey::single(id.as_str()),
                post(&id, "u1", "ada", &date(n)),
            )
            .await
            .expect("post");
    }
    let (changes, _) = drain_changes(&store, Container::Posts, None, 2).await;
    let mut changed = ids(&changes);
    changed.sort();
    assert_eq!(
        changed,
        ["p0", "p1", "p2", "p3", "p4", "p5", "p6"],
        "each once"
    );
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

async fn an_in_filter_matches_any_of_its_values(store: Arc<dyn Store>) {
    let pk = PartitionKey::single("p1");
    for (id, kind, date) in [
        ("c1", "comment", "2026-01-01T00:00:02.0000000Z"),
        ("l1", "like", "2026-01-01T00:00:03.0000000Z"),
        ("t1", "tombstone", "2026-01-01T00:00:01.0000000Z"),
        ("c2", "comment", "2026-01-01T00:00:04.0000000Z"),
    ] {
        let item = json!({"id": id, "postId": "p1", "type": kind, "creationDate": date});
        store
            .create_item(Container::Posts, &pk, item)
            .await
            .unwrap();
    }
    let query = Query::in_partition(pk)
        .of_types(&["comment", "tombstone"])
        .order_by("creationDate", SortOrder::Ascending);
    let page = store
        .query(Container::Posts, &query, PageRequest::first(10))
        .await
        .unwrap();
    let ids: Vec<&str> = page
        .items
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1", "c1", "c2"]);
}
