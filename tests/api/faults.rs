//! The Cosmos DB store under the service's faults, on the SDK's in-memory emulator with its
//! fault injection (wired in `testkit::emulator`): throttling, timeouts, unavailability,
//! partition moves, "retry with", lost connections and lost answers, including the answer of a
//! batch that committed (`ResponseTimeoutAfterService`).
//!
//! The promises checked:
//! - a fault at a rate is retried (by the SDK, then by the store) and never reaches a client:
//!   every request of every operation answers as on a perfect engine;
//! - a stretch of faults longer than the retry budget is a 503, or a 429 with `Retry-After`,
//!   and leaves nothing half-written;
//! - counts stay exact; no comment, like, post or copy is doubled; the change feed converges;
//!   `verify` passes at the end.
//!
//! Rates count requests (`FaultPlan::every`), so every run injects the same faults into the
//! same sequence of requests. Every test name holds "fault": `cargo test fault` runs them.

use std::collections::HashSet;
use std::time::Duration;

use cosmos_blog::copies::rebuild;
use cosmos_blog::store::{Container, Tenancy};
use cosmos_blog::verify::verify;
use futures::future::join_all;
use reqwest::{Method, Response, StatusCode};
use serde_json::Value;

use crate::deletes::partition_items;
use crate::idempotency::stored_posts;
use testkit::emulator::{
    DATA_OPERATIONS, Fault, FaultInjectionErrorType, FaultOperationType, FaultPlan, Faults,
    faulty_emulator_store, on_each_data_operation,
};
use testkit::{TestApp, eventually};

/// One fault per this many requests, per operation.
const EVERY: u32 = 7;

const PATIENCE: Duration = Duration::from_secs(60);

/// `kind` on each kind of data request, once per [`EVERY`] of them.
fn at_a_rate(kind: FaultInjectionErrorType) -> Vec<FaultPlan> {
    on_each_data_operation(Fault::Error(kind), EVERY)
}

/// The app (with its change-feed pump) on an emulator with `plans`, faults still off.
async fn app_with(plans: Vec<FaultPlan>) -> (TestApp, Faults) {
    app_in(Tenancy::Single, plans).await
}

/// [`app_with`] in the `tenancy` layout; in `multi` it addresses [`OPERATION_TENANT`].
async fn app_in(tenancy: Tenancy, plans: Vec<FaultPlan>) -> (TestApp, Faults) {
    let (store, faults) = faulty_emulator_store(tenancy, plans).await;
    let app = TestApp::spawn_on(store).start().await;
    (app, faults)
}

/// The response had `status`; its body otherwise says what went wrong.
async fn expect(response: Response, status: StatusCode, what: &str) -> Value {
    let got = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{what}: {body}");
    body
}

fn id(item: &Value) -> String {
    item["id"].as_str().expect("an id").to_owned()
}

async fn counts(app: &TestApp, post_id: &str) -> (u64, u64) {
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    (
        post["commentCount"].as_u64().expect("commentCount"),
        post["likeCount"].as_u64().expect("likeCount"),
    )
}

/// The ids of a list, checked free of duplicates.
async fn listed(app: &TestApp, path: &str) -> HashSet<String> {
    let items = app.all_pages(path, 100).await;
    let ids: HashSet<String> = items.iter().map(id).collect();
    assert_eq!(ids.len(), items.len(), "{path} lists an item twice");
    ids
}

