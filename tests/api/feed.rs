//! Q6: the feed of the 100 most recent posts.

use std::time::Duration;

use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query};
use reqwest::StatusCode;
use serde_json::json;

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    the_feed_keeps_the_100_most_recent_posts_newest_first,
    the_feed_shows_short_posts_and_follows_edits,
    the_feed_limit_is_bounded,
);

async fn feed_container_size(app: &TestApp) -> usize {
    let query = Query::in_partition(PartitionKey::single("post"));
    app.store
        .query(Container::Feed, &query, PageRequest::first(1_000))
        .await
        .unwrap()
        .items
        .len()
}

async fn the_feed_keeps_the_100_most_recent_posts_newest_first(app: TestApp) {
    app.register("ada", "Ada").await;
    let created = app.new_posts("ada", 105, "post", "x").await;
    let newest_first: Vec<String> = created.iter().rev().take(100).cloned().collect();
    let feed = eventually(Duration::from_secs(30), || async {
        let feed = app.get_json("/api/feed").await;
        let items = feed["items"].as_array().unwrap().clone();
        (ids(&items) == newest_first).then_some(feed)
    })
    .await;
    assert_eq!(feed["continuation"], json!(null));
    // The writer trims: the container itself holds no more than 100.
    let size = eventually(Duration::from_secs(20), || async {
        let size = feed_container_size(&app).await;
        (size == 100).then_some(size)
    })
    .await;
    assert_eq!(size, 100);

    // Editing a post that fell out of the feed does not bring it back.
    let oldest = &created[0];
    app.edited(
        "ada",
        oldest,
        json!({"title": "old but edited", "content": "x"}),
    )
    .await;
    // Its copy in the author's list follows the edit...
    eventually(Duration::from_secs(20), || async {
        let mine = app.all_pages("/api/users/ada/posts", 100).await;
        mine.iter()
            .any(|p| p["id"] == oldest.as_str() && p["title"] == "old but edited")
            .then_some(())
    })
    .await;
    // ...and the feed does not take it in.
    let feed = app.get_json("/api/feed").await;
    assert_eq!(ids(feed["items"].as_array().unwrap()), newest_first);
    assert_eq!(feed_container_size(&app).await, 100);
    app.assert_verifies().await;
}

async fn the_feed_shows_short_posts_and_follows_edits(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Long", &"ß".repeat(300)).await;
    let id = post["id"].as_str().unwrap().to_owned();
    let item = eventually(Duration::from_secs(20), || async {
        let feed = app.get_json("/api/feed").await;
        feed["items"].as_array().unwrap().first().cloned()
    })
    .await;
    assert_eq!(item["content"], "ß".repeat(200));
    assert_eq!(item["title"], "Long");
    assert_eq!(item["creationDate"], post["creationDate"]);

    app.edited("ada", &id, json!({"title": "Short now", "content": "tiny"}))
        .await;
    eventually(Duration::from_secs(20), || async {
        let feed = app.get_json("/api/feed").await;
        let first = feed["items"][0].clone();
        (first["title"] == "Short now" && first["content"] == "tiny").then_some(())
    })
    .await;
    // Likes reach the copies through the change feed too.
    app.register("bob", "Bob").await;
    app.like("bob", &id).await;
    eventually(Duration::from_secs(20), || async {
        let feed = app.get_json("/api/feed").await;
        let mine = app.get_json("/api/users/ada/posts").await;
        (feed["items"][0]["likeCount"] == 1 && mine["items"][0]["likeCount"] == 1).then_some(())
    })
    .await;
}

async fn the_feed_limit_is_bounded(app: TestApp) {
    app.register("ada", "Ada").await;
    for n in 0..3 {
        app.new_post("ada", &format!("p{n}"), "x").await;
    }
    eventually(Duration::from_secs(20), || async {
        let feed = app.get_json("/api/feed").await;
        (feed["items"].as_array().unwrap().len() == 3).then_some(())
    })
    .await;
    let two = app.get_json("/api/feed?limit=2").await;
    assert_eq!(two["items"].as_array().unwrap().len(), 2);
    for bad in ["0", "101", "-1", "many"] {
        let response = app.get(&format!("/api/feed?limit={bad}")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "limit={bad}");
    }
}
