//! Lists and items read again after every kind of write. The application keeps pages of lists
//! and the items of point reads in memory and serves one again only while the store vouches
//! that its partition is unchanged, so each write shows on the very next read, of the API and
//! of the pages alike. Every list and item is read twice before each write, so that the
//! second read is served from what was kept.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    every_write_to_a_kept_list_shows_on_the_next_read,
    a_kept_later_page_follows_writes_too,
    every_write_to_a_kept_item_shows_on_the_next_read,
);

/// How long the change feed may take to make a copy, on a loaded machine.
const CHANGE_FEED: Duration = Duration::from_secs(30);

/// The ids of the items of `path`, read twice (the second read may be served from memory);
/// both reads must agree.
async fn twice(app: &TestApp, path: &str) -> Vec<String> {
    let first = app.get_json(path).await;
    let second = app.get_json(path).await;
    assert_eq!(
        first, second,
        "{path}: read twice without a write in between"
    );
    ids(first["items"].as_array().expect("a page"))
}

/// The item at `path`, read twice (the second read may be served from memory); both reads
/// must agree.
async fn item_twice(app: &TestApp, path: &str) -> Value {
    let first = app.get_json(path).await;
    let second = app.get_json(path).await;
    assert_eq!(
        first, second,
        "{path}: read twice without a write in between"
    );
    first
}

/// Waits until the author's list shows the post as Q2 answers it now (title, counts).
async fn settled(app: &TestApp, post_id: &str) {
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    let author = post["userId"].as_str().expect("author").to_owned();
    eventually(CHANGE_FEED, || async {
        let listed = app.get_json(&format!("/api/users/{author}/posts")).await;
        let copy = &listed["items"][0];
        let same = ["id", "title", "commentCount", "likeCount", "userUsername"]
            .iter()
            .all(|field| copy[field] == post[field]);
        same.then_some(())
    })
    .await;
}

async fn created(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("JSON body")
}

async fn every_write_to_a_kept_list_shows_on_the_next_read(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = app.new_post("ada", "Kept", "pages").await;
    let post_id = post["id"].as_str().expect("post id").to_owned();
    let comments = format!("/api/posts/{post_id}/comments");
    let likes = format!("/api/posts/{post_id}/likes");
    let posts_of_ada = "/api/users/ada/posts";

    assert!(twice(&app, &comments).await.is_empty());
    let comment = created(app.comment("bob", &post_id, "first").await).await;
    let comment_id = comment["id"].as_str().expect("comment id").to_owned();
    assert_eq!(twice(&app, &comments).await, [comment_id.as_str()]);

    assert!(twice(&app, &likes).await.is_empty());
    let like = created(app.like("bob", &post_id).await).await;
    assert_eq!(twice(&app, &likes).await, [like["id"].as_str().unwrap()]);
    let unliked = app.send(Method::DELETE, &likes, Some("bob"), None).await;
    assert!(unliked.status().is_success(), "{}", unliked.status());
    assert!(twice(&app, &likes).await.is_empty(), "unliked");

    // The username fan-out rewrites the comment in the post's partition.
    app.put_user("bob", "Robert").await;
    eventually(CHANGE_FEED, || async {
        (app.get_json(&comments).await["items"][0]["userUsername"] == "Robert").then_some(())
    })
    .await;
    assert_eq!(twice(&app, &comments).await, [comment_id.as_str()]);

    let deleted = app
        .delete_as("bob", &format!("{comments}/{comment_id}"))
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(
        twice(&app, &comments).await.is_empty(),
        "the comment deleted"
    );

    // Q3 reads the copies the change feed makes in the author's partition of `users`: once
    // the copy shows the post as it is now, nothing more is on its way to it.
    settled(&app, &post_id).await;
    assert_eq!(twice(&app, posts_of_ada).await, [post_id.as_str()]);
    app.edited(
        "ada",
        &post_id,
        json!({"title": "Edited", "content": "pages"}),
    )
    .await;
    settled(&app, &post_id).await;
    assert_eq!(twice(&app, posts_of_ada).await, [post_id.as_str()]);
    assert_eq!(
        app.get_json(posts_of_ada).await["items"][0]["title"],
        "Edited"
    );
    let deleted = app.delete_as("ada", &format!("/api/posts/{post_id}")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = app.get(&comments).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND, "the post deleted");
    app.assert_verifies().await;
}

