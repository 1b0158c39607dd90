//! The binary's `import` and `export`: an import killed halfway converges when run again,
//! invalid exports are refused by line with nothing written, a throttled import waits.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_killed_halfway_converges_when_run_again() {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    let manifest = generated_export(
        &export,
        &Shape {
            users: 40,
            posts_per_user: 15,
            comments: 20,
            likes: 30,
            content_chars: 300,
        },
    );
    let total = manifest.total();
    assert!(total > 30_000, "several progress lines: {total}");

    // Killed at its first progress line of writing: 10,000 items in, most still to go.
    let killed = dir.path().join("killed");
    let seen = import_killed_at(&export, &killed, |line| {
        line.starts_with("import: writing: ")
    })
    .await;
    let partial = open_embedded(&killed);
    let posts = all_pages(&partial, Container::Posts, &Query::cross_partition(), 1_000).await;
    let sources = total - manifest.counts[&Kind::Users];
    assert!(
        !posts.is_empty() && (posts.len() as u64) < sources,
        "killed halfway: {} of {sources} items of posts after {seen:?}",
        posts.len()
    );
    drop(partial);

    let resumed = run(import_command(&export, &killed));
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let stdout = text(&resumed.stdout);
    assert!(stdout.contains("verify: OK"), "{stdout}");
    assert!(
        !stdout.contains(" 0 unchanged"),
        "the re-run found what was written: {stdout}"
    );

    let whole = dir.path().join("whole");
    let uninterrupted = run(import_command(&export, &whole));
    assert!(
        uninterrupted.status.success(),
        "{}",
        text(&uninterrupted.stderr)
    );
    let (killed, whole) = (open_embedded(&killed), open_embedded(&whole));
    let resumed_items = contents(&killed).await;
    let posts = manifest.counts[&Kind::Posts] as usize;
    assert_eq!(
        resumed_items.len(),
        total as usize + posts + posts.min(100),
        "every source once, a copy per post, the feed's 100: no duplicates"
    );
    assert!(
        resumed_items == contents(&whole).await,
        "the resumed import ends in the store an uninterrupted one makes"
    );
}

