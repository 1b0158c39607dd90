//! Azure Functions packaging and invocation (SPEC 5.4, 6), shown without the Functions host:
//! the host's trigger payloads are replayed byte for byte from `tests/fixtures/functions/`,
//! the metadata is checked against the router, and the staged script root is inspected.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use cosmos_blog::api::{self, AppState};
use cosmos_blog::auth::Authenticator;
use cosmos_blog::changefeed::Source;
use cosmos_blog::functions::{self, metadata, stage};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, Page, PageRequest,
    PartitionKey, Query, Store, StoreError, StoreResult,
};
use cosmos_blog::telemetry;
use serde_json::{Value, json};
use tower::ServiceExt;

const INVOCATION_ID: &str = "83a33220-a921-460a-bec0-b3f043dcf1ff";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> Vec<u8> {
    let path = manifest_dir().join("tests/fixtures/functions").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

// ---- harness ------------------------------------------------------------------------------

/// An embedded store in a temporary folder, wrapped so a test can make it fail like an
/// unreachable Cosmos DB account.
struct Harness {
    _dir: tempfile::TempDir,
    store: Arc<FlakyStore>,
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let embedded = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).expect("store");
        let store = Arc::new(FlakyStore {
            inner: Arc::new(embedded),
            down: AtomicBool::new(false),
        });
        Self { _dir: dir, store }
    }

    fn dyn_store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The application as `startup` builds it.
    fn app(&self) -> Router {
        // Under the host without App Service Authentication, as in these tests' settings.
        let state = AppState::new(
            self.dyn_store(),
            Duration::ZERO,
            Authenticator::EasyAuthDisabled,
        );
        api::app(state, functions::router())
    }

    async fn invoke(&self, function: &str, body: Vec<u8>) -> (StatusCode, String, Value) {
        let request = host_request(function, body);
        let response = self.app().oneshot(request).await.expect("infallible");
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, content_type, body)
    }

    async fn get(&self, uri: &str) -> Value {
        let request = Request::get(uri).body(Body::empty()).expect("request");
        let response = self.app().oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::OK, "GET {uri}");
        let bytes = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }

    async fn changes(&self, container: Container) -> Vec<Value> {
        self.store
            .read_changes(container, None, 10_000)
            .await
            .expect("change log")
            .items
    }
}

/// A request as the Functions host sends a trigger invocation to the custom handler.
fn host_request(function: &str, body: Vec<u8>) -> Request<Body> {
    Request::post(format!("/{function}"))
        .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
        .header(header::USER_AGENT, "Azure-Functions-Host/4.1040.300.1")
        .header("x-azure-functions-hostversion", "4.1040.300.1")
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID)
        .header(
            "traceparent",
            "00-bb2bd5eef54cb15a1506d0326d2489e7-d3f54c84c7034d76-00",
        )
        .body(Body::from(body))
        .expect("request")
}

