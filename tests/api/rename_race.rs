//! The rename race: a post, comment or like written while its author is renamed
//! carries the name read before the rename; if the rename's fan-out query ran before the item
//! was visible, only the item's own change can correct it. These tests force that order.

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::copies::{on_post_changed, on_user_changed};
use cosmos_blog::domain::{LikeId, UserId};
use cosmos_blog::store::{Container, PartitionKey, Store};
use cosmos_blog::verify::verify;
use reqwest::StatusCode;
use serde_json::{Value, json};

use testkit::{TestApp, backend_tests, backend_tests_without_pump, eventually};

use crate::store_contract::count_and_child;

backend_tests_without_pump!(
    an_item_the_fan_out_missed_is_corrected_by_its_own_change,
    the_other_order_converges_too,
);
backend_tests!(through_the_pump_an_item_written_after_the_fan_out_converges);

const DATE: &str = "2026-01-01T00:00:00.0000000Z";

async fn read(store: &Arc<dyn Store>, container: Container, partition: &str, id: &str) -> Value {
    store
        .read_item(container, &PartitionKey::single(partition), id)
        .await
        .unwrap()
        .unwrap()
        .item
}

/// What the API writes for a comment or like (`[replace post If-Match, create item]`), with
/// the username it read before the rename.
async fn write_child(store: &Arc<dyn Store>, post_id: &str, count_field: &str, child: Value) {
    let pk = PartitionKey::single(post_id);
    let post = store
        .read_item(Container::Posts, &pk, post_id)
        .await
        .unwrap()
        .unwrap();
    let mut bumped = post.item;
    bumped[count_field] = json!(bumped[count_field].as_u64().unwrap() + 1);
    store
        .execute_batch(
            Container::Posts,
            &pk,
            count_and_child(bumped, post.etag, child),
        )
        .await
        .unwrap();
}

fn stale_like(post_id: &str, user: &str, username: &str) -> Value {
    let id = LikeId::for_liker(&UserId::parse(user).unwrap());
    json!({
        "id": id.to_string(), "type": "like", "postId": post_id, "userId": user,
        "userUsername": username, "creationDate": DATE
    })
}

/// All changes of `posts` after `since`, however many reads that takes.
async fn changes_after(
    store: &Arc<dyn Store>,
    since: Option<cosmos_blog::store::Checkpoint>,
) -> (Vec<Value>, Option<cosmos_blog::store::Checkpoint>) {
    let mut items = Vec::new();
    let mut checkpoint = since;
    loop {
        let batch = store
            .read_changes(Container::Posts, checkpoint.as_ref(), 1_000)
            .await
            .unwrap();
        let done = batch.items.is_empty();
        items.extend(batch.items);
        checkpoint = Some(batch.checkpoint);
        if done {
            return (items, checkpoint);
        }
    }
}

/// U (named `old`) and A registered, and A's post written: its id, and where the change log
/// stands after it (what came so far is not what the race tests are about).
async fn u_and_as_post(app: &TestApp) -> (String, Option<cosmos_blog::store::Checkpoint>) {
    app.register("u", "old").await;
    app.register("a", "A").await;
    let others = app.new_post("a", "A's post", "text").await;
    let (_, checkpoint) = changes_after(&app.store, None).await;
    (others["id"].as_str().unwrap().to_owned(), checkpoint)
}

/// U renamed to `new` through the API, and the rename's fan-out run once, now: U's item, and
/// how many items the fan-out wrote.
async fn rename_u(app: &TestApp) -> (Value, usize) {
    assert_eq!(app.put_user("u", "new").await.status(), StatusCode::OK);
    let user = read(&app.store, Container::Users, "u", "u").await;
    let fan_out = on_user_changed(&app.store, std::slice::from_ref(&user))
        .await
        .unwrap();
    (user, fan_out.written)
}

