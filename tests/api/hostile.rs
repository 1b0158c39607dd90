//! Hostile input, in one table: headers that say two things, bodies in an encoding the server
//! does not read, text and ids that people cannot see or address, parameters an operation
//! does not take, identities that cannot be written as sent, URLs past the bound. Each row
//! is refused with its status and problem code, and no row writes anything.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::errors::{assert_problem, everything};
use testkit::{TestApp, eventually, surface_tests};

surface_tests!(
    hostile_requests_are_refused_precisely_and_write_nothing,
    what_the_rules_allow_still_passes,
);

/// One hostile request and the refusal it must get.
struct Case {
    what: &'static str,
    method: Method,
    path: String,
    /// Sent as given (a name twice is sent twice); the principal `ada` and a JSON content
    /// type unless the case sends its own.
    headers: Vec<(&'static str, Vec<u8>)>,
    body: Vec<u8>,
    status: StatusCode,
    code: &'static str,
    field: Option<&'static str>,
    /// Words the detail must hold.
    detail: Option<&'static str>,
}

fn case(what: &'static str, method: Method, path: impl Into<String>) -> Case {
    Case {
        what,
        method,
        path: path.into(),
        headers: Vec::new(),
        body: Vec::new(),
        status: StatusCode::BAD_REQUEST,
        code: "invalid-field",
        field: None,
        detail: None,
    }
}

impl Case {
    fn json(mut self, body: Value) -> Self {
        self.body = body.to_string().into_bytes();
        self
    }

    fn bytes(mut self, body: &[u8]) -> Self {
        self.body = body.to_vec();
        self
    }

    fn header(mut self, name: &'static str, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name, value.as_ref().to_vec()));
        self
    }

    fn refused(mut self, status: StatusCode, code: &'static str) -> Self {
        self.status = status;
        self.code = code;
        self
    }

    fn field(mut self, field: &'static str) -> Self {
        self.field = Some(field);
        self
    }

    fn saying(mut self, words: &'static str) -> Self {
        self.detail = Some(words);
        self
    }