async fn a_kept_later_page_follows_writes_too(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Pages", "of comments").await;
    let post_id = post["id"].as_str().expect("post id").to_owned();
    let mut written = Vec::new();
    for n in 0..3 {
        let comment = created(app.comment("ada", &post_id, &format!("comment {n}")).await).await;
        written.push(comment["id"].as_str().expect("comment id").to_owned());
    }
    let first = app
        .get_json(&format!("/api/posts/{post_id}/comments?limit=2"))
        .await;
    let token = first["continuation"].as_str().expect("a second page");
    let second = format!("/api/posts/{post_id}/comments?limit=2&continuation={token}");
    assert_eq!(twice(&app, &second).await, written[2..]);
    let comment = created(app.comment("ada", &post_id, "comment 3").await).await;
    written.push(comment["id"].as_str().expect("comment id").to_owned());
    assert_eq!(
        twice(&app, &second).await,
        written[2..],
        "the new comment on it"
    );
    app.assert_verifies().await;
}

async fn every_write_to_a_kept_item_shows_on_the_next_read(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let ada = "/api/users/ada";
    assert_eq!(item_twice(&app, ada).await["username"], "Ada");
    app.put_user("ada", "Ada L.").await;
    assert_eq!(item_twice(&app, ada).await["username"], "Ada L.", "renamed");

    let post = app.new_post("ada", "Kept", "items").await;
    let post_id = post["id"].as_str().expect("post id").to_owned();
    let path = format!("/api/posts/{post_id}");
    assert_eq!(item_twice(&app, &path).await["title"], "Kept");
    let edited = app
        .send(
            Method::PUT,
            &path,
            Some("ada"),
            Some(json!({"title": "Edited", "content": "items"})),
        )
        .await;
    assert_eq!(edited.status(), StatusCode::OK);
    assert_eq!(item_twice(&app, &path).await["title"], "Edited", "edited");

    // The change feed counts the like on the post: a write to its partition like any other.
    created(app.like("bob", &post_id).await).await;
    eventually(CHANGE_FEED, || async {
        (app.get_json(&path).await["likeCount"] == 1).then_some(())
    })
    .await;
    assert_eq!(item_twice(&app, &path).await["likeCount"], 1);

    let deleted = app.send(Method::DELETE, &path, Some("ada"), None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&path).await.status(),
        StatusCode::NOT_FOUND,
        "deleted"
    );
    app.assert_verifies().await;
}

/// `stop-counting` through the binary: refused while a store that keeps pages has the file
/// open (it relies on every write being counted), done once nothing has it open, and said
/// when there was nothing to stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_counting_waits_for_a_store_nobody_has_open() {
    use cosmos_blog::store::embedded::EmbeddedStore;
    use cosmos_blog::store::{Container, PartitionKey, Store};

    let data = tempfile::TempDir::new().unwrap();
    let stop_counting = || {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos-blog"))
            .arg("stop-counting")
            .env("BLOG_DATA_DIR", data.path())
            .env("RUST_LOG", "warn")
            .output()
            .expect("the binary runs");
        let said = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), said)
    };
    let store = EmbeddedStore::open(&data.path().join("blog.sqlite3")).expect("store");
    assert!(store.keep_partition_versions().await.unwrap());
    let comment = json!({"id": "c1", "type": "comment", "postId": "p1"});
    store
        .upsert_item(Container::Posts, &PartitionKey::single("p1"), comment)
        .await
        .unwrap();
    let (stopped, said) = stop_counting();
    assert!(!stopped, "{said}");
    assert!(said.contains("open in another process"), "{said}");

    drop(store);
    // The store's writer thread closes its connection soon after the store is dropped.
    let (stopped, said) = eventually(Duration::from_secs(10), || async {
        let (stopped, said) = stop_counting();
        (!said.contains("open in another process")).then_some((stopped, said))
    })
    .await;
    assert!(stopped, "{said}");
    assert!(said.contains("no longer counted"), "{said}");
    let (stopped, said) = stop_counting();
    assert!(stopped && said.contains("were not counted"), "{said}");
}