async fn an_item_the_fan_out_missed_is_corrected_by_its_own_change(app: TestApp) {
    let store = &app.store;
    let (others, checkpoint) = u_and_as_post(&app).await;

    // U is renamed, and the rename's fan-out runs while U's new items are not yet visible:
    // it finds nothing to rename.
    let (user, renamed) = rename_u(&app).await;
    assert_eq!(renamed, 0, "nothing of u's is visible yet");

    // Then the items U's requests wrote with the name they read before the rename appear:
    // a post, a comment and a like.
    let stale_post = json!({
        "id": "race-post", "type": "post", "postId": "race-post", "userId": "u",
        "userUsername": "old", "title": "t", "content": "c",
        "commentCount": 0, "likeCount": 0, "creationDate": DATE
    });
    store
        .create_item(
            Container::Posts,
            &PartitionKey::single("race-post"),
            stale_post,
        )
        .await
        .unwrap();
    let stale_comment = json!({
        "id": "race-comment", "type": "comment", "postId": others, "userId": "u",
        "userUsername": "old", "content": "hi", "creationDate": DATE
    });
    write_child(store, &others, "commentCount", stale_comment).await;
    let like = stale_like(&others, "u", "old");
    let like_id = like["id"].as_str().unwrap().to_owned();
    write_child(store, &others, "likeCount", like).await;

    // OnPostChanged handles their changes: it compares each with its author's current name.
    let (batch, checkpoint) = changes_after(store, checkpoint).await;
    assert_eq!(
        batch.len(),
        4,
        "u's post, comment and like, and A's post (counts)"
    );
    let first = on_post_changed(store, &batch).await.unwrap();
    // Each post is the first of its month in the archive (u's of January 2026, A's of this
    // month): its copy and the month's count, then the index's entry.
    assert_eq!(
        first.written,
        3 + 2 * 2 + 2 * 3,
        "three corrections, then a user copy and a feed copy of each of the two posts, and each \
         post's month in the archive: {first:?}"
    );
    for (partition, id) in [
        ("race-post", "race-post"),
        (others.as_str(), "race-comment"),
        (others.as_str(), like_id.as_str()),
    ] {
        let item = read(store, Container::Posts, partition, id).await;
        assert_eq!(item["userUsername"], "new", "{id}");
    }
    let copy = read(store, Container::Users, "u", "race-post").await;
    assert_eq!(
        copy["userUsername"], "new",
        "the copies follow the corrected post"
    );
    let counted = read(store, Container::Posts, &others, &others).await;
    assert_eq!(
        (
            counted["commentCount"].clone(),
            counted["likeCount"].clone()
        ),
        (json!(1), json!(1)),
        "the corrections kept the counts"
    );

    // The corrections are changes themselves; they come back and write nothing.
    let (corrections, _) = changes_after(store, checkpoint).await;
    assert_eq!(corrections.len(), 3);
    let again = on_post_changed(store, &corrections).await.unwrap();
    assert_eq!(again.written, 0, "{again:?}");
    // Nor does the first batch, delivered again, nor the rename.
    assert_eq!(on_post_changed(store, &batch).await.unwrap().written, 0);
    assert_eq!(on_user_changed(store, &[user]).await.unwrap().written, 0);

    let report = verify(store).await.unwrap();
    assert!(report.holds(), "{}", report.violation_lines(100).join("\n"));
}

async fn through_the_pump_an_item_written_after_the_fan_out_converges(app: TestApp) {
    app.register("u", "old").await;
    app.register("a", "A").await;
    let post = app.new_post("a", "A's post", "text").await;
    let post = post["id"].as_str().unwrap().to_owned();
    app.commented("u", &post, "first").await;
    assert_eq!(app.put_user("u", "new").await.status(), StatusCode::OK);
    // The fan-out has run: it renamed the comment that existed.
    eventually(Duration::from_secs(30), || async {
        let comments = app.get_json(&format!("/api/posts/{post}/comments")).await;
        (comments["items"][0]["userUsername"] == "new").then_some(())
    })
    .await;

    // Only now does a like appear that a request wrote with the name it read before.
    write_child(
        &app.store,
        &post,
        "likeCount",
        stale_like(&post, "u", "old"),
    )
    .await;
    eventually(Duration::from_secs(30), || async {
        let likes = app.get_json(&format!("/api/posts/{post}/likes")).await;
        (likes["items"][0]["userUsername"] == "new").then_some(())
    })
    .await;
    app.assert_verifies().await;
}

/// The reverse order: the item's own change is handled before the rename commits (it finds
/// the name it carries still current), and the rename's fan-out, which runs after, finds the
/// item and renames it; its change then finds nothing to correct.
async fn the_other_order_converges_too(app: TestApp) {
    let store = &app.store;
    let (others, checkpoint) = u_and_as_post(&app).await;

    write_child(store, &others, "likeCount", stale_like(&others, "u", "old")).await;
    let (batch, checkpoint) = changes_after(store, checkpoint).await;
    let first = on_post_changed(store, &batch).await.unwrap();
    assert_eq!(
        first.written,
        2 + 3,
        "only A's post's copies: in users, the feed and its month of the archive (with the \
         month's count and its index entry): {first:?}"
    );

    let (_, renamed) = rename_u(&app).await;
    assert_eq!(renamed, 1, "the like is renamed");

    let (renamed, _) = changes_after(store, checkpoint).await;
    assert_eq!(renamed.len(), 1);
    let again = on_post_changed(store, &renamed).await.unwrap();
    assert_eq!(again.written, 0, "{again:?}");
    let report = verify(store).await.unwrap();
    assert!(report.holds(), "{}", report.violation_lines(100).join("\n"));
}
