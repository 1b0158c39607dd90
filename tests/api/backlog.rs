//! `verify` beside the change feed's backlog: changes written after the pump's checkpoint (a
//! live store, a backup taken while the server wrote) are counted and said, the copies they
//! will make are not counted as violations, and what no change makes (a count) still is. On
//! each backend, then through the binary on a backup, as the README checks one.

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::changefeed::{Pump, backlog, pump};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, Store};
use cosmos_blog::verify::{VerifyReport, ViolationKind, verify, verify_explained};
use serde_json::json;
use tempfile::TempDir;
use testkit::{Backend, binary, eventually};

use crate::transfer::text;
use crate::verify::{ada, assert_holds, change, dated_post, stdout_lines, upsert};

/// Ada and three posts, copied by the pump until both its checkpoints are in `leases`; then,
/// behind the stopped pump, a fourth post and Ada renamed: two changes not yet applied.
async fn written_behind_the_pump(store: &Arc<dyn Store>) {
    upsert(store, Container::Users, ada()).await;
    for n in 10..13 {
        upsert(store, Container::Posts, dated_post(n)).await;
    }
    pump_until_nothing_is_left(store).await;

    upsert(store, Container::Posts, dated_post(13)).await;
    change(store, Container::Users, "ada", "ada", |user| {
        user["username"] = json!("Ada L.")
    })
    .await;
}

/// Runs the pump until, once stopped, it has left no change behind and every invariant holds.
/// A backlog read while the pump runs is not a snapshot: it reads `users` before `posts`, so
/// the copies the `posts` handler writes into `users` in between are missed. Only a reading
/// of the stopped pump is final; if something slipped through, the pump runs again.
async fn pump_until_nothing_is_left(store: &Arc<dyn Store>) {
    let nothing_left = || async {
        let behind = backlog(store).await.ok()?;
        let caught_up = behind.pending.iter().all(|(_, n)| *n == Some(0));
        (caught_up && verify(store).await.ok()?.holds()).then_some(())
    };
    for _ in 0..10 {
        let pump = Pump::start(
            Arc::clone(store),
            Duration::from_millis(pump::DEFAULT_POLL_MS),
        );
        eventually(Duration::from_secs(30), nothing_left).await;
        pump.stop().await;
        if nothing_left().await.is_some() {
            return;
        }
    }
    panic!("the stopped pump left changes behind ten times over");
}

async fn verify_beside_the_backlog(store: &Arc<dyn Store>) -> VerifyReport {
    let behind = backlog(store).await.expect("the backlog reads");
    verify_explained(store, &mut |_| {}, &|violation| behind.explains(violation))
        .await
        .expect("verify scans")
}

async fn copies_not_made_yet_are_counted_apart(backend: Backend) {
    let dir = TempDir::new().unwrap();
    let store: Arc<dyn Store> = match backend {
        Backend::Embedded => {
            Arc::new(EmbeddedStore::open(&dir.path().join("blog.sqlite3")).expect("store"))
        }
        Backend::Cosmos => testkit::emulator::emulator_store().await,
    };
    written_behind_the_pump(&store).await;

    let plain = verify(&store).await.unwrap();
    assert!(
        plain.of_kind(ViolationKind::MissingUserCopy).count() == 1
            && plain.of_kind(ViolationKind::StaleUsername).count() == 4,
        "without the backlog, the late copies count: {:?}",
        plain.violations
    );
    let behind = backlog(&store).await.unwrap();
    assert_eq!(behind.total(), 2, "{behind:?}");
    assert!(
        behind
            .describe()
            .starts_with("2 changes not yet applied by the change feed"),
        "{}",
        behind.describe()
    );
    let report = verify_beside_the_backlog(&store).await;
    assert_holds(&report);
    assert_eq!(report.explained, plain.total_violations);

    // What no change makes still counts, even on a post with changes pending.
    change(&store, Container::Posts, "post-013", "post-013", |post| {
        post["commentCount"] = json!(4)
    })
    .await;
    let report = verify_beside_the_backlog(&store).await;
    assert_eq!(report.total_violations, 1, "{:?}", report.violations);
    assert_eq!(report.violations[0].kind, ViolationKind::CountMismatch);
}

testkit::backend_pair!(copies_not_made_yet_are_counted_apart => copies_not_made_yet_are_counted_apart_on_the_embedded_store, copies_not_made_yet_are_counted_apart_on_cosmos_db);

/// The README's check of a backup: `cosmos-blog verify --data-dir <its folder>` passes on a
/// backup taken with changes the pump had not applied, and says how many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_with_changes_not_applied_passes_the_readmes_check() {
    let dir = TempDir::new().unwrap();
    let data = dir.path().join("data");
    let store: Arc<dyn Store> =
        Arc::new(EmbeddedStore::open(&data.join("blog.sqlite3")).expect("store"));
    written_behind_the_pump(&store).await;

    let backup = dir.path().join("backup");
    let taken = binary!()
        .on_data(&data)
        .subcommand("backup")
        .arg("--to")
        .arg(backup.join("blog.sqlite3"))
        .output();
    assert!(taken.status.success(), "{}", text(&taken.stderr));

    let checked = binary!().on_data(&backup).subcommand("verify").output();
    let lines = stdout_lines(&checked);
    assert_eq!(checked.status.code(), Some(0), "{lines:#?}");
    assert_eq!(
        lines[0],
        "verify: 2 changes not yet applied by the change feed (users 1, posts 1); the copies \
         they make are not counted as violations"
    );
    assert!(
        lines[1].starts_with("verify: OK, every invariant holds (1 user, 4 posts")
            // The user copy, feed copy and archive copy of the post not yet copied; the
            // new name on the four posts' items.
            && lines[1].ends_with("; 7 copies left out, which changes not yet applied will make"),
        "{lines:#?}"
    );
    drop(store);
}
