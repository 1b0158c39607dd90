//! Bad input: every refusal is an RFC 9457 problem document with the right status, and
//! nothing is written.

use std::time::Duration;

use cosmos_blog::store::{Container, PageRequest, Query};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use testkit::{TestApp, eventually, surface_tests};

surface_tests!(
    refusals_are_problem_documents_and_write_nothing,
    bodies_over_the_limit_are_413_and_every_text_the_fields_take_fits,
    ids_that_cosmos_cannot_address_are_400,
    unknown_routes_and_methods_are_problems,
    hostile_input_never_causes_a_server_error,
    a_url_too_long_is_414_on_pages_and_api_alike_at_any_size,
);

pub async fn assert_problem(response: Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(response.status(), status, "expected {code}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(content_type, "application/problem+json");
    let problem: Value = response.json().await.unwrap();
    assert_eq!(problem["status"], status.as_u16());
    assert_eq!(problem["code"], code);
    assert!(problem["type"].as_str().unwrap().ends_with(code));
    assert!(!problem["title"].as_str().unwrap().is_empty());
    assert!(!problem["detail"].as_str().unwrap().is_empty());
    problem
}

/// Every item in every container (of every tenant), to show a refused request wrote nothing.
pub async fn everything(app: &TestApp) -> Vec<Value> {
    let mut all = Vec::new();
    for container in [Container::Users, Container::Posts, Container::Feed] {
        let page = app
            .whole_store
            .query(
                container,
                &Query::cross_partition(),
                PageRequest::first(10_000),
            )
            .await
            .unwrap();
        all.extend(page.items);
    }
    all
}

async fn refusals_are_problem_documents_and_write_nothing(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let post_id = post["id"].as_str().unwrap();
    // Let the change feed copy the post first, so the snapshot is at rest.
    let before = eventually(Duration::from_secs(20), || async {
        let all = everything(&app).await;
        (all.len() == 4).then_some(all)
    })
    .await;

    // Bodies the API cannot take: each refused before anything of it is stored.
    let json_type = Some("application/json");
    let valid = "{\"title\":\"t\",\"content\":\"c\"}";
    for (body, content_type, status, code) in [
        (
            "{\"title\": ",
            json_type,
            StatusCode::BAD_REQUEST,
            "malformed-json",
        ),
        ("[1, 2]", json_type, StatusCode::BAD_REQUEST, "invalid-body"),
        (
            valid,
            None,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
        ),
        (
            valid,
            Some("text/plain"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
        ),
    ] {
        let mut request = app
            .client
            .post(app.url("/api/posts"))
            .header("x-ms-client-principal-id", "ada")
            .body(body);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        assert_problem(request.send().await.unwrap(), status, code).await;
    }
    let invalid = assert_problem(
        app.create_post("ada", "", "c").await,
        StatusCode::BAD_REQUEST,
        "invalid-field",
    )
    .await;
    assert_eq!(invalid["field"], "title");
    // No caller, or a blank one, is nobody.
    for caller in [None, Some("   ")] {
        assert_problem(
            app.send(
                Method::POST,
                "/api/posts",
                caller,
                Some(json!({"title": "t", "content": "c"})),
            )
            .await,
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
        )
        .await;
    }
    for response in [
        app.put_user("bob", &"b".repeat(65)).await,
        app.comment("ada", post_id, "").await,
        app.comment("ada", post_id, &"c".repeat(10_001)).await,
    ] {
        assert_problem(response, StatusCode::BAD_REQUEST, "invalid-field").await;
    }
    assert_problem(
        app.edit_post("mallory", post_id, json!({"title": "t", "content": "c"}))
            .await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    let likes = format!("/api/posts/{post_id}/likes");
    for (path, status, code) in [
        (
            "/api/posts/does-not-exist".to_owned(),
            StatusCode::NOT_FOUND,
            "post-not-found",
        ),
        (
            "/api/users/nobody".to_owned(),
            StatusCode::NOT_FOUND,
            "user-not-found",
        ),
        (
            format!("{likes}?limit=1000"),
            StatusCode::BAD_REQUEST,
            "invalid-field",
        ),
        (
            format!("{likes}?limit=abc"),
            StatusCode::BAD_REQUEST,
            "invalid-query",
        ),
    ] {
        assert_problem(app.get(&path).await, status, code).await;
    }

    assert_eq!(
        everything(&app).await,
        before,
        "a refused request wrote something"
    );
}

/// `value` as Python's `json.dumps` writes it by default: every character outside ASCII as
/// `\uXXXX`, a surrogate pair for those beyond the Basic Multilingual Plane.
fn ascii_json(value: &Value) -> String {
    let mut text = String::new();
    for c in value.to_string().chars() {
        if c.is_ascii() {
            text.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                text.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    text
}

async fn bodies_over_the_limit_are_413_and_every_text_the_fields_take_fits(app: TestApp) {
    app.register("ada", "Ada").await;
    let limit = cosmos_blog::http::MAX_BODY_BYTES;
    let big = "x".repeat(limit + 1);
    let response = app
        .write_post("ada", json!({"title": "t", "content": big}))
        .await;
    let problem = assert_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "body-too-large").await;
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("100000 characters"),
        "the app's words: {detail}"
    );
    // Under the limit, but over the content limit: a 400, not a 413.
    let under = "x".repeat(200_000);
    let response = app
        .write_post("ada", json!({"title": "t", "content": under}))
        .await;
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid-field").await;
    // The longest post the fields take, escaped as Python's json.dumps does: 90,000 emoji are
    // 12 bytes each (a surrogate pair of escapes); a full title of Greek sent decomposed
    // (U+1F82 as four characters) is stored as 300.
    let longest = json!({
        "title": "\u{3b1}\u{313}\u{300}\u{345}".repeat(300),
        "content": format!("{}{}", "😀".repeat(90_000), "x".repeat(10_000)),
    });
    let body = ascii_json(&longest);
    assert!(body.len() > 1024 * 1024, "{} bytes", body.len());
    let response = app
        .client
        .post(app.url("/api/posts"))
        .header("x-ms-client-principal-id", "ada")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let post: Value = response.json().await.unwrap();
    assert_eq!(post["title"], "\u{1f82}".repeat(300), "stored in NFC");
    assert_eq!(
        post["content"].as_str().unwrap_or_default().chars().count(),
        100_000
    );
}

async fn ids_that_cosmos_cannot_address_are_400(app: TestApp) {
    for path in [
        "/api/users/a%2Fb",
        "/api/users/a%5Cb",
        "/api/users/a%3Fb",
        "/api/users/a%23b",
        "/api/users/a%0Ab",
    ] {
        let response = app
            .send(
                Method::PUT,
                path,
                Some("ada"),
                Some(json!({"username": "x"})),
            )
            .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        assert_problem(
            app.get(path).await,
            StatusCode::BAD_REQUEST,
            "invalid-field",
        )
        .await;
    }
    let long = "u".repeat(256);
    let response = app
        .send(
            Method::PUT,
            &format!("/api/users/{long}"),
            Some("ada"),
            Some(json!({"username": "x"})),
        )
        .await;
    assert_problem(response, StatusCode::BAD_REQUEST, "invalid-field").await;
    // Non-UTF-8 in the path cannot even be decoded.
    assert_problem(
        app.get("/api/users/%FF").await,
        StatusCode::BAD_REQUEST,
        "invalid-path",
    )
    .await;
}

async fn unknown_routes_and_methods_are_problems(app: TestApp) {
    assert_problem(
        app.get("/api/nothing-here").await,
        StatusCode::NOT_FOUND,
        "route-not-found",
    )
    .await;
    assert_problem(
        app.send(Method::DELETE, "/api/feed", Some("ada"), None)
            .await,
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
    )
    .await;
}

async fn hostile_input_never_causes_a_server_error(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let post_id = post["id"].as_str().unwrap().to_owned();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let bodies: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"null".to_vec(),
        b"\"just a string\"".to_vec(),
        b"{\"username\": null, \"title\": {}, \"content\": []}".to_vec(),
        b"{\"username\": 1e999, \"title\": -0, \"content\": 18446744073709551616}".to_vec(),
        "{\"username\": \"\\ud800\", \"title\": \"\\u0000\", \"content\": \"\u{202e}\"}"
            .as_bytes()
            .to_vec(),
        vec![0xff, 0xfe, 0x00, 0x7b],
        deep.into_bytes(),
    ];
    let paths = [
        "/api/users/ada".to_owned(),
        "/api/users/ada/posts?limit=1&continuation=%00".to_owned(),
        "/api/posts".to_owned(),
        format!("/api/posts/{post_id}"),
        format!("/api/posts/{post_id}/comments?continuation=W10"),
        format!("/api/posts/{post_id}/likes?limit=4294967296"),
        "/api/feed?limit=&limit=5".to_owned(),
        "/api/users/%C0%AF".to_owned(),
        "/api/posts/..%2F..%2Fetc".to_owned(),
    ];
    let methods = [Method::GET, Method::PUT, Method::POST, Method::PATCH];
    for path in &paths {
        for method in &methods {
            for body in &bodies {
                let response = app
                    .client
                    .request(method.clone(), app.url(path))
                    .header("x-ms-client-principal-id", "ada")
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                assert!(!status.is_server_error(), "{method} {path}: {status}");
                if status.is_client_error() {
                    let content_type = response.headers()["content-type"].to_str().unwrap();
                    assert_eq!(content_type, "application/problem+json", "{method} {path}");
                }
            }
        }
    }
    // The one post is still the only one, with its original content.
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["title"],
        "Hello"
    );
}

/// One status per cause: a URL over the bound is a `414` problem document (an error page for
/// a browser on a page) whether it names an API route or a page, and past the HTTP parser's
/// own 64 KiB too, where the parser answers before the application.
async fn a_url_too_long_is_414_on_pages_and_api_alike_at_any_size(app: TestApp) {
    let id = "u".repeat(9_000);
    let api = app.get(&format!("/api/users/{id}")).await;
    assert_problem(api, StatusCode::URI_TOO_LONG, "uri-too-long").await;
    // A page's path is the same in either layout: `get` leaves it as written.
    let page = app.get(&format!("/users/{id}")).await;
    assert_problem(page, StatusCode::URI_TOO_LONG, "uri-too-long").await;
    let browser = app
        .client
        .get(app.raw_url(&format!("/users/{id}")))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(browser.status(), StatusCode::URI_TOO_LONG);
    let body = browser.text().await.unwrap();
    assert!(body.contains("uri-too-long"), "{body}");
    // Past the HTTP parser's 64 KiB (which HTTP clients refuse to send: written by hand).
    for path in ["/api/users/", "/users/"] {
        let answer = raw_get(&app, &format!("{path}{}", "u".repeat(66_000))).await;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_default();
        assert!(head.starts_with("HTTP/1.1 414 "), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/problem+json"),
            "{head}"
        );
        let problem: Value = serde_json::from_str(body).expect("a problem document");
        assert_eq!(problem["code"], "uri-too-long");
        assert_eq!(problem["status"], 414);
    }
    // A browser's page past the parser's limit gets the error page; the API stays a problem.
    let long = "u".repeat(66_000);
    let page = raw_get_accepting(&app, &format!("/users/{long}"), "text/html").await;
    let (head, body) = page.split_once("\r\n\r\n").unwrap_or_default();
    assert!(head.starts_with("HTTP/1.1 414 "), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(head.contains("content-security-policy:"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", body.len())),
        "{head}"
    );
    assert!(
        body.contains("uri-too-long") && body.contains("</html>"),
        "{body}"
    );
    let api = raw_get_accepting(&app, &format!("/api/users/{long}"), "text/html").await;
    assert!(
        api.to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{api}"
    );
    // An id over its 255 bytes in a URL under the bound is the id's refusal, on both.
    let id = "u".repeat(300);
    let api = app.get(&format!("/api/users/{id}")).await;
    assert_eq!(api.status(), StatusCode::BAD_REQUEST);
    // A page's path is the same in either layout: `get` leaves it as written.
    let page = app.get(&format!("/users/{id}")).await;
    if app.tenant.is_none() {
        assert_eq!(page.status(), StatusCode::BAD_REQUEST);
    }
}

/// The whole answer to `GET path`, sent over a connection of its own as written.
async fn raw_get(app: &TestApp, path: &str) -> String {
    raw_request(app, path, "").await
}

/// The whole answer to `GET path` from a client that accepts `types`.
async fn raw_get_accepting(app: &TestApp, path: &str, types: &str) -> String {
    raw_request(app, path, &format!("Accept: {types}\r\n")).await
}

/// The whole answer to `GET path` with `headers` (each line ending in CRLF), sent over a
/// connection of its own as written.
async fn raw_request(app: &TestApp, path: &str, headers: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = app
        .address
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n{headers}\r\n");
    // The server may answer and close before it has read it all.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}
