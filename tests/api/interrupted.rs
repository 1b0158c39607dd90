//! The copies when `OnPostChanged` stops halfway: a write fails (a crash, a store outage)
//! after the batch began, and the change feed delivers the batch again, with only the post's
//! latest version if it changed in between.
//!
//! - The handler learns where a post's view copies are from its author copy, so no copy may be
//!   placed where that copy does not name yet: the tag and month copies of the version that
//!   was never fully handled must not outlive it.
//! - A month's count is written with its copies and the archive's index after them, so a
//!   delivery that finds the copies in place must still bring the index to the count.
//! - A post that leaves the feed leaves room that the refill fills: a delivery that finds the
//!   post gone from the feed must not leave the feed short.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::blog::archive_index_partition;
use cosmos_blog::store::{Container, Store, StoreError, StoreResult, Tenancy};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::deletes::feed_ids;
use crate::drafts::in_seconds;
use crate::recheck::is_user_item;
use testkit::double::{self, Call, CallKind, Double, Hooks};
use testkit::{Backend, TestApp, eventually, ids, open_backend};

testkit::on_every_backend!(
    an_edit_after_an_interrupted_batch_leaves_no_tag_copy_behind,
    a_delete_after_an_interrupted_batch_leaves_no_tag_copy_behind,
    a_month_counted_before_an_interruption_reaches_the_index,
    a_month_left_before_an_interruption_reaches_the_index,
    a_post_deleted_from_the_feed_is_replaced_though_the_refill_was_interrupted,
    a_post_unpublished_from_the_feed_is_replaced_though_the_refill_was_interrupted,
    a_tenant_scheduled_before_an_interruption_publishes_its_post,
);

/// The feed's bound, as a count of posts.
const FEED_SIZE: usize = cosmos_blog::blog::FEED_SIZE as usize;

/// Bounds a failing test on a loaded machine; never a measure of speed.
const PATIENCE: Duration = Duration::from_secs(60);

/// Which writes a closed gate refuses.
#[derive(Clone, Copy)]
enum Refuse {
    /// A post's copy in `users`: the step between a post's views leaving and arriving.
    AuthorCopies,
    /// The archive's index: the step after a month's copies and count.
    ArchiveIndex,
    /// The query of the newest post copies in `users` that refills the feed.
    FeedRefill,
    /// The directory of the tenants that have scheduled posts (`leases`): the step after a
    /// tenant's schedule entries.
    TenantDirectory,
}

