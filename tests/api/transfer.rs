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
    /// Ada's draft and scheduled post: their status, dates and tags move as they are.
    unpublished: Vec<String>,
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
        app.commented(caller, post, text).await;
    }
    for (caller, post) in [
        ("bob", &first),
        ("cy", &first),
        ("dee", &first),
        ("ada", &bobs),
    ] {
        app.liked(caller, post).await;
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
            Some(serde_json::json!({
                "title": "bob 0, edited", "content": "new words", "tags": ["rust", "import"]
            })),
        )
        .await;
    assert_eq!(edited.status(), StatusCode::OK);
    let edited: Value = edited.json().await.expect("the edited post");
    assert!(edited["modifiedDate"].is_string(), "{edited}");
    let mut unpublished = Vec::new();
    let in_an_hour = cosmos_blog::domain::Timestamp::normalise(
        &(time::OffsetDateTime::now_utc() + time::Duration::hours(1))
            .format(&time::format_description::well_known::Rfc3339)
            .expect("a date"),
    )
    .expect("a timestamp");
    for extra in [
        serde_json::json!({"status": "draft", "tags": ["rust"]}),
        serde_json::json!({"status": "scheduled", "publishAt": in_an_hour, "tags": ["later"]}),
    ] {
        let mut body = serde_json::json!({"title": "not yet", "content": "unpublished words"});
        body.as_object_mut()
            .expect("an object")
            .extend(extra.as_object().expect("an object").clone());
        let written = app
            .send(Method::POST, "/api/posts", Some("ada"), Some(body))
            .await;
        assert_eq!(written.status(), StatusCode::CREATED);
        let written: Value = written.json().await.expect("the post");
        unpublished.push(written["id"].as_str().expect("post id").to_owned());
    }
    assert_eq!(app.put_user("bob", "Robert").await.status(), StatusCode::OK);
    let erased = app
        .send(Method::DELETE, "/api/users/dee", Some("dee"), None)
        .await;
    assert_eq!(erased.status(), StatusCode::ACCEPTED);
    app.assert_verifies().await;
    Blog {
        users: vec!["ada", "bob", "cy", "dee", "nobody"],
        posts,
        unpublished,
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
    let mut paths = vec![
        "/api/feed".to_owned(),
        "/api/tags/rust/posts".to_owned(),
        "/api/tags/later/posts".to_owned(),
        "/api/archive".to_owned(),
    ];
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

/// `GET path` as ada, the author of the unpublished posts.
async fn as_ada(app: &TestApp, path: &str) -> Value {
    let response = app.send(Method::GET, path, Some("ada"), None).await;
    response.json().await.expect("JSON body")
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
    // The drafts list and each unpublished post as their author reads them: status,
    // publishAt, publishedDate and tags as they were.
    let paths = blog
        .unpublished
        .iter()
        .map(|id| format!("/api/posts/{id}"))
        .chain(["/api/users/ada/drafts".to_owned()]);
    for path in paths {
        let expected = as_ada(source, &path).await;
        assert!(
            expected["status"].is_string()
                || expected["items"].as_array().is_some_and(|i| i.len() == 2),
            "{path}: {expected}"
        );
        assert_eq!(as_ada(target, &path).await, expected, "GET {path} as ada");
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
    // The data of these tests holds no images: their store is an empty folder.
    let images = cosmos_blog::images::FileImageStore::new(dir.path().join("images"));
    let summary = transfer::export(store, &images, &folder, &options, &mut Progress::hidden())
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
    let multi = import_target_of_tenants(backend).await;
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

testkit::backend_pair!(single_into_a_tenant => a_single_blog_moves_into_a_tenant_on_the_embedded_store, a_single_blog_moves_into_a_tenant_on_cosmos_db);

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

    let target = import_target_of_tenants(backend).await;
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

testkit::backend_pair!(every_tenant_moves => every_tenant_moves_on_the_embedded_store, every_tenant_moves_on_cosmos_db);

// ---- exports made without a store ------------------------------------------------------------

/// The shape of a generated export.
pub(crate) struct Shape {
    pub(crate) users: usize,
    pub(crate) posts_per_user: usize,
    pub(crate) comments: usize,
    pub(crate) likes: usize,
    pub(crate) content_chars: usize,
}

impl Shape {
    /// A few users with a post each, commented and liked: enough of every kind of item for a
    /// test about the format rather than its size.
    pub(crate) const SMALL: Shape = Shape {
        users: 3,
        posts_per_user: 1,
        comments: 2,
        likes: 2,
        content_chars: 10,
    };
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
        image_bytes: 0,
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

/// An empty application of the `multi` layout, addressed by tenant, with no change-feed
/// processing: what an import into several tenants is checked on.
async fn import_target_of_tenants(backend: Backend) -> TestApp {
    TestApp::spawn(backend)
        .layout(Tenancy::Multi)
        .without_pump()
        .unaddressed()
        .start()
        .await
}

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

mod backup;
mod commands;

/// Starts `cosmos-blog import` and SIGKILLs it once its progress on stderr reaches a line
/// that `at` accepts; the lines it printed.
pub(crate) async fn import_killed_at(
    export: &Path,
    data: &Path,
    at: impl Fn(&str) -> bool + Send + 'static,
) -> Vec<String> {
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
    seen.unwrap_or_else(|seen| panic!("the import never reached its kill point: {seen:?}"))
}
