//! `verify`, the invariant check of the model: through the library on both backends (a healthy
//! store passes; each kind of tampering is named), and through the binary (exit codes, output).

use std::collections::BTreeSet;
use std::process::Output;
use std::sync::Arc;

use cosmos_blog::copies::{on_post_changed, rebuild};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{BatchOperation, Container, PartitionKey, Store};
use cosmos_blog::verify::{Scanned, VerifyReport, ViolationKind, verify};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::{TestApp, backend_tests_without_pump, binary};

backend_tests_without_pump!(
    a_healthy_store_verifies_and_missing_work_shows,
    each_broken_invariant_is_named,
    the_feed_holds_exactly_the_most_recent_posts,
    unfinished_deletes_show_and_rebuild_finishes_them,
);

// ---- store access for tampering ------------------------------------------------------------

fn pk(value: &str) -> PartitionKey {
    PartitionKey::single(value)
}

pub async fn read(
    store: &Arc<dyn Store>,
    container: Container,
    partition: &str,
    id: &str,
) -> Value {
    store
        .read_item(container, &pk(partition), id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{}/{partition}/{id} exists", container.name()))
        .item
}

/// Ada's user item as C1 stores it: the author of the posts the store tests write directly.
pub fn ada() -> Value {
    json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada"})
}

pub async fn upsert(store: &Arc<dyn Store>, container: Container, item: Value) {
    let partition = container.partition_key_of(&item).unwrap();
    store
        .upsert_item(container, &partition, item)
        .await
        .unwrap();
}

pub async fn change(
    store: &Arc<dyn Store>,
    container: Container,
    partition: &str,
    id: &str,
    edit: impl FnOnce(&mut Value),
) {
    let mut item = read(store, container, partition, id).await;
    edit(&mut item);
    upsert(store, container, item).await;
}

async fn delete(store: &Arc<dyn Store>, container: Container, partition: &str, id: &str) {
    store
        .delete_item(container, &pk(partition), id)
        .await
        .unwrap();
}

/// Creates `child` in its post's partition and bumps the post's `count_field`, in one batch,
/// as the API does (but without its checks), then lets the copies follow the post.
async fn add_child(store: &Arc<dyn Store>, post_id: &str, count_field: &str, child: Value) {
    let mut post = read(store, Container::Posts, post_id, post_id).await;
    post[count_field] = json!(post[count_field].as_u64().unwrap() + 1);
    store
        .execute_batch(
            Container::Posts,
            &pk(post_id),
            vec![
                BatchOperation::Upsert { item: post },
                BatchOperation::Create { item: child },
            ],
        )
        .await
        .unwrap();
    recopy(store, post_id).await;
}

/// What `OnPostChanged` does for the post's current version: its copies follow it.
async fn recopy(store: &Arc<dyn Store>, post_id: &str) {
    let post = read(store, Container::Posts, post_id, post_id).await;
    on_post_changed(store, &[post]).await.unwrap();
}

type Found = BTreeSet<(ViolationKind, &'static str, String, String)>;

fn found(report: &VerifyReport) -> Found {
    assert_eq!(
        report.total_violations,
        report.violations.len(),
        "all recorded"
    );
    report
        .violations
        .iter()
        .map(|v| {
            (
                v.kind,
                v.container.name(),
                v.partition.clone(),
                v.id.clone(),
            )
        })
        .collect()
}

fn violation(kind: ViolationKind, container: &'static str, partition: &str, id: &str) -> Found {
    BTreeSet::from([(kind, container, partition.to_owned(), id.to_owned())])
}

pub fn assert_holds(report: &VerifyReport) {
    assert!(
        report.holds(),
        "{}\n{}",
        report.violation_lines(100).join("\n"),
        report.verdict()
    );
}

// ---- a store written through the API -------------------------------------------------------

struct Sample {
    ada_long: String,
    ada_short: String,
    bob_post: String,
    cy_post: String,
    /// Cy's comment on Ada's long post.
    cy_comment: String,
}

async fn post_id(response: reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::CREATED);
    let item: Value = response.json().await.unwrap();
    item["id"].as_str().unwrap().to_owned()
}

/// Three users, four posts, three comments and two likes, then Ada renamed.
async fn sample(app: &TestApp) -> Sample {
    for (id, name) in [("ada", "Ada"), ("bob", "Bob"), ("cy", "Cy")] {
        app.register(id, name).await;
    }
    let ada_long = post_id(app.create_post("ada", "long", &"é".repeat(300)).await).await;
    let ada_short = post_id(app.create_post("ada", "short", "s").await).await;
    let bob_post = post_id(app.create_post("bob", "bob's", "b").await).await;
    let cy_post = post_id(app.create_post("cy", "cy's", "c").await).await;
    post_id(app.comment("bob", &ada_long, "nice").await).await;
    let cy_comment = post_id(app.comment("cy", &ada_long, "too").await).await;
    post_id(app.comment("ada", &bob_post, "thanks").await).await;
    app.liked("bob", &ada_long).await;
    app.liked("ada", &cy_post).await;
    assert_eq!(app.put_user("ada", "Ada L.").await.status(), StatusCode::OK);
    Sample {
        ada_long,
        ada_short,
        bob_post,
        cy_post,
        cy_comment,
    }
}

async fn a_healthy_store_verifies_and_missing_work_shows(app: TestApp) {
    let s = sample(&app).await;
    let store = &app.store;
    // No change feed ran: no copies, and Ada's items still carry "Ada".
    let before = verify(store).await.unwrap();
    let stale = before.of_kind(ViolationKind::StaleUsername).count();
    assert_eq!(stale, 2 + 1 + 1, "Ada's two posts, her comment, her like");
    let missing: BTreeSet<&str> = before
        .of_kind(ViolationKind::MissingUserCopy)
        .map(|v| v.id.as_str())
        .collect();
    let posts = BTreeSet::from([
        s.ada_long.as_str(),
        s.ada_short.as_str(),
        s.bob_post.as_str(),
        s.cy_post.as_str(),
    ]);
    assert_eq!(missing, posts);
    let not_in_feed: BTreeSet<&str> = before
        .of_kind(ViolationKind::MissingFromFeed)
        .map(|v| v.id.as_str())
        .collect();
    assert_eq!(not_in_feed, posts);
    let not_in_archive: BTreeSet<&str> = before
        .of_kind(ViolationKind::MissingViewCopy)
        .map(|v| v.id.as_str())
        .collect();
    assert_eq!(not_in_archive, posts);
    assert_eq!(before.total_violations, 4 + 4 + 4 + 4);

    rebuild(store).await.unwrap();
    let after = verify(store).await.unwrap();
    assert_holds(&after);
    assert_eq!(
        after.scanned,
        Scanned {
            users: 3,
            posts: 4,
            comments: 3,
            likes: 2,
            user_copies: 4,
            feed_items: 4,
            tombstones: 0,
            erasures: 0,
            // Each post's copy in its month of `archive`, the month's count and the index's.
            view_items: 6,
            other: 0,
        }
    );
    assert!(after.verdict().starts_with("verify: OK"));
}

async fn each_broken_invariant_is_named(app: TestApp) {
    let s = sample(&app).await;
    let store = &app.store;
    rebuild(store).await.unwrap();
    assert_holds(&verify(store).await.unwrap());
    let mut expected = Found::new();
    use ViolationKind as K;

    // A count out of step with the items (the copies followed the post).
    change(store, Container::Posts, &s.bob_post, &s.bob_post, |p| {
        p["commentCount"] = json!(5)
    })
    .await;
    recopy(store, &s.bob_post).await;
    expected.extend(violation(
        K::CountMismatch,
        "posts",
        &s.bob_post,
        &s.bob_post,
    ));

    // A comment with another name than its author's.
    change(store, Container::Posts, &s.ada_long, &s.cy_comment, |c| {
        c["userUsername"] = json!("Cyrus")
    })
    .await;
    expected.extend(violation(
        K::StaleUsername,
        "posts",
        &s.ada_long,
        &s.cy_comment,
    ));

    // A comment by someone with no user item (counted, so only the author is wrong).
    let ghost_comment = json!({
        "id": "ghost-comment", "type": "comment", "postId": s.cy_post, "userId": "ghost",
        "userUsername": "Ghost", "content": "boo", "creationDate": "2026-01-01T00:00:00.0000000Z"
    });
    add_child(store, &s.cy_post, "commentCount", ghost_comment).await;
    expected.extend(violation(
        K::UnknownAuthor,
        "posts",
        &s.cy_post,
        "ghost-comment",
    ));

    // A like whose id is not derived from its liker.
    let odd_like = json!({
        "id": "cy-like", "type": "like", "postId": s.bob_post, "userId": "cy",
        "userUsername": "Cy", "creationDate": "2026-01-01T00:00:00.0000000Z"
    });
    add_child(store, &s.bob_post, "likeCount", odd_like).await;
    expected.extend(violation(
        K::LikeIdMismatch,
        "posts",
        &s.bob_post,
        "cy-like",
    ));

    // A comment of a post that does not exist.
    upsert(
        store,
        Container::Posts,
        json!({
            "id": "orphan-comment", "type": "comment", "postId": "gone", "userId": "bob",
            "userUsername": "Bob", "content": "?", "creationDate": "2026-01-01T00:00:00.0000000Z"
        }),
    )
    .await;
    expected.extend(violation(K::OrphanItem, "posts", "gone", "orphan-comment"));

    // An item of no known type.
    upsert(
        store,
        Container::Posts,
        json!({"id": "weird", "type": "bogus", "postId": s.cy_post}),
    )
    .await;
    expected.extend(violation(K::UnreadableItem, "posts", &s.cy_post, "weird"));

    // A post without its copy in its author's partition.
    delete(store, Container::Users, "ada", &s.ada_short).await;
    expected.extend(violation(
        K::MissingUserCopy,
        "posts",
        &s.ada_short,
        &s.ada_short,
    ));

    // Copies of a post that does not exist, in users and in the feed.
    let mut ghost_copy = read(store, Container::Users, "cy", &s.cy_post).await;
    ghost_copy["id"] = json!("ghost-post");
    ghost_copy["postId"] = json!("ghost-post");
    upsert(store, Container::Users, ghost_copy.clone()).await;
    upsert(store, Container::Feed, ghost_copy).await;
    expected.extend(violation(K::OrphanUserCopy, "users", "cy", "ghost-post"));
    expected.extend(violation(K::OrphanFeedCopy, "feed", "post", "ghost-post"));

    // A copy of Bob's post in Ada's partition.
    let mut misplaced = read(store, Container::Users, "bob", &s.bob_post).await;
    misplaced["userId"] = json!("ada");
    upsert(store, Container::Users, misplaced).await;
    expected.extend(violation(K::MisplacedUserCopy, "users", "ada", &s.bob_post));

    // Copies that differ from the short form of their post.
    change(store, Container::Users, "bob", &s.bob_post, |c| {
        c["title"] = json!("changed")
    })
    .await;
    expected.extend(violation(K::UserCopyDiffers, "users", "bob", &s.bob_post));
    change(store, Container::Feed, "post", &s.ada_long, |c| {
        // The full content instead of the short one.
        c["content"] = json!("é".repeat(300))
    })
    .await;
    expected.extend(violation(K::FeedCopyDiffers, "feed", "post", &s.ada_long));

    // A recent post missing from the feed.
    delete(store, Container::Feed, "post", &s.ada_short).await;
    expected.extend(violation(
        K::MissingFromFeed,
        "posts",
        &s.ada_short,
        &s.ada_short,
    ));

    let report = verify(store).await.unwrap();
    assert_eq!(
        found(&report),
        expected,
        "\n{}",
        report.violation_lines(100).join("\n")
    );
    assert_eq!(report.total_violations, 13);
    assert!(
        report
            .verdict()
            .starts_with("verify: FAILED, 13 violations")
    );
}

// ---- the feed's bound, with ties ------------------------------------------------------------

/// Post `n` by Ada, dated `n` seconds after a fixed instant, except that posts 2 and 3 share a
/// date: with 103 posts, the 100 most recent are 3..=102, and post 2 ties with post 3.
pub fn dated_post(n: usize) -> Value {
    let second = if n == 2 { 3 } else { n };
    let id = format!("post-{n:03}");
    json!({
        "id": id, "type": "post", "postId": id, "userId": "ada", "userUsername": "Ada",
        "title": format!("post {n}"), "content": "x".repeat(n * 3),
        "commentCount": 0, "likeCount": 0,
        "creationDate": format!("2026-01-01T00:{:02}:{:02}.0000000Z", second / 60, second % 60),
    })
}

async fn feed_holds(store: &Arc<dyn Store>, id: &str) -> bool {
    store
        .read_item(Container::Feed, &pk("post"), id)
        .await
        .unwrap()
        .is_some()
}

/// Puts the short copy of post `n` into the feed.
async fn into_feed(store: &Arc<dyn Store>, n: usize) {
    let copy = read(store, Container::Users, "ada", &format!("post-{n:03}")).await;
    upsert(store, Container::Feed, copy).await;
}

async fn the_feed_holds_exactly_the_most_recent_posts(app: TestApp) {
    let store = &app.store;
    upsert(store, Container::Users, ada()).await;
    for n in 0..103 {
        upsert(store, Container::Posts, dated_post(n)).await;
    }
    rebuild(store).await.unwrap();
    let report = verify(store).await.unwrap();
    assert_holds(&report);
    assert_eq!(report.scanned.feed_items, 100);

    // Posts 2 and 3 tie at the boundary: either may be the 100th.
    let (held, left_out) = if feed_holds(store, "post-003").await {
        ("post-003", 2)
    } else {
        ("post-002", 3)
    };
    delete(store, Container::Feed, "post", held).await;
    into_feed(store, left_out).await;
    assert_holds(&verify(store).await.unwrap());

    // Beyond the bound: the oldest post as a 101st item.
    into_feed(store, 0).await;
    let report = verify(store).await.unwrap();
    assert_eq!(
        found(&report),
        violation(ViolationKind::FeedOverBound, "feed", "post", "post-000")
    );

    // An old post in place of the newest one.
    delete(store, Container::Feed, "post", "post-102").await;
    let report = verify(store).await.unwrap();
    assert_eq!(found(&report), oldest_in_place_of(&["post-102"]));

    // An old post in place of the tied one: the other tied post is named as missing.
    into_feed(store, 102).await;
    let tied_in_feed = format!("post-{left_out:03}");
    delete(store, Container::Feed, "post", &tied_in_feed).await;
    let report = verify(store).await.unwrap();
    assert_eq!(
        found(&report),
        oldest_in_place_of(&["post-002", "post-003"])
    );
}

/// What verify finds when the oldest post, post-000, stands in the feed in place of newer
/// ones: the old post, and each post in `missing` (its own partition) that the feed lacks.
fn oldest_in_place_of(missing: &[&str]) -> Found {
    let mut expected = violation(ViolationKind::OldPostInFeed, "feed", "post", "post-000");
    for id in missing {
        expected.extend(violation(ViolationKind::MissingFromFeed, "posts", id, id));
    }
    expected
}

// ---- the binary ------------------------------------------------------------------------------

/// The binary's `verify` (`verify --repair` when `repair`) on the embedded store in `dir`;
/// fails the test unless it exits with `code`: 0 when every invariant holds (after the
/// repairs), 1 when violations are left.
pub fn verify_exits(dir: &TempDir, repair: bool, code: i32) -> Output {
    let mut verify = binary!().on_data(dir.path()).subcommand("verify");
    if repair {
        verify = verify.arg("--repair");
    }
    let output = verify.output();
    assert_eq!(output.status.code(), Some(code), "{output:?}");
    output
}

pub fn stdout_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// An embedded store with Ada and three posts, their copies made by the handlers unless
/// `copies` is false.
pub async fn embedded_store(copies: bool) -> TempDir {
    let dir = TempDir::new().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap());
    upsert(&store, Container::Users, ada()).await;
    for n in 0..3 {
        upsert(&store, Container::Posts, dated_post(n + 10)).await;
    }
    if copies {
        rebuild(&store).await.unwrap();
    }
    dir
}