impl Refuse {
    fn refuses(self, call: &Call<'_>) -> bool {
        match self {
            Refuse::AuthorCopies => {
                call.writes()
                    && call.container == Container::Users
                    && call
                        .partition
                        .is_some_and(|pk| call.ids.iter().any(|id| !is_user_item(pk, id)))
            }
            Refuse::ArchiveIndex => {
                call.writes()
                    && call.container == Container::Archive
                    && call.partition == Some(&archive_index_partition())
            }
            Refuse::TenantDirectory => {
                call.writes()
                    && call.container == Container::Leases
                    && call.ids.contains(&"schedule.tenants")
            }
            Refuse::FeedRefill => {
                call.kind == CallKind::Query
                    && call.container == Container::Users
                    && call.partition.is_none()
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
    app_of_layout_on_gated_store(backend, Tenancy::Single, what).await
}

async fn app_of_layout_on_gated_store(
    backend: Backend,
    layout: Tenancy,
    what: Refuse,
) -> (TestApp, Arc<Gated>) {
    let data_dir = TempDir::new().expect("temp dir");
    let store = open_backend(backend, layout, &data_dir).await;
    let gate = Gate {
        what,
        closed: AtomicBool::new(false),
        refused: AtomicUsize::new(0),
    };
    let gated = double::over(store, gate);
    let app = TestApp::spawn_on(gated.clone())
        .layout(layout)
        .data_dir(data_dir)
        .settings(|settings| settings.publish_step_ms = 200)
        .start()
        .await;
    (app, gated)
}

/// Publishes a tagged post while the gate is closed, waits until the handler has tried (and
/// failed) at least once, then lets `change` alter the post before opening the gate. Returns
/// the post's id.
async fn interrupted_post(app: &TestApp, gated: &Gated, change: impl AsyncFnOnce(&str)) -> String {
    app.register("ada", "Ada").await;
    let mut id = String::new();
    interrupted(gated, async || {
        let body = json!({"title": "tagged", "content": "x", "tags": ["rust", "Cosmos DB"]});
        let response = app
            .send(Method::POST, "/api/posts", Some("ada"), Some(body))
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let post: Value = response.json().await.unwrap();
        id = post["id"].as_str().unwrap().to_owned();
    })
    .await;
    change(&id).await;
    gated.closed.store(false, Ordering::SeqCst);
    id
}

/// Closes the gate, runs `write`, and waits until the handler has tried (and failed) at least
/// once since; the gate stays closed.
async fn interrupted(gated: &Gated, write: impl AsyncFnOnce()) {
    let refused = gated.refused.load(Ordering::SeqCst);
    gated.closed.store(true, Ordering::SeqCst);
    write().await;
    eventually(PATIENCE, || async {
        (gated.refused.load(Ordering::SeqCst) > refused).then_some(())
    })
    .await;
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
    interrupted(&gated, async || {
        let path = format!("/api/posts/{id}");
        let response = app.send(Method::DELETE, &path, Some("ada"), None).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    })
    .await;
    gated.closed.store(false, Ordering::SeqCst);
    // A month without posts leaves the index's answer.
    index_settles_with(&app, json!([])).await;
}

/// One post more than the feed holds, and the feed once it holds the newest of them.
async fn a_full_feed(app: &TestApp) -> Vec<String> {
    app.register("ada", "Ada").await;
    let created = app.new_posts("ada", FEED_SIZE + 1, "post", "x").await;
    let newest: Vec<String> = created.iter().rev().take(FEED_SIZE).cloned().collect();
    eventually(PATIENCE, || async {
        (feed_ids(app).await == newest).then_some(())
    })
    .await;
    created
}

/// Takes the newest post out of a full feed with `leave` while the refill's query is refused,
/// then lets it through: the post just past the feed must take the place.
async fn replaced_in_the_feed(backend: Backend, leave: impl AsyncFnOnce(&TestApp, &str)) {
    let (app, gated) = app_on_gated_store(backend, Refuse::FeedRefill).await;
    let mut created = a_full_feed(&app).await;
    let newest = created.pop().expect("posts");
    interrupted(&gated, async || leave(&app, &newest).await).await;
    gated.closed.store(false, Ordering::SeqCst);
    let expected: Vec<String> = created.iter().rev().cloned().collect();
    eventually(PATIENCE, || async {
        (feed_ids(&app).await == expected).then_some(())
    })
    .await;
    app.assert_verifies().await;
}

async fn a_post_deleted_from_the_feed_is_replaced_though_the_refill_was_interrupted(
    backend: Backend,
) {
    replaced_in_the_feed(backend, async |app: &TestApp, id: &str| {
        let path = format!("/api/posts/{id}");
        let response = app.send(Method::DELETE, &path, Some("ada"), None).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    })
    .await;
}

async fn a_post_unpublished_from_the_feed_is_replaced_though_the_refill_was_interrupted(
    backend: Backend,
) {
    replaced_in_the_feed(backend, async |app: &TestApp, id: &str| {
        let body = json!({"title": "back to draft", "content": "x", "status": "draft"});
        let path = format!("/api/posts/{id}");
        let response = app.send(Method::PUT, &path, Some("ada"), Some(body)).await;
        assert_eq!(response.status(), StatusCode::OK);
    })
    .await;
}

/// In `multi` the publisher visits the tenants of its directory, which a tenant joins after
/// its schedule entries are written: a delivery that finds the entry in place must still
/// enlist the tenant, or its scheduled posts never publish.
async fn a_tenant_scheduled_before_an_interruption_publishes_its_post(backend: Backend) {
    let (app, gated) =
        app_of_layout_on_gated_store(backend, Tenancy::Multi, Refuse::TenantDirectory).await;
    let app = app.in_tenant("north");
    app.register("ada", "Ada").await;
    let mut path = String::new();
    interrupted(&gated, async || {
        let body = json!({"title": "soon", "content": "x", "status": "scheduled",
            "publishAt": in_seconds(2)});
        let post = app.written("ada", body).await;
        path = format!("/api/posts/{}", post["id"].as_str().unwrap());
    })
    .await;
    gated.closed.store(false, Ordering::SeqCst);
    eventually(PATIENCE, || async {
        let post = app.get_json_as("ada", &path).await;
        (post["status"] == "published").then_some(())
    })
    .await;
    app.assert_verifies().await;
}
