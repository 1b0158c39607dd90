//! Authentication modes (issue 8): `header` and `easyauth` in `modes`, `jwt` in `jwt`; through
//! the HTTP API of the real application (on both backends wherever the store plays a role)
//! and through the real binary started with the platform's environment variables.

mod jwt;
mod modes;
mod tokens;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cosmos_blog::platform::Platform;
use cosmos_blog::store::{Container, PageRequest, Query, Store};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::TestApp;
use testkit::served::Served;

/// Runs each body `async fn name(backend: Backend)` on every backend (these tests choose
/// their own settings, so `backend_tests!`, which spawns the default app, does not fit).
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::helpers::Backend::Embedded).await;
                }
            )*
        }
        mod cosmos {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::helpers::Backend::Cosmos).await;
                }
            )*
        }
    };
}

/// Every item of the `users` and `posts` containers: what a refused command must leave as is.
pub async fn snapshot(store: &dyn Store) -> Vec<Value> {
    let mut items = Vec::new();
    for container in [Container::Users, Container::Posts] {
        let page = store
            .query(
                container,
                &Query::cross_partition(),
                PageRequest::first(10_000),
            )
            .await
            .expect("query");
        items.extend(page.items);
    }
    items.sort_by_key(|item| item.to_string());
    items
}

/// A command with an optional principal header and an optional Authorization header.
pub async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    principal: Option<&str>,
    authorization: Option<&str>,
    body: Option<Value>,
) -> Response {
    let mut request = app.client.request(method, app.url(path));
    if let Some(principal) = principal {
        request = request.header("x-ms-client-principal-id", principal);
    }
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("request sent")
}

/// Asserts a 401 problem document with `code`, and returns its `WWW-Authenticate` header.
pub async fn assert_unauthorized(response: Response, code: &str, case: &str) -> Option<String> {
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{case}");
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ASCII").to_owned());
    let content_type = response.headers().get("content-type").cloned();
    assert_eq!(
        content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some("application/problem+json"),
        "{case}"
    );
    let problem: Value = response.json().await.expect("problem JSON");
    assert_eq!(problem["code"], code, "{case}: {problem}");
    assert_eq!(problem["status"], 401, "{case}");
    challenge
}

pub fn post_body() -> Value {
    json!({"title": "Hello", "content": "written by whom?"})
}

// ---- the real binary ------------------------------------------------------------------------

/// The binary, started on the embedded store with exactly the environment a test gives it;
/// killed when dropped.
pub struct Binary {
    served: Served,
    /// `http://127.0.0.1:PORT` once [`Binary::ready`] has seen it listen.
    base: Option<String>,
    stderr: PathBuf,
    data: TempDir,
}

/// Variables of the parent environment that would change what these tests see.
const CLEARED: [&str; 14] = [
    "BLOG_AUTH",
    "BLOG_JWT_JWKS",
    "BLOG_JWT_ISSUER",
    "BLOG_JWT_AUDIENCE",
    "BLOG_JWT_CLAIM",
    "BLOG_BIND_ADDRESS",
    "BLOG_CHANGE_FEED",
    "CosmosDBConnection",
    "CosmosDBConnection__accountEndpoint",
    "RUST_LOG",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "APPLICATIONINSIGHTS_CONNECTION_STRING",
];

impl Binary {
    pub fn start(env: &[(&str, &str)]) -> Self {
        let data = TempDir::new().expect("temp dir");
        let stderr = data.path().join("stderr.log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_cosmos-blog"));
        for name in CLEARED.into_iter().chain(Platform::variables()) {
            command.env_remove(name);
        }
        command
            .env("BLOG_DATA_DIR", data.path())
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("log file"));
        Self {
            served: Served::spawn(&mut command),
            base: None,
            stderr,
            data,
        }
    }

    /// Waits until it listens.
    pub async fn ready(mut self) -> Self {
        self.base = Some(self.served.base().await);
        self
    }

    /// How the process ended, if it ends within 30 s.
    pub fn exit_status(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.served.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the binary did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).expect("log")
    }

    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    pub fn url(&self, path: &str) -> String {
        let base = self.base.as_deref().expect("Binary::ready first");
        format!("{base}{path}")
    }

    /// Asks the process to stop as the host does (SIGTERM) and waits for it to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let signal = Command::new("kill")
            .args(["-TERM", &self.served.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(signal.success(), "SIGTERM delivered");
        self.exit_status()
    }

    /// Stops the process (its store can then be opened by the test).
    pub fn stop(&mut self) {
        self.served.kill();
    }
}
