//! An import that does not finish leaves its mark in the store, and nothing treats the half-
//! loaded store as whole:
//!
//! - the real binary, killed (SIGKILL) halfway through the sources and again once they are
//!   all written: `verify` fails saying which import and the command that finishes it,
//!   `export`, `rebuild` and `serve` refuse the store, an import of another export is
//!   refused; the same import run again finishes, removes the mark, and `verify` passes;
//! - on each backend, the import stopped dead after its first write (the mark alone), halfway
//!   through its writes, and just before removing the mark: the mark is there each time, and
//!   the import run again ends in a store that verifies, unmarked.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Store, StoreResult};
use cosmos_blog::transfer::{ImportOptions, Plan, TransferProgress as Progress, unfinished_import};
use cosmos_blog::verify::verify;
use tempfile::TempDir;
use testkit::double::{self, Call, Hooks};
use testkit::{Backend, binary};
use tokio::sync::Notify;

use crate::transfer::{Shape, generated_export, import_command, text};
use crate::verify::assert_holds;

/// A blog big enough for several progress lines while writing (10,000 items apart).
const LARGE: Shape = Shape {
    users: 40,
    posts_per_user: 15,
    comments: 20,
    likes: 30,
    content_chars: 300,
};

/// A few of every kind: quick to import again and again.
const SMALL: Shape = Shape {
    users: 6,
    posts_per_user: 4,
    comments: 3,
    likes: 2,
    content_chars: 40,
};

/// Starts `cosmos-blog import` and SIGKILLs it once its progress on stderr reaches a line
/// that `at` accepts; the lines it printed.
async fn import_killed_at(export: &Path, data: &Path, at: impl Fn(&str) -> bool + Send + 'static) {
    let mut import = import_command(export, data)
        .stderr(Stdio::piped())
        .spawn()
        .expect("import starts");
    let stderr = import.stderr.take().expect("stderr");
    let seen = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("a line of stderr");
            let reached = at(&line);
            seen.push(line);
            if reached {
                return Ok(seen);
            }
        }
        Err(seen)
    })
    .await
    .unwrap();
    import.kill().expect("SIGKILL");
    import.wait().expect("the import ends");
    seen.unwrap_or_else(|seen| panic!("the import never reached its kill point: {seen:?}"));
}