fn logs(body: &Value) -> Vec<String> {
    body["Logs"]
        .as_array()
        .map(|lines| {
            lines
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Delegates to the embedded store, or fails every call with a transient error while down.
struct FlakyStore {
    inner: Arc<dyn Store>,
    down: AtomicBool,
}

impl FlakyStore {
    fn check(&self) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("test: store is down".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Store for FlakyStore {
    fn backend(&self) -> &'static str {
        "flaky"
    }
    async fn read_item(
        &self,
        c: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        self.check()?;
        self.inner.read_item(c, pk, id).await
    }
    async fn create_item(&self, c: Container, pk: &PartitionKey, item: Value) -> StoreResult<ETag> {
        self.check()?;
        self.inner.create_item(c, pk, item).await
    }
    async fn upsert_item(&self, c: Container, pk: &PartitionKey, item: Value) -> StoreResult<ETag> {
        self.check()?;
        self.inner.upsert_item(c, pk, item).await
    }
    async fn replace_item(
        &self,
        c: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        self.check()?;
        self.inner.replace_item(c, pk, item, if_match).await
    }
    async fn delete_item(&self, c: Container, pk: &PartitionKey, id: &str) -> StoreResult<()> {
        self.check()?;
        self.inner.delete_item(c, pk, id).await
    }
    async fn execute_batch(
        &self,
        c: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        self.check()?;
        self.inner.execute_batch(c, pk, operations).await
    }
    async fn query(
        &self,
        c: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        self.check()?;
        self.inner.query(c, query, page).await
    }
    async fn read_changes(
        &self,
        c: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        self.check()?;
        self.inner.read_changes(c, since, max_items).await
    }
}

// ---- trigger invocations ------------------------------------------------------------------

#[tokio::test]
async fn on_post_changed_answers_the_host_and_copies_posts() {
    let h = Harness::new();
    let (status, content_type, body) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(body["Outputs"], json!({}));
    assert_eq!(body["ReturnValue"], Value::Null);
    let logs = logs(&body);
    assert_eq!(logs[0], "OnPostChanged: 4 processed, 8 written, 0 skipped");

    let feed = h.get("/api/feed").await;
    assert_eq!(ids(&feed), ["p-c", "p-d", "p-b", "p-a"]);
    let mine = h.get("/api/users/u-ada/posts").await;
    assert_eq!(ids(&mine), ["p-c", "p-d", "p-b", "p-a"]);
}

#[tokio::test]
async fn dates_reformatted_by_the_host_come_out_canonical() {
    let h = Harness::new();
    h.invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    let expected = [
        ("p-c", "2026-11-22T09:15:03.0000000Z"),
        ("p-d", "2026-11-22T09:15:02.5000000Z"),
        ("p-b", "2026-11-22T09:15:02.1234567Z"),
        ("p-a", "2026-11-22T09:15:02.1200000Z"),
    ];
    for page in [
        h.get("/api/feed").await,
        h.get("/api/users/u-ada/posts").await,
    ] {
        let got: Vec<(String, String)> = page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap_or_default().to_owned(),
                    p["creationDate"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|(id, date)| (id.to_string(), date.to_string()))
            .collect();
        assert_eq!(got, want);
    }
    // Copies carry no system properties and the text survives both layers of escaping.
    let feed = h.get("/api/feed").await;
    let a = &feed["items"][3];
    assert_eq!(
        a["content"],
        "Dawn over the harbour, café au lait ☕ and \"quotes\"."
    );
    assert!(a.get("_etag").is_none() && a.get("_lsn").is_none());
}

#[tokio::test]
async fn redelivering_a_batch_changes_nothing() {
    let h = Harness::new();
    h.invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    let users_log = h.changes(Container::Users).await;
    let feed_log = h.changes(Container::Feed).await;
    let feed = h.get("/api/feed").await;

    let (status, _, body) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        logs(&body)[0],
        "OnPostChanged: 4 processed, 0 written, 0 skipped"
    );
    // Not one write: the change logs (with etags and positions) are exactly as before.
    assert_eq!(h.changes(Container::Users).await, users_log);
    assert_eq!(h.changes(Container::Feed).await, feed_log);
    assert_eq!(h.get("/api/feed").await, feed);
}

#[tokio::test]
async fn an_invalid_document_is_logged_and_skipped_without_losing_the_others() {
    let h = Harness::new();
    let (status, _, body) = h
        .invoke(
            "OnPostChanged",
            fixture("on_post_changed_with_invalid_document.json"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let logs = logs(&body);
    assert_eq!(logs[0], "OnPostChanged: 2 processed, 4 written, 1 skipped");
    assert!(
        logs[1].starts_with("OnPostChanged: skipped post \"p-bad\""),
        "{logs:?}"
    );
    assert_eq!(ids(&h.get("/api/feed").await), ["p-f", "p-e"]);
}

#[tokio::test]
async fn on_user_changed_renames_the_users_items() {
    let h = Harness::new();
    let store = h.dyn_store();
    let pk = PartitionKey::single("p-a");
    for item in [
        json!({"id": "p-a", "type": "post", "postId": "p-a", "userId": "u-ada",
               "userUsername": "ada", "title": "First light", "content": "Dawn",
               "commentCount": 1, "likeCount": 0,
               "creationDate": "2026-11-22T09:15:02.1200000Z"}),
        json!({"id": "c-1", "type": "comment", "postId": "p-a", "userId": "u-ada",
               "userUsername": "ada", "content": "Replying to myself",
               "creationDate": "2026-11-22T09:16:00.0000000Z"}),
    ] {
        store
            .upsert_item(Container::Posts, &pk, item)
            .await
            .expect("seed");
    }
    let (status, content_type, body) = h
        .invoke("OnUserChanged", fixture("on_user_changed.json"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(
        logs(&body)[0],
        "OnUserChanged: 1 processed, 2 written, 0 skipped"
    );
    assert_eq!(
        h.get("/api/posts/p-a").await["userUsername"],
        "ada.lovelace"
    );
    let comments = h.get("/api/posts/p-a/comments").await;
    assert_eq!(comments["items"][0]["userUsername"], "ada.lovelace");

    let (_, _, again) = h
        .invoke("OnUserChanged", fixture("on_user_changed.json"))
        .await;
    assert_eq!(
        logs(&again)[0],
        "OnUserChanged: 1 processed, 0 written, 0 skipped"
    );
}

#[tokio::test]
async fn a_plain_array_of_documents_is_accepted() {
    let h = Harness::new();
    let body = json!({
        "Data": {"documents": [{
            "id": "p-x", "type": "post", "postId": "p-x", "userId": "u-ada",
            "userUsername": "ada", "title": "Plain", "content": "No encoding",
            "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-22T09:15:02Z",
            "_rid": "9TZrALpFOV8BAAAAAAAAAA==", "_etag": "\"00000000-0000-0000-0000-000000000000\"",
            "_ts": 1795338902, "_lsn": 5
        }]},
        "Metadata": {"sys": {"MethodName": "OnPostChanged",
            "UtcNow": "2026-11-22T09:15:03Z", "RandGuid": "35e6e68c-5583-436c-a277-5aec2b416ba8"}}
    });
    let (status, _, _) = h.invoke("OnPostChanged", body.to_string().into()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&h.get("/api/feed").await), ["p-x"]);
}

#[tokio::test]
async fn an_undecodable_body_is_a_bad_request() {
    let h = Harness::new();
    for body in [
        "not json at all".to_owned(),
        json!({"Metadata": {}}).to_string(),
        json!({"Data": {}}).to_string(),
        json!({"Data": {"documents": "\"[{\\\"id\\\": "}}).to_string(),
        json!({"Data": {"documents": {"id": "p-a"}}}).to_string(),
    ] {
        let (status, content_type, problem) = h.invoke("OnPostChanged", body.clone().into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(content_type, "application/problem+json");
        assert_eq!(problem["code"], "invalid-invocation");
    }
}

#[tokio::test]
async fn a_transient_store_failure_fails_the_invocation_so_the_host_retries() {
    let h = Harness::new();
    h.store.down.store(true, Ordering::SeqCst);
    let (status, content_type, problem) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type, "application/problem+json");
    assert!(
        !problem.to_string().contains("test: store is down"),
        "internals leaked"
    );
    let (status, _, _) = h
        .invoke("OnUserChanged", fixture("on_user_changed.json"))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);

    // The host's retry delivers the same batch once the store is back.
    h.store.down.store(false, Ordering::SeqCst);
    let (status, _, _) = h
        .invoke("OnPostChanged", fixture("on_post_changed.json"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&h.get("/api/feed").await), ["p-c", "p-d", "p-b", "p-a"]);
}

// ---- logs ---------------------------------------------------------------------------------

// ---- metadata -----------------------------------------------------------------------------

#[test]
fn committed_metadata_equals_the_generated_files() {
    let root = manifest_dir();
    for file in metadata::repository_files() {
        let committed = std::fs::read_to_string(root.join(&file.path)).unwrap_or_default();
        assert_eq!(
            committed,
            file.content,
            "{} is stale: run `cargo run -- functions generate`",
            file.path.display()
        );
    }
    let folders: BTreeSet<String> = std::fs::read_dir(root.join(metadata::FUNCTIONS_DIR))
        .expect("functions/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let names: BTreeSet<String> = metadata::function_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        folders, names,
        "functions/ holds folders the table does not"
    );
}

#[test]
fn host_json_forwards_http_to_the_api_paths() {
    let host: Value = serde_json::from_slice(
        &std::fs::read(manifest_dir().join("host.json")).expect("host.json"),
    )
    .expect("json");
    assert_eq!(host["version"], "2.0");
    assert_eq!(host["extensionBundle"]["version"], "[4.*, 5.0.0)");
    assert_eq!(
        host["customHandler"]["description"]["defaultExecutablePath"],
        "cosmos-blog"
    );
    assert_eq!(host["customHandler"]["enableForwardingHttpRequest"], true);
    assert_eq!(host["extensions"]["http"]["routePrefix"], "api");
}

#[test]
fn trigger_metadata_matches_the_v4_extension() {
    for (source, container) in [(Source::Users, "users"), (Source::Posts, "posts")] {
        let path = manifest_dir()
            .join("functions")
            .join(source.function_name())
            .join("function.json");
        let function: Value =
            serde_json::from_slice(&std::fs::read(path).expect("function.json")).expect("json");
        let bindings = function["bindings"].as_array().expect("bindings");
        assert_eq!(bindings.len(), 1);
        let b = &bindings[0];
        assert_eq!(b["type"], "cosmosDBTrigger");
        assert_eq!(b["direction"], "in");
        assert_eq!(b["name"], "documents");
        assert_eq!(b["connection"], "CosmosDBConnection");
        assert_eq!(b["databaseName"], "%COSMOS_DATABASE%");
        assert_eq!(b["containerName"], container);
        assert_eq!(b["leaseContainerName"], "leases");
        assert_eq!(b["createLeaseContainerIfNotExists"], true);
        assert!(b.get("collectionName").is_none());
        let retry = &function["retry"];
        assert_eq!(retry["strategy"], "exponentialBackoff");
        assert!(retry["maxRetryCount"].as_u64().is_some_and(|n| n > 0));
        assert!(retry["minimumInterval"].is_string() && retry["maximumInterval"].is_string());
    }
}

#[test]
fn api_routes_are_declared_in_the_table_and_only_they() {
    // Every `/api/...` literal of the API's source is a route of the table: a route added
    // to the router without metadata would be unreachable under the Functions host.
    let declared: BTreeSet<String> = metadata::HTTP_FUNCTIONS
        .iter()
        .map(|f| f.axum_path())
        .collect();
    let mut in_source = BTreeSet::new();
    for entry in std::fs::read_dir(manifest_dir().join("src/api")).expect("src/api") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("source");
        for piece in text.split("\"/api/").skip(1) {
            if let Some(end) = piece.find('"') {
                in_source.insert(format!("/api/{}", &piece[..end]));
            }
        }
    }
    assert_eq!(in_source, declared);
}

const PROBE_METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

#[tokio::test]
async fn every_route_and_method_of_the_router_is_a_function_and_vice_versa() {
    let h = Harness::new();
    // `api::routes()` alone, with fallbacks that mark their answers, so a handler's own
    // 404 (unknown user) is told apart from "no such route".
    let router = api::routes()
        .fallback(|| async { (StatusCode::NOT_FOUND, [("x-probe", "fallback")]) })
        .method_not_allowed_fallback(|| async {
            (StatusCode::METHOD_NOT_ALLOWED, [("x-probe", "fallback")])
        })
        .with_state(AppState::new(
            h.dyn_store(),
            Duration::ZERO,
            Authenticator::EasyAuthDisabled,
        ));
    let routes: BTreeSet<&str> = metadata::HTTP_FUNCTIONS.iter().map(|f| f.route).collect();
    for route in routes {
        let path = format!("/api/{route}")
            .replace("{userId}", "probe-user")
            .replace("{postId}", "probe-post");
        for method in PROBE_METHODS {
            let declared = metadata::HTTP_FUNCTIONS
                .iter()
                .any(|f| f.route == route && f.method.eq_ignore_ascii_case(method.as_str()));
            let request = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{}"))
                .expect("request");
            let response = router.clone().oneshot(request).await.expect("infallible");
            let fell_back = response.headers().contains_key("x-probe");
            assert_eq!(
                !fell_back, declared,
                "{method} {path}: router answers = {}, table declares = {declared}",
                !fell_back
            );
        }
    }
}

#[test]
fn http_functions_bind_exactly_one_trigger_and_one_output() {
    for function in metadata::HTTP_FUNCTIONS {
        let path = manifest_dir()
            .join("functions")
            .join(function.name)
            .join("function.json");
        let json: Value =
            serde_json::from_slice(&std::fs::read(path).expect("function.json")).expect("json");
        let bindings = json["bindings"].as_array().expect("bindings");
        assert_eq!(bindings.len(), 2, "{}", function.name);
        let trigger = &bindings[0];
        assert_eq!(trigger["type"], "httpTrigger");
        assert_eq!(trigger["direction"], "in");
        assert!(trigger["authLevel"].is_string());
        assert_eq!(trigger["methods"], json!([function.method]));
        assert_eq!(trigger["route"], function.route);
        assert!(!function.route.starts_with("api/"));
        assert_eq!(
            bindings[1],
            json!({"type": "http", "direction": "out", "name": "res"})
        );
    }
}

// ---- staging ------------------------------------------------------------------------------

fn dummy_binary(dir: &Path) -> PathBuf {
    let path = dir.join("dummy-cosmos-blog");
    std::fs::write(&path, b"#!/bin/sh\necho not really the binary\n").expect("dummy");
    path
}

fn expected_layout() -> Vec<PathBuf> {
    let mut expected: Vec<PathBuf> = metadata::function_names()
        .iter()
        .map(|name| Path::new(name).join("function.json"))
        .chain([PathBuf::from("host.json"), PathBuf::from("cosmos-blog")])
        .collect();
    expected.sort();
    expected
}

#[test]
fn stage_lays_out_a_flat_script_root_and_nothing_else() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("staging/app");
    stage::stage(&out, &binary).expect("stage");

    assert_eq!(stage::files_under(&out).expect("list"), expected_layout());
    for file in metadata::script_root_files() {
        assert_eq!(
            std::fs::read_to_string(out.join(&file.path)).expect("staged file"),
            file.content
        );
    }
    assert_eq!(
        std::fs::read(out.join("cosmos-blog")).expect("binary"),
        std::fs::read(&binary).expect("dummy")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.join("cosmos-blog"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    // Staging again replaces the previous staging.
    std::fs::write(out.join("leftover.txt"), "old").expect("leftover");
    stage::stage(&out, &binary).expect("restage");
    assert_eq!(stage::files_under(&out).expect("list"), expected_layout());
}

#[test]
fn stage_refuses_to_wipe_a_folder_that_is_not_a_staging() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("precious");
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::write(out.join("notes.txt"), "keep me").expect("file");
    assert!(stage::stage(&out, &binary).is_err());
    assert!(out.join("notes.txt").is_file());
    assert!(stage::stage(&work.path().join("x"), &work.path().join("missing")).is_err());
}

#[test]
fn the_zip_holds_the_script_root_with_an_executable_binary() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("app");
    stage::stage(&out, &binary).expect("stage");
    let archive_path = stage::zip_path(&out);
    stage::zip_script_root(&out, &archive_path).expect("zip");
    assert_eq!(archive_path, work.path().join("app.zip"));

    let file = std::fs::File::open(&archive_path).expect("open zip");
    let mut archive = zip::ZipArchive::new(file).expect("read zip");
    let mut names: Vec<String> = archive
        .file_names()
        .map(|name| name.expect("entry name").into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = expected_layout()
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    assert_eq!(names, expected);
    let binary_entry = archive.by_name("cosmos-blog").expect("binary entry");
    assert_eq!(binary_entry.unix_mode().map(|m| m & 0o777), Some(0o755));
    assert_eq!(binary_entry.compression(), zip::CompressionMethod::Deflated);
    drop(binary_entry);
    let mut host = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("host.json").expect("host"), &mut host)
        .expect("read host.json");
    assert_eq!(host, metadata::script_root_files()[0].content);
}

// ---- the binary under the host's settings -------------------------------------------------

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Kills the child when the test ends, pass or fail.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary on the embedded store in `data`, on `port`: through the host's
/// `FUNCTIONS_CUSTOMHANDLER_PORT` when `under_host`, else through `--port` (standalone).
async fn start_binary(data: &Path, port: u16, under_host: bool, stderr: Stdio) -> Running {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos-blog"));
    command
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "info")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .env_remove("FUNCTIONS_WORKER_RUNTIME")
        .env_remove("CosmosDBConnection")
        .env_remove("CosmosDBConnection__accountEndpoint")
        .env_remove("BLOG_BIND_ADDRESS")
        .env_remove("BLOG_CHANGE_FEED")
        .env_remove("BLOG_AUTH")
        .env_remove("WEBSITE_AUTH_ENABLED")
        .stdout(Stdio::null())
        .stderr(stderr);
    if under_host {
        // What the host sets: the worker runtime app setting and the port it assigns.
        command
            .env("FUNCTIONS_WORKER_RUNTIME", "custom")
            .env("FUNCTIONS_CUSTOMHANDLER_PORT", port.to_string());
    } else {
        command.args(["--port", &port.to_string()]);
    }
    let running = Running(command.spawn().expect("spawn cosmos-blog"));
    let client = reqwest::Client::new();
    for _ in 0..100 {
        if let Ok(response) = client.get(format!("http://127.0.0.1:{port}/")).send().await {
            assert_eq!(response.status(), reqwest::StatusCode::OK, "GET /");
            return running;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("cosmos-blog never answered GET / on port {port}");
}

async fn post_invocation(port: u16) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/OnPostChanged"))
        .header("content-type", "application/json; charset=utf-8")
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID)
        .body(fixture("on_post_changed.json"))
        .send()
        .await
        .expect("invoke")
}

#[tokio::test]
async fn the_binary_listens_on_functions_customhandler_port() {
    let data = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let _running = start_binary(data.path(), port, true, Stdio::null()).await;

    // The host's invocation, over a real socket.
    let response = post_invocation(port).await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["Outputs"], json!({}));
}

#[tokio::test]
async fn a_standalone_server_does_not_take_trigger_invocations() {
    let data = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let _running = start_binary(data.path(), port, false, Stdio::null()).await;
    // Standalone, the pump keeps the copies; forged batches must not get in.
    assert_eq!(
        post_invocation(port).await.status(),
        reqwest::StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn log_lines_carry_the_level_and_the_invocation_id() {
    let data = tempfile::tempdir().expect("tempdir");
    let log_path = data.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let port = free_port();
    let running = start_binary(data.path(), port, true, Stdio::from(log)).await;
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/OnPostChanged"))
        .header("content-type", "application/json; charset=utf-8")
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID)
        .body(fixture("on_post_changed_with_invalid_document.json"))
        .send()
        .await
        .expect("invoke");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    drop(running);

    // What the host reads from the handler's stderr: one event per line, level first after
    // the timestamp, the invocation id in the request span.
    let text = std::fs::read_to_string(&log_path).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    let report = lines
        .iter()
        .find(|l| l.contains("OnPostChanged: 2 processed, 4 written, 1 skipped"))
        .unwrap_or_else(|| panic!("no report line in:\n{text}"));
    let warning = lines
        .iter()
        .find(|l| l.contains("skipping unreadable change-feed document"))
        .unwrap_or_else(|| panic!("no warning in:\n{text}"));
    for (line, level) in [(report, "INFO"), (warning, "WARN")] {
        assert!(
            line.contains(&format!("invocation_id={INVOCATION_ID}")),
            "{line}"
        );
        assert_eq!(line.split_whitespace().nth(1), Some(level), "{line}");
        assert!(!line.contains('\u{1b}'), "no colour codes: {line}");
    }
}
