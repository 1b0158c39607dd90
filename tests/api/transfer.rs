//! Taking the data along: export, import and backup.
//!
//! - A blog built through the API (users, renames, posts, comments, likes, deletes, an
//!   erased account) goes through export and import into an empty store, on each backend,
//!   from the embedded store to Cosmos DB, into a tenant of a `multi` store, and between
//!   `multi` stores: the target verifies at once (its copies come from the import alone:
//!   no change feed runs there), and Q1–Q6 answer the same on both.
//! - The real binary: an import killed halfway (SIGKILL) and run again ends in the store an
//!   uninterrupted import makes; every kind of invalid export is refused with its
//!   `file:line`, and nothing is written; a backup taken under a write load serves and
//!   verifies.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cosmos_blog::domain::{
    Comment, CommentContent, CommentId, Like, Post, PostContent, PostId, Timestamp, Title, User,
    UserId, Username,
};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, Query, Store, Tenancy};
use cosmos_blog::transfer::{
    self, ExportOptions, ExportSummary, ImportOptions, ImportSummary, Invalid, Kind, Manifest,
    Plan, TransferProgress as Progress,
};
use cosmos_blog::verify::verify;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::restart::assert_binary_verifies;
use crate::store_contract::all_pages;
use crate::verify::assert_holds;
use testkit::emulator::{
    Fault, FaultOperationType, FaultPlan, faulty_emulator_store_without_throttle_retries,
};
use testkit::{Backend, OPERATION_TENANT, TestApp, binary, eventually};

// ---- a blog with every kind of item --------------------------------------------------------

/// What a blog built through the API holds: what to ask both stores about.
struct Blog {
    users: Vec<&'static str>,
    posts: Vec<String>,
}

async fn delete(app: &TestApp, path: &str, caller: &str) {
    let response = app.send(Method::DELETE, path, Some(caller), None).await;
    assert!(response.status().is_success(), "DELETE {path}");
}

/// Users (one renamed before and after writing), posts, comments, likes, a deleted comment,
/// an unlike, a deleted post, and an erased account; returns once the change feed has done
/// its work (`verify` holds).
async fn build_blog(app: &TestApp) -> Blog {
    for (id, name) in [("ada", "Ada"), ("bob", "Bob"), ("cy", "Cy"), ("dee", "Dee")] {
        app.register(id, name).await;
    }
    assert_eq!(app.put_user("bob", "Bobby").await.status(), StatusCode::OK);
    let mut posts = Vec::new();
    for (author, count) in [("ada", 3), ("bob", 2), ("cy", 1), ("dee", 1)] {
        for n in 0..count {
            let content = format!("{author}'s post {n}: {}", "words ".repeat(60));
            let post = app
                .new_post(author, &format!("{author} {n}"), &content)
                .await;
            posts.push(post["id"].as_str().expect("post id").to_owned());
        }
    }
    let (first, bobs, deleted) = (posts[0].clone(), posts[3].clone(), posts[2].clone());
    for (caller, post, text) in [
        ("bob", &first, "Nice"),
        ("cy", &first, "Hmm"),
        ("dee", &first, "Hello"),
        ("ada", &bobs, "Thanks"),
        ("bob", &deleted, "Gone soon"),
    ] {
        assert_eq!(app.comment(caller, post, text).await.status(), 201);
    }
    for (caller, post) in [
        ("bob", &first),
        ("cy", &first),
        ("dee", &first),
        ("ada", &bobs),
    ] {
        assert_eq!(app.like(caller, post).await.status(), 201);
    }
    let comments = app
        .all_pages(&format!("/api/posts/{first}/comments"), 100)
        .await;
    let cys = comments
        .iter()
        .find(|c| c["userId"] == "cy")
        .and_then(|c| c["id"].as_str())
        .expect("cy's comment");
    delete(app, &format!("/api/posts/{first}/comments/{cys}"), "cy").await;
    delete(app, &format!("/api/posts/{first}/likes"), "cy").await;
    delete(app, &format!("/api/posts/{deleted}"), "ada").await;
    // An edited post carries its edit's date, which moves with it and into its copies.
    let edited = app
        .send(
            Method::PUT,
            &format!("/api/posts/{bobs}"),
            Some("bob"),
            Some(serde_json::json!({"title": "bob 0, edited", "content": "new words"})),
        )
        .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let edited: Value = edited.json().await.expect("the edited post");
    assert!(edited["modifiedDate"].is_string(), "{edited}");
    assert_eq!(app.put_user("bob", "Robert").await.status(), StatusCode::OK);
    let erased = app
        .send(Method::DELETE, "/api/users/dee", Some("dee"), None)
        .await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);
    app.assert_verifies().await;
    Blog {
        users: vec!["ada", "bob", "cy", "dee", "nobody"],
        posts,
    }
}

