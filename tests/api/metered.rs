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

/// A page or an item kept by the blog is handed over with no store request while nothing was
/// committed, and read again, showing the write, after any commit.
#[tokio::test]
async fn a_kept_read_costs_no_request_until_something_is_written() {
    use cosmos_blog::blog::{Blog, ListCache, ListRequest, PageSize};
    use cosmos_blog::domain::{Like, PostContent, Title, UserId, Username};

    let dir = tempfile::tempdir().unwrap();
    let inner = EmbeddedStore::open(&dir.path().join("db.sqlite3")).unwrap();
    assert!(inner.keep_partition_versions().await.unwrap());
    let store = meter(Arc::new(inner));
    let blog = Blog::with_lists(
        Arc::new(store.clone()),
        ListCache::new(1 << 20).scoped(""),
        cosmos_blog::signing::ServerKey::drawn(),
    );
    let (ada, bob) = (UserId::parse("ada").unwrap(), UserId::parse("bob").unwrap());
    for (user, name) in [(&ada, "Ada"), (&bob, "Bob")] {
        let username = Username::parse(name).unwrap();
        blog.put_user(user, user.clone(), username).await.unwrap();
    }
    let (title, content) = (
        Title::parse("Kept").unwrap(),
        PostContent::parse("x").unwrap(),
    );
    let post = blog.create_post(&ada, title, content).await.unwrap();
    let first_page = || ListRequest::first(PageSize::DEFAULT);
    let likes = || async {
        blog.likes::<Like>(&post.id, None, first_page())
            .await
            .unwrap()
    };
    let read_post = || async { blog.get_post(&post.id).await.unwrap() };

    assert!(likes().await.items.is_empty());
    read_post().await;
    store.take();
    assert!(likes().await.items.is_empty());
    read_post().await;
    assert_eq!(store.take().requests, 0, "both kept, nothing written since");

    blog.like_post(&bob, &post.id).await.unwrap();
    store.take();
    assert_eq!(likes().await.items.len(), 1, "the like shows at once");
    assert_eq!(store.take().requests, 1, "read again after a commit");
    assert_eq!(likes().await.items.len(), 1);
    assert_eq!(store.take().requests, 0, "kept again");
}