/// Every operation of the API once or more, each answering exactly as without faults:
/// C1 (create, rename), C2 (create, edit), C3 and C4 (several at once on one post, which the
/// combiner batches), Q1–Q6, the deletes (unlike, comment, post, account and its erasure by
/// the change feed), both change-feed handlers (copies, renames, clean-ups), a tagged edit
/// and a tagged draft (Q8 and the drafts list).
async fn every_operation(app: &TestApp) {
    let fans: Vec<String> = (0..6).map(|n| format!("fan-{n}")).collect();
    for user in ["ada", "bob"]
        .iter()
        .map(|u| u.to_string())
        .chain(fans.clone())
    {
        let created = app.put_user(&user, &user).await;
        expect(created, StatusCode::CREATED, &format!("C1 {user}")).await;
    }
    let renamed = app.put_user("ada", "Ada Lovelace").await;
    expect(renamed, StatusCode::OK, "C1 rename").await;
    let mut posts = Vec::new();
    for n in 0..3 {
        let created = app
            .create_post("ada", &format!("post {n}"), "content")
            .await;
        posts.push(id(&expect(created, StatusCode::CREATED, "C2").await));
    }
    let edited = app
        .send(
            Method::PUT,
            &format!("/api/posts/{}", posts[0]),
            Some("ada"),
            Some(
                serde_json::json!({"title": "edited", "content": "new content", "tags": ["rust"]}),
            ),
        )
        .await;
    expect(edited, StatusCode::OK, "C2 edit").await;
    // A tagged draft: in the drafts list, in no feed, list or tag view.
    let draft = app
        .send(
            Method::POST,
            "/api/posts",
            Some("ada"),
            Some(serde_json::json!({
                "title": "draft", "content": "unseen", "tags": ["rust"], "status": "draft"
            })),
        )
        .await;
    let draft = id(&expect(draft, StatusCode::CREATED, "C2 draft").await);
    // The copies are made before the post delete below, which then has copies to remove.
    eventually(PATIENCE, || async {
        let feed = app.get_json("/api/feed").await;
        (feed["items"].as_array()?.len() == posts.len()).then_some(())
    })
    .await;

    // Comments and likes at once: they share the combiner's batches.
    let hot = &posts[0];
    let comments = join_all(fans.iter().map(|fan| app.comment(fan, hot, "me too"))).await;
    let mut comment_ids = Vec::new();
    for response in comments {
        comment_ids.push(id(&expect(response, StatusCode::CREATED, "C3").await));
    }
    let likes = join_all(fans.iter().map(|fan| app.like(fan, hot))).await;
    for response in likes {
        expect(response, StatusCode::CREATED, "C4").await;
    }
    expect(app.like("fan-0", hot).await, StatusCode::OK, "C4 again").await;
    let unliked = app
        .delete_as("fan-1", &format!("/api/posts/{hot}/likes"))
        .await;
    expect(unliked, StatusCode::NO_CONTENT, "unlike").await;
    let path = format!("/api/posts/{hot}/comments/{}", comment_ids[0]);
    expect(
        app.delete_as("fan-0", &path).await,
        StatusCode::NO_CONTENT,
        "comment delete",
    )
    .await;

    // Bob's comment and like go with his account (the erasure, through the change feed).
    let other = &posts[1];
    expect(
        app.comment("bob", other, "bye").await,
        StatusCode::CREATED,
        "C3",
    )
    .await;
    expect(app.like("bob", other).await, StatusCode::CREATED, "C4").await;
    expect(
        app.delete_as("bob", "/api/users/bob").await,
        StatusCode::ACCEPTED,
        "account delete",
    )
    .await;
    let gone = &posts[2];
    expect(
        app.delete_as("ada", &format!("/api/posts/{gone}")).await,
        StatusCode::NO_CONTENT,
        "post delete",
    )
    .await;

    // The reads, Q1 to Q6; the copies come through the change feed.
    let user = app.get_json("/api/users/ada").await;
    assert_eq!(user["username"], "Ada Lovelace", "Q1");
    assert_eq!(counts(app, hot).await, (5, 5), "Q2 of the hot post");
    assert_eq!(
        listed(app, &format!("/api/posts/{hot}/comments"))
            .await
            .len(),
        5,
        "Q4"
    );
    assert_eq!(
        listed(app, &format!("/api/posts/{hot}/likes")).await.len(),
        5,
        "Q5"
    );
    let expected: HashSet<String> = posts[..2].iter().cloned().collect();
    eventually(PATIENCE, || async {
        let feed: HashSet<String> = app.get_json("/api/feed").await["items"]
            .as_array()?
            .iter()
            .map(id)
            .collect();
        let own = listed(app, "/api/users/ada/posts").await;
        (feed == expected && own == expected).then_some(())
    })
    .await;
    eventually(PATIENCE, || async {
        (counts(app, other).await == (0, 0)).then_some(())
    })
    .await;
    for post in &posts[..2] {
        let copies = app.get_json(&format!("/api/posts/{post}")).await;
        assert_eq!(copies["userUsername"], "Ada Lovelace", "renamed everywhere");
    }
    // Q8 holds the edited post, the only published one tagged; the draft is its author's.
    let tagged = HashSet::from([hot.clone()]);
    eventually(PATIENCE, || async {
        (listed(app, "/api/tags/rust/posts").await == tagged).then_some(())
    })
    .await;
    let drafts = app
        .send(Method::GET, "/api/users/ada/drafts", Some("ada"), None)
        .await;
    let drafts = expect(drafts, StatusCode::OK, "drafts list").await;
    let drafts: Vec<String> = drafts["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(drafts, [draft], "the drafts list");
}

/// The whole platform with `kind` at a rate on every operation: nothing reaches a client,
/// `rebuild` and `verify` run under the same faults, and everything holds at the end.
async fn a_fault_at_a_rate_never_surfaces(kind: FaultInjectionErrorType, tenancy: Tenancy) {
    let (app, faults) = app_in(tenancy, at_a_rate(kind)).await;
    faults.start();
    every_operation(&app).await;
    let report = rebuild(&app.whole_store)
        .await
        .expect("rebuild under faults");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    app.assert_verifies().await;
    let verdict = verify(&app.whole_store).await.expect("verify under faults");
    assert!(verdict.holds(), "{}", verdict.verdict());
    let injected = faults.injected_by_plan();
    faults.stop();
    for (operation, count) in DATA_OPERATIONS.iter().zip(&injected) {
        assert!(*count > 0, "{kind:?} never hit {operation:?}: {injected:?}");
    }
    eprintln!(
        "{kind:?}: {} faults injected ({injected:?} by operation), {} requests reached the account",
        faults.injected(),
        faults.reached()
    );
}

macro_rules! at_a_rate_tests {
    ($($name:ident: $kind:ident),* $(,)?) => {
        mod fault_at_a_rate {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::a_fault_at_a_rate_never_surfaces(
                        super::FaultInjectionErrorType::$kind,
                        super::Tenancy::Single,
                    )
                    .await;
                }
            )*

            /// The `multi` layout (a tenant's view of the store) meets the same faults.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn response_timeout_after_service_in_multi() {
                super::a_fault_at_a_rate_never_surfaces(
                    super::FaultInjectionErrorType::ResponseTimeoutAfterService,
                    super::Tenancy::Multi,
                )
                .await;
            }
        }
    };
}