/// `GET path` as the API answers it: a list read whole (following continuation tokens, two
/// items a page), anything else as it is; a refusal by its status and problem code.
async fn answer(app: &TestApp, path: &str) -> (StatusCode, Value) {
    let list = ["/posts", "/comments", "/likes"]
        .iter()
        .any(|end| path.ends_with(end));
    let mut items = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let mut request = app.client.get(app.url(path));
        if list {
            request = request.query(&[("limit", "2")]);
        }
        if let Some(token) = &continuation {
            request = request.query(&[("continuation", token)]);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status();
        let body: Value = response.json().await.expect("JSON body");
        if status != StatusCode::OK {
            return (status, body["code"].clone());
        }
        if !list {
            return (status, body);
        }
        items.extend(body["items"].as_array().expect("a page").iter().cloned());
        match body["continuation"].as_str() {
            Some(token) => continuation = Some(token.to_owned()),
            None => return (status, Value::Array(items)),
        }
    }
}

/// Q1–Q6 for every user and post of `blog`, as `app` answers them.
async fn answers(app: &TestApp, blog: &Blog) -> BTreeMap<String, (StatusCode, Value)> {
    let mut paths = vec!["/api/feed".to_owned()];
    for user in &blog.users {
        paths.push(format!("/api/users/{user}"));
        paths.push(format!("/api/users/{user}/posts"));
    }
    for post in &blog.posts {
        paths.push(format!("/api/posts/{post}"));
        paths.push(format!("/api/posts/{post}/comments"));
        paths.push(format!("/api/posts/{post}/likes"));
    }
    let mut answers = BTreeMap::new();
    for path in paths {
        let answer = answer(app, &path).await;
        answers.insert(path, answer);
    }
    answers
}

async fn assert_same_answers(source: &TestApp, target: &TestApp, blog: &Blog) {
    let expected = answers(source, blog).await;
    let feed = &expected["/api/feed"].1["items"];
    assert_eq!(
        feed.as_array().map(Vec::len),
        Some(5),
        "7 posts, one deleted, one erased: {feed}"
    );
    let actual = answers(target, blog).await;
    for (path, answer) in &expected {
        assert_eq!(&actual[path], answer, "GET {path}");
    }
}

// ---- export and import through the library -------------------------------------------------

struct Exported {
    _dir: TempDir,
    folder: PathBuf,
    summary: ExportSummary,
}

async fn export_of(store: &Arc<dyn Store>, tenant: Option<&str>) -> Exported {
    let dir = TempDir::new().expect("temp dir");
    let folder = dir.path().join("export");
    let options = ExportOptions {
        tenant: tenant.map(|t| t.parse_tenant()),
    };
    let summary = transfer::export(store, &folder, &options, &mut Progress::hidden())
        .await
        .expect("export");
    Exported {
        _dir: dir,
        folder,
        summary,
    }
}

trait ParseTenant {
    fn parse_tenant(&self) -> cosmos_blog::domain::TenantId;
}

impl ParseTenant for str {
    fn parse_tenant(&self) -> cosmos_blog::domain::TenantId {
        cosmos_blog::domain::TenantId::parse(self).expect("a valid tenant id")
    }
}

fn options(tenant: Option<&str>) -> ImportOptions {
    ImportOptions {
        tenant: tenant.map(|t| t.parse_tenant()),
        concurrency: 8,
        force: false,
    }
}

fn plan(folder: &Path, target: Tenancy, tenant: Option<&str>) -> Result<Plan, Invalid> {
    Plan::validate(folder, target, &options(tenant), &mut Progress::hidden())
}

