//! The denormalisation pipelines (the change-feed handlers of `users` and `posts`): username fan-out, post copies, idempotence,
//! date normalisation, bad documents, rebuild.

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::copies::{on_post_changed, on_user_changed, rebuild};
use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query, Store, Tenancy};
use reqwest::StatusCode;
use serde_json::{Value, json};

use testkit::{Backend, TestApp, eventually, ids, on_every_backend, operation_tests};

operation_tests!(
    a_username_change_reaches_every_item_and_copy,
    handlers_are_idempotent,
    host_reformatted_dates_are_normalised_in_copies,
    a_bad_document_is_skipped_without_losing_the_batch,
    a_late_batch_cannot_roll_a_copy_back,
);

async fn a_username_change_reaches_every_item_and_copy(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let ada_post = app.new_post("ada", "Ada's", "text").await;
    let bob_post = app.new_post("bob", "Bob's", "text").await;
    let (ada_post, bob_post) = (
        ada_post["id"].as_str().unwrap().to_owned(),
        bob_post["id"].as_str().unwrap().to_owned(),
    );
    app.commented("ada", &bob_post, "nice").await;
    app.liked("ada", &bob_post).await;
    app.commented("ada", &ada_post, "mine").await;

    assert_eq!(
        app.put_user("ada", "Ada Lovelace").await.status(),
        StatusCode::OK
    );

    eventually(Duration::from_secs(20), || async {
        let post = app.get_json(&format!("/api/posts/{ada_post}")).await;
        let comments = app
            .get_json(&format!("/api/posts/{bob_post}/comments"))
            .await;
        let own_comments = app
            .get_json(&format!("/api/posts/{ada_post}/comments"))
            .await;
        let likes = app.get_json(&format!("/api/posts/{bob_post}/likes")).await;
        let mine = app.get_json("/api/users/ada/posts").await;
        let feed = app.get_json("/api/feed").await;
        let ada_in_feed = feed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == ada_post.as_str())
            .cloned()
            .unwrap_or_default();
        let renamed = "Ada Lovelace";
        (post["userUsername"] == renamed
            && comments["items"][0]["userUsername"] == renamed
            && own_comments["items"][0]["userUsername"] == renamed
            && likes["items"][0]["userUsername"] == renamed
            && mine["items"][0]["userUsername"] == renamed
            && ada_in_feed["userUsername"] == renamed)
            .then_some(())
    })
    .await;
    // Bob's items are untouched.
    let bob = app.get_json(&format!("/api/posts/{bob_post}")).await;
    assert_eq!(bob["userUsername"], "Bob");
    app.assert_verifies().await;
}

fn post_document(id: &str, user: &str, date: &str) -> Value {
    json!({
        "id": id, "type": "post", "postId": id, "userId": user, "userUsername": user,
        "title": format!("title {id}"), "content": "c".repeat(250),
        "commentCount": 0, "likeCount": 0, "creationDate": date,
        "_rid": "abc==", "_etag": "\"0000\"", "_ts": 1_800_000_000, "_lsn": 7
    })
}

/// The ids of the post copies in the feed container, newest first, as the store holds them.
/// It reads up to 1,000 so that a feed left past its bound of 100 shows every extra copy
/// rather than a page that hides them.
pub(crate) async fn feed_ids(store: &Arc<dyn Store>) -> Vec<String> {
    let query = Query::in_partition(PartitionKey::single("post"))
        .of_type("post")
        .order_by("creationDate", cosmos_blog::store::SortOrder::Descending);
    let page = store
        .query(Container::Feed, &query, PageRequest::first(1_000))
        .await
        .unwrap();
    ids(&page.items)
}

async fn handlers_are_idempotent(app: TestApp) {
    let store = &app.store;
    let batch = vec![
        post_document("p1", "ada", "2026-11-22T09:15:02.1234567Z"),
        post_document("p2", "ada", "2026-11-22T09:15:03.1234567Z"),
    ];
    let first = on_post_changed(store, &batch).await.unwrap();
    assert_eq!(first.processed, 2);
    // Both posts are of one month: its archive partition takes their copies and its count
    // in one batch, and the archive's index the count.
    assert_eq!(
        first.written,
        2 + 2 + (2 + 1) + 1,
        "a user copy and a feed copy per post; the month's copies, count and index entry"
    );
    let again = on_post_changed(store, &batch).await.unwrap();
    assert_eq!(again.written, 0, "a repeated batch writes nothing");

    let users = vec![json!({"id": "ada", "type": "user", "userId": "ada", "username": "ada"})];
    let renamed = on_user_changed(store, &users).await.unwrap();
    assert_eq!(renamed.processed, 1);
    assert_eq!(on_user_changed(store, &users).await.unwrap().written, 0);
}