at_a_rate_tests!(
    too_many_requests: TooManyRequests,
    timeout: Timeout,
    service_unavailable: ServiceUnavailable,
    partition_is_gone: PartitionIsGone,
    retry_with: RetryWith,
    connection_error: ConnectionError,
    response_timeout: ResponseTimeout,
    response_timeout_after_service: ResponseTimeoutAfterService,
);

// ---- a stretch of faults longer than the retry budget ----------------------------------------

/// `fault` on every data request.
fn on_every_request(fault: Fault) -> Vec<FaultPlan> {
    on_each_data_operation(fault, 1)
}

/// What the next tests write while the store keeps failing: a user, a post, a comment and a
/// like, at once. Each answers `status` (with the problem `code`).
async fn writes_while_failing(app: &TestApp, post_id: &str, status: StatusCode, code: &str) {
    let (user, post, comment, like) = tokio::join!(
        app.put_user("cat", "Cat"),
        app.create_post("ada", "during", "the outage"),
        app.comment("ada", post_id, "during the outage"),
        app.like("ada", post_id),
    );
    for (what, response) in [("C1", user), ("C2", post), ("C3", comment), ("C4", like)] {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let problem = expect(response, status, what).await;
        assert_eq!(problem["code"], code, "{what}: {problem}");
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert!(retry_after.is_some_and(|s| s >= 1), "{what}: Retry-After");
        }
    }
}

/// Ada and her post, written before the faults start.
async fn ada_and_her_post(app: &TestApp) -> String {
    app.register("ada", "Ada").await;
    id(&app.new_post("ada", "before", "the outage").await)
}

/// After the faults stop: nothing of [`writes_while_failing`] was written (when the fault
/// stopped every request before the service), and every invariant holds.
async fn nothing_was_written(app: &TestApp, post_id: &str) {
    assert_eq!(
        app.get("/api/users/cat").await.status(),
        StatusCode::NOT_FOUND,
        "C1 wrote"
    );
    assert_eq!(counts(app, post_id).await, (0, 0), "C3 or C4 wrote");
    assert_eq!(
        partition_items(app, post_id).await.len(),
        1,
        "a child was written"
    );
    assert_eq!(stored_posts(app).await.len(), 1, "C2 wrote");
}

