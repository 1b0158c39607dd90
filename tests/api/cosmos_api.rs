//! What the API shows of the Cosmos DB backend: RU charges, throttling, and feed trimming by
//! concurrent handler instances.

use std::collections::HashSet;
use std::sync::Arc;

use cosmos_blog::copies::on_post_changed;
use cosmos_blog::store::Store;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::TestApp;
use testkit::emulator::{emulator_store, throttled_emulator_store};

use crate::changefeed::feed_ids;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_carry_the_request_charge() {
    let app = TestApp::spawn_on(emulator_store().await)
        .without_pump()
        .start()
        .await;
    let created = app.put_user("ada", "Ada").await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let read = app.get("/api/users/ada").await;
    let charge: f64 = read.headers()["x-ms-request-charge"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(charge > 0.0, "a point read costs RU");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_store_is_a_429_with_retry_after() {
    let app = TestApp::spawn_on(throttled_emulator_store(400).await)
        .without_pump()
        .start()
        .await;
    assert_eq!(
        app.put_user("ada", "Ada").await.status(),
        StatusCode::CREATED
    );
    // Far more than 400 RU/s: large posts, all at once.
    let content = "x".repeat(90_000);
    let responses =
        futures::future::join_all((0..60).map(|_| app.create_post("ada", "big", &content))).await;
    let mut throttled = 0;
    for response in responses {
        match response.status() {
            StatusCode::CREATED => {}
            StatusCode::TOO_MANY_REQUESTS => {
                throttled += 1;
                let retry_after: u64 = response.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(retry_after >= 1);
                let problem: Value = response.json().await.unwrap();
                assert_eq!(problem["code"], "throttled");
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(throttled > 0, "nothing was throttled");
}

fn post_document(n: usize) -> Value {
    let id = format!("post-{n:03}");
    json!({
        "id": id, "type": "post", "postId": id, "userId": "ada", "userUsername": "Ada",
        "title": "t", "content": "c", "commentCount": 0, "likeCount": 0,
        "creationDate": format!("2026-11-22T09:{:02}:{:02}.0000000Z", n / 60, n % 60),
    })
}

/// Two handler instances (two leases, or a lease moving between hosts) add posts to the feed
/// at once; both trim. The feed ends with exactly the 100 most recent posts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_feed_writers_keep_exactly_the_most_recent_100() {
    let folder = TempDir::new().unwrap();
    let embedded: Arc<dyn Store> = Arc::new(
        cosmos_blog::store::embedded::EmbeddedStore::open(&folder.path().join("blog.sqlite3"))
            .unwrap(),
    );
    for store in [emulator_store().await, embedded] {
        let posts: Vec<Value> = (0..240).map(post_document).collect();
        let (evens, odds): (Vec<Value>, Vec<Value>) = posts.iter().cloned().partition(|p| {
            p["id"]
                .as_str()
                .unwrap()
                .ends_with(['0', '2', '4', '6', '8'])
        });
        let run = |batch: Vec<Value>| {
            let store = Arc::clone(&store);
            async move {
                for chunk in batch.chunks(20) {
                    on_post_changed(&store, chunk).await.unwrap();
                }
            }
        };
        tokio::join!(run(evens), run(odds.into_iter().rev().collect()));
        let expected: Vec<String> = (140..240).rev().map(|n| format!("post-{n:03}")).collect();
        let got = feed_ids(&store).await;
        assert_eq!(
            got.iter().collect::<HashSet<_>>().len(),
            got.len(),
            "duplicates"
        );
        assert_eq!(got, expected, "{} backend", store.backend());
    }
}
