//! Drift repairs itself: the delayed re-check and `verify --repair`, on both
//! backends and in both layouts.
//!
//! - The stale-read race: reads of `users` lag behind a rename, so both handlers miss a
//!   comment written with the old name; the re-check, once replicas caught up, repairs it.
//! - Hand edits the handlers do not undo (a post copy in `users`, a post's count): the
//!   re-check task beside the pump repairs them.
//! - Drift outside the change feed (no handler ran): `verify` reports it, `verify --repair`
//!   fixes it (the library on both backends, the binary on the embedded store), `verify` then
//!   passes, and a second repair has nothing to do.
//! - The re-check over a quiet store writes nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::changefeed::{RecheckReport, recheck};
use cosmos_blog::copies::rebuild;
use cosmos_blog::store::{Container, Document, PartitionKey, Store, StoreResult, Tenancy};
use cosmos_blog::verify::{VerifyReport, ViolationKind, verify, verify_and_repair};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use testkit::metered::meter;

use crate::store_contract::drain_changes;
use crate::verify::{
    assert_holds, change, embedded_store, open, read, stdout_lines, upsert, verify_exits,
};
use testkit::double::{self, Call, Double, Hooks};
use testkit::{Backend, TestApp, eventually, eventually_ok, open_backend};

testkit::every_backend_and_layout!(
    the_stale_read_race_is_repaired_by_the_recheck,
    the_task_beside_the_pump_repairs_hand_edits,
    verify_repair_fixes_drift_outside_the_change_feed,
    the_recheck_over_a_quiet_store_writes_nothing,
);

/// The delay of the re-check in these tests: short, but a real delay (a change is due at
/// the end of its commit second plus this).
const DELAY: Duration = Duration::from_millis(200);
/// Bounds a failing test on a loaded machine; never a measure of speed.
const PATIENCE: Duration = Duration::from_secs(60);

/// The (kind, id) of every violation.
fn found(report: &VerifyReport) -> BTreeSet<(ViolationKind, String)> {
    report
        .violations
        .iter()
        .map(|v| (v.kind, v.id.clone()))
        .collect()
}

/// The id of the item a `201 Created` answer holds.
async fn created_id(response: reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::CREATED);
    let item: Value = response.json().await.expect("JSON");
    item["id"].as_str().expect("id").to_owned()
}

/// Runs re-check passes on the app's whole store (as the timer would: one pass per
/// invocation) until `done` holds of the last pass and of the store's verdict after it; the
/// passes' reports.
async fn recheck_until(
    app: &TestApp,
    done: impl Fn(&RecheckReport, &VerifyReport) -> bool,
) -> Vec<RecheckReport> {
    let reports = Mutex::new(Vec::new());
    eventually_ok(PATIENCE, || async {
        let pass = recheck::run(&app.whole_store, DELAY, recheck::TIMER_BUDGET).await;
        let pass = pass.expect("the re-check runs");
        let verdict = verify(&app.whole_store).await.expect("verify");
        let finished = done(&pass, &verdict);
        let mut reports = reports.lock().unwrap();
        reports.push(pass);
        if finished {
            return Ok(());
        }
        Err(format!(
            "not done: {reports:#?}\n{}",
            verdict.violation_lines(20).join("\n")
        ))
    })
    .await;
    reports.into_inner().unwrap()
}

fn repaired(reports: &[RecheckReport]) -> Vec<String> {
    reports.iter().flat_map(|r| r.repaired.clone()).collect()
}

// ---- the stale-read race ---------------------------------------------------------------

/// Hooks of a store whose point reads of `users` lag while it is told so: an item written
/// since the lag began reads as it was before (a replica that has not seen the writes yet, as a read
/// under Session consistency from another instance may). Queries and the change feed see
/// every write.
struct Lag {
    lagging: AtomicBool,
    /// (key, id) of each item written during the lag -> the item as it was before.
    before: Mutex<HashMap<(String, String), Option<Document>>>,
    stale_reads: AtomicUsize,
}

impl Lag {
    fn new() -> Self {
        Self {
            lagging: AtomicBool::new(false),
            before: Mutex::default(),
            stale_reads: AtomicUsize::new(0),
        }
    }

    fn lag(&self) {
        self.lagging.store(true, Ordering::SeqCst);
    }

    /// The replicas catch up: every read sees every write again.
    fn catch_up(&self) {
        self.lagging.store(false, Ordering::SeqCst);
        self.before.lock().unwrap().clear();
    }

    fn stale_reads(&self) -> usize {
        self.stale_reads.load(Ordering::SeqCst)
    }
}

