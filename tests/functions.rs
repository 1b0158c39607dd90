//! Azure Functions packaging (the script root with one `function.json` per function) and
//! invocation (the change-feed triggers, the timer and the HTTP routes), shown without the
//! Functions host:
//! the host's trigger payloads are replayed byte for byte from `tests/fixtures/functions/`,
//! and its forwarded HTTP requests as it sends them; the metadata of both data layouts is
//! checked against the router, and the staged script root is inspected.

#![allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test, with its message"
)]

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
use cosmos_blog::api::{self, AppState, Caches};
use cosmos_blog::auth::Authenticator;
use cosmos_blog::changefeed::Recheck;
use cosmos_blog::copies::Source;
use cosmos_blog::functions::{self, metadata, stage};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, Store, StoreError, StoreResult, Tenancy};
use cosmos_blog::telemetry;
use cosmos_blog::{startup, web};
use serde_json::{Value, json};
use tower::ServiceExt;

use testkit::double::{self, Call, Double, Hooks};
use testkit::{Served, binary, eventually_ok};

const INVOCATION_ID: &str = "83a33220-a921-460a-bec0-b3f043dcf1ff";
const HOST_VERSION: &str = "4.1040.300.1";
const LAYOUTS: [Tenancy; 2] = [Tenancy::Single, Tenancy::Multi];

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
    store: Arc<Double<Outage>>,
    /// What the `Recheck` timer function does (off unless a test says).
    recheck: Recheck,
}

impl Harness {
    fn new() -> Self {
        Self::with(Tenancy::Single)
    }

    /// A store of the `tenancy` layout.
    fn with(tenancy: Tenancy) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let embedded =
            EmbeddedStore::open_with(&dir.path().join("blog.sqlite3"), tenancy).expect("store");
        let store = double::named(Arc::new(embedded), Outage::default(), "flaky");
        Self {
            _dir: dir,
            store,
            recheck: Recheck::Off,
        }
    }

    fn dyn_store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The application as `startup` builds it, under the host without App Service
    /// Authentication (commands get 401).
    fn app(&self) -> Router {
        self.app_with(Authenticator::EasyAuthDisabled)
    }

    /// The application as `startup` builds it, authenticating callers with `auth`.
    fn app_with(&self, auth: Authenticator) -> Router {
        let state = AppState::new(self.dyn_store(), Caches::none(), auth);
        let site = web::Site {
            public_url: web::PublicUrl::parse("https://blog.example").expect("an origin"),
            form_key: web::FormKey::drawn(),
            trusts_forwarded_host: true,
        };
        startup::app(
            state,
            functions::router(self.recheck, cosmos_blog::changefeed::Publisher::OnTimer),
            &[],
            site,
        )
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
        let (status, body) = send(self.app(), request).await;
        assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        body
    }

    async fn changes(&self, container: Container) -> Vec<Value> {
        self.store
            .read_changes(container, None, 10_000)
            .await
            .expect("change log")
            .items
    }
}

/// The status and JSON body (`null` if none) of `app`'s answer to `request`.
async fn send(app: Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.oneshot(request).await.expect("infallible");
    let status = response.status();
    let bytes = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A request as the Functions host sends a trigger invocation to the custom handler.
fn host_request(function: &str, body: Vec<u8>) -> Request<Body> {
    Request::post(format!("/{function}"))
        .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
        .header(
            header::USER_AGENT,
            format!("Azure-Functions-Host/{HOST_VERSION}"),
        )
        .header("x-azure-functions-hostversion", HOST_VERSION)
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID)
        .header(
            "traceparent",
            "00-bb2bd5eef54cb15a1506d0326d2489e7-d3f54c84c7034d76-00",
        )
        .body(Body::from(body))
        .expect("request")
}

/// A client's request as the Functions host forwards it to the custom handler when
/// `enableForwardingHttpRequest` is on: method, path (with the `api` route prefix), query,
/// headers and body as the client sent them through App Service, App Service
/// Authentication's principal headers when the caller signed in, and the host's own three
/// headers (its version, the invocation id, and its name appended to the user agent).
fn forwarded_request(
    method: Method,
    path_and_query: &str,
    caller: Option<&str>,
    body: Option<Value>,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(header::HOST, "cosmos-blog.azurewebsites.net")
        .header(header::ACCEPT, "*/*")
        .header(
            header::USER_AGENT,
            format!("curl/8.5.0 Azure-Functions-Host/{HOST_VERSION}"),
        )
        .header("max-forwards", "10")
        .header("x-forwarded-for", "203.0.113.7:51234")
        .header("x-forwarded-proto", "https")
        .header("x-original-url", path_and_query)
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .header("x-azure-functions-hostversion", HOST_VERSION)
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID);
    if let Some(caller) = caller {
        request = request
            .header("x-ms-client-principal-id", caller)
            .header(
                "x-ms-client-principal-name",
                format!("{caller}@contoso.com"),
            )
            .header("x-ms-client-principal-idp", "aad");
    }
    let body = match body {
        Some(json) => {
            let bytes = json.to_string().into_bytes();
            request = request
                .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
                .header(header::CONTENT_LENGTH, bytes.len());
            Body::from(bytes)
        }
        None => Body::empty(),
    };
    request.body(body).expect("request")
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