/// One invalid export: what is done to a valid one, and what the refusal must name.
struct Broken {
    kind: Kind,
    line: usize,
    edit: fn(&mut Value),
    expected: &'static str,
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_export_is_refused_by_line_and_nothing_is_written() {
    let dir = TempDir::new().unwrap();
    let valid = dir.path().join("valid");
    let shape = Shape::SMALL;
    generated_export(&valid, &shape);
    let cases = [
        Broken {
            kind: Kind::Comments,
            line: 2,
            edit: |item| *item = Value::from("{\"id\": \"c\", "),
            expected: "comments.jsonl:2: not JSON",
        },
        Broken {
            kind: Kind::Likes,
            line: 3,
            edit: |item| item["type"] = json!("laik"),
            expected: "likes.jsonl:3: type \"laik\"",
        },
        Broken {
            kind: Kind::Users,
            line: 2,
            edit: |item| {
                item["id"] = json!("a/b");
                item["userId"] = json!("a/b");
            },
            expected: "users.jsonl:2: userId: must not contain '/'",
        },
        Broken {
            kind: Kind::Posts,
            line: 1,
            edit: |item| {
                item.as_object_mut().unwrap().remove("title");
            },
            expected: "posts.jsonl:1: missing field `title`",
        },
        Broken {
            kind: Kind::Posts,
            line: 2,
            edit: |item| item["creationDate"] = json!("yesterday"),
            expected: "posts.jsonl:2: not an ISO-8601 date",
        },
        Broken {
            kind: Kind::Comments,
            line: 4,
            edit: |item| item["postId"] = json!("no-such-post"),
            expected: "comments.jsonl:4: comment's post no-such-post is not in the export",
        },
        Broken {
            kind: Kind::Likes,
            line: 1,
            edit: |item| item["postId"] = json!("no-such-post"),
            expected: "likes.jsonl:1: like's post no-such-post is not in the export",
        },
        Broken {
            kind: Kind::Comments,
            line: 1,
            edit: |item| item["userId"] = json!("ghost"),
            expected: "comments.jsonl:1: author \"ghost\" is not among the export's users",
        },
        Broken {
            kind: Kind::Likes,
            line: 2,
            edit: |item| item["userId"] = json!("user-0"),
            expected: "likes.jsonl:2: the like of user \"user-0\" has id",
        },
        Broken {
            kind: Kind::Posts,
            line: 3,
            edit: |item| item["title"] = json!(""),
            expected: "posts.jsonl:3: title: must not be empty",
        },
    ];
    for (n, case) in cases.iter().enumerate() {
        let broken = dir.path().join(format!("broken-{n}"));
        copy_folder(&valid, &broken);
        edit_line(&broken, case.kind, case.line, case.edit);
        assert_refused(
            &broken,
            &dir.path().join(format!("target-{n}")),
            case.expected,
        );
    }

    // A line twice (the manifest then counts one line less, too).
    let twice = dir.path().join("twice");
    copy_folder(&valid, &twice);
    let comments = std::fs::read_to_string(twice.join(Kind::Comments.file_name())).unwrap();
    let first = comments.lines().next().unwrap().to_owned();
    std::fs::write(
        twice.join(Kind::Comments.file_name()),
        format!("{comments}{first}\n"),
    )
    .unwrap();
    assert_refused(
        &twice,
        &dir.path().join("target-twice"),
        "comments.jsonl:7: comment",
    );
    assert_refused(
        &twice,
        &dir.path().join("target-twice"),
        "comments.jsonl: 7 items, but the manifest says 6",
    );
    // No manifest: an export that did not finish.
    let unfinished = dir.path().join("unfinished");
    copy_folder(&valid, &unfinished);
    std::fs::remove_file(unfinished.join(transfer::MANIFEST)).unwrap();
    assert_refused(
        &unfinished,
        &dir.path().join("target-unfinished"),
        "manifest.json: missing",
    );
    // A single export into a multi store names no tenant.
    let target = dir.path().join("target-multi");
    let mut command = import_command(&valid, &target);
    command.args(["--tenancy", "multi"]);
    let refused = run(command);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("--tenant"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!target.exists(), "nothing written, not even a store");

    // The valid export loads.
    let loaded = run(import_command(&valid, &dir.path().join("target-valid")));
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
}

/// Runs the binary's import of `export` into `data_dir`: it must exit 1, name `expected`
/// on stderr, and leave no store behind.
fn assert_refused(export: &Path, data_dir: &Path, expected: &str) {
    let output = run(import_command(export, data_dir));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(expected), "{expected:?} in:\n{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(!data_dir.exists(), "the store was not even created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_export_leaves_cosmos_db_untouched() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("export");
    let shape = Shape {
        posts_per_user: 2,
        likes: 1,
        ..Shape::SMALL
    };
    generated_export(&folder, &shape);
    edit_line(&folder, Kind::Likes, 6, |item| {
        item["postId"] = json!("gone")
    });
    let invalid = plan(&folder, Tenancy::Single, None)
        .err()
        .expect("the export is refused");
    assert_eq!(invalid.total, 1, "{:?}", invalid.errors);
    assert_eq!(
        invalid.errors[0].to_string(),
        "likes.jsonl:6: like's post gone is not in the export"
    );
    let store = testkit::emulator::emulator_store().await;
    assert!(contents(&store).await.is_empty());
}

/// Cosmos DB throttles the import's batches (`429` with `Retry-After`, which a client that
/// does not retry them itself passes on): each is tried again once the wait is over, and the
/// import completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_import_waits_and_completes() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("export");
    let manifest = generated_export(
        &folder,
        &Shape {
            posts_per_user: 4,
            content_chars: 100,
            ..Shape::SMALL
        },
    );
    let throttle = Fault::Throttle {
        retry_after: Duration::from_millis(50),
    };
    let first_batches = FaultPlan::new(throttle)
        .on(FaultOperationType::BatchItem)
        .times(6);
    let (store, faults) = faulty_emulator_store_without_throttle_retries(vec![first_batches]).await;
    faults.start();
    let summary = import_into(&store, &folder, None).await;
    assert_eq!(faults.injected(), 6, "the first 6 batches were throttled");
    assert_eq!(summary.written, manifest.total());
    assert_verifies_now(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exports_what_it_imported_and_refuses_to_overwrite() {
    let dir = TempDir::new().unwrap();
    let generated = dir.path().join("generated");
    let shape = Shape {
        users: 4,
        posts_per_user: 2,
        comments: 3,
        likes: 2,
        content_chars: 400,
    };
    generated_export(&generated, &shape);
    let data = dir.path().join("data");
    assert!(run(import_command(&generated, &data)).status.success());

    let exported = dir.path().join("exported");
    let mut export = binary!().on_data(&data).subcommand("export").into_command();
    export.arg("--out").arg(&exported);
    let output = run(export);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).starts_with("export: 52 items"),
        "{}",
        text(&output.stdout)
    );
    for kind in Kind::ALL {
        let lines = |folder: &Path| {
            let text = std::fs::read_to_string(folder.join(kind.file_name())).unwrap();
            let mut items: Vec<Value> = text
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            items.sort_by_key(ToString::to_string);
            items
        };
        assert_eq!(lines(&exported), lines(&generated), "{kind}");
    }

    let mut again = binary!().on_data(&data).subcommand("export").into_command();
    again.arg("--out").arg(&exported);
    let refused = run(again);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("is not empty"));
    let nowhere = dir.path().join("no-store");
    let mut missing = binary!()
        .on_data(&nowhere)
        .subcommand("export")
        .into_command();
    missing.arg("--out").arg(dir.path().join("never"));
    let refused = run(missing);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("no embedded store"));
    assert!(!nowhere.exists() && !dir.path().join("never").exists());
}
