//! `OnPostChanged` writes a batch's copies as one transactional batch per target partition
//! (the author copies per author, the feed's additions and trims together), so a burst of
//! posts costs a handful of writes instead of one per copy and one per trimmed post.

use std::sync::Arc;

use cosmos_blog::copies::on_post_changed;
use cosmos_blog::store::{Container, PartitionKey, Store};
use serde_json::{Value, json};
use testkit::metered::meter;

use testkit::{TestApp, backend_tests};

use crate::changefeed::feed_ids;

backend_tests!(
    a_batch_of_posts_is_one_write_per_partition,
    a_feed_past_its_bound_is_trimmed_by_the_next_delivery,
);

fn post_document(n: usize, author: &str) -> Value {
    let id = format!("p{n:03}");
    json!({
        "id": id, "type": "post", "postId": id, "userId": author, "userUsername": author,
        "title": "t", "content": "c", "commentCount": 0, "likeCount": 0,
        "creationDate": format!("2026-11-22T09:{:02}:{:02}.0000000Z", n / 60, n % 60),
    })
}

fn newest(range: std::ops::Range<usize>) -> Vec<String> {
    range.rev().map(|n| format!("p{n:03}")).collect()
}

async fn a_batch_of_posts_is_one_write_per_partition(app: TestApp) {
    let metered = meter(Arc::clone(&app.store));
    let store: Arc<dyn Store> = Arc::new(metered.clone());

    // 150 posts by three authors; none is stored yet, nor any copy.
    let authors = ["ada", "bob", "cy"];
    let batch: Vec<Value> = (0..150).map(|n| post_document(n, authors[n % 3])).collect();
    let report = on_post_changed(&store, &batch).await.unwrap();
    assert_eq!(report.processed, 150);
    // The 150 posts are of one month: its archive partition takes their copies in two
    // batches (a batch holds 100 operations, one of them the month's count), and the index
    // the count once.
    let archive = (99 + 1) + (51 + 1) + 1;
    assert_eq!(
        report.written,
        150 + 100 + archive,
        "every author copy; the 100 newest in the feed; the month's copies, counts and index"
    );
    let metrics = metered.take();
    // Per author one point read (the username check of the rename race); per post three point
    // reads (its current version, its author's copy, its copy in the archive); three author
    // batches; the feed read twice (the write changes which posts it holds, so it is read
    // again before it is fenced; an empty feed has no oldest copy to fence with) and one feed
    // batch; per archive batch a read of the count and the batch; a read and a write of the
    // index; one query of the schedule (no post is scheduled: nothing written there).
    assert_eq!(metrics.requests, 3 + 150 * 3 + 3 + 2 + 1 + 2 * 2 + 2 + 1);
    assert_eq!(metrics.items_written, 250 + archive as u64);
    assert_eq!(feed_ids(&app.store).await, newest(50..150));

    // 30 newer posts by one author: their copies and the trim of the 30 they push out of
    // the feed go in one feed batch, their archive copies and the month's count in one
    // archive batch. The feed's batch deletes its oldest copy under If-Match (the fence), read
    // between two reads of the feed.
    let batch: Vec<Value> = (150..180).map(|n| post_document(n, "ada")).collect();
    let report = on_post_changed(&store, &batch).await.unwrap();
    assert_eq!(report.written, 30 + 30 + 30 + (30 + 1) + 1);
    let metrics = metered.take();
    assert_eq!(
        metrics.requests,
        1 + 30 * 3 + 1 + (1 + 1 + 1) + 1 + (1 + 1) + 2 + 1
    );
    assert_eq!(feed_ids(&app.store).await, newest(80..180));

    // Delivered again: nothing to write, and no write request. The month's count and the
    // index are read (an earlier delivery may have stopped between the two).
    let report = on_post_changed(&store, &batch).await.unwrap();
    assert_eq!(report.written, 0);
    let metrics = metered.take();
    assert_eq!(metrics.requests, 1 + 30 * 3 + 1 + 1 + 2);
    assert_eq!(metrics.items_written, 0);
}

/// A feed write cut short (its additions committed, the deletes of the posts they push out
/// not) leaves the feed past its bound, out of the window's sight: the batch's next delivery
/// finds nothing else to write, and trims it.
async fn a_feed_past_its_bound_is_trimmed_by_the_next_delivery(app: TestApp) {
    let store = &app.store;
    let batch: Vec<Value> = (0..130).map(|n| post_document(n, "ada")).collect();
    on_post_changed(store, &batch).await.unwrap();
    assert_eq!(feed_ids(store).await, newest(30..130));
    // The 30 oldest posts' copies back in the feed, as the cut-short write leaves them.
    let author = PartitionKey::single("ada");
    for n in 0..30 {
        let id = format!("p{n:03}");
        let copy = store
            .read_item(Container::Users, &author, &id)
            .await
            .unwrap();
        let copy = copy.expect("an author copy").item;
        let feed = PartitionKey::single("post");
        store
            .upsert_item(Container::Feed, &feed, copy)
            .await
            .unwrap();
    }
    assert_eq!(feed_ids(store).await.len(), 130);

    let report = on_post_changed(store, &batch[100..]).await.unwrap();
    // The trim changes which posts the feed holds: the feed's oldest copy is rewritten with
    // it, under If-Match, so that no other handler's write decided on the same feed goes in.
    assert_eq!(report.written, 30 + 1, "the trim alone, and its fence");
    assert_eq!(feed_ids(store).await.len(), 100);
    assert_eq!(feed_ids(store).await, newest(30..130));
}