    async fn send(&self, app: &TestApp) -> reqwest::Response {
        let mut request = app
            .client
            .request(self.method.clone(), app.url(&self.path))
            .body(self.body.clone());
        let sends = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !sends(PRINCIPAL) {
            request = request.header(PRINCIPAL, "ada");
        }
        if !sends("content-type") {
            request = request.header("content-type", "application/json");
        }
        for (name, value) in &self.headers {
            let value = reqwest::header::HeaderValue::from_bytes(value).expect("a header value");
            request = request.header(*name, value);
        }
        request.send().await.expect("request sent")
    }
}

const PRINCIPAL: &str = "x-ms-client-principal-id";

fn cases(post: &str) -> Vec<Case> {
    let a_post = || json!({"title": "t", "content": "c"});
    let posts = "/api/posts";
    let edit = format!("/api/posts/{post}");
    let comments = format!("/api/posts/{post}/comments");
    let user = |name: &str| json!({ "username": name });
    let bad_request = StatusCode::BAD_REQUEST;
    let unsupported = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    vec![
        // Headers the API reads, sent twice.
        case("two principals", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, "ada")
            .header(PRINCIPAL, "mallory")
            .field(PRINCIPAL),
        case("two content types", Method::POST, posts)
            .json(a_post())
            .header("content-type", "application/json")
            .header("content-type", "text/plain")
            .field("Content-Type"),
        case("two content encodings", Method::POST, posts)
            .json(a_post())
            .header("content-encoding", "identity")
            .header("content-encoding", "identity")
            .field("Content-Encoding"),
        case("two If-Match", Method::PUT, edit.clone())
            .json(a_post())
            .header("if-match", "\"a\"")
            .header("if-match", "\"b\"")
            .field("If-Match"),
        case("two idempotency keys", Method::POST, posts)
            .json(a_post())
            .header("idempotency-key", "\"k1\"")
            .header("idempotency-key", "\"k2\"")
            .field("Idempotency-Key"),
        case("two bearer tokens", Method::POST, posts)
            .json(a_post())
            .header("authorization", "Bearer a")
            .header("authorization", "Bearer b")
            .field("Authorization"),
        // Bodies in an encoding the server does not read.
        case("a Latin-1 body", Method::POST, posts)
            .bytes(b"{\"title\": \"caf\xe9\", \"content\": \"c\"}")
            .header("content-type", "application/json; charset=iso-8859-1")
            .refused(unsupported, "unsupported-media-type")
            .saying("iso-8859-1"),
        case("a UTF-16 body", Method::PUT, edit.clone())
            .json(a_post())
            .header("content-type", "application/json; charset=\"UTF-16\"")
            .refused(unsupported, "unsupported-media-type"),
        case("a gzip body", Method::POST, posts)
            .json(a_post())
            .header("content-encoding", "gzip")
            .refused(unsupported, "unsupported-encoding")
            .saying("gzip"),
        case("a brotli comment", Method::POST, comments.clone())
            .json(json!({"content": "c"}))
            .header("content-encoding", "br")
            .refused(unsupported, "unsupported-encoding"),
        // Text that shows nothing.
        case("a zero-width username", Method::PUT, "/api/users/ada")
            .json(user("\u{200b}\u{200b}"))
            .field("username"),
        case("a Hangul-filler username", Method::PUT, "/api/users/ada")
            .json(user("\u{3164}"))
            .field("username"),
        case("a blank Braille title", Method::POST, posts)
            .json(json!({"title": "\u{2800}", "content": "c"}))
            .field("title"),
        case("a joiner comment", Method::POST, comments.clone())
            .json(json!({"content": "\u{200d}\u{2060}\u{feff}"}))
            .field("content"),
        case("a combining-mark content", Method::PUT, edit.clone())
            .json(json!({"title": "t", "content": "\u{301}"}))
            .field("content"),
        // Text that pretends to be other text.
        case("a bidi override in a title", Method::POST, posts)
            .json(json!({"title": "\u{202e}txt.exe\u{202c}", "content": "c"}))
            .field("title")
            .saying("U+202E"),
        case(
            "a bidi isolate in a username",
            Method::PUT,
            "/api/users/ada",
        )
        .json(user("Ada\u{2067}x"))
        .field("username")
        .saying("bidirectional"),
        case(
            "a bidi override in a comment",
            Method::POST,
            comments.clone(),
        )
        .json(json!({"content": "see \u{202d}this"}))
        .field("content"),
        case("a bidi override in a post", Method::PUT, edit.clone())
            .json(json!({"title": "t", "content": "a\u{2066}b"}))
            .field("content"),
        case(
            "a zero-width space inside a username",
            Method::PUT,
            "/api/users/ada",
        )
        .json(user("Ad\u{200b}a"))
        .field("username")
        .saying("invisible"),
        case(
            "a line break inside a username",
            Method::PUT,
            "/api/users/ada",
        )
        .json(user("Ada\nLovelace"))
        .field("username")
        .saying("one line"),
        // Ids that cannot be seen or sent unchanged.
        case("a zero-width id", Method::PUT, "/api/users/%E2%80%8B")
            .json(user("Zed"))
            .header(PRINCIPAL, "%E2%80%8B")
            .field(PRINCIPAL),
        case("an id with a percent sign", Method::PUT, "/api/users/a%25b")
            .json(user("A"))
            .field("userId"),
        case(
            "an id with a leading space",
            Method::PUT,
            "/api/users/%20ada",
        )
        .json(user("A"))
        .field("userId"),
        case(
            "an id with a no-break space",
            Method::PUT,
            "/api/users/a%C2%A0b",
        )
        .json(user("A"))
        .field("userId"),
        case("an id not in NFC", Method::PUT, "/api/users/e%CC%81")
            .json(user("E"))
            .field("userId")
            .saying("NFC"),
        case("a dot for a caller", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, ".")
            .field(PRINCIPAL),
        case(
            "a post id with a direction mark",
            Method::GET,
            "/api/posts/a%E2%80%8Fb",
        )
        .field("postId"),
        // Query parameters the operation does not take.
        case(
            "a continuation on the feed",
            Method::GET,
            "/api/feed?continuation=abc",
        )
        .refused(bad_request, "invalid-query")
        .field("continuation")
        .saying("`limit`"),
        case(
            "a parameter on a post",
            Method::GET,
            format!("{edit}?expand=all"),
        )
        .refused(bad_request, "invalid-query")
        .field("expand"),
        case(
            "a parameter on a create",
            Method::POST,
            format!("{posts}?dryRun=true"),
        )
        .json(a_post())
        .refused(bad_request, "invalid-query")
        .field("dryRun"),
        case(
            "a parameter on a delete",
            Method::DELETE,
            format!("{edit}?force=1"),
        )
        .refused(bad_request, "invalid-query")
        .field("force"),
        case(
            "a misspelt limit",
            Method::GET,
            format!("{comments}?limt=1"),
        )
        .refused(bad_request, "invalid-query")
        .field("limt"),
        // Identities that cannot be written as sent.
        case("a raw UTF-8 principal", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, "élève".as_bytes())
            .field(PRINCIPAL)
            .saying("percent-encode"),
        case("a principal that decodes to no UTF-8", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, "%FF")
            .field(PRINCIPAL),
        case("a principal that decodes to a slash", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, "a%2Fb")
            .field(PRINCIPAL),
        case("no principal, in header mode", Method::POST, posts)
            .json(a_post())
            .header(PRINCIPAL, "")
            .refused(StatusCode::UNAUTHORIZED, "unauthenticated")
            .saying("BLOG_AUTH=header"),
        // Refusals below the handlers.
        case(
            "a URL past the bound",
            Method::GET,
            format!("/api/users/{}", "u".repeat(9000)),
        )
        .refused(StatusCode::URI_TOO_LONG, "uri-too-long"),
        case("an unknown route", Method::GET, "/api/nothing/here")
            .refused(StatusCode::NOT_FOUND, "route-not-found"),
        case("an unserved method", Method::PATCH, "/api/feed")
            .refused(StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed"),
        case("a body past the limit", Method::POST, posts)
            .bytes(&vec![b' '; cosmos_blog::http::MAX_BODY_BYTES + 1])
            .refused(StatusCode::PAYLOAD_TOO_LARGE, "body-too-large"),
    ]
}

/// `ada` with one post whose copies are made: the store at rest, to compare against.
async fn at_rest(app: &TestApp) -> (String, Vec<Value>) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "World").await;
    let before = eventually(Duration::from_secs(20), || async {
        let all = everything(app).await;
        (all.len() == 4).then_some(all)
    })
    .await;
    (post["id"].as_str().expect("a post id").to_owned(), before)
}