/// A user's item is the one in its own partition with its id (its post copies have the
/// posts' ids).
pub(crate) fn is_user_item(pk: &PartitionKey, id: &str) -> bool {
    let components: Vec<Value> = serde_json::from_str(&pk.to_json_array()).unwrap_or_default();
    components.last().and_then(Value::as_str) == Some(id)
}

#[async_trait]
impl Hooks for Lag {
    /// Before a write of a user item during the lag, keeps what readers still see. Only user
    /// items lag: the stale reads counted are then the three of the race, not a handler's
    /// second look at a post copy it wrote during the lag.
    async fn before(&self, call: &Call<'_>, inner: &dyn Store) -> StoreResult<()> {
        let Some(pk) = call.partition else {
            return Ok(());
        };
        if !call.writes()
            || call.container != Container::Users
            || !self.lagging.load(Ordering::SeqCst)
        {
            return Ok(());
        }
        for id in call.ids.iter().filter(|id| is_user_item(pk, id)) {
            let key = (pk.to_json_array(), (*id).to_owned());
            if self.before.lock().unwrap().contains_key(&key) {
                continue;
            }
            let current = inner.read_item(call.container, pk, id).await?;
            self.before.lock().unwrap().entry(key).or_insert(current);
        }
        Ok(())
    }

    fn read_instead(&self, call: &Call<'_>) -> Option<Option<Document>> {
        let (Some(pk), [id]) = (call.partition, call.ids.as_slice()) else {
            return None;
        };
        if call.container != Container::Users || !self.lagging.load(Ordering::SeqCst) {
            return None;
        }
        let key = (pk.to_json_array(), (*id).to_owned());
        let before = self.before.lock().unwrap().get(&key).cloned()?;
        self.stale_reads.fetch_add(1, Ordering::SeqCst);
        Some(before)
    }
}

type LaggingUsers = Double<Lag>;

/// The app (with its pump; no re-check of its own) on a lagging store of `backend`.
async fn app_on_lagging_store(backend: Backend, tenancy: Tenancy) -> (TestApp, Arc<LaggingUsers>) {
    let data_dir = TempDir::new().expect("temp dir");
    let lagging = double::over(open_backend(backend, tenancy, &data_dir).await, Lag::new());
    let app = TestApp::spawn_on(lagging.clone())
        .data_dir(data_dir)
        .start()
        .await;
    (app, lagging)
}

async fn the_stale_read_race_is_repaired_by_the_recheck(backend: Backend, tenancy: Tenancy) {
    let (app, lagging) = app_on_lagging_store(backend, tenancy).await;
    app.register("u", "Old").await;
    app.register("a", "A").await;
    let post = app.new_post("a", "A's post", "text").await;
    let post = post["id"].as_str().expect("id").to_owned();
    let first = created_id(app.comment("u", &post, "before the rename").await).await;
    app.assert_verifies().await;

    // Reads of users lag from here: U is renamed, and U comments again.
    lagging.lag();
    assert_eq!(app.put_user("u", "New").await.status(), StatusCode::OK);
    let second = created_id(app.comment("u", &post, "after the rename").await).await;
    // Three reads of U see "Old": the fan-out's (which then renames nothing), the API's for
    // the comment (which carries "Old"), and OnPostChanged's for the comment (which finds
    // nothing to correct). Whatever their order, each handler has missed it.
    eventually(PATIENCE, || async {
        (lagging.stale_reads() >= 3).then_some(())
    })
    .await;
    lagging.catch_up();

    // Nothing else would ever correct the two comments: the handlers are done with them.
    let stale: BTreeSet<(ViolationKind, String)> = [first, second]
        .into_iter()
        .map(|id| (ViolationKind::StaleUsername, id))
        .collect();
    eventually(PATIENCE, || async {
        let report = verify(&app.whole_store).await.expect("verify");
        (found(&report) == stale).then_some(())
    })
    .await;

    // The re-check, a delay behind, reads the rename and the comment again: now it sees.
    let reports = recheck_until(&app, |_, verdict| verdict.holds()).await;
    let lines = repaired(&reports);
    for (_, id) in &stale {
        assert!(
            lines
                .iter()
                .any(|l| l.contains("stale-username") && l.contains(id.as_str())),
            "{id} in {lines:#?}"
        );
    }
    let comments = app.get_json(&format!("/api/posts/{post}/comments")).await;
    for comment in comments["items"].as_array().expect("items") {
        assert_eq!(comment["userUsername"], "New", "{comment}");
    }
    app.assert_verifies().await;
}

