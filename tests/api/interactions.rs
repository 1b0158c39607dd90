//! C3, Q4, C4, Q5: comments and likes, their counts, and concurrency.

use std::collections::HashSet;
use std::sync::Arc;

use cosmos_blog::store::Tenancy;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

use testkit::{Backend, TestApp, ids, operation_tests};

operation_tests!(
    comments_count_and_list_oldest_first_with_paging,
    a_repeated_like_changes_nothing,
    fifty_concurrent_likes_count_fifty,
    concurrent_comments_and_likes_keep_counts_exact,
    comments_and_likes_need_an_existing_post,
    a_bad_continuation_token_is_a_400,
);

testkit::on_every_backend!(keyed_embedded, keyed_cosmos: a_token_is_taken_by_every_instance_with_the_servers_key);

async fn post_by_ada(app: &TestApp) -> String {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    post["id"].as_str().unwrap().to_owned()
}

async fn comments_count_and_list_oldest_first_with_paging(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("bob", "Bob").await;
    let mut written = Vec::new();
    for n in 0..7 {
        let response = app.comment("bob", &post_id, &format!("comment {n}")).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let comment: Value = response.json().await.unwrap();
        assert_eq!(comment["type"], "comment");
        assert_eq!(comment["postId"], post_id.as_str());
        assert_eq!(comment["userId"], "bob");
        assert_eq!(comment["userUsername"], "Bob");
        written.push(comment);
    }
    let listed = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 3)
        .await;
    assert_eq!(ids(&listed), ids(&written), "oldest first, all pages");
    assert_eq!(listed, written);
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["commentCount"], 7);
    assert_eq!(post["likeCount"], 0);
}

async fn a_repeated_like_changes_nothing(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("bob", "Bob").await;
    let first = app.like("bob", &post_id).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    assert_eq!(first["type"], "like");
    assert_eq!(first["userUsername"], "Bob");
    let again = app.like("bob", &post_id).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["likeCount"], 1);
    let likes = app
        .all_pages(&format!("/api/posts/{post_id}/likes"), 50)
        .await;
    assert_eq!(likes, vec![first]);
}

async fn fifty_concurrent_likes_count_fifty(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let likers: Vec<String> = (0..50).map(|n| format!("user-{n}")).collect();
    for liker in &likers {
        app.register(liker, liker).await;
    }
    let responses = join_all(likers.iter().map(|liker| app.like(liker, &post_id))).await;
    for response in responses {
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["likeCount"], 50);
    let likes = app
        .all_pages(&format!("/api/posts/{post_id}/likes"), 20)
        .await;
    let users: HashSet<&str> = likes
        .iter()
        .map(|l| l["userId"].as_str().unwrap())
        .collect();
    assert_eq!(likes.len(), 50);
    assert_eq!(users.len(), 50);

    // The same fifty again, at once: nothing changes.
    let responses = join_all(likers.iter().map(|liker| app.like(liker, &post_id))).await;
    for response in responses {
        assert_eq!(response.status(), StatusCode::OK);
    }
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["likeCount"], 50);
    app.assert_verifies().await;
}

async fn concurrent_comments_and_likes_keep_counts_exact(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let users = app.register_many("u", 20).await;
    let likes = join_all(users.iter().map(|u| app.like(u, &post_id)));
    let comments = join_all(users.iter().map(|u| app.comment(u, &post_id, "hi")));
    let (likes, comments) = tokio::join!(likes, comments);
    assert!(likes.iter().all(|r| r.status() == StatusCode::CREATED));
    assert!(comments.iter().all(|r| r.status() == StatusCode::CREATED));
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(post["likeCount"], 20);
    assert_eq!(post["commentCount"], 20);
    let listed = app
        .all_pages(&format!("/api/posts/{post_id}/comments"), 100)
        .await;
    assert_eq!(listed.len(), 20);
    app.assert_verifies().await;
}

async fn comments_and_likes_need_an_existing_post(app: TestApp) {
    app.register("bob", "Bob").await;
    assert_eq!(
        app.comment("bob", "missing", "hi").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.like("bob", "missing").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/posts/missing/comments").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/posts/missing/likes").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/posts/missing").await.status(),
        StatusCode::NOT_FOUND
    );
    // A caller without a user item cannot comment or like either.
    let post_id = post_by_ada(&app).await;
    assert_neither_comment_nor_like(&app, "ghost", &post_id).await;
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(
        (post["commentCount"].clone(), post["likeCount"].clone()),
        (0.into(), 0.into())
    );
}

/// `caller` can neither comment on nor like `post_id`: one of the two is not there (404).
pub(crate) async fn assert_neither_comment_nor_like(app: &TestApp, caller: &str, post_id: &str) {
    for response in [
        app.comment(caller, post_id, "hi").await,
        app.like(caller, post_id).await,
    ] {
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "{}",
            response.url()
        );
    }
}

