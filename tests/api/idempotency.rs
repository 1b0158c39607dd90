//! `Idempotency-Key` on C2 (`POST /api/posts`) and C3 (`POST …/comments`): a retry after an
//! ambiguous failure creates nothing, answers what the first request created, and a key
//! sent with another body, or an invalid one, is refused with nothing written.

use std::time::Duration;

use cosmos_blog::domain::Timestamp;
use cosmos_blog::store::{Container, PageRequest, Query};
use futures::future::join_all;
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::errors::{assert_problem, everything};
use testkit::{TestApp, ids, surface_tests};

surface_tests!(
    a_repeated_post_creates_nothing_and_answers_the_first,
    a_repeated_comment_creates_nothing_and_answers_the_first,
    a_key_sent_with_another_body_is_422_and_writes_nothing,
    keys_of_different_callers_never_collide,
    without_a_key_every_request_creates,
    an_invalid_key_is_400_and_writes_nothing,
    the_key_of_a_deleted_post_is_409,
    concurrent_repeats_of_one_key_create_one_item_and_counts_stay_exact,
    a_retry_after_its_publish_at_has_passed_answers_the_first,
);

const KEY: &str = "8e03978e-40d5-43e8-bc93-6894a57f9324";

/// A command as `caller` with an `Idempotency-Key` header (given as sent).
async fn send_with_key(
    app: &TestApp,
    path: &str,
    caller: &str,
    key: &str,
    body: Value,
) -> Response {
    app.client
        .post(app.url(path))
        .header("x-ms-client-principal-id", caller)
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await
        .expect("request sent")
}

async fn post_with_key(app: &TestApp, caller: &str, key: &str, title: &str) -> Response {
    let body = json!({"title": title, "content": "written once"});
    send_with_key(app, "/api/posts", caller, key, body).await
}

async fn comment_with_key(
    app: &TestApp,
    caller: &str,
    post_id: &str,
    key: &str,
    content: &str,
) -> Response {
    let path = format!("/api/posts/{post_id}/comments");
    send_with_key(app, &path, caller, key, json!({"content": content})).await
}

async fn created(response: Response) -> Value {
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.expect("item JSON")
}

/// Every post in the posts container, whoever wrote it: the sources, not their copies.
pub(crate) async fn stored_posts(app: &TestApp) -> Vec<Value> {
    let query = Query::cross_partition().of_type("post");
    let page = app
        .store
        .query(Container::Posts, &query, PageRequest::first(1_000))
        .await
        .expect("query");
    page.items
}

/// How many posts `user` has in the posts container (the sources, not their copies).
async fn stored_posts_of(app: &TestApp, user: &str) -> usize {
    let posts = stored_posts(app).await;
    posts.iter().filter(|post| post["userId"] == user).count()
}

/// Every item of the posts container: what C2 and C3 write. (Not the copies: the change feed
/// may still be copying the post when it is deleted, and removes the copy after; a
/// snapshot of the copies is only at rest once it has, which nothing shows from outside.)
async fn sources(app: &TestApp) -> Vec<Value> {
    let page = app
        .whole_store
        .query(
            Container::Posts,
            &Query::cross_partition(),
            PageRequest::first(1_000),
        )
        .await
        .expect("query");
    page.items
}

async fn post_by_ada(app: &TestApp) -> String {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    post["id"].as_str().expect("post id").to_owned()
}

async fn a_repeated_post_creates_nothing_and_answers_the_first(app: TestApp) {
    app.register("ada", "Ada").await;
    let first = created(post_with_key(&app, "ada", KEY, "Once").await).await;
    // The draft's structured-field string and the bare key are the same key.
    let quoted = format!("\"{KEY}\"");
    for key in [KEY, quoted.as_str()] {
        let again = created(post_with_key(&app, "ada", key, "Once").await).await;
        assert_eq!(again, first, "the first request's post, as stored");
    }
    let stored = app
        .get_json(&format!("/api/posts/{}", first["id"].as_str().unwrap()))
        .await;
    assert_eq!(stored, first);
    // One post in the store, and its copies converge on it alone.
    assert_eq!(stored_posts_of(&app, "ada").await, 1);
    app.assert_verifies().await;
    let posts = app.all_pages("/api/users/ada/posts", 10).await;
    assert_eq!(ids(&posts), ids(&[first]));
}

