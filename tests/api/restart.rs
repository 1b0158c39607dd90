//! Durability: the real binary is killed (SIGKILL) in the middle of a burst of writes and
//! started again on the same data; every acknowledged write is there, and every copy
//! converges with nothing duplicated and nothing missing.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PageRequest, PartitionKey, Query, Store};
use reqwest::StatusCode;
use serde_json::json;
use tempfile::TempDir;

use testkit::{assert_store_verifies, binary, eventually, ids, register_at};

/// Posts written in the burst.
const WRITES: usize = 60;
/// Clients writing at once.
const WRITERS: usize = 4;
/// The kill comes with this many posts acknowledged: in the middle of the burst.
const KILL_AFTER: usize = 10;

/// Creates post `n` of ada; its id if the server acknowledged it.
async fn create_post(client: &reqwest::Client, base: &str, n: usize) -> Option<String> {
    let response = client
        .post(format!("{base}/api/posts"))
        .header("x-ms-client-principal-id", "ada")
        .json(&json!({"title": format!("post {n}"), "content": "x"}))
        .send()
        .await
        .ok()?;
    if response.status() != StatusCode::CREATED {
        return None;
    }
    let post: serde_json::Value = response.json().await.ok()?;
    post["id"].as_str().map(str::to_owned)
}

async fn all_items(
    store: &Arc<dyn Store>,
    container: Container,
    pk: &str,
) -> Vec<serde_json::Value> {
    let query = Query::in_partition(PartitionKey::single(pk)).of_type("post");
    store
        .query(container, &query, PageRequest::first(10_000))
        .await
        .unwrap()
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_loses_nothing_and_its_copies_converge() {
    let data_dir = TempDir::new().unwrap();
    let client = reqwest::Client::new();
    let mut server = binary!().on_data(data_dir.path()).serve();
    let base = server.base().await;

    register_at(&client, &format!("{base}/api"), "ada", "Ada").await;

    // A burst of writes from a few clients, each sending its next post as soon as the last
    // one is answered. The client whose answer is the KILL_AFTER-th acknowledgement kills the
    // server at once, while the others' writes are in flight.
    let server = Arc::new(Mutex::new(server));
    let next = Arc::new(AtomicUsize::new(0));
    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (client, base) = (client.clone(), base.clone());
            let (server, next) = (Arc::clone(&server), Arc::clone(&next));
            let acknowledged = Arc::clone(&acknowledged);
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= WRITES {
                        return;
                    }
                    let Some(id) = create_post(&client, &base, n).await else {
                        continue;
                    };
                    let mut acknowledged = acknowledged.lock().unwrap();
                    acknowledged.insert(id);
                    if acknowledged.len() == KILL_AFTER {
                        server.lock().unwrap().kill();
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer task");
    }
    let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
    assert!(
        !acknowledged.is_empty(),
        "some writes should land before the kill"
    );
    assert!(
        acknowledged.len() < WRITES,
        "the kill came in the middle of the burst"
    );
    eprintln!(
        "{} of {WRITES} posts acknowledged before the kill",
        acknowledged.len()
    );

    // Restarted on the same data; the system gives it another port.
    let mut server = binary!().on_data(data_dir.path()).serve();
    let base = server.base().await;
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(&data_dir.path().join("blog.sqlite3")).unwrap());

    // Every acknowledged post survived; the store may hold a few more whose answer was lost.
    let posts = store
        .query(
            Container::Posts,
            &Query::cross_partition().of_type("post"),
            PageRequest::first(10_000),
        )
        .await
        .unwrap()
        .items;
    let stored: BTreeSet<String> = ids(&posts).into_iter().collect();
    assert!(
        acknowledged.is_subset(&stored),
        "an acknowledged post was lost"
    );

    // The copies converge on exactly the stored posts, each once.
    let expected_feed: Vec<String> = {
        let mut by_date: Vec<_> = posts
            .iter()
            .map(|p| {
                (
                    p["creationDate"].as_str().unwrap().to_owned(),
                    p["id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        by_date.sort();
        by_date
            .into_iter()
            .rev()
            .take(100)
            .map(|(_, id)| id)
            .collect()
    };
    eventually(Duration::from_secs(30), || async {
        let copies = all_items(&store, Container::Users, "ada").await;
        let copy_ids: BTreeSet<String> = ids(&copies).into_iter().collect();
        let feed: serde_json::Value = client
            .get(format!("{base}/api/feed"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        let feed_ids = ids(feed["items"].as_array()?);
        (copies.len() == stored.len() && copy_ids == stored && feed_ids == expected_feed)
            .then_some(())
    })
    .await;
    let feed_items = all_items(&store, Container::Feed, "post").await;
    assert_eq!(
        feed_items.len(),
        expected_feed.len(),
        "no duplicates in the feed container"
    );
    assert_store_verifies(&store, Duration::from_secs(60)).await;

    server.kill();
    assert_binary_verifies(data_dir.path());
}

/// Runs `cosmos-blog verify` on the embedded store in `data_dir`; panics unless it exits 0
/// with the verdict `verify: OK`. A server killed before its change-feed pump saved its last
/// checkpoint leaves changes whose copies are already made but not yet marked applied: verify
/// says so on a line of its own before the verdict, which is the only other line it may say.
pub fn assert_binary_verifies(data_dir: &std::path::Path) {
    let output = binary!().on_data(data_dir).subcommand("verify").output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "verify failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let (verdict, before) = lines.split_last().expect("verify says its verdict");
    assert!(verdict.starts_with("verify: OK"), "{stdout}");
    assert!(
        before
            .iter()
            .all(|line| line.contains("not yet applied by the change feed")),
        "{stdout}"
    );
}