async fn host_reformatted_dates_are_normalised_in_copies(app: TestApp) {
    let store = &app.store;
    // What the Functions host does to dates: trailing zeros trimmed, offsets rewritten.
    // As raw strings "…:02Z" sorts after "…:02.5Z"; as instants it is earlier.
    let batch = vec![
        post_document("early", "ada", "2026-11-22T09:15:02Z"),
        post_document("later", "ada", "2026-11-22T09:15:02.5+00:00"),
        post_document("latest", "ada", "2026-11-22T10:15:02.6+01:00"),
    ];
    on_post_changed(store, &batch).await.unwrap();
    assert_eq!(feed_ids(store).await, ["latest", "later", "early"]);
    let copy = store
        .read_item(Container::Feed, &PartitionKey::single("post"), "early")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(copy.item["creationDate"], "2026-11-22T09:15:02.0000000Z");
    assert_eq!(copy.item["content"].as_str().unwrap().len(), 200);
    assert!(
        copy.item.get("_rid").is_none(),
        "system fields are not copied"
    );
}

async fn a_bad_document_is_skipped_without_losing_the_batch(app: TestApp) {
    let store = &app.store;
    let batch = vec![
        post_document("good-1", "ada", "2026-11-22T09:15:02Z"),
        json!({"id": "broken", "type": "post", "postId": "broken", "creationDate": "not a date"}),
        json!({"id": "c1", "type": "comment", "postId": "good-1"}),
        post_document("good-2", "ada", "2026-11-22T09:15:03Z"),
    ];
    let report = on_post_changed(store, &batch).await.unwrap();
    assert_eq!(report.processed, 2);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    let mut got = feed_ids(store).await;
    got.sort();
    assert_eq!(got, ["good-1", "good-2"]);
}

async fn a_late_batch_cannot_roll_a_copy_back(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let id = post["id"].as_str().unwrap().to_owned();
    app.like("bob", &id).await;
    eventually(Duration::from_secs(20), || async {
        let mine = app.get_json("/api/users/ada/posts").await;
        (mine["items"][0]["likeCount"] == 1).then_some(())
    })
    .await;
    // The version from before the like is delivered again, late.
    on_post_changed(&app.store, &[post]).await.unwrap();
    let mine = app.get_json("/api/users/ada/posts").await;
    assert_eq!(mine["items"][0]["likeCount"], 1);
    let feed = app.get_json("/api/feed").await;
    assert_eq!(feed["items"][0]["likeCount"], 1);
}

/// `rebuild` on both backends in both layouts, in a module of its own: the test modules
/// `operation_tests!` makes above have the same names.
mod rebuild {
    use super::rebuild_rederives_every_copy_from_the_sources;

    testkit::every_backend_and_layout!(rebuild_rederives_every_copy_from_the_sources);
}

/// `rebuild` of the whole store: in `multi` it re-derives each tenant's copies.
async fn rebuild_rederives_every_copy_from_the_sources(backend: Backend, tenancy: Tenancy) {
    let app = TestApp::spawn(backend)
        .layout(tenancy)
        .without_pump()
        .start()
        .await;
    app.register("ada", "Ada").await;
    let mut created = Vec::new();
    for n in 0..3 {
        let post = app
            .new_post("ada", &format!("p{n}"), &"z".repeat(300))
            .await;
        created.push(post["id"].as_str().unwrap().to_owned());
    }
    // Without change-feed processing there are no copies...
    assert_eq!(app.get_json("/api/feed").await["items"], json!([]));
    // ...and a rename does not reach the posts.
    app.put_user("ada", "Ada L.").await;

    let report = rebuild(&app.whole_store).await.unwrap();
    assert!(report.written >= 3 * 2, "{report:?}");
    created.reverse();
    // The feed read above may be served from memory for a few more milliseconds.
    let feed = eventually(Duration::from_secs(20), || async {
        let feed = app.get_json("/api/feed").await;
        (feed["items"].as_array().unwrap().len() == 3).then_some(feed)
    })
    .await;
    assert_eq!(ids(feed["items"].as_array().unwrap()), created);
    assert_eq!(feed["items"][0]["userUsername"], "Ada L.");
    assert_eq!(feed["items"][0]["content"], "z".repeat(200));
    let mine = app.all_pages("/api/users/ada/posts", 100).await;
    assert_eq!(ids(&mine), created);
    let again = rebuild(&app.whole_store).await.unwrap();
    assert_eq!(again.written, 0, "a second rebuild finds nothing to do");
    app.assert_verifies().await;
}

on_every_backend!(pump_wakes, pump_wakes_cosmos: a_write_wakes_the_idle_pump);

/// The pump polls for other processes' writes only once an hour here, so the copy can only
/// appear within the wait if the server's own write woke the pump.
async fn a_write_wakes_the_idle_pump(backend: Backend) {
    let app = TestApp::spawn(backend)
        .settings(|settings| settings.change_feed_poll_ms = 3_600_000)
        .start()
        .await;
    app.register("ada", "Ada").await;
    // Past the pump's first look at the empty logs: it is asleep now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let post = app.new_post("ada", "Woken", "text").await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    eventually(Duration::from_secs(30), || async {
        let feed = app.get_json("/api/feed").await;
        ids(feed["items"].as_array().unwrap())
            .contains(&post_id)
            .then_some(())
    })
    .await;
    app.assert_verifies().await;
}
