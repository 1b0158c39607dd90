//! Hot posts: concurrent comments and likes on one post share transactional batches (the
//! combiner in `blog::combiner`), keep every status of C3/C4, and keep the counts exactly
//! equal to the items, on both backends.
//!
//! The tests that need a round to hold given writers run the app on a [`GatedStore`] (a
//! store double with the [`Gate`] hooks): it holds the batches on `posts` until the test opens the gate, and counts the users read, so
//! a test knows when writers wait in the queue (a writer joins its post's queue before it
//! reads its user).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{
    Container, PageRequest, PartitionKey, Query, Store, StoreError, StoreResult,
};
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;
use tempfile::TempDir;
use testkit::metered::meter;
use tokio::sync::watch;

use testkit::double::{self, Call, CallKind, Double, Hooks};
use testkit::emulator::delayed_emulator_store;
use testkit::{Backend, TestApp, backend_tests, eventually};

backend_tests!(
    three_hundred_mixed_writes_on_one_post_keep_counts_exact,
    a_round_on_an_unknown_post_is_a_404_for_everyone,
);

const PATIENCE: Duration = Duration::from_secs(60);

async fn post_by_ada(app: &TestApp) -> String {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hot", "Everyone likes this").await;
    post["id"].as_str().unwrap().to_owned()
}

/// The post's counts, and its comments and likes as listed.
async fn counts_and_items(app: &TestApp, post_id: &str) -> ((u64, u64), (usize, usize)) {
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    let counts = (
        post["commentCount"].as_u64().unwrap(),
        post["likeCount"].as_u64().unwrap(),
    );
    let (comments, likes) = app.comments_and_likes(post_id, 100).await;
    (counts, (comments.len(), likes.len()))
}

async fn write<'a>(
    app: &TestApp,
    user: &'a String,
    post_id: &str,
    kind: &'static str,
) -> (&'a String, &'static str, reqwest::Response) {
    let response = match kind {
        "comment" => app.comment(user, post_id, "me too").await,
        _ => app.like(user, post_id).await,
    };
    (user, kind, response)
}

async fn three_hundred_mixed_writes_on_one_post_keep_counts_exact(app: TestApp) {
    let post_id = post_by_ada(&app).await;
    let users = app.register_many("fan-", 100).await;
    // Each user comments once and likes twice, all at once: 300 writes on one post.
    let writes = users
        .iter()
        .flat_map(|user| ["comment", "like", "like"].map(|kind| write(&app, user, &post_id, kind)));
    let mut likes_by_user: HashMap<&String, Vec<(StatusCode, Value)>> = HashMap::new();
    for (user, kind, response) in join_all(writes).await {
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        if kind == "comment" {
            assert_eq!(status, StatusCode::CREATED, "{body}");
            assert_eq!(body["userId"], user.as_str());
        } else {
            likes_by_user.entry(user).or_default().push((status, body));
        }
    }
    for (user, mut likes) in likes_by_user {
        likes.sort_by_key(|(status, _)| *status);
        let statuses: Vec<StatusCode> = likes.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CREATED],
            "one like created, one found, for {user}"
        );
        assert_eq!(likes[0].1, likes[1].1, "the repeat answers the stored like");
    }
    assert_eq!(
        counts_and_items(&app, &post_id).await,
        ((100, 100), (100, 100))
    );
    app.assert_verifies().await;
}

async fn a_round_on_an_unknown_post_is_a_404_for_everyone(app: TestApp) {
    let users = app.register_many("fan-", 20).await;
    let writes = users.iter().flat_map(|user| {
        [
            futures::future::Either::Left(app.comment(user, "no-such-post", "hello?")),
            futures::future::Either::Right(app.like(user, "no-such-post")),
        ]
    });
    for response in join_all(writes).await {
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["code"], "post-not-found");
    }
    let written = app
        .store
        .query(
            Container::Posts,
            &Query::in_partition(PartitionKey::single("no-such-post")),
            PageRequest::first(10),
        )
        .await
        .unwrap();
    assert!(written.items.is_empty(), "nothing written");
}

/// On an account with a round trip per request, writers that arrive together share
/// batches: one at a time, a write would cost a read of the writer's user and a batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_distant_account_writers_share_batches() {
    let metered = meter(delayed_emulator_store(Duration::from_millis(5)).await);
    let store: Arc<dyn Store> = Arc::new(metered.clone());
    let app = TestApp::spawn_on(store).without_pump().start().await;
    let post_id = post_by_ada(&app).await;
    let fans = app.register_many("fan-", 100).await;
    metered.take();
    let writes = fans.iter().enumerate().map(|(n, fan)| {
        let kind = if n % 2 == 0 { "like" } else { "comment" };
        write(&app, fan, &post_id, kind)
    });
    for (_, _, response) in join_all(writes).await {
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let requests = metered.take().requests;
    assert!(
        requests < 2 * 100,
        "{requests} store requests for 100 writes"
    );
    assert_eq!(counts_and_items(&app, &post_id).await, ((50, 50), (50, 50)));
}

// ---- rounds held open by a gate -------------------------------------------------------------

