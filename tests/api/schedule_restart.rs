//! A scheduled post outlives its server: written with tags, the server killed (SIGKILL) before
//! the post's time, and published by the server started again on the same data, at the top of
//! the feed, in its tag's list and in its month; a draft written beside it stays unseen, and
//! the store verifies.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::{binary, eventually, ids, register_at};

use crate::drafts::in_seconds;
use crate::restart::assert_binary_verifies;

/// How far ahead the post is scheduled: past the kill and the restart's start.
const AHEAD_SECONDS: i64 = 3;

async fn get(client: &reqwest::Client, url: String) -> Option<Value> {
    client.get(url).send().await.ok()?.json().await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_post_written_before_a_kill_is_published_after_the_restart() {
    let data_dir = TempDir::new().unwrap();
    let client = reqwest::Client::new();
    let serve = || {
        binary!()
            .on_data(data_dir.path())
            .env("BLOG_PUBLISH_STEP_MS", "200")
            .serve()
    };
    let mut server = serve();
    let base = server.base().await;
    let write = |body: Value| {
        client
            .post(format!("{base}/api/posts"))
            .header("x-ms-client-principal-id", "ada")
            .json(&body)
            .send()
    };
    register_at(&client, &format!("{base}/api"), "ada", "Ada").await;
    let publish_at = in_seconds(AHEAD_SECONDS);
    let scheduled = write(json!({
        "title": "Later", "content": "x", "tags": ["rust"],
        "status": "scheduled", "publishAt": publish_at,
    }))
    .await
    .unwrap();
    assert_eq!(scheduled.status(), StatusCode::CREATED);
    let scheduled: Value = scheduled.json().await.unwrap();
    let draft = write(json!({
        "title": "Unseen", "content": "x", "tags": ["rust"], "status": "draft",
    }))
    .await
    .unwrap();
    assert_eq!(draft.status(), StatusCode::CREATED);
    server.kill();

    // Started again on the same data (another port) once the post's time has passed: nobody
    // asks for anything, and the post is published.
    tokio::time::sleep(Duration::from_secs(AHEAD_SECONDS as u64)).await;
    let mut server = serve();
    let base = server.base().await;
    let id = scheduled["id"].as_str().unwrap().to_owned();
    let month = format!("{}/{}", &publish_at[..4], &publish_at[5..7]);
    eventually(Duration::from_secs(30), || async {
        let feed = get(&client, format!("{base}/api/feed")).await?;
        let tagged = get(&client, format!("{base}/api/tags/rust/posts")).await?;
        let in_month = get(&client, format!("{base}/api/archive/{month}/posts")).await?;
        [feed, tagged, in_month]
            .iter()
            .all(|list| {
                list["items"]
                    .as_array()
                    .is_some_and(|items| ids(items) == [id.clone()])
            })
            .then_some(())
    })
    .await;
    let post = get(&client, format!("{base}/api/posts/{id}"))
        .await
        .unwrap();
    assert_eq!(post["status"], "published");
    let draft_id = draft.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let unseen = client
        .get(format!("{base}/api/posts/{draft_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        unseen.status(),
        StatusCode::NOT_FOUND,
        "a draft is its author's alone"
    );

    server.kill();
    assert_binary_verifies(data_dir.path());
}