/// What the binary says of a store an import left unfinished, command by command.
async fn assert_everything_says_unfinished(data: &Path, export: &Path, other_export: &Path) {
    let finish = format!("cosmos-blog import --from {}", export.display());

    let verified = binary!().on_data(data).subcommand("verify").output();
    let stdout = text(&verified.stdout);
    assert_eq!(verified.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("verify: FAILED, an import did not finish") && stdout.contains(&finish),
        "verify names the import and how to finish it: {stdout}"
    );

    let out = TempDir::new().unwrap();
    let exported = binary!()
        .on_data(data)
        .subcommand("export")
        .arg("--out")
        .arg(out.path().join("export"))
        .output();
    let stderr = text(&exported.stderr);
    assert!(!exported.status.success(), "export refuses: {stderr}");
    assert!(stderr.contains("an import did not finish"), "{stderr}");
    assert!(!out.path().join("export").join("manifest.json").exists());

    let (code, stderr) = binary!()
        .on_data(data)
        .arg("--port")
        .arg("0")
        .exit_within(Duration::from_secs(60))
        .await;
    assert_eq!(code, Some(1), "serve refuses to start: {stderr}");
    assert!(
        stderr.contains("an import did not finish") && stderr.contains(&finish),
        "{stderr}"
    );

    let rebuilt = binary!().on_data(data).subcommand("rebuild").output();
    let stderr = text(&rebuilt.stderr);
    assert!(!rebuilt.status.success(), "rebuild refuses: {stderr}");
    assert!(stderr.contains(&finish), "{stderr}");

    let other = binary!()
        .on_data(data)
        .subcommand("import")
        .arg("--from")
        .arg(other_export)
        .output();
    let stderr = text(&other.stderr);
    assert!(
        !other.status.success(),
        "another export is refused: {stderr}"
    );
    assert!(
        stderr.contains("this is another export") && stderr.contains("--force"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_import_is_said_everywhere_and_finished_by_the_same_import() {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    let manifest = generated_export(&export, &LARGE);
    let other_export = dir.path().join("other");
    generated_export(&other_export, &SMALL);
    let written = manifest.total();
    let last_line = format!("import: writing: {written} of {written} items");
    type KillPoint = Box<dyn Fn(&str) -> bool + Send>;
    let kill_points: [(&str, KillPoint); 2] = [
        (
            "halfway through the sources",
            Box::new(|line: &str| line.starts_with("import: writing: 10000 of")),
        ),
        (
            "once the sources are written, deriving the copies",
            Box::new(move |line: &str| line == last_line),
        ),
    ];
    for (point, at) in kill_points {
        let data = dir.path().join(point.replace(' ', "-"));
        import_killed_at(&export, &data, at).await;
        assert_everything_says_unfinished(&data, &export, &other_export).await;

        let resumed = import_command(&export, &data).output().unwrap();
        let stdout = text(&resumed.stdout);
        assert!(
            resumed.status.success(),
            "killed {point}, the same import finishes: {stdout}{}",
            text(&resumed.stderr)
        );
        assert!(stdout.contains("verify: OK"), "{stdout}");
        let verified = binary!().on_data(&data).subcommand("verify").output();
        assert!(
            verified.status.success(),
            "killed {point}, then finished: {}",
            text(&verified.stdout)
        );
    }
}

// ---- stopped dead after a number of writes, on each backend ----------------------------------

/// Lets `limit` writes through, then holds every further one forever and says so: the import
/// stops there as if killed, once the test drops it.
struct StopAfter {
    limit: usize,
    writes: AtomicUsize,
    reached: Notify,
}

impl StopAfter {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            writes: AtomicUsize::new(0),
            reached: Notify::new(),
        }
    }
}

#[async_trait]
impl Hooks for StopAfter {
    async fn before(&self, call: &Call<'_>, _: &dyn Store) -> StoreResult<()> {
        if call.writes() && self.writes.fetch_add(1, Ordering::SeqCst) >= self.limit {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

fn options(force: bool) -> ImportOptions {
    ImportOptions {
        tenant: None,
        concurrency: 4,
        force,
    }
}

fn plan(export: &Path, force: bool) -> Plan {
    Plan::validate(
        export,
        Default::default(),
        &options(force),
        &mut Progress::hidden(),
    )
    .unwrap_or_else(|invalid| panic!("{invalid}"))
}

async fn fresh_store(backend: Backend, dir: &TempDir, name: &str) -> Arc<dyn Store> {
    match backend {
        Backend::Embedded => Arc::new(
            EmbeddedStore::open(&dir.path().join(format!("{name}.sqlite3"))).expect("store"),
        ),
        Backend::Cosmos => testkit::emulator::emulator_store().await,
    }
}

/// Imports `export` into `store` through a double that stops the import after `limit`
/// writes; whether it finished.
async fn import_stopped_after(store: &Arc<dyn Store>, export: &Path, limit: usize) -> bool {
    let stopper = double::over(Arc::clone(store), StopAfter::new(limit));
    let through: Arc<dyn Store> = stopper.clone();
    let plan = plan(export, false);
    let mut progress = Progress::hidden();
    tokio::select! {
        done = plan.import(&through, &mut progress) => {
            done.expect("import");
            true
        }
        () = stopper.reached.notified() => false,
    }
}

async fn stopped_imports_are_marked_and_finished(backend: Backend) {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    generated_export(&export, &SMALL);
    let other_export = dir.path().join("other");
    generated_export(&other_export, &Shape { users: 2, ..SMALL });

    let counted = double::over(
        fresh_store(backend, &dir, "whole").await,
        StopAfter::new(usize::MAX),
    );
    let through: Arc<dyn Store> = counted.clone();
    plan(&export, false)
        .import(&through, &mut Progress::hidden())
        .await
        .expect("an uninterrupted import");
    let writes = counted.writes.load(Ordering::SeqCst);
    assert!(writes > 10, "{writes} writes");

    // The mark alone; halfway; every write but the mark's removal.
    for limit in [1, writes / 2, writes - 1] {
        let store = fresh_store(backend, &dir, &format!("stopped-{limit}")).await;
        assert!(
            !import_stopped_after(&store, &export, limit).await,
            "stopped after {limit} of {writes} writes"
        );
        let mark = unfinished_import(&store)
            .await
            .expect("the mark reads")
            .unwrap_or_else(|| panic!("marked after {limit} of {writes} writes"));
        assert!(
            mark.finish_command()
                .contains(&export.display().to_string()),
            "{mark}"
        );

        let refused = plan(&other_export, false)
            .import(&store, &mut Progress::hidden())
            .await
            .expect_err("another export is refused onto a marked store");
        assert!(
            format!("{refused:#}").contains("this is another export"),
            "{refused:#}"
        );

        plan(&export, false)
            .import(&store, &mut Progress::hidden())
            .await
            .expect("the same import finishes");
        assert_eq!(unfinished_import(&store).await.unwrap(), None);
        assert_holds(&verify(&store).await.expect("verify scans"));
    }

    // Forced, another export goes over an unfinished one, and its own mark replaces it.
    let store = fresh_store(backend, &dir, "forced").await;
    assert!(!import_stopped_after(&store, &export, writes / 2).await);
    plan(&other_export, true)
        .import(&store, &mut Progress::hidden())
        .await
        .expect("forced");
    assert_eq!(unfinished_import(&store).await.unwrap(), None);
}

testkit::backend_pair!(stopped_imports_are_marked_and_finished => stopped_imports_are_marked_and_finished_on_the_embedded_store, stopped_imports_are_marked_and_finished_on_cosmos_db);