/// Hooks that hold every batch on `posts` while the gate is closed, fail the batch whose
/// number is in `fail_batch` (1-based; 0: none) as unreachable, and count the reads of
/// `users`.
struct Gate {
    open: watch::Sender<bool>,
    batches: AtomicUsize,
    user_reads: AtomicUsize,
    fail_batch: AtomicUsize,
}

impl Gate {
    fn new() -> Self {
        Self {
            open: watch::Sender::new(true),
            batches: AtomicUsize::new(0),
            user_reads: AtomicUsize::new(0),
            fail_batch: AtomicUsize::new(0),
        }
    }

    fn close(&self) {
        self.open.send_replace(false);
    }

    fn open(&self) {
        self.open.send_replace(true);
    }

    fn batches(&self) -> usize {
        self.batches.load(Ordering::SeqCst)
    }

    fn user_reads(&self) -> usize {
        self.user_reads.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Hooks for Gate {
    async fn before(&self, call: &Call<'_>, _: &dyn Store) -> StoreResult<()> {
        if call.kind == CallKind::Batch && call.container == Container::Posts {
            let number = self.batches.fetch_add(1, Ordering::SeqCst) + 1;
            let mut open = self.open.subscribe();
            let _ = open.wait_for(|open| *open).await;
            if self.fail_batch.load(Ordering::SeqCst) == number {
                return Err(StoreError::Unavailable("injected by the test".into()));
            }
        }
        Ok(())
    }

    fn after(&self, call: &Call<'_>) {
        if call.kind == CallKind::Read && call.container == Container::Users {
            self.user_reads.fetch_add(1, Ordering::SeqCst);
        }
    }
}

type GatedStore = Double<Gate>;

async fn fresh_store(backend: Backend, dir: &TempDir) -> Arc<dyn Store> {
    match backend {
        Backend::Embedded => {
            Arc::new(EmbeddedStore::open(&dir.path().join("blog.sqlite3")).expect("embedded store"))
        }
        Backend::Cosmos => testkit::emulator::emulator_store().await,
    }
}

/// The app (no change-feed pump: only the API reads users) on a gated store.
/// A gated application with a post by Ada and ten registered fans (`fan-0` to `fan-9`).
async fn a_post_and_ten_fans(
    backend: Backend,
) -> (Arc<TestApp>, Arc<GatedStore>, String, Vec<String>) {
    let (app, gated) = gated_app(backend).await;
    let app = Arc::new(app);
    let post_id = post_by_ada(&app).await;
    let fans = app.register_many("fan-", 10).await;
    (app, gated, post_id, fans)
}

async fn gated_app(backend: Backend) -> (TestApp, Arc<GatedStore>) {
    let dir = TempDir::new().unwrap();
    let gated = double::over(fresh_store(backend, &dir).await, Gate::new());
    let store: Arc<dyn Store> = gated.clone();
    (
        TestApp::spawn_on(store)
            .data_dir(dir)
            .without_pump()
            .start()
            .await,
        gated,
    )
}

/// Closes the gate and starts a comment by ada that holds the round running at the gate;
/// returns it, to be awaited after the gate opens.
async fn hold_a_round(
    app: &Arc<TestApp>,
    gated: &GatedStore,
    post_id: &str,
) -> tokio::task::JoinHandle<StatusCode> {
    gated.close();
    let before = gated.batches();
    let blocker = tokio::spawn({
        let (app, post_id) = (Arc::clone(app), post_id.to_owned());
        async move { app.comment("ada", &post_id, "first!").await.status() }
    });
    eventually(PATIENCE, || async {
        (gated.batches() > before).then_some(())
    })
    .await;
    blocker
}

/// Starts `writers` likes, and waits until each has read its user (so it waits in the queue).
async fn queue_likes(
    app: &Arc<TestApp>,
    gated: &GatedStore,
    post_id: &str,
    likers: &[&str],
) -> Vec<tokio::task::JoinHandle<(String, StatusCode, Value)>> {
    let before = gated.user_reads();
    let tasks = likers
        .iter()
        .map(|liker| {
            let (app, post_id, liker) = (Arc::clone(app), post_id.to_owned(), liker.to_string());
            tokio::spawn(async move {
                let response = app.like(&liker, &post_id).await;
                let status = response.status();
                (liker, status, response.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let all = before + likers.len();
    eventually(PATIENCE, || async {
        (gated.user_reads() >= all).then_some(())
    })
    .await;
    tasks
}

testkit::on_every_backend!(
    gated_embedded,
    gated_cosmos:
    repeated_likes_in_one_round_are_one_like,
    a_failed_batch_fails_its_whole_round_and_writes_nothing,
    a_cancelled_writer_strands_nobody,
    two_instances_on_one_post_keep_counts_exact,
);

async fn repeated_likes_in_one_round_are_one_like(backend: Backend) {
    let (app, gated) = gated_app(backend).await;
    let app = Arc::new(app);
    let post_id = post_by_ada(&app).await;
    for user in ["bob", "carol", "dave"] {
        app.register(user, user).await;
    }
    let earlier = app.like("dave", &post_id).await;
    assert_eq!(earlier.status(), StatusCode::CREATED);
    let earlier: Value = earlier.json().await.unwrap();

    let blocker = hold_a_round(&app, &gated, &post_id).await;
    let batches_before = gated.batches();
    // Ten likes by bob and ten by carol, and dave's again: all in the next round.
    let mut likers = vec!["bob"; 10];
    likers.extend(["carol"; 10]);
    likers.push("dave");
    let likes = queue_likes(&app, &gated, &post_id, &likers).await;
    gated.open();
    assert_eq!(blocker.await.unwrap(), StatusCode::CREATED);
    let mut answers: HashMap<String, Vec<(StatusCode, Value)>> = HashMap::new();
    for like in likes {
        let (liker, status, body) = like.await.unwrap();
        answers.entry(liker).or_default().push((status, body));
    }
    for liker in ["bob", "carol"] {
        let mine = &answers[liker];
        let created = mine
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count();
        let found = mine.iter().filter(|(s, _)| *s == StatusCode::OK).count();
        assert_eq!((created, found), (1, 9), "{liker}");
        assert!(mine.iter().all(|(_, body)| body == &mine[0].1));
    }
    assert_eq!(answers["dave"], vec![(StatusCode::OK, earlier)]);
    // One batch refused at dave's like, then the round again without it.
    assert_eq!(gated.batches() - batches_before, 2);
    assert_eq!(counts_and_items(&app, &post_id).await, ((1, 3), (1, 3)));
}

async fn a_failed_batch_fails_its_whole_round_and_writes_nothing(backend: Backend) {
    let (app, gated, post_id, fans) = a_post_and_ten_fans(backend).await;
    let likers: Vec<&str> = fans.iter().map(String::as_str).collect();

    let blocker = hold_a_round(&app, &gated, &post_id).await;
    gated
        .fail_batch
        .store(gated.batches() + 1, Ordering::SeqCst);
    let likes = queue_likes(&app, &gated, &post_id, &likers).await;
    gated.open();
    assert_eq!(blocker.await.unwrap(), StatusCode::CREATED);
    for like in likes {
        let (_, status, problem) = like.await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(problem["status"], 503);
    }
    assert_eq!(counts_and_items(&app, &post_id).await, ((1, 0), (1, 0)));
    // The store is back: the same likes go through.
    for like in join_all(likers.iter().map(|liker| app.like(liker, &post_id))).await {
        assert_eq!(like.status(), StatusCode::CREATED);
    }
    assert_eq!(counts_and_items(&app, &post_id).await, ((1, 10), (1, 10)));
}

async fn a_cancelled_writer_strands_nobody(backend: Backend) {
    let (app, gated, post_id, fans) = a_post_and_ten_fans(backend).await;

    // The writer whose batch is running hangs up (its request times out and is dropped)
    // while others wait behind it.
    gated.close();
    let impatient = app
        .client
        .post(app.url(&format!("/api/posts/{post_id}/comments")))
        .header("x-ms-client-principal-id", "ada")
        .json(&serde_json::json!({"content": "gone"}))
        .timeout(Duration::from_millis(300))
        .send();
    let waiting = tokio::spawn({
        let (app, gated, post_id) = (Arc::clone(&app), Arc::clone(&gated), post_id.clone());
        let likers: Vec<String> = fans.clone();
        async move {
            eventually(PATIENCE, || async { (gated.batches() > 0).then_some(()) }).await;
            let likers: Vec<&str> = likers.iter().map(String::as_str).collect();
            queue_likes(&app, &gated, &post_id, &likers).await
        }
    });
    assert!(impatient.await.is_err(), "the impatient client gave up");
    let likes = waiting.await.unwrap();
    gated.open();
    for like in likes {
        let (_, status, _) = like.await.unwrap();
        assert_eq!(status, StatusCode::CREATED);
    }
    // The abandoned comment was already in its batch: it is written, and counted.
    assert_eq!(counts_and_items(&app, &post_id).await, ((1, 10), (1, 10)));
}

async fn two_instances_on_one_post_keep_counts_exact(backend: Backend) {
    let dir = TempDir::new().unwrap();
    let store = fresh_store(backend, &dir).await;
    let first = TestApp::spawn_on(Arc::clone(&store))
        .data_dir(dir)
        .without_pump()
        .start()
        .await;
    let second = TestApp::spawn_on(store).without_pump().start().await;
    let post_id = post_by_ada(&first).await;
    let fans = first.register_many("fan-", 60).await;
    // Each instance's rounds race the other's: batches lose If-Match races and retry.
    let writes = fans.iter().enumerate().map(|(n, fan)| {
        let (app, other) = if n % 2 == 0 {
            (&first, &second)
        } else {
            (&second, &first)
        };
        let post_id = post_id.as_str();
        async move {
            let (like, comment) =
                tokio::join!(app.like(fan, post_id), other.comment(fan, post_id, "hi"));
            (like.status(), comment.status())
        }
    });
    for statuses in join_all(writes).await {
        assert_eq!(statuses, (StatusCode::CREATED, StatusCode::CREATED));
    }
    assert_eq!(
        counts_and_items(&first, &post_id).await,
        ((60, 60), (60, 60))
    );
}
