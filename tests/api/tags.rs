//! Tags on posts (C2) and Q8, a tag's posts from the `tags` view the change feed keeps.

use std::time::Duration;

use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query};
use reqwest::StatusCode;
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    tags_are_normalised_and_bad_ones_refused_with_nothing_stored,
    a_tags_posts_are_listed_newest_first_and_paged,
    tag_edits_renames_comments_likes_and_deletes_reach_the_tag_list,
    tags_are_folded_whole_must_show_and_are_counted_once_normalised,
);

pub(crate) async fn tagged_post(app: &TestApp, caller: &str, title: &str, tags: Value) -> Value {
    app.written(
        caller,
        json!({"title": title, "content": "text", "tags": tags}),
    )
    .await
}

/// The tag's list once it shows `expected` (ids, newest first).
async fn tag_list_becomes(app: &TestApp, tag: &str, expected: &[String]) -> Vec<Value> {
    eventually(Duration::from_secs(30), || async {
        let page = app
            .get_json(&format!("/api/tags/{tag}/posts?limit=100"))
            .await;
        let items = page["items"].as_array().unwrap().clone();
        (ids(&items) == expected).then_some(items)
    })
    .await
}

async fn tags_are_normalised_and_bad_ones_refused_with_nothing_stored(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = tagged_post(
        &app,
        "ada",
        "tagged",
        json!(["  Rust ", "Cosmos  DB", "rust", "ÉTÉ"]),
    )
    .await;
    assert_eq!(post["tags"], json!(["rust", "cosmos-db", "été"]));
    let id = post["id"].as_str().unwrap();
    let read = app.get_json(&format!("/api/posts/{id}")).await;
    assert_eq!(read["tags"], json!(["rust", "cosmos-db", "été"]));

    let eleven: Vec<String> = (0..11).map(|n| format!("t{n}")).collect();
    let refused = [
        json!(eleven),
        json!([""]),
        json!(["   "]),
        json!(["x".repeat(51)]),
        json!(["a/b"]),
        json!(["a?b"]),
        json!(["a#b"]),
        json!(["<b>"]),
        json!(["50%"]),
        json!("rust"),
        json!([7]),
    ];
    for tags in refused {
        let body = json!({"title": "refused", "content": "x", "tags": tags});
        let response = app.write_post("ada", body.clone()).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{tags}");
        let problem: Value = response.json().await.unwrap();
        assert!(
            problem["code"] == "invalid-field" || problem["code"] == "invalid-body",
            "{problem}"
        );
        let edit = app.edit_post("ada", id, body).await;
        assert_eq!(edit.status(), StatusCode::BAD_REQUEST, "{tags}");
    }
    // Nothing refused was stored: one post, its tags as first written.
    tag_list_becomes(&app, "rust", &[id.to_owned()]).await;
    let mine = eventually(Duration::from_secs(30), || async {
        let mine = app.all_pages("/api/users/ada/posts", 100).await;
        (!mine.is_empty()).then_some(mine)
    })
    .await;
    assert_eq!(ids(&mine), [id.to_owned()]);
    let read = app.get_json(&format!("/api/posts/{id}")).await;
    assert_eq!(read["title"], "tagged");
    assert_eq!(read["tags"], json!(["rust", "cosmos-db", "été"]));
    // A tag in a path is read as a post's tag is: `RUST` is `rust`; a bad one is a 400.
    tag_list_becomes(&app, "RUST", &[id.to_owned()]).await;
    assert_eq!(
        app.get("/api/tags/a.b/posts").await.status(),
        StatusCode::BAD_REQUEST
    );
    app.assert_verifies().await;
}

async fn a_tags_posts_are_listed_newest_first_and_paged(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let mut rust = Vec::new();
    for n in 0..5 {
        let caller = if n % 2 == 0 { "ada" } else { "bob" };
        let post = tagged_post(&app, caller, &format!("rust {n}"), json!(["rust", "db"])).await;
        rust.push(post["id"].as_str().unwrap().to_owned());
    }
    let other = tagged_post(&app, "ada", "other", json!(["go"])).await;
    let newest_first: Vec<String> = rust.iter().rev().cloned().collect();
    let items = tag_list_becomes(&app, "rust", &newest_first).await;
    assert!(items.iter().all(|item| item.get("tag").is_none()));
    assert_eq!(items[0]["userUsername"], "Ada");
    tag_list_becomes(&app, "go", &[other["id"].as_str().unwrap().to_owned()]).await;
    let paged = app.all_pages("/api/tags/rust/posts", 2).await;
    assert_eq!(ids(&paged), newest_first);
    // Short form: the content is cut to 200 characters in the list.
    let long = app
        .written(
            "ada",
            json!({"title": "long", "content": "é".repeat(300), "tags": ["long"]}),
        )
        .await;
    let listed = tag_list_becomes(&app, "long", &[long["id"].as_str().unwrap().to_owned()]).await;
    assert_eq!(listed[0]["content"].as_str().unwrap().chars().count(), 200);
    // A continuation of one tag's list is refused by another's.
    let first = app.get_json("/api/tags/rust/posts?limit=2").await;
    let token = first["continuation"].as_str().unwrap();
    let crossed = app
        .get(&format!("/api/tags/db/posts?limit=2&continuation={token}"))
        .await;
    assert_eq!(crossed.status(), StatusCode::BAD_REQUEST);
    // Nobody's tag is an empty list.
    let none = app.get_json("/api/tags/nobody/posts").await;
    assert_eq!(none["items"], json!([]));
    // Each list is one tag's partition of the view.
    let query = Query::in_partition(PartitionKey::single("rust"));
    let held = app
        .store
        .query(Container::Tags, &query, PageRequest::first(100))
        .await
        .unwrap();
    assert_eq!(held.items.len(), 5);
    app.assert_verifies().await;
}