// ---- hand edits, beside the pump --------------------------------------------------------

async fn the_task_beside_the_pump_repairs_hand_edits(backend: Backend, tenancy: Tenancy) {
    let app = TestApp::spawn(backend)
        .layout(tenancy)
        .settings(|settings| {
            settings.recheck_delay_ms = DELAY.as_millis() as u64;
        })
        .start()
        .await;
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let post = app.new_post("ada", "title", "content").await;
    let post = post["id"].as_str().expect("id").to_owned();
    created_id(app.comment("bob", &post, "hi").await).await;
    app.liked("bob", &post).await;
    app.assert_verifies().await;

    // Edits in the portal that no handler undoes: OnUserChanged ignores post copies, and
    // OnPostChanged copies whatever counts the post holds.
    change(&app.store, Container::Users, "ada", &post, |copy| {
        copy["title"] = json!("edited by hand")
    })
    .await;
    change(&app.store, Container::Posts, &post, &post, |source| {
        source["likeCount"] = json!(7)
    })
    .await;
    app.assert_verifies().await;
    let copy = read(&app.store, Container::Users, "ada", &post).await;
    assert_eq!(copy["title"], "title");
    let source = app.get_json(&format!("/api/posts/{post}")).await;
    assert_eq!(
        (source["commentCount"].clone(), source["likeCount"].clone()),
        (json!(1), json!(1))
    );
}

// ---- drift outside the change feed: verify --repair --------------------------------------

async fn verify_repair_fixes_drift_outside_the_change_feed(backend: Backend, tenancy: Tenancy) {
    let app = TestApp::spawn(backend)
        .layout(tenancy)
        .without_pump()
        .start()
        .await;
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let ada = app.new_post("ada", "ada's", "a").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let bob = app.new_post("bob", "bob's", "b").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let comment = created_id(app.comment("bob", &ada, "hi").await).await;
    app.liked("ada", &bob).await;
    rebuild(&app.whole_store).await.expect("rebuild");
    assert_holds(&verify(&app.whole_store).await.expect("verify"));

    // Behind the application's back (no handler runs): a post copy, a username, a count,
    // and a copy of a post that never was.
    let store = &app.store;
    change(store, Container::Users, "ada", &ada, |copy| {
        copy["title"] = json!("edited")
    })
    .await;
    change(store, Container::Posts, &ada, &comment, |c| {
        c["userUsername"] = json!("Robert")
    })
    .await;
    change(store, Container::Posts, &bob, &bob, |p| {
        p["likeCount"] = json!(5)
    })
    .await;
    let mut ghost = read(store, Container::Feed, "post", &bob).await;
    ghost["id"] = json!("ghost");
    ghost["postId"] = json!("ghost");
    upsert(store, Container::Feed, ghost).await;

    let before = verify(&app.whole_store).await.expect("verify");
    let kinds: BTreeSet<ViolationKind> = before.violations.iter().map(|v| v.kind).collect();
    use ViolationKind as K;
    for kind in [
        K::UserCopyDiffers,
        K::StaleUsername,
        K::CountMismatch,
        K::OrphanFeedCopy,
    ] {
        assert!(kinds.contains(&kind), "{kind} in {before:#?}");
    }

    let mut printed = Vec::new();
    let repair = verify_and_repair(&app.whole_store, &mut |_| {}, &mut |line| {
        printed.push(line.to_owned())
    })
    .await
    .expect("verify --repair");
    assert_holds(&repair.after);
    assert!(
        repair.applied.failed.is_empty(),
        "{:?}",
        repair.applied.failed
    );
    for (kind, id) in [
        ("user-copy-differs", ada.as_str()),
        ("stale-username", comment.as_str()),
        ("count-mismatch", bob.as_str()),
        ("orphan-feed-copy", "ghost"),
    ] {
        assert!(
            printed.iter().any(|l| l.contains(kind) && l.contains(id)),
            "{kind} {id} in {printed:#?}"
        );
    }
    assert_eq!(printed, repair.applied.fixed);
    let bobs = app.get_json(&format!("/api/posts/{bob}")).await;
    assert_eq!(bobs["likeCount"], 1);

    // Idempotent: a second run finds nothing and writes nothing.
    let again = verify_and_repair(&app.whole_store, &mut |_| {}, &mut |_| {})
        .await
        .expect("verify --repair");
    assert!(again.before.holds() && again.applied.fixed.is_empty());
    app.assert_verifies().await;
}

// ---- the idle cost ----------------------------------------------------------------------

