//! Azure Functions packaging (the script root with one `function.json` per function) and
//! invocation (the change-feed triggers, the timer and the HTTP routes), shown without the
//! Functions host:
//! the host's trigger payloads are replayed byte for byte from `tests/fixtures/functions/`,
//! and its forwarded HTTP requests as it sends them; the metadata of both data layouts is
//! checked against the router, and the staged script root is inspected.

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
use cosmos_blog::api;
use cosmos_blog::auth::Authenticator;
use cosmos_blog::changefeed::Recheck;
use cosmos_blog::copies::Source;
use cosmos_blog::functions::{self, metadata, stage};
use cosmos_blog::http::{AppState, Caches};
use cosmos_blog::signing::ServerKey;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, Store, StoreError, StoreResult, Tenancy};
use cosmos_blog::telemetry;
use cosmos_blog::{startup, web};
use serde_json::{Value, json};
use tower::ServiceExt;

use testkit::double::{self, Call, Double, Hooks};
use testkit::{Served, binary, content_type, eventually_ok};

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
        let state = AppState::new(self.dyn_store(), Caches::none(), ServerKey::drawn(), auth);
        let site = web::Site::new(
            web::PublicUrl::parse("https://blog.example").expect("an origin"),
            ServerKey::drawn(),
            true,
            "Cosmos Blog".to_owned(),
            "A blog.".to_owned(),
        );
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
        let content_type = content_type(response.headers())
            .unwrap_or_default()
            .to_owned();
        let bytes = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, content_type, body)
    }

    /// Delivers the change-feed batch of `fixture_name` to `function`, checks that the host
    /// is answered (200, JSON) with `summary` as the first line of the logs, and returns the
    /// answer.
    async fn deliver(&self, function: &str, fixture_name: &str, summary: &str) -> Value {
        let (status, content_type, body) = self.invoke(function, fixture(fixture_name)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(content_type, "application/json");
        assert_eq!(logs(&body)[0], summary, "{body}");
        body
    }

    async fn get(&self, uri: &str) -> Value {
        let request = Request::get(uri).body(Body::empty()).expect("request");
        let (status, body) = send(self.app(), request).await;
        assert_eq!(status, StatusCode::OK, "GET {uri}: {body}");
        body
    }

    /// Stores user u-ada (username `ada`) directly, as the posts the tests put beside it
    /// name her: the store as the API would have left it, without going through it.
    async fn store_ada(&self) {
        let user = json!({"id": "u-ada", "type": "user", "userId": "u-ada", "username": "ada"});
        self.store
            .upsert_item(Container::Users, &PartitionKey::single("u-ada"), user)
            .await
            .expect("user");
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

// ---- shared by the sections ------------------------------------------------------------

/// The generated `host.json` of `tenancy`.
fn generated_host_json(tenancy: Tenancy) -> Value {
    parsed_file(
        &metadata::script_root_files(tenancy),
        Path::new("host.json"),
    )
}

/// The `function.json` of the function `name` among the generated `files`.
fn function_json(files: &[metadata::GeneratedFile], name: &str) -> Value {
    parsed_file(files, &Path::new(name).join("function.json"))
}

/// The JSON file at `path` among the generated `files`.
fn parsed_file(files: &[metadata::GeneratedFile], path: &Path) -> Value {
    let file = files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{} is generated", path.display()));
    serde_json::from_str(&file.content).expect("json")
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

mod host_metadata;
mod pages;
mod publish;
mod recheck;
mod staging;
mod tenants;
mod triggers;
mod under_host;