async fn a_repeated_comment_creates_nothing_and_answers_the_first(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("bob", "Bob").await;
    let first = created(comment_with_key(&app, "bob", &post_id, KEY, "Nice").await).await;
    let again = created(comment_with_key(&app, "bob", &post_id, KEY, "Nice").await).await;
    assert_eq!(again, first);
    let comments = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 10)
        .await;
    assert_eq!(comments, [first]);
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["commentCount"], 1);
    app.assert_verifies().await;
}

async fn a_key_sent_with_another_body_is_422_and_writes_nothing(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let post = created(post_with_key(&app, "ada", KEY, "Once").await).await;
    let comment = created(comment_with_key(&app, "ada", &post_id, KEY, "Nice").await).await;
    // The copies in place first, so the snapshot is at rest.
    app.assert_verifies().await;
    let before = everything(&app).await;

    let other_title = post_with_key(&app, "ada", KEY, "Twice").await;
    let problem = assert_problem(
        other_title,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert!(
        problem["detail"].as_str().unwrap().contains("post"),
        "{problem}"
    );
    let other_content = comment_with_key(&app, "ada", &post_id, KEY, "Nicer").await;
    assert_problem(
        other_content,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert_eq!(everything(&app).await, before, "nothing written");

    // The first ones stand.
    let path = format!("/api/posts/{}", post["id"].as_str().unwrap());
    assert_eq!(app.get_json(&path).await["title"], "Once");
    let comments = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 10)
        .await;
    assert_eq!(comments, [comment]);
}

async fn keys_of_different_callers_never_collide(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("bob", "Bob").await;
    let by_ada = created(post_with_key(&app, "ada", KEY, "Once").await).await;
    let by_bob = created(post_with_key(&app, "bob", KEY, "Once").await).await;
    assert_ne!(by_ada["id"], by_bob["id"]);
    assert_eq!(by_bob["userId"], "bob");

    let ada_says = created(comment_with_key(&app, "ada", &post_id, KEY, "Hi").await).await;
    let bob_says = created(comment_with_key(&app, "bob", &post_id, KEY, "Hi").await).await;
    assert_ne!(ada_says["id"], bob_says["id"]);
    // The same key on another post comments there: a key belongs to the post it was sent to.
    let other_post = by_ada["id"].as_str().unwrap();
    let elsewhere = created(comment_with_key(&app, "ada", other_post, KEY, "Hi").await).await;
    assert_ne!(elsewhere["id"], ada_says["id"]);
    assert_eq!(elsewhere["postId"], other_post);

    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["commentCount"], 2);
    assert_eq!(stored_posts_of(&app, "ada").await, 2, "Hello and Once");
    assert_eq!(stored_posts_of(&app, "bob").await, 1);
    app.assert_verifies().await;
}

async fn without_a_key_every_request_creates(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let first = app.new_post("ada", "Same", "written once").await;
    let second = app.new_post("ada", "Same", "written once").await;
    assert_ne!(first["id"], second["id"]);
    for _ in 0..2 {
        app.commented("ada", &post_id, "Same").await;
    }
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["commentCount"], 2);
}

async fn an_invalid_key_is_400_and_writes_nothing(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.assert_verifies().await;
    let before = everything(&app).await;
    let too_long = "k".repeat(256);
    for key in [
        "",
        "\"\"",
        "a b",
        "\"unterminated",
        "back\\slash",
        too_long.as_str(),
    ] {
        for response in [
            post_with_key(&app, "ada", key, "Once").await,
            comment_with_key(&app, "ada", &post_id, key, "Nice").await,
        ] {
            let problem = assert_problem(response, StatusCode::BAD_REQUEST, "invalid-field").await;
            assert_eq!(problem["field"], "Idempotency-Key", "{key:?}");
        }
    }
    // Not ASCII, and sent twice.
    let not_ascii = reqwest::header::HeaderValue::from_bytes("clé".as_bytes()).unwrap();
    let twice = app
        .client
        .post(app.url("/api/posts"))
        .header("x-ms-client-principal-id", "ada")
        .header("Idempotency-Key", "one")
        .header("Idempotency-Key", "two")
        .json(&json!({"title": "Once", "content": "written once"}))
        .send()
        .await
        .expect("request sent");
    let latin = app
        .client
        .request(Method::POST, app.url("/api/posts"))
        .header("x-ms-client-principal-id", "ada")
        .header("Idempotency-Key", not_ascii)
        .json(&json!({"title": "Once", "content": "written once"}))
        .send()
        .await
        .expect("request sent");
    for response in [twice, latin] {
        let problem = assert_problem(response, StatusCode::BAD_REQUEST, "invalid-field").await;
        assert_eq!(problem["field"], "Idempotency-Key");
    }
    assert_eq!(everything(&app).await, before, "nothing written");
}