/// A stretch of `kind` on every request, longer than the SDK's and the store's retries:
/// writes answer 503 `store-unavailable`, and once the stretch is over the store holds
/// nothing half-written (nothing at all when the fault came before the service).
async fn a_fault_stretch_is_a_503(kind: FaultInjectionErrorType) {
    let (app, faults) = app_with(on_every_request(Fault::Error(kind))).await;
    let post_id = ada_and_her_post(&app).await;
    faults.start();
    writes_while_failing(
        &app,
        &post_id,
        StatusCode::SERVICE_UNAVAILABLE,
        "store-unavailable",
    )
    .await;
    faults.stop();
    if kind != FaultInjectionErrorType::ResponseTimeoutAfterService {
        nothing_was_written(&app, &post_id).await;
    }
    app.assert_verifies().await;
}

macro_rules! stretch_tests {
    ($($name:ident: $kind:ident),* $(,)?) => {
        mod fault_stretch_is_a_503 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::a_fault_stretch_is_a_503(super::FaultInjectionErrorType::$kind).await;
                }
            )*
        }
    };
}

// `RetryWith` is left out: the SDK alone retries a 449, for up to 30 s, which no option bounds.
stretch_tests!(
    timeout: Timeout,
    service_unavailable: ServiceUnavailable,
    partition_is_gone: PartitionIsGone,
    connection_error: ConnectionError,
    response_timeout: ResponseTimeout,
    response_timeout_after_service: ResponseTimeoutAfterService,
);

/// A store that keeps throttling: after the SDK's retries (which honour the service's delay)
/// the client gets a 429 with `Retry-After`, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_stretch_is_a_429_with_retry_after_fault() {
    for fault in [
        Fault::Throttle {
            retry_after: Duration::from_millis(10),
        },
        Fault::Error(FaultInjectionErrorType::TooManyRequests),
    ] {
        let (app, faults) = app_with(on_every_request(fault)).await;
        let post_id = ada_and_her_post(&app).await;
        faults.start();
        writes_while_failing(&app, &post_id, StatusCode::TOO_MANY_REQUESTS, "throttled").await;
        faults.stop();
        nothing_was_written(&app, &post_id).await;
        app.assert_verifies().await;
    }
}

/// A stretch of unavailability shorter than the store's retry budget never reaches a client:
/// the first 8 requests of each kind fail (the SDK's own 4 attempts of a request, then the
/// store's first retry), and every write still answers as without faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fault_stretch_never_surfaces() {
    let kind = FaultInjectionErrorType::ServiceUnavailable;
    let plans = on_every_request(Fault::Error(kind))
        .into_iter()
        .map(|plan| plan.times(8))
        .collect();
    let (app, faults) = app_with(plans).await;
    let post_id = ada_and_her_post(&app).await;
    faults.start();
    let (user, post, comment, like) = tokio::join!(
        app.put_user("cat", "Cat"),
        app.create_post("ada", "during", "the outage"),
        app.comment("ada", &post_id, "during the outage"),
        app.like("ada", &post_id),
    );
    assert!(faults.injected() > 0, "the stretch hit nothing");
    expect(user, StatusCode::CREATED, "C1").await;
    expect(post, StatusCode::CREATED, "C2").await;
    expect(comment, StatusCode::CREATED, "C3").await;
    expect(like, StatusCode::CREATED, "C4").await;
    assert_eq!(counts(&app, &post_id).await, (1, 1));
    app.assert_verifies().await;
}

// ---- ambiguous commits ---------------------------------------------------------------------

/// Writes in `operations` (on `container` when given) commit and lose their answer, one per
/// `every` requests. (Not every one: an answer lost every time is an outage, which the
/// stretch tests cover; a failed batch's answer, a 207, would be lost too.)
fn answers_lost(
    operations: &[FaultOperationType],
    container: Option<Container>,
    every: u32,
) -> Vec<FaultPlan> {
    let lost = FaultInjectionErrorType::ResponseTimeoutAfterService;
    operations
        .iter()
        .map(|operation| {
            let plan = FaultPlan::error(lost).on(*operation).every(every);
            match container {
                Some(container) => plan.in_container(container),
                None => plan,
            }
        })
        .collect()
}