/// Hooks that fail every store call with a transient error while the store is down.
#[derive(Default)]
struct Outage {
    down: AtomicBool,
}

#[async_trait]
impl Hooks for Outage {
    async fn before(&self, _: &Call<'_>, _: &dyn Store) -> StoreResult<()> {
        if self.down.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("test: store is down".into()))
        } else {
            Ok(())
        }
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

// ---- the re-check's timer ----------------------------------------------------------------

/// The `Recheck` function's log lines for one replayed timer tick, after checking that the
/// answer is the host's invocation body.
async fn tick(h: &Harness) -> Vec<String> {
    let (status, content_type, body) = h.invoke("Recheck", fixture("recheck_timer.json")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(body["Outputs"], json!({}));
    assert_eq!(body["ReturnValue"], Value::Null);
    let logs = logs(&body);
    assert!(
        logs.first().is_some_and(|l| l.starts_with("Recheck: ")),
        "{logs:?}"
    );
    logs
}

#[tokio::test]
async fn recheck_timer_invocations_answer_the_host_and_repair_what_the_triggers_missed() {
    let mut h = Harness::new();
    h.recheck = Recheck::OnTimer(Duration::from_millis(1));
    // A post whose trigger batch never came (no trigger runs here): no copy anywhere.
    let store = h.dyn_store();
    let user = json!({"id": "u-ada", "type": "user", "userId": "u-ada", "username": "ada"});
    store
        .upsert_item(Container::Users, &PartitionKey::single("u-ada"), user)
        .await
        .expect("user");
    let post = json!({
        "id": "p-x", "type": "post", "postId": "p-x", "userId": "u-ada", "userUsername": "ada",
        "title": "Missed", "content": "by the trigger", "commentCount": 0, "likeCount": 0,
        "creationDate": "2026-11-22T09:15:02.0000000Z"
    });
    store
        .upsert_item(Container::Posts, &PartitionKey::single("p-x"), post)
        .await
        .expect("post");

    // Each tick re-checks what is a delay old: the post once its commit second is past.
    let repaired = eventually_ok(Duration::from_secs(30), || async {
        let logs = tick(&h).await;
        let repaired = logs.iter().find(|l| l.starts_with("Recheck: repaired"));
        repaired.cloned().ok_or_else(|| format!("{logs:?}"))
    })
    .await;
    assert!(
        repaired.starts_with("Recheck: repaired missing-user-copy posts/p-x/p-x"),
        "{repaired}"
    );
    assert_eq!(ids(&h.get("/api/feed").await), ["p-x"]);
    assert_eq!(ids(&h.get("/api/users/u-ada/posts").await), ["p-x"]);
    let report = cosmos_blog::verify::verify(&store).await.expect("verify");
    assert!(report.holds(), "{}", report.violation_lines(10).join("\n"));
}

#[tokio::test]
async fn recheck_timer_does_nothing_when_off_or_beside_the_pump() {
    for (recheck, says) in [
        (Recheck::Off, "Recheck: off (BLOG_RECHECK_DELAY_MS=0)"),
        (
            Recheck::BesideThePump(Duration::from_secs(600)),
            "Recheck: runs beside the in-process change-feed pump; nothing to do here",
        ),
    ] {
        let mut h = Harness::new();
        h.recheck = recheck;
        assert_eq!(tick(&h).await, [says]);
        let leases = h.changes(Container::Leases).await;
        assert!(leases.is_empty(), "no checkpoint written: {leases:?}");
    }
}

#[tokio::test]
async fn recheck_timer_failures_are_500_and_bad_bodies_400() {
    let mut h = Harness::new();
    h.recheck = Recheck::OnTimer(Duration::from_millis(1));
    h.store.down.store(true, Ordering::SeqCst);
    let (status, content_type, problem) = h.invoke("Recheck", fixture("recheck_timer.json")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(problem["code"], "recheck-failed");
    h.store.down.store(false, Ordering::SeqCst);
    assert_eq!(tick(&h).await.len(), 1);
    for body in ["not json", "{}", "{\"Metadata\": {}}"] {
        let (status, _, problem) = h.invoke("Recheck", body.into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(problem["code"], "invalid-invocation");
    }
}

#[test]
fn recheck_timer_metadata_is_generated_from_the_table() {
    let path = manifest_dir().join("functions/Recheck/function.json");
    let function: Value =
        serde_json::from_slice(&std::fs::read(path).expect("function.json")).expect("json");
    assert_eq!(
        function,
        json!({"bindings": [{
            "type": "timerTrigger", "direction": "in", "name": "timer",
            "schedule": "0 */1 * * * *"
        }]})
    );
    let timer = |tenancy| -> Vec<metadata::GeneratedFile> {
        metadata::script_root_files(tenancy)
            .into_iter()
            .filter(|f| f.path.starts_with("Recheck"))
            .collect()
    };
    assert_eq!(timer(Tenancy::Single).len(), 1);
    assert_eq!(timer(Tenancy::Multi), timer(Tenancy::Single));
}

// ---- the multi-tenant layout ---------------------------------------------------------------

/// `(tenantId, id, title, creationDate)` of every item of `container` in a `multi` store.
async fn copies(h: &Harness, container: Container) -> BTreeSet<(String, String, String, String)> {
    let field = |item: &Value, name: &str| item[name].as_str().unwrap_or_default().to_owned();
    h.changes(container)
        .await
        .iter()
        .filter(|item| item["type"] == "post")
        .map(|item| {
            (
                field(item, "tenantId"),
                field(item, "id"),
                field(item, "title"),
                field(item, "creationDate"),
            )
        })
        .collect()
}

#[tokio::test]
async fn on_post_changed_copies_each_post_within_its_tenant() {
    let h = Harness::with(Tenancy::Multi);
    let (status, content_type, body) = h
        .invoke("OnPostChanged", fixture("on_post_changed_two_tenants.json"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(
        logs(&body)[0],
        "OnPostChanged: 4 processed, 8 written, 0 skipped"
    );

    // Both tenants have a post `p-a` by a user `u-ada`: each keeps its own.
    let contoso = h.get("/api/tenants/contoso/feed").await;
    assert_eq!(ids(&contoso), ["p-b", "p-a"]);
    assert_eq!(contoso["items"][1]["title"], "Contoso first light");
    let fabrikam = h.get("/api/tenants/fabrikam/feed").await;
    assert_eq!(ids(&fabrikam), ["p-a", "p-c"]);
    assert_eq!(fabrikam["items"][0]["title"], "Fabrikam first light");
    assert_eq!(
        ids(&h.get("/api/tenants/contoso/users/u-ada/posts").await),
        ["p-b", "p-a"]
    );
    assert_eq!(
        ids(&h.get("/api/tenants/fabrikam/users/u-ada/posts").await),
        ["p-a"]
    );
    assert_eq!(
        ids(&h.get("/api/tenants/fabrikam/users/u-bob/posts").await),
        ["p-c"]
    );

    // In the store: each copy carries its own tenant, and dates come out canonical.
    let expected: BTreeSet<(String, String, String, String)> = [
        (
            "contoso",
            "p-a",
            "Contoso first light",
            "2026-11-22T09:15:02.1200000Z",
        ),
        (
            "contoso",
            "p-b",
            "Contoso second",
            "2026-11-22T09:15:03.0000000Z",
        ),
        (
            "fabrikam",
            "p-a",
            "Fabrikam first light",
            "2026-11-22T09:15:02.5000000Z",
        ),
        (
            "fabrikam",
            "p-c",
            "Fabrikam by bob",
            "2026-11-22T09:15:02.1234567Z",
        ),
    ]
    .iter()
    .map(|(t, id, title, date)| {
        (
            t.to_string(),
            id.to_string(),
            title.to_string(),
            date.to_string(),
        )
    })
    .collect();
    assert_eq!(copies(&h, Container::Feed).await, expected);
    assert_eq!(copies(&h, Container::Users).await, expected);

    // Redelivered: nothing written in either tenant.
    let (_, _, again) = h
        .invoke("OnPostChanged", fixture("on_post_changed_two_tenants.json"))
        .await;
    assert_eq!(
        logs(&again)[0],
        "OnPostChanged: 4 processed, 0 written, 0 skipped"
    );
}

#[tokio::test]
async fn on_user_changed_renames_the_same_user_id_within_each_tenant() {
    let h = Harness::with(Tenancy::Multi);
    let app = h.app_with(Authenticator::TrustedHeader);
    let mut posts = Vec::new();
    for tenant in ["contoso", "fabrikam"] {
        let user = json!({"username": "ada"});
        let put = forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(user),
        );
        assert_eq!(send(app.clone(), put).await.0, StatusCode::CREATED);
        let post = json!({"title": format!("{tenant} post"), "content": "Hello"});
        let create = forwarded_request(
            Method::POST,
            &format!("/api/tenants/{tenant}/posts"),
            Some("u-ada"),
            Some(post),
        );
        let (status, post) = send(app.clone(), create).await;
        assert_eq!(status, StatusCode::CREATED, "{post}");
        posts.push((tenant, post["id"].as_str().expect("post id").to_owned()));
    }

    // u-ada of contoso and u-ada of fabrikam each take their own new name; one batch of the
    // users' change feed carries both renames.
    for (tenant, username) in [("contoso", "ada.lovelace"), ("fabrikam", "ada.byron")] {
        let rename = forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(json!({ "username": username })),
        );
        assert_eq!(send(app.clone(), rename).await.0, StatusCode::OK);
    }
    let (status, _, body) = h
        .invoke("OnUserChanged", fixture("on_user_changed_two_tenants.json"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        logs(&body)[0],
        "OnUserChanged: 2 processed, 2 written, 0 skipped"
    );
    for ((tenant, post), username) in posts.iter().zip(["ada.lovelace", "ada.byron"]) {
        let post = h.get(&format!("/api/tenants/{tenant}/posts/{post}")).await;
        assert_eq!(post["userUsername"], username, "{tenant}");
    }
    let (_, _, again) = h
        .invoke("OnUserChanged", fixture("on_user_changed_two_tenants.json"))
        .await;
    assert_eq!(
        logs(&again)[0],
        "OnUserChanged: 2 processed, 0 written, 0 skipped"
    );
}

#[tokio::test]
async fn forwarded_requests_reach_their_tenant_and_no_other() {
    let h = Harness::with(Tenancy::Multi);
    // Under the host with App Service Authentication on: the principal header is trusted.
    let app = h.app_with(Authenticator::TrustedHeader);
    let put = |tenant: &str, username: &str| {
        forwarded_request(
            Method::PUT,
            &format!("/api/tenants/{tenant}/users/u-ada"),
            Some("u-ada"),
            Some(json!({ "username": username })),
        )
    };
    let get = |path: &str| forwarded_request(Method::GET, path, None, None);

    // The same user id in two tenants: two users.
    let (status, user) = send(app.clone(), put("contoso", "ada")).await;
    assert_eq!(status, StatusCode::CREATED, "{user}");
    assert_eq!(
        user,
        json!({"id": "u-ada", "type": "user", "userId": "u-ada", "username": "ada"})
    );
    let (status, _) = send(app.clone(), put("fabrikam", "ada.byron")).await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, contoso) = send(app.clone(), get("/api/tenants/contoso/users/u-ada")).await;
    assert_eq!(contoso["username"], "ada");
    let (_, fabrikam) = send(app.clone(), get("/api/tenants/fabrikam/users/u-ada")).await;
    assert_eq!(fabrikam["username"], "ada.byron");

    // Q7 with its query string, as forwarded.
    let (status, page) = send(app.clone(), get("/api/tenants/contoso/users?limit=1")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), ["u-ada"]);

    // Another tenant does not see it; the plain route does not exist; a bad tenant id is a
    // bad request.
    let (status, problem) = send(app.clone(), get("/api/tenants/northwind/users/u-ada")).await;
    assert_eq!(
        (status, &problem["code"]),
        (StatusCode::NOT_FOUND, &json!("user-not-found"))
    );
    let (status, problem) = send(app.clone(), get("/api/users/u-ada")).await;
    assert_eq!(
        (status, &problem["code"]),
        (StatusCode::NOT_FOUND, &json!("route-not-found"))
    );
    let (status, problem) = send(app.clone(), get("/api/tenants/a%23b/users/u-ada")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
}

// ---- metadata -----------------------------------------------------------------------------

#[test]
fn committed_metadata_equals_the_generated_files() {
    // The repository keeps the default deployment's: the single-tenant layout.
    let root = manifest_dir();
    for file in metadata::repository_files(Tenancy::Single) {
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
    let names: BTreeSet<String> = metadata::function_names(Tenancy::Single)
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        folders, names,
        "functions/ holds folders the table does not"
    );
}

/// The generated `host.json` of `tenancy`.
fn generated_host_json(tenancy: Tenancy) -> Value {
    let files = metadata::script_root_files(tenancy);
    let host = files
        .iter()
        .find(|f| f.path == Path::new("host.json"))
        .expect("host.json");
    serde_json::from_str(&host.content).expect("json")
}

/// The arguments a `host.json` makes the host start the binary with.
fn handler_arguments(host: &Value) -> Vec<String> {
    host["customHandler"]["description"]["arguments"]
        .as_array()
        .expect("arguments")
        .iter()
        .map(|a| a.as_str().expect("string argument").to_owned())
        .collect()
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
    // No host prefix: the pages are at the site's root, the API functions' routes start with
    // `api/` themselves.
    assert_eq!(host["extensions"]["http"]["routePrefix"], "");
    // The package decides the layout its routes are for.
    assert_eq!(handler_arguments(&host), ["--tenancy", "single"]);
    let multi = generated_host_json(Tenancy::Multi);
    assert_eq!(handler_arguments(&multi), ["--tenancy", "multi"]);
    let without_arguments = |mut host: Value| {
        host["customHandler"]["description"]["arguments"] = Value::Null;
        host
    };
    assert_eq!(without_arguments(multi), without_arguments(host));
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
    // The triggers are the same in both layouts: their handlers split a batch by tenant.
    let triggers = |tenancy| -> Vec<metadata::GeneratedFile> {
        metadata::script_root_files(tenancy)
            .into_iter()
            .filter(|f| {
                Source::ALL
                    .iter()
                    .any(|s| f.path.starts_with(s.function_name()))
            })
            .collect()
    };
    assert_eq!(triggers(Tenancy::Single).len(), 2);
    assert_eq!(triggers(Tenancy::Multi), triggers(Tenancy::Single));
}

/// The paths `router` matches. axum has no public list of a router's routes, but its `Debug`
/// output names each path of the router (`paths: {RouteId(1): "/api/feed", ...}`) before
/// those of its fallback router; the probes below find which methods each one answers. If a
/// new axum prints them differently, the health probe `/api/health` goes missing and this
/// fails.
fn router_paths(router: &Router<AppState>) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    let own = debug.split("fallback_router").next().unwrap_or_default();
    let paths: BTreeSet<String> = own
        .split_once("paths: {")
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(
        paths.contains("/api/health"),
        "cannot read the routes of the router from axum's Debug output: {debug}"
    );
    paths
}

/// `template` with each `{param}` filled with a probe value.
fn fill(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment.strip_prefix('{') {
            Some(param) => format!("probe-{}", param.trim_end_matches('}')),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

const PROBE_METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

fn probe(method: &Method, path: &str) -> Request<Body> {
    Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .expect("request")
}

/// `(METHOD, /api/... template)` of each HTTP function of `tenancy`, as `path` gives it.
fn declared(
    tenancy: Tenancy,
    path: impl Fn(&metadata::HttpFunction) -> String,
) -> BTreeSet<(String, String)> {
    metadata::http_functions(tenancy)
        .map(|f| (f.method.to_uppercase(), path(f)))
        .collect()
}

#[tokio::test]
async fn every_route_of_the_router_is_in_the_table_and_only_they() {
    // A route added to the router without metadata would be unreachable under the host; a
    // function without a route would answer 404.
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let routes = api::routes_for(tenancy);
        let paths = router_paths(&routes);
        // The plain routes alone, with fallbacks that mark their answers, so that a
        // handler's own 404 (unknown user) is told apart from "no such route".
        let router = routes
            .fallback(|| async { (StatusCode::NOT_FOUND, [("x-probe", "fallback")]) })
            .method_not_allowed_fallback(|| async {
                (StatusCode::METHOD_NOT_ALLOWED, [("x-probe", "fallback")])
            })
            .with_state(AppState::new(
                h.dyn_store(),
                Caches::none(),
                Authenticator::EasyAuthDisabled,
            ));
        let mut served = BTreeSet::new();
        for path in &paths {
            for method in PROBE_METHODS {
                let response = router
                    .clone()
                    .oneshot(probe(&method, &fill(path)))
                    .await
                    .expect("infallible");
                if !response.headers().contains_key("x-probe") {
                    served.insert((method.to_string(), path.clone()));
                }
            }
        }
        assert_eq!(
            served,
            declared(tenancy, metadata::HttpFunction::axum_path),
            "{tenancy}: the router's routes and the function table differ"
        );
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Routing {
    /// A handler answered (whatever it said).
    Handled,
    NoSuchRoute,
    MethodNotAllowed,
}

async fn routing_of(app: &Router, method: &Method, path: &str) -> Routing {
    let (status, problem) = send(app.clone(), probe(method, path)).await;
    match (status, problem["code"].as_str()) {
        (StatusCode::NOT_FOUND, Some("route-not-found")) => Routing::NoSuchRoute,
        (StatusCode::METHOD_NOT_ALLOWED, Some("method-not-allowed")) => Routing::MethodNotAllowed,
        _ => Routing::Handled,
    }
}

#[tokio::test]
async fn the_app_serves_each_layouts_functions_at_their_host_routes_and_nothing_else() {
    // Every route of either layout, probed on the application of each: the host forwards a
    // function's route unchanged, so the application must serve exactly its layout's.
    let templates: BTreeSet<String> = metadata::HTTP_FUNCTIONS
        .iter()
        .flat_map(|f| LAYOUTS.map(|layout| f.path_in(layout)))
        .collect();
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let app = h.app();
        let declared = declared(tenancy, |f| f.path_in(tenancy));
        for template in &templates {
            let path = fill(template);
            for method in PROBE_METHODS {
                let key = (method.to_string(), template.clone());
                let expected = if declared.contains(&key) {
                    Routing::Handled
                } else if declared.iter().any(|(_, t)| t == template) {
                    Routing::MethodNotAllowed
                } else {
                    Routing::NoSuchRoute
                };
                assert_eq!(
                    routing_of(&app, &method, &path).await,
                    expected,
                    "{tenancy}: {method} {path}"
                );
            }
        }
    }
}

#[test]
fn http_functions_bind_exactly_one_trigger_and_one_output() {
    for tenancy in LAYOUTS {
        let files = metadata::script_root_files(tenancy);
        for function in metadata::http_functions(tenancy) {
            let path = Path::new(function.name).join("function.json");
            let file = files
                .iter()
                .find(|f| f.path == path)
                .expect("function.json");
            let json: Value = serde_json::from_str(&file.content).expect("json");
            let bindings = json["bindings"].as_array().expect("bindings");
            assert_eq!(bindings.len(), 2, "{}", function.name);
            let trigger = &bindings[0];
            assert_eq!(trigger["type"], "httpTrigger");
            assert_eq!(trigger["direction"], "in");
            assert!(trigger["authLevel"].is_string());
            assert_eq!(trigger["methods"], json!([function.method]));
            let route = trigger["route"].as_str().expect("route");
            match tenancy {
                _ if function.site_wide => assert_eq!(route, format!("api/{}", function.route)),
                Tenancy::Single => assert_eq!(route, format!("api/{}", function.route)),
                Tenancy::Multi => {
                    assert_eq!(
                        route,
                        format!("api/tenants/{{tenantId}}/{}", function.route)
                    )
                }
            }
            assert_eq!(
                bindings[1],
                json!({"type": "http", "direction": "out", "name": "res"})
            );
        }
    }
    // Q7 is a function of the multi layout only.
    let names = |tenancy| metadata::function_names(tenancy);
    assert!(!names(Tenancy::Single).contains(&"ListUsers"));
    assert!(names(Tenancy::Multi).contains(&"ListUsers"));
}

#[test]
fn functions_generate_writes_the_multi_layout_only_where_it_is_told() {
    let work = tempfile::tempdir().expect("tempdir");
    // Without --root it would replace the repository's single-tenant files: refused.
    let refused = binary!()
        .current_dir(work.path())
        .args(["functions", "generate", "--tenancy", "multi"])
        .status();
    assert!(!refused.success());
    assert_eq!(std::fs::read_dir(work.path()).expect("dir").count(), 0);

    let root = work.path().join("multi");
    let root_arg = root.to_str().expect("utf-8 path");
    let written = binary!()
        .current_dir(work.path())
        .args([
            "functions",
            "generate",
            "--tenancy",
            "multi",
            "--root",
            root_arg,
        ])
        .status();
    assert!(written.success());
    let files = metadata::repository_files(Tenancy::Multi);
    for file in &files {
        assert_eq!(
            std::fs::read_to_string(root.join(&file.path)).expect("written"),
            file.content
        );
    }
    assert_eq!(stage::files_under(&root).expect("list").len(), files.len());
}

// ---- staging ------------------------------------------------------------------------------

fn dummy_binary(dir: &Path) -> PathBuf {
    let path = dir.join("dummy-cosmos-blog");
    std::fs::write(&path, b"#!/bin/sh\necho not really the binary\n").expect("dummy");
    path
}

fn expected_layout(tenancy: Tenancy) -> Vec<PathBuf> {
    let mut expected: Vec<PathBuf> = metadata::function_names(tenancy)
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
    stage::stage(&out, &binary, Tenancy::Single).expect("stage");

    assert_eq!(
        stage::files_under(&out).expect("list"),
        expected_layout(Tenancy::Single)
    );
    for file in metadata::script_root_files(Tenancy::Single) {
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
    stage::stage(&out, &binary, Tenancy::Single).expect("restage");
    assert_eq!(
        stage::files_under(&out).expect("list"),
        expected_layout(Tenancy::Single)
    );
}

#[test]
fn stage_multi_writes_the_tenant_routes_and_starts_the_binary_in_multi() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("app");
    stage::stage(&out, &binary, Tenancy::Multi).expect("stage");

    assert_eq!(
        stage::files_under(&out).expect("list"),
        expected_layout(Tenancy::Multi)
    );
    for file in metadata::script_root_files(Tenancy::Multi) {
        assert_eq!(
            std::fs::read_to_string(out.join(&file.path)).expect("staged file"),
            file.content
        );
    }
    let read = |path: &str| -> Value {
        serde_json::from_slice(&std::fs::read(out.join(path)).expect("staged")).expect("json")
    };
    assert_eq!(
        read("GetUser/function.json")["bindings"][0]["route"],
        "api/tenants/{tenantId}/users/{userId}"
    );
    assert_eq!(
        read("ListUsers/function.json")["bindings"][0]["route"],
        "api/tenants/{tenantId}/users"
    );
    assert_eq!(
        handler_arguments(&read("host.json")),
        ["--tenancy", "multi"]
    );

    // Staged again as single: Q7's folder goes with the rest of the previous staging.
    stage::stage(&out, &binary, Tenancy::Single).expect("restage");
    assert_eq!(
        stage::files_under(&out).expect("list"),
        expected_layout(Tenancy::Single)
    );
}

#[test]
fn stage_refuses_to_wipe_a_folder_that_is_not_a_staging() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("precious");
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::write(out.join("notes.txt"), "keep me").expect("file");
    assert!(stage::stage(&out, &binary, Tenancy::Single).is_err());
    assert!(out.join("notes.txt").is_file());
    let missing = work.path().join("missing");
    assert!(stage::stage(&work.path().join("x"), &missing, Tenancy::Single).is_err());
}

/// Opens the staged zip of `tenancy` and checks what Azure Functions on Linux needs of it:
/// host.json at the root, every function folder flattened beside it, the binary as a regular
/// file whose Unix mode (recorded as made on Unix) has the owner's execute bit, and host.json
/// naming that entry as the handler to start.
fn check_the_zip_of(tenancy: Tenancy) {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("app");
    stage::stage(&out, &binary, tenancy).expect("stage");
    // Whatever mode the build machine left on the file, the zip records its own.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            out.join("cosmos-blog"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
    }
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
    let expected: Vec<String> = expected_layout(tenancy)
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    assert_eq!(
        names, expected,
        "host.json, <Function>/function.json, the binary"
    );

    let mut host = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("host.json").expect("host"), &mut host)
        .expect("read host.json");
    assert_eq!(host, metadata::script_root_files(tenancy)[0].content);
    let host: Value = serde_json::from_str(&host).expect("host.json is JSON");
    let handler = host["customHandler"]["description"]["defaultExecutablePath"]
        .as_str()
        .expect("defaultExecutablePath");
    assert_eq!(handler, "cosmos-blog");

    let binary_entry = archive.by_name(handler).expect("the handler's entry");
    assert!(binary_entry.is_file());
    assert_eq!(binary_entry.system(), zip::System::Unix);
    let mode = binary_entry.unix_mode().expect("a Unix mode");
    assert_eq!(mode & 0o170000, 0o100000, "a regular file, mode {mode:o}");
    assert_eq!(
        mode & 0o100,
        0o100,
        "executable by its owner, mode {mode:o}"
    );
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(binary_entry.compression(), zip::CompressionMethod::Deflated);
    drop(binary_entry);
    for name in &names {
        let entry = archive.by_name(name).expect("entry");
        assert_eq!(entry.system(), zip::System::Unix, "{name}");
        if name.as_str() != handler {
            assert_eq!(entry.unix_mode().map(|m| m & 0o777), Some(0o644), "{name}");
        }
    }
}

#[test]
fn the_zip_holds_the_script_root_with_an_executable_binary() {
    check_the_zip_of(Tenancy::Single);
}

#[test]
fn the_multi_tenant_zip_holds_its_script_root_with_an_executable_binary() {
    check_the_zip_of(Tenancy::Multi);
}

// ---- the binary under the host's settings -------------------------------------------------

/// Starts the binary on the embedded store in `data`, on a port the system chooses: through
/// the host's `FUNCTIONS_CUSTOMHANDLER_PORT` when `under_host`, else through `--port`
/// (standalone). Returns it with its port once it answers `GET /` as the host expects.
async fn start_binary(data: &Path, under_host: bool, stderr: Stdio) -> (Served, u16) {
    start_binary_with(data, under_host, stderr, &[], &[]).await
}

/// [`start_binary`] with `args` (as `host.json` gives them) and extra `env`.
async fn start_binary_with(
    data: &Path,
    under_host: bool,
    stderr: Stdio,
    args: &[String],
    env: &[(&str, &str)],
) -> (Served, u16) {
    let binary = binary!()
        .args(args)
        .on_data(data)
        .env("RUST_LOG", "info")
        .envs(env)
        .stderr(stderr);
    let binary = if under_host {
        // What the host sets: the worker runtime app setting (the port comes from `serve`,
        // in FUNCTIONS_CUSTOMHANDLER_PORT as the host passes it).
        binary.env("FUNCTIONS_WORKER_RUNTIME", "custom")
    } else {
        binary.args(["--port", "0"])
    };
    let mut served = binary.serve();
    let port = served.port().await;
    let response = reqwest::get(format!("http://127.0.0.1:{port}/api/health"))
        .await
        .expect("GET /api/health");
    assert_eq!(
        response.status(),
        reqwest::StatusCode::OK,
        "GET /api/health"
    );
    (served, port)
}

async fn post_invocation(port: u16) -> reqwest::Response {
    post_fixture(port, "on_post_changed.json").await
}

async fn post_fixture(port: u16, name: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/OnPostChanged"))
        .header("content-type", "application/json; charset=utf-8")
        .header(telemetry::INVOCATION_ID_HEADER, INVOCATION_ID)
        .body(fixture(name))
        .send()
        .await
        .expect("invoke")
}

#[tokio::test]
async fn the_binary_listens_on_functions_customhandler_port() {
    let data = tempfile::tempdir().expect("tempdir");
    let (_running, port) = start_binary(data.path(), true, Stdio::null()).await;
    // Port 0 lets the system choose; had the variable been ignored, the default would show.
    assert_ne!(port, 7071, "FUNCTIONS_CUSTOMHANDLER_PORT ignored");

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
async fn the_binary_started_as_the_multi_host_json_says_serves_the_tenant_routes() {
    let data = tempfile::tempdir().expect("tempdir");
    let args = handler_arguments(&generated_host_json(Tenancy::Multi));
    // An app setting that says otherwise does not win over the package's own layout.
    let env = [("BLOG_TENANCY", "single"), ("WEBSITE_AUTH_ENABLED", "true")];
    let (_running, port) = start_binary_with(data.path(), true, Stdio::null(), &args, &env).await;
    let client = reqwest::Client::new();
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");

    let response = post_fixture(port, "on_post_changed_two_tenants.json").await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let feed: Value = client
        .get(url("/api/tenants/fabrikam/feed"))
        .send()
        .await
        .expect("feed")
        .json()
        .await
        .expect("json");
    assert_eq!(ids(&feed), ["p-a", "p-c"]);
    let put = client
        .put(url("/api/tenants/contoso/users/u-ada"))
        .header("x-ms-client-principal-id", "u-ada")
        .json(&json!({"username": "ada"}))
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), reqwest::StatusCode::CREATED);
    let plain = client.get(url("/api/feed")).send().await.expect("plain");
    assert_eq!(plain.status(), reqwest::StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_standalone_server_does_not_take_trigger_invocations() {
    let data = tempfile::tempdir().expect("tempdir");
    let (_running, port) = start_binary(data.path(), false, Stdio::null()).await;
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
    let (running, port) = start_binary(data.path(), true, Stdio::from(log)).await;
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

#[test]
fn page_functions_bind_one_trigger_at_the_site_root_routes() {
    for tenancy in LAYOUTS {
        let files = metadata::script_root_files(tenancy);
        for function in metadata::page_functions(tenancy) {
            let path = Path::new(function.name).join("function.json");
            let file = files
                .iter()
                .find(|f| f.path == path)
                .expect("function.json");
            let json: Value = serde_json::from_str(&file.content).expect("json");
            let trigger = &json["bindings"][0];
            assert_eq!(trigger["type"], "httpTrigger");
            assert_eq!(trigger["authLevel"], "anonymous");
            assert_eq!(trigger["methods"], json!([function.method]));
            let route = trigger["route"].as_str().expect("route");
            assert!(!route.starts_with("api/"), "{route}");
            assert_eq!(route, function.host_route_in(tenancy));
        }
    }
    let single = metadata::script_root_files(Tenancy::Single);
    let front = single
        .iter()
        .find(|f| f.path == Path::new("FrontPage").join("function.json"))
        .expect("the front page");
    assert!(front.content.contains(metadata::ROOT_ROUTE));
}

#[tokio::test]
async fn every_page_function_reaches_a_page_of_the_app() {
    // The host forwards a page function's path unchanged: the application must serve it.
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let app = h.app();
        for function in metadata::page_functions(tenancy) {
            let method: Method = function.method.to_uppercase().parse().expect("method");
            let path = fill(&function.path_in(tenancy));
            let request = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("csrf="))
                .expect("request");
            let (status, problem) = send(app.clone(), request).await;
            assert!(
                !matches!(
                    problem["code"].as_str(),
                    Some("route-not-found" | "method-not-allowed")
                ),
                "{tenancy}: {method} {path} is not served ({status})"
            );
        }
    }
}

#[tokio::test]
async fn the_site_root_of_a_multi_tenant_site_is_a_function_and_a_page_saying_where_blogs_are() {
    let root_functions = |tenancy| -> Vec<&str> {
        metadata::page_functions(tenancy)
            .filter(|f| f.host_route_in(tenancy) == metadata::ROOT_ROUTE)
            .map(|f| f.name)
            .collect()
    };
    assert_eq!(root_functions(Tenancy::Single), ["FrontPage"]);
    assert_eq!(root_functions(Tenancy::Multi), ["SiteRootPage"]);
    let h = Harness::with(Tenancy::Multi);
    let app = h.app();
    let (status, _, html) =
        html_of(&app, forwarded_page_request(Method::GET, "/", None, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        html.contains("no-blog-at-site-root") && html.contains("/tenants/"),
        "{html}"
    );
    // The host's start-up probe of `/` takes that answer; probes of health have their route.
    let probe = Request::get("/api/health")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(app.clone(), probe).await.0, StatusCode::OK, "health");
}

/// A browser's request as the host forwards it: its `Accept`, its cookies, Fetch Metadata.
fn forwarded_page_request(
    method: Method,
    path: &str,
    caller: Option<&str>,
    form: Option<&str>,
) -> Request<Body> {
    let mut request = forwarded_request(method, path, caller, None);
    let headers = request.headers_mut();
    headers.insert(
        header::ACCEPT,
        "text/html,application/xhtml+xml".parse().unwrap(),
    );
    headers.insert("sec-fetch-site", "same-origin".parse().unwrap());
    headers.insert(
        header::ORIGIN,
        "https://cosmos-blog.azurewebsites.net".parse().unwrap(),
    );
    if let Some(form) = form {
        headers.insert(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        *request.body_mut() = Body::from(form.to_owned());
    }
    request
}

async fn html_of(
    app: &Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test]
async fn forwarded_page_requests_sign_in_through_easy_auth_and_post_forms() {
    let h = Harness::new();
    let app = h.app_with(Authenticator::TrustedHeader);
    let put = forwarded_request(
        Method::PUT,
        "/api/users/u-ada",
        Some("u-ada"),
        Some(json!({"username": "ada"})),
    );
    assert_eq!(send(app.clone(), put).await.0, StatusCode::CREATED);

    // Signed out: the page links to Easy Auth's login, which returns to the page.
    let (status, _, html) =
        html_of(&app, forwarded_page_request(Method::GET, "/", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("href=\"/.auth/login/aad?post_login_redirect_uri=%2F\""),
        "{html}"
    );
    let (status, headers, _) = html_of(
        &app,
        forwarded_page_request(Method::GET, "/sign-in?return=%2Fwrite", None, None),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        "/.auth/login/aad?post_login_redirect_uri=%2Fwrite"
    );
    // A page that needs a signed-in reader sends them there, and back to it.
    let (status, headers, _) = html_of(
        &app,
        forwarded_page_request(Method::GET, "/write", None, None),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[header::LOCATION],
        "/.auth/login/aad?post_login_redirect_uri=%2Fwrite"
    );

    // Signed in (Easy Auth's principal header): the write form, then its post.
    let (status, headers, html) = html_of(
        &app,
        forwarded_page_request(Method::GET, "/write", Some("u-ada"), None),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("/.auth/logout"), "Easy Auth's sign-out");
    let cookie = headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let token = cookie
        .strip_prefix("blog_csrf=")
        .expect("the form token's cookie")
        .to_owned();
    let mut post = forwarded_page_request(
        Method::POST,
        "/write",
        Some("u-ada"),
        Some(&format!("csrf={token}&title=From+the+host&content=Hello")),
    );
    post.headers_mut()
        .insert(header::COOKIE, cookie.parse().unwrap());
    let (status, headers, html) = html_of(&app, post).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    let location = headers[header::LOCATION].to_str().unwrap().to_owned();
    assert!(location.starts_with("/posts/"), "{location}");
    let (status, _, html) = html_of(
        &app,
        forwarded_page_request(Method::GET, &location, None, None),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(">From the host</h1>"), "{html}");
}
