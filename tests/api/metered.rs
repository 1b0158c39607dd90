//! The metering store of the tests and the harness (`testkit::metered`): what it counts is
//! what their assertions on an access pattern's cost rest on.

use std::sync::Arc;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query, Store, charge};
use serde_json::json;
use testkit::metered::{MeteredStore, Metrics, meter};

fn store() -> (tempfile::TempDir, MeteredStore) {
    let dir = tempfile::tempdir().unwrap();
    let inner = EmbeddedStore::open(&dir.path().join("db.sqlite3")).unwrap();
    (dir, meter(Arc::new(inner)))
}

#[tokio::test]
async fn counts_requests_partitions_and_items() {
    let (_dir, store) = store();
    for (post, id) in [("p1", "a"), ("p1", "b"), ("p2", "c")] {
        let pk = PartitionKey::single(post);
        let item = json!({"id": id, "postId": post, "type": "comment"});
        store
            .create_item(Container::Posts, &pk, item)
            .await
            .unwrap();
    }
    let written = store.take();
    assert_eq!(written.requests, 3);
    assert_eq!(written.partitions, 2);
    assert_eq!(written.items_written, 3);
    assert_eq!(
        written.request_units, None,
        "the embedded store charges no RU"
    );

    let pk = PartitionKey::single("p1");
    let doc = store.read_item(Container::Posts, &pk, "a").await.unwrap();
    let one = store.take();
    assert_eq!((one.requests, one.partitions, one.items_read), (1, 1, 1));
    assert_eq!(one.bytes_read, doc.unwrap().item.to_string().len() as u64);

    let everywhere = Query::cross_partition().of_type("comment");
    let page = store
        .query(Container::Posts, &everywhere, PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    let fan_out = store.take();
    assert_eq!(fan_out.requests, 1);
    assert_eq!(fan_out.partitions, 2, "every partition holding a match");
    assert_eq!(fan_out.fan_out_queries, 1);
    assert_eq!(store.snapshot(), Metrics::default());
}

#[tokio::test]
async fn passes_request_units_on_to_the_callers_scope() {
    let (_dir, store) = store();
    let pk = PartitionKey::single("p1");
    let (_, charged) = charge::measure(async {
        store.read_item(Container::Posts, &pk, "x").await.unwrap();
    })
    .await;
    // The embedded store charges nothing; what matters is that nothing is invented.
    assert_eq!(charged, 0.0);
    assert_eq!(store.take().requests, 1);
}
