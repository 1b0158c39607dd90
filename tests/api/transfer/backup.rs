//! Backups taken under writes and of a stopped store, and what an import loads: not what a
//! delete under way would remove, counts and usernames from the export's items, its progress.

use super::*;

/// A backup taken by the binary while the server takes a stream of writes: the file is a
/// whole store that serves (its change feed catching up from its own checkpoints), holds
/// every post acknowledged before the backup began, and verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_writes_serves_and_verifies() {
    let data_dir = TempDir::new().unwrap();
    let data = data_dir.path().to_owned();
    let app = TestApp::spawn_on(open_embedded(&data))
        .data_dir(data_dir)
        .start()
        .await;
    for user in ["ada", "bob"] {
        app.register(user, user).await;
    }
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = ["ada", "bob"]
        .into_iter()
        .map(|user| {
            let (app_client, url) = (app.client.clone(), app.url("/api/posts"));
            let (acknowledged, stop) = (Arc::clone(&acknowledged), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let response = app_client
                        .post(&url)
                        .header("x-ms-client-principal-id", user)
                        .json(&json!({"title": format!("{user} {n}"), "content": "under load"}))
                        .send()
                        .await
                        .expect("request sent");
                    assert_eq!(response.status(), StatusCode::CREATED);
                    let post: Value = response.json().await.unwrap();
                    let id = post["id"].as_str().unwrap().to_owned();
                    acknowledged.lock().unwrap().push(id);
                }
            })
        })
        .collect();
    eventually(Duration::from_secs(30), || async {
        (acknowledged.lock().unwrap().len() >= 50).then_some(())
    })
    .await;

    let before: Vec<String> = acknowledged.lock().unwrap().clone();
    let backup_dir = TempDir::new().unwrap();
    let file = backup_dir.path().join("blog.sqlite3");
    let mut backup = binary!().on_data(&data).subcommand("backup").into_command();
    backup.arg("--to").arg(&file);
    let output = tokio::task::spawn_blocking(move || run(backup))
        .await
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.await.expect("the writer ran");
    }

    let mut refused = binary!().on_data(&data).subcommand("backup").into_command();
    refused.arg("--to").arg(&file);
    assert_eq!(
        run(refused).status.code(),
        Some(1),
        "an existing file stays"
    );

    let restored = TestApp::spawn_on(open_embedded(backup_dir.path()))
        .data_dir(backup_dir)
        .start()
        .await;
    for id in &before {
        let post = restored.get(&format!("/api/posts/{id}")).await;
        assert_eq!(
            post.status(),
            StatusCode::OK,
            "post {id} acknowledged before"
        );
    }
    restored.assert_verifies().await;
    drop(restored);
    drop(app);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_of_a_stopped_store_verifies_through_the_binary() {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    generated_export(
        &export,
        &Shape {
            posts_per_user: 2,
            content_chars: 50,
            ..Shape::SMALL
        },
    );
    let data = dir.path().join("data");
    assert!(run(import_command(&export, &data)).status.success());
    let restored = dir.path().join("restored");
    let mut backup = binary!().on_data(&data).subcommand("backup").into_command();
    backup.arg("--to").arg(restored.join("blog.sqlite3"));
    let output = run(backup);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("to restore it"));
    assert_binary_verifies(&restored);
    let partial: Vec<_> = std::fs::read_dir(&restored)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".partial"))
        .collect();
    assert!(partial.is_empty(), "{partial:?}");
}

