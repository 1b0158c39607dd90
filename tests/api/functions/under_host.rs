//! The binary started under the host's settings: its port, its routes and its log lines.

use super::*;

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
    assert_eq!(content_type(response.headers()), Some("application/json"));
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
        .find(|l| l.contains("OnPostChanged: 2 processed, 8 written, 1 skipped"))
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
