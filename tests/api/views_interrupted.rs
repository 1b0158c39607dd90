//! The views when `OnPostChanged` stops halfway: a write fails (a crash, a store outage)
//! after the batch began, and the change feed delivers the batch again, with only the post's
//! latest version if it changed in between.
//!
//! - The handler learns where a post's view copies are from its author copy, so no copy may be
//!   placed where that copy does not name yet: the tag and month copies of the version that
//!   was never fully handled must not outlive it.
//! - A month's count is written with its copies and the archive's index after them, so a
//!   delivery that finds the copies in place must still bring the index to the count.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::blog::archive_index_partition;
use cosmos_blog::store::{Container, Store, StoreError, StoreResult, Tenancy};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::recheck::is_user_item;
use testkit::double::{self, Call, Double, Hooks};
use testkit::{Backend, TestApp, eventually, ids, open_backend};

testkit::on_every_backend!(
    an_edit_after_an_interrupted_batch_leaves_no_tag_copy_behind,
    a_delete_after_an_interrupted_batch_leaves_no_tag_copy_behind,
    a_month_counted_before_an_interruption_reaches_the_index,
    a_month_left_before_an_interruption_reaches_the_index,
);

/// Bounds a failing test on a loaded machine; never a measure of speed.
const PATIENCE: Duration = Duration::from_secs(60);

/// Which writes a closed gate refuses.
#[derive(Clone, Copy)]
enum Refuse {
    /// A post's copy in `users`: the step between a post's views leaving and arriving.
    AuthorCopies,
    /// The archive's index: the step after a month's copies and count.
    ArchiveIndex,
}

impl Refuse {
    fn refuses(self, call: &Call<'_>) -> bool {
        call.writes()
            && match self {
                Refuse::AuthorCopies => {
                    call.container == Container::Users
                        && call
                            .partition
                            .is_some_and(|pk| call.ids.iter().any(|id| !is_user_item(pk, id)))
                }
                Refuse::ArchiveIndex => {
                    call.container == Container::Archive
                        && call.partition == Some(&archive_index_partition())
                }
            }
    }
}

/// Hooks that refuse, while the gate is closed, every write that `what` names (as an outage
/// would, transiently, so the pump delivers the batch again).
struct Gate {
    what: Refuse,
    closed: AtomicBool,
    refused: AtomicUsize,
}

#[async_trait]
impl Hooks for Gate {
    async fn before(&self, call: &Call<'_>, _inner: &dyn Store) -> StoreResult<()> {
        if self.closed.load(Ordering::SeqCst) && self.what.refuses(call) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(StoreError::Unavailable("writes refused by the test".into()));
        }
        Ok(())
    }
}

type Gated = Double<Gate>;

async fn app_on_gated_store(backend: Backend, what: Refuse) -> (TestApp, Arc<Gated>) {
    let data_dir = TempDir::new().expect("temp dir");
    let store = open_backend(backend, Tenancy::Single, &data_dir).await;
    let gate = Gate {
        what,
        closed: AtomicBool::new(false),
        refused: AtomicUsize::new(0),
    };
    let gated = double::over(store, gate);
    let app = TestApp::spawn_on(gated.clone())
        .data_dir(data_dir)
        .start()
        .await;
    (app, gated)
}

/// Publishes a tagged post while the gate is closed, waits until the handler has tried (and
/// failed) at least once, then lets `change` alter the post before opening the gate. Returns
/// the post's id.
async fn interrupted_post(app: &TestApp, gated: &Gated, change: impl AsyncFnOnce(&str)) -> String {
    app.register("ada", "Ada").await;
    gated.closed.store(true, Ordering::SeqCst);
    let body = json!({"title": "tagged", "content": "x", "tags": ["rust", "Cosmos DB"]});
    let response = app
        .send(Method::POST, "/api/posts", Some("ada"), Some(body))
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let post: Value = response.json().await.unwrap();
    let id = post["id"].as_str().unwrap().to_owned();
    eventually(PATIENCE, || async {
        (gated.refused.load(Ordering::SeqCst) > 0).then_some(())
    })
    .await;
    change(&id).await;
    gated.closed.store(false, Ordering::SeqCst);
    id
}

