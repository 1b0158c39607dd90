//! Authentication modes (who the caller is): `header` and `easyauth` in `modes`, `jwt` in `jwt`; through
//! the HTTP API of the real application (on both backends wherever the store plays a role)
//! and through the real binary started with the platform's environment variables.

mod jwt;
mod modes;
mod tokens;

use cosmos_blog::store::{Container, PageRequest, Query, Store};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use testkit::app::request_as;
use testkit::{Served, TestApp, binary, content_type};

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
    let mut request = request_as(&app.client, method, app.url(path), principal, body.as_ref());
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
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
    assert_eq!(
        content_type(response.headers()),
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

/// The binary on an embedded store of its own, with exactly the environment a test gives it
/// (and `info` logs, in a file: [`Served::log`]); killed when dropped.
pub fn binary_with_env(env: &[(&str, &str)]) -> Served {
    binary!()
        .on_fresh_data()
        .env("RUST_LOG", "info")
        .envs(env)
        .logged()
        .serve()
}