async fn hostile_requests_are_refused_precisely_and_write_nothing(app: TestApp) {
    let (post, before) = at_rest(&app).await;
    for case in cases(&post) {
        let response = case.send(&app).await;
        let what = format!("{} ({} {})", case.what, case.method, case.path);
        assert_eq!(response.status(), case.status, "{what}");
        let problem = assert_problem(response, case.status, case.code).await;
        if let Some(field) = case.field {
            assert_eq!(problem["field"], field, "{what}: {problem}");
        }
        if let Some(words) = case.detail {
            let detail = problem["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(words), "{what}: {detail}");
        }
    }
    assert_eq!(everything(&app).await, before, "a refused request wrote");
}

/// The other side of the rules: UTF-8 declared as such, text kept in NFC, and a non-ASCII
/// user id sent percent-encoded in the principal header.
async fn what_the_rules_allow_still_passes(app: TestApp) {
    let (post, _) = at_rest(&app).await;
    let edit = app
        .client
        .put(app.url(&format!("/api/posts/{post}")))
        .header(PRINCIPAL, "ada")
        .header("content-type", "application/json; charset=UTF-8")
        .header("content-encoding", "identity")
        .body(json!({"title": "Cafe\u{301}", "content": "c"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(edit.status(), StatusCode::OK);
    let edited: Value = edit.json().await.unwrap();
    assert_eq!(edited["title"], "Caf\u{e9}", "kept in NFC");

    let created = app
        .client
        .put(app.url("/api/users/%C3%A9l%C3%A8ve"))
        .header(PRINCIPAL, "%C3%A9l%C3%A8ve")
        .json(&json!({"username": "Élève"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["id"], "élève");
    let written = app
        .client
        .post(app.url("/api/posts"))
        .header(PRINCIPAL, "%C3%A9l%C3%A8ve")
        .json(&json!({"title": "Bonjour", "content": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), StatusCode::CREATED);
    let written: Value = written.json().await.unwrap();
    assert_eq!(written["userId"], "élève");
}