/// Waits until the tag's list is `expected`, then until `verify` passes.
async fn settles_with(app: &TestApp, tag: &str, expected: &[&str]) {
    let path = format!("/api/tags/{tag}/posts");
    eventually(PATIENCE, || async {
        let page = app.get_json(&path).await;
        (ids(page["items"].as_array().unwrap()) == expected).then_some(())
    })
    .await;
    app.assert_verifies().await;
}

async fn an_edit_after_an_interrupted_batch_leaves_no_tag_copy_behind(backend: Backend) {
    let (app, gated) = app_on_gated_store(backend, Refuse::AuthorCopies).await;
    let id = interrupted_post(&app, &gated, async |id: &str| {
        let body = json!({"title": "untagged now", "content": "x", "tags": ["azure"]});
        let path = format!("/api/posts/{id}");
        let response = app.send(Method::PUT, &path, Some("ada"), Some(body)).await;
        assert_eq!(response.status(), StatusCode::OK);
    })
    .await;
    settles_with(&app, "azure", &[id.as_str()]).await;
    for tag in ["rust", "cosmos-db"] {
        settles_with(&app, tag, &[]).await;
    }
}

async fn a_delete_after_an_interrupted_batch_leaves_no_tag_copy_behind(backend: Backend) {
    let (app, gated) = app_on_gated_store(backend, Refuse::AuthorCopies).await;
    interrupted_post(&app, &gated, async |id: &str| {
        let path = format!("/api/posts/{id}");
        let response = app.send(Method::DELETE, &path, Some("ada"), None).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    })
    .await;
    for tag in ["rust", "cosmos-db"] {
        settles_with(&app, tag, &[]).await;
    }
}

/// Waits until the archive's index is `expected`, then until `verify` passes.
async fn index_settles_with(app: &TestApp, expected: Value) {
    eventually(PATIENCE, || async {
        let index = app.get_json("/api/archive").await;
        (index["items"] == expected).then_some(())
    })
    .await;
    app.assert_verifies().await;
}

/// The month (`yyyy-mm`) the post was published in.
async fn month_of(app: &TestApp, id: &str) -> String {
    let post = app.get_json(&format!("/api/posts/{id}")).await;
    post["publishedDate"].as_str().expect("published")[..7].to_owned()
}

async fn a_month_counted_before_an_interruption_reaches_the_index(backend: Backend) {
    let (app, gated) = app_on_gated_store(backend, Refuse::ArchiveIndex).await;
    let id = interrupted_post(&app, &gated, async |_: &str| {}).await;
    let month = month_of(&app, &id).await;
    index_settles_with(&app, json!([{"month": month, "postCount": 1}])).await;
}

async fn a_month_left_before_an_interruption_reaches_the_index(backend: Backend) {
    let (app, gated) = app_on_gated_store(backend, Refuse::ArchiveIndex).await;
    let id = interrupted_post(&app, &gated, async |_: &str| {}).await;
    let month = month_of(&app, &id).await;
    index_settles_with(&app, json!([{"month": month, "postCount": 1}])).await;
    gated.closed.store(true, Ordering::SeqCst);
    let refused = gated.refused.load(Ordering::SeqCst);
    let path = format!("/api/posts/{id}");
    let response = app.send(Method::DELETE, &path, Some("ada"), None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    eventually(PATIENCE, || async {
        (gated.refused.load(Ordering::SeqCst) > refused).then_some(())
    })
    .await;
    gated.closed.store(false, Ordering::SeqCst);
    // A month without posts leaves the index's answer.
    index_settles_with(&app, json!([])).await;
}