/// Count batches (the batches of `posts`: comments, likes, unlikes, comment deletes, the
/// erasure's deletes) commit and lose their answer, one request in three, and so do creates,
/// replaces and deletes of items (a request that fails is answered: only a success is lost).
/// The retries (the SDK's, then the combiner's after the lost race they meet) find the write
/// done: each client gets the answer of a write that went through, nothing is counted twice,
/// and the store verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_answers_of_committed_writes_are_answered_as_written_fault() {
    let mut plans = answers_lost(&[FaultOperationType::BatchItem], Some(Container::Posts), 3);
    plans.extend(answers_lost(
        &[
            FaultOperationType::CreateItem,
            FaultOperationType::ReplaceItem,
            FaultOperationType::DeleteItem,
        ],
        None,
        3,
    ));
    let (app, faults) = app_with(plans).await;
    faults.start();
    every_operation(&app).await;
    // A client retrying its like (say after losing the answer itself) is told it exists.
    let hot = id(&app.get_json("/api/users/ada/posts").await["items"][1]);
    let before = counts(&app, &hot).await;
    expect(app.like("fan-2", &hot).await, StatusCode::OK, "C4 retried").await;
    assert_eq!(
        counts(&app, &hot).await,
        before,
        "a retried like counted twice"
    );
    app.assert_verifies().await;
    let injected = faults.injected_by_plan();
    faults.stop();
    assert!(injected.iter().all(|n| *n > 0), "{injected:?}");
    eprintln!("lost answers: {injected:?} (batches of posts, creates, replaces, deletes)");
}

/// An account delete whose batch (user out, erasure marker in) commits and loses its answer
/// is accepted, not a 404 of the user its own first attempt removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_delete_whose_answer_is_lost_is_accepted_fault() {
    // Once: the first batch after the start.
    let plans = answers_lost(
        &[FaultOperationType::BatchItem],
        Some(Container::Users),
        u32::MAX,
    );
    let (store, faults) = faulty_emulator_store(Tenancy::Single, plans).await;
    // No change feed: the account delete is the only batch of `users`.
    let app = TestApp::spawn_on(store).without_pump().start().await;
    app.register("bob", "Bob").await;
    faults.start();
    let deleted = app.delete_as("bob", "/api/users/bob").await;
    expect(deleted, StatusCode::ACCEPTED, "account delete").await;
    assert_eq!(faults.injected(), 1);
    faults.stop();
    assert_eq!(
        app.get("/api/users/bob").await.status(),
        StatusCode::NOT_FOUND
    );
}

// ---- a storm under faults ------------------------------------------------------------------

/// The storm of `storm.rs` (posts, edits, comments, likes, renames from concurrent clients)
/// with a fault of every kind running on the operations it uses (it deletes nothing), one per
/// [`EVERY`] requests each: every request is acknowledged (or refused as a race, 409),
/// `verify` passes, and every acknowledged write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_with_faults_running_ends_verified_fault() {
    use Container::{Feed, Leases, Posts, Users};
    use FaultInjectionErrorType as Kind;
    use FaultOperationType as On;
    // Plans that no request matches twice: each counts its own requests.
    let plans = [
        (On::BatchItem, Posts, Kind::ResponseTimeoutAfterService),
        (On::BatchItem, Users, Kind::TooManyRequests),
        (On::BatchItem, Feed, Kind::RetryWith),
        (On::CreateItem, Users, Kind::ConnectionError),
        (On::CreateItem, Posts, Kind::ResponseTimeoutAfterService),
        (On::ReplaceItem, Posts, Kind::Timeout),
        (On::ReplaceItem, Users, Kind::ResponseTimeoutAfterService),
        (On::ReadItem, Users, Kind::PartitionIsGone),
        (On::ReadItem, Posts, Kind::TooManyRequests),
        (On::QueryItem, Posts, Kind::ServiceUnavailable),
        (On::QueryItem, Feed, Kind::RetryWith),
        (On::QueryItem, Users, Kind::ResponseTimeout),
        (On::UpsertItem, Leases, Kind::ResponseTimeout),
        (On::ChangeFeedItem, Posts, Kind::ConnectionError),
        (On::ChangeFeedItem, Users, Kind::ServiceUnavailable),
    ]
    .into_iter()
    .map(|(operation, container, kind)| {
        FaultPlan::error(kind)
            .on(operation)
            .in_container(container)
            .every(EVERY)
    })
    .collect();
    let (app, faults) = app_with(plans).await;
    faults.start();
    crate::storm::storm_in_process(&app).await;
    let injected = faults.injected_by_plan();
    faults.stop();
    assert!(injected.iter().all(|n| *n > 0), "{injected:?}");
    eprintln!(
        "storm under faults: {} injected ({injected:?}), {} requests reached the account",
        faults.injected(),
        faults.reached()
    );
}