/// An export taken while a post was being deleted: its tombstone, and comments and likes the
/// delete had not removed yet. They are not loaded (the delete would remove them), and the
/// store verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_delete_under_way_would_remove_is_not_loaded() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("export");
    let shape = Shape {
        likes: 3,
        ..Shape::SMALL
    };
    let mut manifest = generated_export(&folder, &shape);
    let posts_file = folder.join(Kind::Posts.file_name());
    let posts = std::fs::read_to_string(&posts_file).unwrap();
    let (first, rest) = posts.split_once('\n').unwrap();
    let post: Value = serde_json::from_str(first).unwrap();
    std::fs::write(&posts_file, rest).unwrap();
    let tombstone = json!({
        "id": post["id"], "type": "tombstone", "of": "post", "postId": post["id"],
        "userId": post["userId"], "creationDate": post["creationDate"],
        "deletedAt": Timestamp::now(), "ttl": 604800
    });
    std::fs::write(
        folder.join(Kind::Tombstones.file_name()),
        format!("{tombstone}\n"),
    )
    .unwrap();
    *manifest.counts.get_mut(&Kind::Posts).unwrap() -= 1;
    *manifest.counts.get_mut(&Kind::Tombstones).unwrap() += 1;
    write_manifest(&folder, &manifest);

    let store = testkit::emulator::emulator_store().await;
    let summary = import_into(&store, &folder, None).await;
    assert_eq!(
        summary.left_over, 5,
        "the deleted post's 2 comments and 3 likes"
    );
    assert_eq!(summary.written, manifest.total() - 5);
    assert_verifies_now(&store).await;
    let id = post["id"].as_str().unwrap();
    let left = all_pages(
        &store,
        Container::Posts,
        &Query::in_partition(cosmos_blog::store::PartitionKey::single(id)),
        100,
    )
    .await;
    assert_eq!(left.len(), 1, "the tombstone alone: {left:?}");
}

/// Counts and usernames are the export's own, whatever a line says: a post claiming 99
/// comments and a comment carrying an old username are loaded as the platform would hold
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_and_usernames_come_from_the_exports_items() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join("export");
    let shape = Shape {
        users: 2,
        likes: 1,
        ..Shape::SMALL
    };
    generated_export(&folder, &shape);
    edit_line(&folder, Kind::Posts, 1, |post| {
        post["commentCount"] = json!(99);
        post["likeCount"] = json!(0);
    });
    edit_line(&folder, Kind::Comments, 1, |comment| {
        comment["userUsername"] = json!("An Old Name")
    });
    let store = testkit::emulator::emulator_store().await;
    import_into(&store, &folder, None).await;
    assert_verifies_now(&store).await;
    let posts = all_pages(
        &store,
        Container::Posts,
        &Query::cross_partition().of_type("post"),
        10,
    )
    .await;
    assert!(
        posts
            .iter()
            .all(|p| p["commentCount"] == 2 && p["likeCount"] == 1),
        "{posts:?}"
    );
}

/// An export whose file holds a line broken in two (more lines than its manifest says): the
/// import is refused, and its progress never counts past its total ("6 of 5 items").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_progress_never_counts_past_its_total() {
    let dir = TempDir::new().unwrap();
    let export = dir.path().join("export");
    let shape = Shape {
        users: 5,
        comments: 0,
        likes: 0,
        ..Shape::SMALL
    };
    generated_export(&export, &shape);
    let users = export.join(Kind::Users.file_name());
    let written = std::fs::read_to_string(&users).unwrap();
    let mut lines: Vec<String> = written.lines().map(str::to_owned).collect();
    let broken = lines.remove(1);
    let (head, tail) = broken.split_at(broken.len() / 2);
    lines.splice(1..1, [head.to_owned(), tail.to_owned()]);
    std::fs::write(&users, lines.join("\n") + "\n").unwrap();

    let output = run(import_command(&export, &dir.path().join("data")));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let counts: Vec<(u64, u64)> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("import: validating: "))
        .filter_map(|rest| {
            let (done, total) = rest.split_once(" of ")?;
            let total = total.split(' ').next()?;
            Some((done.parse().ok()?, total.parse().ok()?))
        })
        .collect();
    assert!(!counts.is_empty(), "a progress line: {stderr}");
    for (done, total) in counts {
        assert!(done <= total, "{done} of {total}: {stderr}");
    }
}