async fn import_into(store: &Arc<dyn Store>, folder: &Path, tenant: Option<&str>) -> ImportSummary {
    let plan = plan(folder, store.tenancy(), tenant)
        .unwrap_or_else(|invalid| panic!("{invalid}:\n{}", invalid.lines(20).join("\n")));
    plan.import(store, &mut Progress::hidden())
        .await
        .expect("import")
}

/// The target verifies at once: nothing but the import derived its copies.
async fn assert_verifies_now(store: &Arc<dyn Store>) {
    assert_holds(&verify(store).await.expect("verify scans"));
}

async fn round_trip(from: Backend, to: Backend) {
    let source = TestApp::spawn(from).start().await;
    let blog = build_blog(&source).await;
    let export = export_of(&source.whole_store, None).await;
    let counts = &export.summary.manifest.counts;
    assert_eq!(export.summary.manifest.layout, Tenancy::Single);
    assert_eq!(
        (
            counts[&Kind::Users],
            counts[&Kind::Erasures],
            counts[&Kind::Tombstones]
        ),
        (3, 1, 2),
        "dee erased; ada's post and dee's deleted"
    );
    let target = TestApp::spawn(to).without_pump().start().await;
    let summary = import_into(&target.whole_store, &export.folder, None).await;
    assert_eq!(summary.loaded, export.summary.manifest.total());
    assert_eq!((summary.written, summary.unchanged), (summary.loaded, 0));
    assert!(summary.copies.written > 0, "{summary:?}");
    assert_verifies_now(&target.whole_store).await;
    assert_same_answers(&source, &target, &blog).await;

    // Again: the target holds every item already, and every copy.
    let again = import_into(&target.whole_store, &export.folder, None).await;
    assert_eq!((again.written, again.unchanged), (0, again.loaded));
    assert_eq!(again.copies.written, 0, "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_trip_through_the_embedded_store_answers_the_same() {
    round_trip(Backend::Embedded, Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_trip_through_cosmos_db_answers_the_same() {
    round_trip(Backend::Cosmos, Backend::Cosmos).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_blog_moves_to_cosmos_db() {
    round_trip(Backend::Embedded, Backend::Cosmos).await;
}

/// A `single` blog into a tenant of a `multi` store that already serves another tenant with
/// the same user ids: the tenant's routes answer what the blog answered, the other tenant is
/// untouched.
async fn single_into_a_tenant(backend: Backend) {
    let source = TestApp::spawn(backend).start().await;
    let blog = build_blog(&source).await;
    let export = export_of(&source.whole_store, None).await;
    let multi = TestApp::spawn(backend)
        .layout(Tenancy::Multi)
        .without_pump()
        .unaddressed()
        .start()
        .await;
    let neighbour = multi.in_tenant("neighbour");
    neighbour.register("ada", "Another Ada").await;
    assert!(
        plan(&export.folder, Tenancy::Multi, None).is_err(),
        "a single export needs --tenant to go into a multi store"
    );
    import_into(&multi.whole_store, &export.folder, Some(OPERATION_TENANT)).await;
    assert_verifies_now(&multi.whole_store).await;
    assert_same_answers(&source, &multi.in_tenant(OPERATION_TENANT), &blog).await;
    let other = neighbour.get_json("/api/users/ada").await;
    assert_eq!(other["username"], "Another Ada");
    assert_eq!(neighbour.get_json("/api/feed").await["items"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_blog_moves_into_a_tenant_on_the_embedded_store() {
    single_into_a_tenant(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_blog_moves_into_a_tenant_on_cosmos_db() {
    single_into_a_tenant(Backend::Cosmos).await;
}

/// A `multi` store exports every tenant in one file set, each line with its `tenantId`;
/// it imports whole into another `multi` store, or one tenant of it into a `single` store;
/// and one tenant exports alone, as a `single` export.
async fn every_tenant_moves(backend: Backend) {
    let source = TestApp::spawn(backend)
        .layout(Tenancy::Multi)
        .unaddressed()
        .start()
        .await;
    let (first, second) = (
        source.in_tenant("first"),
        source.in_tenant(OPERATION_TENANT),
    );
    let first_blog = build_blog(&first).await;
    let second_blog = build_blog(&second).await;

    let all = export_of(&source.whole_store, None).await;
    assert_eq!(all.summary.manifest.layout, Tenancy::Multi);
    let lines = std::fs::read_to_string(all.folder.join(Kind::Users.file_name())).unwrap();
    let tenants: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["tenantId"].clone())
        .collect();
    assert_eq!(tenants.len(), 6, "three users in each tenant");
    assert!(
        tenants
            .iter()
            .all(|t| t == "first" || t == OPERATION_TENANT)
    );

    let target = TestApp::spawn(backend)
        .layout(Tenancy::Multi)
        .without_pump()
        .unaddressed()
        .start()
        .await;
    let summary = import_into(&target.whole_store, &all.folder, None).await;
    assert_eq!(summary.blogs, 2);
    assert_verifies_now(&target.whole_store).await;
    assert_same_answers(&first, &target.in_tenant("first"), &first_blog).await;
    assert_same_answers(&second, &target.in_tenant(OPERATION_TENANT), &second_blog).await;

    assert!(
        plan(&all.folder, Tenancy::Single, None).is_err(),
        "a multi export into a single store needs --tenant"
    );
    let picked = TestApp::spawn(backend).without_pump().start().await;
    import_into(&picked.whole_store, &all.folder, Some(OPERATION_TENANT)).await;
    assert_verifies_now(&picked.whole_store).await;
    assert_same_answers(&second, &picked, &second_blog).await;

    let alone = export_of(&source.whole_store, Some("first")).await;
    assert_eq!(alone.summary.manifest.layout, Tenancy::Single);
    assert_eq!(alone.summary.manifest.tenant, Some("first".parse_tenant()));
    let single = TestApp::spawn(backend).without_pump().start().await;
    import_into(&single.whole_store, &alone.folder, None).await;
    assert_verifies_now(&single.whole_store).await;
    assert_same_answers(&first, &single, &first_blog).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tenant_moves_on_the_embedded_store() {
    every_tenant_moves(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tenant_moves_on_cosmos_db() {
    every_tenant_moves(Backend::Cosmos).await;
}

// ---- exports made without a store ------------------------------------------------------------

/// The shape of a generated export.
pub(crate) struct Shape {
    pub(crate) users: usize,
    pub(crate) posts_per_user: usize,
    pub(crate) comments: usize,
    pub(crate) likes: usize,
    pub(crate) content_chars: usize,
}

/// Writes a valid `single` export of `shape` into `folder`, item by item as the format has
/// them (the likes of a post are by the next users after its author, so `likes` must not
/// exceed `users`).
pub(crate) fn generated_export(folder: &Path, shape: &Shape) -> Manifest {
    assert!(shape.likes <= shape.users, "one like per user and post");
    std::fs::create_dir_all(folder).unwrap();
    let mut files: BTreeMap<Kind, std::io::BufWriter<std::fs::File>> = Kind::ALL
        .into_iter()
        .map(|kind| {
            let file = std::fs::File::create(folder.join(kind.file_name())).unwrap();
            (kind, std::io::BufWriter::new(file))
        })
        .collect();
    let mut counts: BTreeMap<Kind, u64> = Kind::ALL.into_iter().map(|k| (k, 0)).collect();
    let mut write = |kind: Kind, item: Value| {
        let file = files.get_mut(&kind).unwrap();
        serde_json::to_writer(&mut *file, &item).unwrap();
        file.write_all(b"\n").unwrap();
        *counts.get_mut(&kind).unwrap() += 1;
    };
    let users: Vec<User> = (0..shape.users)
        .map(|n| {
            User::new(
                UserId::parse(&format!("user-{n}")).unwrap(),
                Username::parse(&format!("User {n}")).unwrap(),
            )
        })
        .collect();
    for user in &users {
        write(Kind::Users, serde_json::to_value(user).unwrap());
    }
    let content = PostContent::parse(&"x".repeat(shape.content_chars)).unwrap();
    for (n, author) in users.iter().enumerate() {
        for p in 0..shape.posts_per_user {
            let title = Title::parse(&format!("post {p} of {}", author.user_id)).unwrap();
            let mut post = Post::new(PostId::generate(), author, title, content.clone());
            post.comment_count = shape.comments as u64;
            post.like_count = shape.likes as u64;
            let by = |k: usize| &users[(n + 1 + k) % users.len()];
            for k in 0..shape.comments {
                let text = CommentContent::parse(&format!("comment {k}")).unwrap();
                let comment =
                    Comment::new(CommentId::generate(), post.post_id.clone(), by(k), text);
                write(Kind::Comments, serde_json::to_value(comment).unwrap());
            }
            for k in 0..shape.likes {
                let like = Like::new(post.post_id.clone(), by(k));
                write(Kind::Likes, serde_json::to_value(like).unwrap());
            }
            write(Kind::Posts, serde_json::to_value(post).unwrap());
        }
    }
    for file in files.values_mut() {
        file.flush().unwrap();
    }
    let manifest = Manifest {
        format: transfer::FORMAT.to_owned(),
        version: transfer::FORMAT_VERSION,
        layout: Tenancy::Single,
        tenant: None,
        taken_at: Timestamp::now(),
        source: "generated".to_owned(),
        counts,
    };
    write_manifest(folder, &manifest);
    manifest
}

fn write_manifest(folder: &Path, manifest: &Manifest) {
    let text = serde_json::to_string_pretty(manifest).unwrap();
    std::fs::write(folder.join(transfer::MANIFEST), text).unwrap();
}

/// Every item of the three model containers, in a stable order.
async fn contents(store: &Arc<dyn Store>) -> Vec<(&'static str, String)> {
    let mut items = Vec::new();
    for container in [Container::Users, Container::Posts, Container::Feed] {
        for item in all_pages(store, container, &Query::cross_partition(), 1_000).await {
            items.push((container.name(), item.to_string()));
        }
    }
    items.sort();
    items
}

fn open_embedded(data_dir: &Path) -> Arc<dyn Store> {
    Arc::new(EmbeddedStore::open(&data_dir.join("blog.sqlite3")).expect("the store opens"))
}

// ---- the binary ------------------------------------------------------------------------------

pub(crate) fn import_command(from: &Path, data_dir: &Path) -> Command {
    let mut command = binary!()
        .on_data(data_dir)
        .subcommand("import")
        .into_command();
    command.arg("--from").arg(from);
    command
}

fn run(mut command: Command) -> Output {
    command.output().expect("the binary runs")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

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
    let mut import = import_command(&export, &killed)
        .stderr(Stdio::piped())
        .spawn()
        .expect("import starts");
    let stderr = import.stderr.take().expect("stderr");
    let progress = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("a line of stderr");
            let writing = line.starts_with("import: writing: ");
            seen.push(line);
            if writing {
                return Ok(seen);
            }
        }
        Err(seen)
    })
    .await
    .unwrap();
    import.kill().expect("SIGKILL");
    import.wait().expect("the import ends");
    let seen = progress.unwrap_or_else(|seen| panic!("no progress line: {seen:?}"));
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

fn edit_line(folder: &Path, kind: Kind, line: usize, edit: fn(&mut Value)) {
    let path = folder.join(kind.file_name());
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut item: Value = serde_json::from_str(&lines[line - 1]).unwrap();
    edit(&mut item);
    lines[line - 1] = match item {
        Value::String(raw) => raw,
        item => item.to_string(),
    };
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
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
    let shape = Shape {
        users: 3,
        posts_per_user: 1,
        comments: 2,
        likes: 2,
        content_chars: 10,
    };
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
        users: 3,
        posts_per_user: 2,
        comments: 2,
        likes: 1,
        content_chars: 10,
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
            users: 3,
            posts_per_user: 4,
            comments: 2,
            likes: 2,
            content_chars: 100,
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

// ---- backup ----------------------------------------------------------------------------------

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
            users: 3,
            posts_per_user: 2,
            comments: 2,
            likes: 2,
            content_chars: 50,
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
        users: 3,
        posts_per_user: 1,
        comments: 2,
        likes: 3,
        content_chars: 10,
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
        posts_per_user: 1,
        comments: 2,
        likes: 1,
        content_chars: 10,
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
        posts_per_user: 1,
        comments: 0,
        likes: 0,
        content_chars: 10,
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