async fn the_recheck_over_a_quiet_store_writes_nothing(backend: Backend, tenancy: Tenancy) {
    let app = TestApp::spawn(backend).layout(tenancy).start().await;
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    for n in 0..3 {
        let post = app.new_post("ada", &format!("post {n}"), "text").await;
        let post = post["id"].as_str().expect("id").to_owned();
        created_id(app.comment("bob", &post, "hi").await).await;
        app.liked("bob", &post).await;
    }
    assert_eq!(app.put_user("bob", "Robert").await.status(), StatusCode::OK);
    app.assert_verifies().await;

    // Where the model's change feeds end now: a write by the re-check would show after.
    let mut ends = Vec::new();
    for container in [Container::Users, Container::Posts, Container::Feed] {
        let (_, end) = drain_changes(&app.whole_store, container, None, 1_000).await;
        ends.push((container, end));
    }
    // The re-check catches up with every change, all of them right.
    let reports = recheck_until(&app, |pass, _| pass.caught_up && pass.next_due.is_none()).await;
    let checked: usize = reports.iter().map(|r| r.checked).sum();
    assert!(checked > 0, "{reports:#?}");
    assert!(repaired(&reports).is_empty(), "{reports:#?}");
    for (container, end) in ends {
        let (written, _) = drain_changes(&app.whole_store, container, end, 1_000).await;
        assert!(written.is_empty(), "{}: {written:#?}", container.name());
    }

    // Caught up, on a quiet store: a pass reads where the feeds are, and writes nothing.
    let metered = Arc::new(meter(Arc::clone(&app.whole_store)));
    let store: Arc<dyn Store> = metered.clone();
    let idle = recheck::run(&store, DELAY, recheck::TIMER_BUDGET)
        .await
        .expect("the re-check runs");
    let metrics = metered.take();
    assert_eq!(idle.checked, 0);
    assert_eq!(metrics.items_written, 0, "{metrics:?}");
    assert_eq!(
        metrics.requests, 4,
        "a lease read and a change-feed read per feed: {metrics:?}"
    );
}

// ---- verify --repair through the binary --------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_repair_through_the_binary() {
    let dir = embedded_store(true).await;
    let store = open(&dir).await;
    // Both copies of a post, a username and a count changed behind the application's back.
    for (container, partition) in [(Container::Users, "ada"), (Container::Feed, "post")] {
        change(&store, container, partition, "post-010", |copy| {
            copy["title"] = json!("edited")
        })
        .await;
    }
    change(&store, Container::Posts, "post-011", "post-011", |post| {
        post["userUsername"] = json!("Somebody")
    })
    .await;
    change(&store, Container::Posts, "post-012", "post-012", |post| {
        post["commentCount"] = json!(4)
    })
    .await;
    drop(store);

    verify_exits(&dir, false, 1);
    let repaired = verify_exits(&dir, true, 0);
    let lines = stdout_lines(&repaired);
    for expected in [
        "repaired user-copy-differs users/ada/post-010",
        "repaired stale-username posts/post-011/post-011",
        "repaired count-mismatch posts/post-012/post-012",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "{expected} in {lines:#?}"
        );
    }
    // Ten violations (the copies of the renamed and the recounted posts, in users, the feed
    // and the archive, differ from their sources too), three repairs: the copies follow their
    // sources once those are mended, and copying post-010 again mends both its copies.
    assert!(
        lines.contains(
            &"repair: 10 violations fixed (3 repairs), 0 violations could not be fixed".to_owned()
        ),
        "{lines:#?}"
    );
    assert!(
        lines.last().is_some_and(|l| l.starts_with("verify: OK")),
        "{lines:#?}"
    );

    // Again: nothing to fix.
    let again = verify_exits(&dir, true, 0);
    assert!(
        !stdout_lines(&again)
            .iter()
            .any(|l| l.starts_with("repaired")),
        "{again:?}"
    );
    verify_exits(&dir, false, 0);

    // What no write can fix (an item of no known type) leaves exit status 1.
    let store = open(&dir).await;
    upsert(
        &store,
        Container::Posts,
        json!({"id": "weird", "type": "bogus", "postId": "post-010"}),
    )
    .await;
    drop(store);
    let unfixable = verify_exits(&dir, true, 1);
    let lines = stdout_lines(&unfixable);
    assert!(
        lines.contains(
            &"repair: 0 violations fixed (0 repairs), 1 violation could not be fixed".to_owned()
        ),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("unreadable-item posts/post-010/weird")),
        "{lines:#?}"
    );
}
