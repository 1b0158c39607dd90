//! An account erasure interrupted by SIGKILL converges after a restart: the pump resumes from
//! its checkpoint and the handlers, idempotent, finish the job.

use std::collections::BTreeMap;
use std::time::Duration;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PageRequest, Query, Store};
use futures::future::join_all;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::app::request_as;
use testkit::{binary, eventually};

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        caller: &str,
        body: Option<Value>,
    ) -> StatusCode {
        let url = format!("{}{path}", self.base);
        request_as(&self.http, method, url, Some(caller), body.as_ref())
            .send()
            .await
            .expect("request")
            .status()
    }

    async fn post(&self, caller: &str, title: &str) -> String {
        let url = format!("{}/api/posts", self.base);
        let body = json!({"title": title, "content": "x"});
        let response = request_as(&self.http, Method::POST, url, Some(caller), Some(&body))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::CREATED);
        let post: Value = response.json().await.expect("post");
        post["id"].as_str().expect("id").to_owned()
    }

    /// Whether the API no longer serves one of `posts` (a tombstone reads as not found).
    async fn any_gone(&self, posts: &[String]) -> bool {
        let answers = join_all(posts.iter().map(|post| {
            self.http
                .get(format!("{}/api/posts/{post}", self.base))
                .send()
        }))
        .await;
        answers
            .into_iter()
            .any(|answer| answer.is_ok_and(|answer| answer.status() == StatusCode::NOT_FOUND))
    }
}

/// Posts of the erased user: enough that their erasure (a read and a tombstone each, then
/// their copies removed) lasts far longer than the test takes to see it begin and kill.
const ERASED_POSTS: usize = 200;

async fn everything(store: &EmbeddedStore, container: Container) -> Vec<Value> {
    store
        .query(
            container,
            &Query::cross_partition(),
            PageRequest::first(100_000),
        )
        .await
        .expect("query")
        .items
}

/// What must hold once the erasure of `erased` has finished: nothing of theirs but
/// tombstones in `posts`, no copy of their posts anywhere, and every count equal to its items.
async fn erasure_finished(store: &EmbeddedStore, erased: &str) -> Result<(), String> {
    let posts = everything(store, Container::Posts).await;
    let leftover: Vec<&Value> = posts
        .iter()
        .filter(|i| i["userId"] == erased && i["type"] != "tombstone")
        .collect();
    if !leftover.is_empty() {
        return Err(format!("{} items of {erased} left", leftover.len()));
    }
    let mut children: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for item in &posts {
        let post_id = item["postId"].as_str().unwrap_or_default().to_owned();
        match item["type"].as_str() {
            Some("comment") => children.entry(post_id).or_default().0 += 1,
            Some("like") => children.entry(post_id).or_default().1 += 1,
            _ => {}
        }
    }
    for post in posts.iter().filter(|i| i["type"] == "post") {
        let id = post["id"].as_str().unwrap_or_default();
        let counted = (
            post["commentCount"].as_u64().unwrap_or(u64::MAX),
            post["likeCount"].as_u64().unwrap_or(u64::MAX),
        );
        let actual = children.get(id).copied().unwrap_or_default();
        if counted != actual {
            return Err(format!("post {id} counts {counted:?} but has {actual:?}"));
        }
    }
    for container in [Container::Users, Container::Feed] {
        let copies = everything(store, container).await;
        if copies
            .iter()
            .any(|c| c["type"] == "post" && c["userId"] == erased)
        {
            return Err(format!(
                "a copy of a post of {erased} is left in {}",
                container.name()
            ));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_killed_halfway_converges_after_restart() {
    let data_dir = TempDir::new().expect("temp dir");
    let mut server = binary!().on_data(data_dir.path()).serve();
    let mut client = Client {
        http: reqwest::Client::new(),
        base: server.base().await,
    };

    let others: Vec<String> = (0..10).map(|n| format!("reader-{n}")).collect();
    for user in others.iter().map(String::as_str).chain(["bob"]) {
        let status = client
            .send(
                reqwest::Method::PUT,
                &format!("/api/users/{user}"),
                user,
                Some(json!({"username": user})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let mut bobs_posts = Vec::new();
    for n in 0..ERASED_POSTS {
        bobs_posts.push(client.post("bob", &format!("bob {n}")).await);
    }
    let mut others_posts = Vec::new();
    for user in &others {
        others_posts.push(client.post(user, "reader's post").await);
    }
    for (n, user) in others.iter().enumerate() {
        for post in bobs_posts.iter().take(20).skip(n % 3).step_by(3) {
            let like = client
                .send(
                    reqwest::Method::POST,
                    &format!("/api/posts/{post}/likes"),
                    user,
                    None,
                )
                .await;
            assert_eq!(like, StatusCode::CREATED);
        }
    }
    for post in &others_posts {
        let like = client
            .send(
                reqwest::Method::POST,
                &format!("/api/posts/{post}/likes"),
                "bob",
                None,
            )
            .await;
        assert_eq!(like, StatusCode::CREATED);
        for n in 0..3 {
            let comment = client
                .send(
                    reqwest::Method::POST,
                    &format!("/api/posts/{post}/comments"),
                    "bob",
                    Some(json!({"content": format!("bob says {n}")})),
                )
                .await;
            assert_eq!(comment, StatusCode::CREATED);
        }
    }

    let erase = client
        .send(reqwest::Method::DELETE, "/api/users/bob", "bob", None)
        .await;
    assert_eq!(erase, StatusCode::ACCEPTED);
    // The kill comes once the erasure has begun: one of bob's posts is gone (one in ten of
    // them is looked at, so that looking does not slow the server down).
    let watched: Vec<String> = bobs_posts.iter().step_by(10).cloned().collect();
    eventually(Duration::from_secs(60), || async {
        client.any_gone(&watched).await.then_some(())
    })
    .await;
    server.kill();

    let store = EmbeddedStore::open(&data_dir.path().join("blog.sqlite3")).expect("store");
    let halfway = erasure_finished(&store, "bob").await;
    eprintln!("at the kill: {halfway:?}");
    assert!(halfway.is_err(), "the erasure had finished before the kill");
    let tombstones = everything(&store, Container::Posts)
        .await
        .into_iter()
        .filter(|item| item["userId"] == "bob" && item["type"] == "tombstone")
        .count();
    assert!(tombstones > 0, "the erasure had not begun at the kill");

    // Restarted on the same data, on the port the system gives it this time.
    let mut server = binary!().on_data(data_dir.path()).serve();
    client.base = server.base().await;
    eventually(Duration::from_secs(60), || async {
        erasure_finished(&store, "bob").await.ok()
    })
    .await;
    let user = client
        .http
        .get(format!("{}/api/users/bob", client.base))
        .send()
        .await
        .expect("get");
    assert_eq!(user.status(), StatusCode::NOT_FOUND);
    server.kill();
}