async fn tag_edits_renames_comments_likes_and_deletes_reach_the_tag_list(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let first = tagged_post(&app, "ada", "first", json!(["rust"])).await;
    let second = tagged_post(&app, "ada", "second", json!(["rust", "web"])).await;
    let (first, second) = (
        first["id"].as_str().unwrap().to_owned(),
        second["id"].as_str().unwrap().to_owned(),
    );
    tag_list_becomes(&app, "rust", &[second.clone(), first.clone()]).await;

    // An edit that drops the tag takes the post out of its list, and one without `tags`
    // keeps them.
    let edited = app
        .edited(
            "ada",
            &second,
            json!({"title": "second", "content": "x", "tags": ["web"]}),
        )
        .await;
    assert_eq!(edited["tags"], json!(["web"]));
    tag_list_becomes(&app, "rust", std::slice::from_ref(&first)).await;
    let kept = app
        .edited(
            "ada",
            &first,
            json!({"title": "first, edited", "content": "x"}),
        )
        .await;
    assert_eq!(kept["tags"], json!(["rust"]));
    let items = tag_list_becomes(&app, "rust", std::slice::from_ref(&first)).await;
    eventually(Duration::from_secs(30), || async {
        let page = app.get_json("/api/tags/rust/posts").await;
        (page["items"][0]["title"] == "first, edited").then_some(())
    })
    .await;
    assert_eq!(items.len(), 1);

    // Comments, likes and renames reach the copies.
    app.commented("bob", &first, "hi").await;
    app.liked("bob", &first).await;
    assert_eq!(app.put_user("ada", "Ada L.").await.status(), StatusCode::OK);
    eventually(Duration::from_secs(30), || async {
        let page = app.get_json("/api/tags/rust/posts").await;
        let item = &page["items"][0];
        (item["commentCount"] == 1 && item["likeCount"] == 1 && item["userUsername"] == "Ada L.")
            .then_some(())
    })
    .await;

    // A delete takes the post out of every tag's list.
    let deleted = app.delete_as("ada", &format!("/api/posts/{first}")).await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    tag_list_becomes(&app, "rust", &[]).await;
    tag_list_becomes(&app, "web", std::slice::from_ref(&second)).await;
    // `[]` removes every tag.
    app.edited(
        "ada",
        &second,
        json!({"title": "second", "content": "x", "tags": []}),
    )
    .await;
    tag_list_becomes(&app, "web", &[]).await;
    app.assert_verifies().await;
}

/// A tag is case-folded as a whole (a final sigma is a sigma), so a word in capitals and
/// in lower case is one tag, in the post and in a path; a tag of only `-`, `_` or combining
/// marks is refused; and the ten-tag limit counts the tags left once normalised.
async fn tags_are_folded_whole_must_show_and_are_counted_once_normalised(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = tagged_post(&app, "ada", "myth", json!(["ΣΊΣΥΦΟΣ", "Σίσυφος", "Straße"])).await;
    assert_eq!(post["tags"], json!(["σίσυφοσ", "strasse"]));
    let id = post["id"].as_str().unwrap().to_owned();
    for path_tag in ["Σίσυφος", "ΣΊΣΥΦΟΣ", "STRASSE"] {
        tag_list_becomes(&app, path_tag, std::slice::from_ref(&id)).await;
    }

    // Eleven that come out as ten are ten; eleven distinct ones are refused.
    let mut eleven: Vec<String> = (0..10).map(|n| format!("t{n}")).collect();
    eleven.push("T0".to_owned());
    let ten = tagged_post(&app, "ada", "ten", json!(eleven)).await;
    assert_eq!(ten["tags"].as_array().unwrap().len(), 10);
    eleven.push("t10".to_owned());
    let refused = [
        json!(eleven),
        json!(["-"]),
        json!(["_"]),
        json!(["-_-"]),
        json!(["\u{0301}"]),
        json!(["\u{0301}\u{0308}_"]),
        json!(["rust", "--"]),
    ];
    for tags in refused {
        let body = json!({"title": "refused", "content": "x", "tags": tags});
        let response = app.write_post("ada", body.clone()).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{tags}");
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], "invalid-field", "{problem}");
        let edit = app.edit_post("ada", &id, body).await;
        assert_eq!(edit.status(), StatusCode::BAD_REQUEST, "{tags}");
    }
    for path_tag in ["-", "_", "%CC%81"] {
        let response = app.get(&format!("/api/tags/{path_tag}/posts")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path_tag}");
    }
    // Nothing refused was stored: the two posts, as written.
    let read = app.get_json(&format!("/api/posts/{id}")).await;
    assert_eq!(read["tags"], json!(["σίσυφοσ", "strasse"]));
    app.assert_verifies().await;
}
