//! The views when `OnPostChanged` stops halfway: its author copy write fails (a crash, a
//! store outage) after the batch began, the post changes again before the batch is delivered
//! again, and the change feed then delivers only the post's latest version. The handler
//! learns where a post's view copies are from its author copy, so no copy may be placed
//! where that copy does not name yet: the tag and month copies of the version that was never
//! fully handled must not outlive it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
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
);

/// Bounds a failing test on a loaded machine; never a measure of speed.
const PATIENCE: Duration = Duration::from_secs(60);

/// Hooks that refuse, while the gate is closed, every write of a post's copy in `users` (as
/// an outage would, transiently, so the pump delivers the batch again).
#[derive(Default)]
struct AuthorCopiesRefused {
    closed: AtomicBool,
    refused: AtomicUsize,
}

#[async_trait]
impl Hooks for AuthorCopiesRefused {
    async fn before(&self, call: &Call<'_>, _inner: &dyn Store) -> StoreResult<()> {
        let refused = self.closed.load(Ordering::SeqCst)
            && call.writes()
            && call.container == Container::Users
            && call
                .partition
                .is_some_and(|pk| call.ids.iter().any(|id| !is_user_item(pk, id)));
        if refused {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(StoreError::Unavailable(
                "author copies refused by the test".into(),
            ));
        }
        Ok(())
    }
}

type Gated = Double<AuthorCopiesRefused>;

async fn app_on_gated_store(backend: Backend) -> (TestApp, Arc<Gated>) {
    let data_dir = TempDir::new().expect("temp dir");
    let store = open_backend(backend, Tenancy::Single, &data_dir).await;
    let gated = double::over(store, AuthorCopiesRefused::default());
    let app = TestApp::spawn_on(gated.clone())
        .data_dir(data_dir)
        .start()
        .await;
    (app, gated)
}

/// Publishes a tagged post while its author copy cannot be written, waits until the handler
/// has tried (and failed) at least once, then lets `change` alter the post before opening
/// the gate. Returns the post's id.
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
    let (app, gated) = app_on_gated_store(backend).await;
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
    let (app, gated) = app_on_gated_store(backend).await;
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
