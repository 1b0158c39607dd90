//! C2, Q2, Q3.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, ids, operation_tests};

operation_tests!(
    a_post_has_the_specified_shape_and_a_canonical_date,
    only_the_author_can_edit_and_counts_survive_an_edit,
    a_post_needs_a_registered_author,
    a_users_posts_are_short_newest_first_and_paged,
    post_fields_are_validated,
);

fn is_canonical_date(value: &Value) -> bool {
    let text = value.as_str().unwrap_or_default();
    text.len() == 28
        && text.ends_with('Z')
        && text.as_bytes()[19] == b'.'
        && cosmos_blog::domain::Timestamp::normalise(text).as_deref() == Some(text)
}

async fn a_post_has_the_specified_shape_and_a_canonical_date(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let mut keys: Vec<&str> = post
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "commentCount",
            "content",
            "creationDate",
            "id",
            "likeCount",
            "postId",
            "publishedDate",
            "status",
            "title",
            "type",
            "userId",
            "userUsername"
        ]
    );
    assert_eq!(post["type"], "post");
    assert_eq!(post["status"], "published");
    assert_eq!(post["publishedDate"], post["creationDate"]);
    assert_eq!(post["id"], post["postId"]);
    assert_eq!(post["userId"], "ada");
    assert_eq!(post["userUsername"], "Ada");
    assert_eq!(post["commentCount"], 0);
    assert_eq!(post["likeCount"], 0);
    assert!(
        is_canonical_date(&post["creationDate"]),
        "{}",
        post["creationDate"]
    );
    let id = post["id"].as_str().unwrap();
    assert_eq!(app.get_json(&format!("/api/posts/{id}")).await, post);
}

async fn only_the_author_can_edit_and_counts_survive_an_edit(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let id = post["id"].as_str().unwrap();
    app.liked("bob", id).await;

    let path = format!("/api/posts/{id}");
    let edit = json!({"title": "Hello again", "content": "Edited"});
    let by_bob = app
        .send(Method::PUT, &path, Some("bob"), Some(edit.clone()))
        .await;
    assert_eq!(by_bob.status(), StatusCode::FORBIDDEN);
    let anonymous = app.send(Method::PUT, &path, None, Some(edit.clone())).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let by_ada = app.send(Method::PUT, &path, Some("ada"), Some(edit)).await;
    assert_eq!(by_ada.status(), StatusCode::OK);
    let edited: Value = by_ada.json().await.unwrap();
    assert_eq!(edited["title"], "Hello again");
    assert_eq!(edited["content"], "Edited");
    assert_eq!(edited["likeCount"], 1, "an edit must keep the counts");
    assert_eq!(edited["creationDate"], post["creationDate"]);
    assert_eq!(app.get_json(&path).await, edited);

    let missing = app
        .send(
            Method::PUT,
            "/api/posts/nope",
            Some("ada"),
            Some(json!({"title": "t", "content": "c"})),
        )
        .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

async fn a_post_needs_a_registered_author(app: TestApp) {
    let response = app.create_post("ghost", "Boo", "...").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "user-not-found");
    let feed = app.get_json("/api/feed").await;
    assert_eq!(feed["items"], json!([]));
}

async fn a_users_posts_are_short_newest_first_and_paged(app: TestApp) {
    app.register("ada", "Ada").await;
    let long = "λ".repeat(250);
    let mut created = app.new_posts("ada", 5, "post", &long).await;
    created.reverse(); // newest first
    // Compare the ids, not just the count: pages read while copies are still arriving may
    // repeat one item and miss another (a page boundary moves under the reader).
    let listed = eventually(Duration::from_secs(20), || async {
        let items = app.all_pages("/api/users/ada/posts", 2).await;
        (ids(&items) == created).then_some(items)
    })
    .await;
    assert_eq!(ids(&listed), created);
    for item in &listed {
        assert_eq!(item["content"].as_str().unwrap().chars().count(), 200);
        assert_eq!(item["type"], "post");
        assert!(item.get("_etag").is_none() && item.get("_ts").is_none());
    }
    let full = app.get_json(&format!("/api/posts/{}", created[0])).await;
    assert_eq!(full["content"].as_str().unwrap().chars().count(), 250);

    let first_page = app.get_json("/api/users/ada/posts?limit=2").await;
    assert_eq!(first_page["items"].as_array().unwrap().len(), 2);
    assert!(first_page["continuation"].is_string());

    app.register("bob", "Bob").await;
    assert_eq!(
        app.get_json("/api/users/bob/posts").await,
        json!({"items": [], "continuation": null})
    );
    assert_eq!(
        app.get("/api/users/nobody/posts").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn post_fields_are_validated(app: TestApp) {
    app.register("ada", "Ada").await;
    let cases = [
        json!({"title": "", "content": "c"}),
        json!({"title": "t".repeat(301), "content": "c"}),
        json!({"title": "t", "content": ""}),
        json!({"title": "t", "content": "c".repeat(100_001)}),
        json!({"title": "t"}),
        json!({"title": 5, "content": "c"}),
    ];
    for body in cases {
        let response = app
            .send(Method::POST, "/api/posts", Some("ada"), Some(body))
            .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }
    let ok = app
        .create_post("ada", &"t".repeat(300), &"c".repeat(100_000))
        .await;
    assert_eq!(ok.status(), StatusCode::CREATED);
}