async fn the_key_of_a_deleted_post_is_409(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = created(post_with_key(&app, "ada", KEY, "Once").await).await;
    let path = format!("/api/posts/{}", post["id"].as_str().unwrap());
    let deleted = app.send(Method::DELETE, &path, Some("ada"), None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let before = sources(&app).await;

    let again = post_with_key(&app, "ada", KEY, "Once").await;
    assert_problem(again, StatusCode::CONFLICT, "post-deleted").await;
    assert_eq!(sources(&app).await, before, "nothing written");
    assert_eq!(app.get(&path).await.status(), StatusCode::NOT_FOUND);
    app.assert_verifies().await;
}

async fn concurrent_repeats_of_one_key_create_one_item_and_counts_stay_exact(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let users = app.register_many("user-", 5).await;
    let posts = join_all((0..20).map(|_| post_with_key(&app, "ada", KEY, "Once"))).await;
    let mut post_ids = Vec::new();
    for response in posts {
        post_ids.push(created(response).await["id"].clone());
    }
    post_ids.dedup();
    assert_eq!(post_ids.len(), 1, "every repeat answers the one post");

    // Each user sends each of three comments four times at once, with likes in between.
    let comments = users
        .iter()
        .flat_map(|user| (0..3).flat_map(move |n| (0..4).map(move |_| (user.clone(), n))));
    let commenting = join_all(comments.map(|(user, n)| {
        let app = &app;
        let post_id = &post_id;
        async move {
            let key = format!("{user}-comment-{n}");
            let content = format!("comment {n} of {user}");
            let response = comment_with_key(app, &user, post_id, &key, &content).await;
            created(response).await["id"].as_str().unwrap().to_owned()
        }
    }));
    let liking = join_all(users.iter().map(|user| app.like(user, &post_id)));
    let (comment_ids, likes) = tokio::join!(commenting, liking);
    assert!(likes.iter().all(|r| r.status() == StatusCode::CREATED));
    let distinct: std::collections::BTreeSet<_> = comment_ids.iter().collect();
    assert_eq!(distinct.len(), users.len() * 3, "one comment per key");

    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["commentCount"], users.len() * 3);
    assert_eq!(post["likeCount"], users.len());
    let listed = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 100)
        .await;
    assert_eq!(listed.len(), users.len() * 3);
    assert_eq!(stored_posts_of(&app, "ada").await, 2, "Hello and Once");
    app.assert_verifies().await;
}

/// A scheduled post retried with its key once its `publishAt` has passed: the retry is
/// answered with the post the first request made, as the store holds it, and only a request
/// new to its key is refused for a time that is past.
async fn a_retry_after_its_publish_at_has_passed_answers_the_first(app: TestApp) {
    app.register("ada", "Ada").await;
    let at = crate::drafts::in_seconds(2);
    let body = json!({
        "title": "Soon",
        "content": "written once",
        "status": "scheduled",
        "publishAt": at,
    });
    let first = created(send_with_key(&app, "/api/posts", "ada", KEY, body.clone()).await).await;
    assert_eq!(first["status"], "scheduled");
    let publish_at = Timestamp::parse(&at).unwrap();
    testkit::eventually(Duration::from_secs(30), || async {
        (Timestamp::now() > publish_at).then_some(())
    })
    .await;
    let again = created(send_with_key(&app, "/api/posts", "ada", KEY, body.clone()).await).await;
    assert_eq!(again, first, "the first request's post, as stored");
    let other_key = send_with_key(&app, "/api/posts", "ada", "another-key", body).await;
    let problem = assert_problem(other_key, StatusCode::BAD_REQUEST, "invalid-field").await;
    assert!(
        problem["detail"].as_str().unwrap().contains("publishAt"),
        "{problem}"
    );
    assert_eq!(stored_posts_of(&app, "ada").await, 1);
    app.assert_verifies().await;
}