pub async fn open(dir: &TempDir) -> Arc<dyn Store> {
    Arc::new(EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_0_on_a_healthy_store_and_1_naming_violations() {
    let dir = embedded_store(true).await;
    let healthy = verify_exits(&dir, false, 0);
    assert_eq!(
        stdout_lines(&healthy),
        [
            "verify: OK, every invariant holds (1 user, 3 posts, 0 comments, 0 likes, 3 post copies in users, 3 feed items, 5 view items)"
        ]
    );

    // 150 copies of posts that do not exist: the first 100 named, then a count.
    let store = open(&dir).await;
    let copy = read(&store, Container::Users, "ada", "post-010").await;
    for n in 0..150 {
        let mut orphan = copy.clone();
        orphan["id"] = json!(format!("gone-{n:03}"));
        orphan["postId"] = orphan["id"].clone();
        upsert(&store, Container::Users, orphan).await;
    }
    let broken = verify_exits(&dir, false, 1);
    let lines = stdout_lines(&broken);
    assert_eq!(lines.len(), 100 + 2, "{lines:?}");
    assert_eq!(
        lines[0],
        "orphan-user-copy users/ada/gone-000: post gone-000 does not exist"
    );
    assert!(lines[100].starts_with("... and 50 more violations"));
    assert!(lines[100].ends_with("(all violations by kind: orphan-user-copy: 150)"));
    assert!(lines[101].starts_with("verify: FAILED, 150 violations (1 user, 3 posts"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_2_when_there_is_no_store() {
    let dir = TempDir::new().unwrap();
    let output = binary!()
        .on_data(&dir.path().join("nothing-here"))
        .subcommand("verify")
        .output();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot verify the store: no embedded store at"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
    assert!(
        !dir.path().join("nothing-here").exists(),
        "verify creates no store"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuild_ends_with_the_verdict_of_verify() {
    // Copies missing: rebuild makes them, and says that everything holds.
    let dir = embedded_store(false).await;
    let output = binary!().on_data(dir.path()).subcommand("rebuild").output();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let lines = stdout_lines(&output);
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("verify: OK, every invariant holds"),
        "{lines:?}"
    );

    // A count out of step: rebuild cannot repair it, says so, and fails.
    let store = open(&dir).await;
    change(&store, Container::Posts, "post-011", "post-011", |p| {
        p["likeCount"] = json!(3)
    })
    .await;
    let output = binary!().on_data(dir.path()).subcommand("rebuild").output();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines = stdout_lines(&output);
    assert!(
        lines.contains(
            &"count-mismatch posts/post-011/post-011: commentCount 0 but 0 comments, likeCount 3 but 0 likes"
                .to_owned()
        ),
        "{lines:?}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("verify: FAILED, 1 violation ("),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_shows_progress_on_a_large_store() {
    let dir = embedded_store(true).await;
    let store = open(&dir).await;
    // 10,000 comments in one transaction: cheaper to write than 10,000 requests, and enough
    // for a progress line. (Their post does not count them: one violation.)
    let comments: Vec<BatchOperation> = (0..10_000)
        .map(|n| BatchOperation::Create {
            item: json!({
                "id": format!("comment-{n:05}"), "type": "comment", "postId": "post-010",
                "userId": "ada", "userUsername": "Ada", "content": "c",
                "creationDate": "2026-01-01T00:00:00.0000000Z"
            }),
        })
        .collect();
    store
        .execute_batch(Container::Posts, &pk("post-010"), comments)
        .await
        .unwrap();
    let output = verify_exits(&dir, false, 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("verify: 10001 items scanned (now in posts), 0 violations so far"),
        "{stderr}"
    );
    assert_eq!(
        stdout_lines(&output),
        [
            "count-mismatch posts/post-010/post-010: commentCount 0 but 10000 comments, likeCount 0 but 0 likes",
            "verify: FAILED, 1 violation (1 user, 3 posts, 10000 comments, 0 likes, 3 post copies in users, 3 feed items, 5 view items)"
        ]
    );
}

/// Deletes whose change-feed work has not run (no pump here): what is left is named, and
/// `rebuild` finishes the job.
async fn unfinished_deletes_show_and_rebuild_finishes_them(app: TestApp) {
    let s = sample(&app).await;
    let store = &app.store;
    rebuild(store).await.unwrap();
    assert_holds(&verify(store).await.unwrap());

    let deleted = app
        .delete_as("ada", &format!("/api/posts/{}", s.ada_long))
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let erased = app
        .send(reqwest::Method::DELETE, "/api/users/bob", Some("bob"), None)
        .await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);

    let before = verify(store).await.unwrap();
    let left: BTreeSet<(&str, &str)> = before
        .of_kind(ViolationKind::LeftAfterDelete)
        .map(|v| (v.partition.as_str(), v.id.as_str()))
        .collect();
    assert!(
        left.contains(&(s.bob_post.as_str(), s.bob_post.as_str())),
        "the erased user's post: {left:?}"
    );
    assert!(
        left.iter().any(|(partition, _)| *partition == s.ada_long),
        "the deleted post's comments and likes: {left:?}"
    );
    let orphans = found(&before);
    for expected in [
        violation(ViolationKind::OrphanUserCopy, "users", "ada", &s.ada_long),
        violation(ViolationKind::OrphanFeedCopy, "feed", "post", &s.ada_long),
    ] {
        assert!(
            orphans.is_superset(&expected),
            "{expected:?} in {orphans:?}"
        );
    }
    assert_eq!(
        (before.scanned.tombstones, before.scanned.erasures),
        (1, 1),
        "a post tombstone and an erasure marker, counted apart"
    );

    rebuild(store).await.unwrap();
    let after = verify(store).await.unwrap();
    assert_holds(&after);
    assert_eq!(
        app.get(&format!("/api/posts/{}", s.bob_post))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let cys_post = app.get_json(&format!("/api/posts/{}", s.cy_post)).await;
    assert_eq!(cys_post["likeCount"], 1, "Ada's like stays");
}