async fn a_bad_continuation_token_is_a_400(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    app.register("bob", "Bob").await;
    for _ in 0..3 {
        app.comment("bob", &post_id, "hi").await;
    }
    let page = app
        .get_json(&format!("/api/posts/{post_id}/comments?limit=1"))
        .await;
    let token = page["continuation"].as_str().unwrap().to_owned();
    // Another list's token, garbage, a truncated token, and tokens the server did not issue.
    let comments = format!("/api/posts/{post_id}/comments");
    let refused = [
        (format!("/api/posts/{post_id}/likes"), token.clone()),
        (comments.clone(), "garbage!!".to_owned()),
        (comments.clone(), token[..token.len() / 2].to_owned()),
        ("/api/users/ada/posts".to_owned(), token.clone()),
    ]
    .into_iter()
    .chain(
        tampered(&token)
            .into_iter()
            .map(|bad| (comments.clone(), bad)),
    );
    for (path, bad) in refused {
        let response = app
            .client
            .get(app.url(&path))
            .query(&[("continuation", bad.as_str())])
            .send()
            .await
            .unwrap();
        let status = response.status();
        let problem: Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {bad}: {problem}");
        assert_eq!(problem["code"], "invalid-continuation", "{path} {bad}");
    }
}

/// Tokens made from `token` that the server did not issue, each with `token`'s signature:
/// its content spelled otherwise, the store's own token inside with a character changed or a
/// quote put in (whichever store made it), and, where that token is the embedded store's
/// position (sort value, partition key, id), each of its fields changed: a date of
/// `0000-01-01`, a quote, another post's partition, an id no store holds. And the token as
/// tokens once were, unsigned.
fn tampered(token: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    let bytes = B64.decode(token).expect("base64url");
    let (payload, signature) = bytes.split_at(bytes.len() - 32);
    let (list, inner): (String, String) = serde_json::from_slice(payload).expect("[list, token]");
    let signed = |payload: &[u8]| B64.encode([payload, signature].concat());
    let wrap = |inner: &str| signed(serde_json::json!([list, inner]).to_string().as_bytes());
    let mut changed = inner.clone();
    let last = changed.pop().expect("a store token");
    changed.push(if last == 'A' { 'B' } else { 'A' });
    let quoted = format!("\"{}", &inner[1..]);
    let mut tokens = vec![
        signed(format!("[ {:?}, {:?} ]", list, inner).as_bytes()),
        wrap(&changed),
        wrap(&quoted),
        B64.encode(payload),
    ];
    let position = B64
        .decode(&inner)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<(String, String, String)>(&bytes).ok());
    if let Some((date, pk, id)) = position {
        for (date, pk, id) in [
            ("0000-01-01".to_owned(), pk.clone(), id.clone()),
            ("\"".to_owned(), pk.clone(), id.clone()),
            (date.clone(), r#"["another-post"]"#.to_owned(), id.clone()),
            (date.clone(), pk.clone(), "a/b".to_owned()),
        ] {
            let position = serde_json::json!([date, pk, id]).to_string();
            tokens.push(wrap(&B64.encode(position)));
        }
    }
    tokens
}

/// A continuation token is signed with the server's key: another instance with the same key
/// (`BLOG_CSRF_KEY`) takes it, on the same store, and one with another key refuses it.
async fn a_token_is_taken_by_every_instance_with_the_servers_key(backend: Backend) {
    let dir = tempfile::TempDir::new().unwrap();
    let store = testkit::open_backend(backend, Tenancy::Single, &dir).await;
    let instance = |key: &'static str| {
        TestApp::spawn_on(Arc::clone(&store))
            .without_pump()
            .settings(move |settings| settings.site.csrf_key = Some(key.to_owned()))
            .start()
    };
    let first = instance("one secret for every instance of the blog").await;
    let second = instance("one secret for every instance of the blog").await;
    let elsewhere = instance("the secret of another deployment, as long").await;
    let post_id = post_by_ada(&first).await;
    first.register("bob", "Bob").await;
    for n in 0..3 {
        first
            .commented("bob", &post_id, &format!("remark {n}"))
            .await;
    }
    let path = format!("/api/posts/{post_id}/comments");
    let page = first.get_json(&format!("{path}?limit=2")).await;
    let token = page["continuation"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let next_page = |app: &TestApp| {
        app.client
            .get(app.url(&path))
            .query(&[("limit", "2"), ("continuation", token.as_str())])
            .send()
    };
    for app in [&first, &second] {
        let response = next_page(app).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let page: Value = response.json().await.unwrap();
        assert_eq!(page["items"].as_array().unwrap().len(), 1);
    }
    let refused = next_page(&elsewhere).await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "invalid-continuation", "{problem}");
}
