//! Real responses of the running application, for every operation, validate against the
//! document's schema for their status.

use super::*;

backend_tests!(every_operation_answers_as_the_document_says);

/// The same, on an application of the `multi` layout, in one tenant.
mod multi {
    use super::*;

    testkit::backend_pair!(
        answers_in_a_tenant =>
        embedded_every_operation_answers_as_the_document_says,
        cosmos_every_operation_answers_as_the_document_says,
    );

    async fn answers_in_a_tenant(backend: Backend) {
        let app = TestApp::spawn(backend)
            .layout(Tenancy::Multi)
            .unaddressed()
            .start()
            .await;
        answers_as_documented(app, Tenancy::Multi).await;
    }
}

/// The document, registered so that its `$ref`s resolve while validating.
struct Described {
    doc: Value,
    registry: Registry<'static>,
}

impl Described {
    fn new(doc: Value) -> Self {
        let registry = Registry::new()
            .draft(Draft::Draft202012)
            .add(DOCUMENT_URI, doc.clone())
            .expect("document URI")
            .prepare()
            .expect("the document's references resolve");
        Self { doc, registry }
    }

    /// The path template that `path` (without its query) instantiates; literal segments win
    /// over parameters.
    fn template_for(&self, path: &str) -> String {
        let path = path.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').collect();
        self.doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(template, _)| template)
            .filter_map(|template| {
                let parts: Vec<&str> = template.split('/').collect();
                if parts.len() != segments.len() {
                    return None;
                }
                let mut literal = 0;
                for (part, segment) in parts.iter().zip(&segments) {
                    if part.starts_with('{') {
                        continue;
                    }
                    if part != segment {
                        return None;
                    }
                    literal += 1;
                }
                Some((literal, template.clone()))
            })
            .max()
            .map(|(_, template)| template)
            .unwrap_or_else(|| panic!("{path} is not in the document"))
    }

    /// Validates `instance` against the schema at `pointer` in the document.
    fn validate(&self, pointer: &str, instance: &Value) -> Vec<String> {
        let schema = json!({ "$ref": format!("{DOCUMENT_URI}#{}", fragment(pointer)) });
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_registry(&self.registry)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("schema at {pointer} does not compile: {e}"));
        validator
            .iter_errors(instance)
            .map(|e| format!("{e} (at {}, schema {pointer})", e.instance_path()))
            .collect()
    }

    /// How a response differs from what the document says `method template` answers.
    fn mismatches(
        &self,
        method: &str,
        template: &str,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Vec<String> {
        let operation = format!(
            "/paths/{}/{}",
            pointer_segment(template),
            method.to_lowercase()
        );
        let mut pointer = format!("{operation}/responses/{status}");
        let Some(mut response) = self.doc.pointer(&pointer) else {
            return vec![format!("status {status} is not documented")];
        };
        if let Some(target) = response["$ref"].as_str() {
            pointer = target.trim_start_matches('#').to_owned();
            response = self.doc.pointer(&pointer).expect("response $ref resolves");
        }
        let mut problems = Vec::new();
        let media_type = content_type(headers)
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        match (response.get("content"), media_type) {
            (None, _) if body.is_empty() => {}
            (None, _) => problems.push("a body, where the document says none".to_owned()),
            (Some(_), None) => problems.push("no Content-Type".to_owned()),
            (Some(content), Some(media_type)) if content.get(&media_type).is_none() => {
                problems.push(format!("Content-Type {media_type} is not documented"));
            }
            (Some(_), Some(media_type)) => {
                let instance = if media_type.ends_with("json") {
                    serde_json::from_slice(body).unwrap_or_else(|e| json!(format!("not JSON: {e}")))
                } else {
                    Value::String(String::from_utf8_lossy(body).into_owned())
                };
                let schema = format!("{pointer}/content/{}/schema", pointer_segment(&media_type));
                problems.extend(self.validate(&schema, &instance));
            }
        }
        // The headers documented here are always sent, so each must be present and valid.
        for name in response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, _)| n)
        {
            let schema = format!("{pointer}/headers/{}/schema", pointer_segment(name));
            match headers.get(name.as_str()).and_then(|v| v.to_str().ok()) {
                None => problems.push(format!("documented header {name} missing")),
                Some(value) => {
                    let instance = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
                    problems.extend(self.validate(&schema, &instance));
                }
            }
        }
        problems
    }
}

/// Documented responses that no call below provokes, because only a broken application can:
/// 409 needs sixty optimistic-concurrency rounds lost in a row, 500 a bug.
const NOT_PROVOKED: [u16; 2] = [409, 500];

/// Which documented responses real ones were checked against.
#[derive(Default)]
struct Coverage(BTreeSet<(String, String, u16)>);

impl Coverage {
    fn assert_complete(&self, doc: &Value) {
        let mut missing = Vec::new();
        for ((method, template), operation) in operations(doc) {
            for status in operation["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(s, _)| s)
            {
                let status: u16 = status.parse().expect("numeric status");
                let key = (method.clone(), template.clone(), status);
                if !NOT_PROVOKED.contains(&status) && !self.0.contains(&key) {
                    missing.push(format!("{method} {template} {status}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "documented responses that no real response was checked against (add calls to \
             tests/api/openapi/responses.rs): {missing:#?}"
        );
    }
}

enum Body {
    Empty,
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

/// One request and the status it must get.
struct Call {
    method: Method,
    path: String,
    caller: Option<&'static str>,
    /// An `Idempotency-Key`, as sent.
    key: Option<&'static str>,
    body: Body,
    expect: u16,
}

fn call(method: Method, path: impl Into<String>, expect: u16) -> Call {
    Call {
        method,
        path: path.into(),
        caller: None,
        key: None,
        body: Body::Empty,
        expect,
    }
}

fn get(path: impl Into<String>, expect: u16) -> Call {
    call(Method::GET, path, expect)
}

impl Call {
    fn by(self, caller: &'static str) -> Self {
        Self {
            caller: Some(caller),
            ..self
        }
    }

    fn key(self, key: &'static str) -> Self {
        Self {
            key: Some(key),
            ..self
        }
    }

    fn json(self, body: Value) -> Self {
        Self {
            body: Body::Json(body),
            ..self
        }
    }

    /// A JSON body over the body limit.
    fn too_large(self) -> Self {
        let mut bytes = b"{\"content\": \"".to_vec();
        bytes.resize(cosmos_blog::http::MAX_BODY_BYTES + 16, b'x');
        bytes.extend_from_slice(b"\"}");
        Self {
            body: Body::Raw("application/json", bytes),
            ..self
        }
    }

    fn not_json(self) -> Self {
        Self {
            body: Body::Raw("text/plain", b"{}".to_vec()),
            ..self
        }
    }
}

/// Sends `call` (addressed as `tenancy` does), checks its status, and checks the response
/// against the document.
async fn check(
    app: &TestApp,
    tenancy: Tenancy,
    described: &Described,
    call: Call,
    coverage: &mut Coverage,
) {
    let path = in_layout(tenancy, &call.path);
    let mut request = app.client.request(call.method.clone(), app.url(&path));
    if let Some(caller) = call.caller {
        request = request.header("x-ms-client-principal-id", caller);
    }
    if let Some(key) = call.key {
        request = request.header("Idempotency-Key", key);
    }
    request = match call.body {
        Body::Empty => request,
        Body::Json(body) => request.json(&body),
        Body::Raw(content_type, bytes) => request.header(CONTENT_TYPE, content_type).body(bytes),
    };
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body");
    let what = format!("{} {path} -> {status}", call.method);
    assert_eq!(
        status,
        call.expect,
        "{what}: {}",
        String::from_utf8_lossy(&body)
    );
    let template = described.template_for(&path);
    let mismatches = described.mismatches(call.method.as_str(), &template, status, &headers, &body);
    assert!(
        mismatches.is_empty(),
        "{what} does not match the document: {mismatches:#?}"
    );
    coverage
        .0
        .insert((call.method.to_string(), template, status));
}

/// Calls that reach each operation's success and each problem it can answer on a working
/// store. `post` is a post of ada's; bob has not commented on or liked it yet.
fn calls(post: &str) -> Vec<Call> {
    let user = |name: &str| json!({ "username": name });
    let post_body = json!({ "title": "Edited", "content": "Still mine" });
    let comments = format!("/api/posts/{post}/comments");
    let likes = format!("/api/posts/{post}/likes");
    let this_post = format!("/api/posts/{post}");
    vec![
        // C1
        call(Method::PUT, "/api/users/carol", 201)
            .by("carol")
            .json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 200)
            .by("carol")
            .json(user("Caroline")),
        call(Method::PUT, "/api/users/carol", 401).json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 403)
            .by("ada")
            .json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 400)
            .by("carol")
            .json(user("  ")),
        call(Method::PUT, "/api/users/carol", 413)
            .by("carol")
            .too_large(),
        call(Method::PUT, "/api/users/carol", 415)
            .by("carol")
            .not_json(),
        // Q1
        get("/api/users/ada", 200),
        get("/api/users/nobody", 404),
        get("/api/users/a%23b", 400),
        // Q3: a page with a continuation, then the last page
        get("/api/users/ada/posts?limit=1", 200),
        get("/api/users/ada/posts", 200),
        get("/api/users/nobody/posts", 404),
        get("/api/users/ada/posts?limit=0", 400),
        // C2, create
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 401).json(post_body.clone()),
        call(Method::POST, "/api/posts", 404)
            .by("ghost")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 400)
            .by("ada")
            .json(json!({"title": "", "content": "x"})),
        call(Method::POST, "/api/posts", 413).by("ada").too_large(),
        call(Method::POST, "/api/posts", 415).by("ada").not_json(),
        // C2, create with an Idempotency-Key: a repeat, another body, a key that is none
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .key("\"post-1\"")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .key("\"post-1\"")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 422)
            .by("ada")
            .key("\"post-1\"")
            .json(json!({"title": "Other", "content": "x"})),
        call(Method::POST, "/api/posts", 400)
            .by("ada")
            .key("not a key")
            .json(post_body.clone()),
        // C2, edit
        call(Method::PUT, &this_post, 200)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, &this_post, 401).json(post_body.clone()),
        call(Method::PUT, &this_post, 403)
            .by("bob")
            .json(post_body.clone()),
        call(Method::PUT, "/api/posts/missing", 404)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, &this_post, 400)
            .by("ada")
            .json(json!({"title": "t"})),
        call(Method::PUT, &this_post, 413).by("ada").too_large(),
        call(Method::PUT, &this_post, 415).by("ada").not_json(),
        // Q2
        get(&this_post, 200),
        get("/api/posts/missing", 404),
        get("/api/posts/a%23b", 400),
        // C3
        call(Method::POST, &comments, 201)
            .by("bob")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 401).json(json!({"content": "Nice"})),
        call(Method::POST, "/api/posts/missing/comments", 404)
            .by("bob")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 400)
            .by("bob")
            .json(json!({"content": ""})),
        call(Method::POST, &comments, 413).by("bob").too_large(),
        call(Method::POST, &comments, 415).by("bob").not_json(),
        call(Method::POST, &comments, 201)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 201)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 422)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nicer"})),
        call(Method::POST, &comments, 400)
            .by("bob")
            .key("")
            .json(json!({"content": "Nice"})),
        // Q4
        get(&comments, 200),
        get("/api/posts/missing/comments", 404),
        get(format!("{comments}?continuation=nonsense"), 400),
        // C4: a new like, then the same again
        call(Method::POST, &likes, 201).by("bob"),
        call(Method::POST, &likes, 200).by("bob"),
        call(Method::POST, &likes, 401),
        call(Method::POST, "/api/posts/missing/likes", 404).by("bob"),
        call(Method::POST, "/api/posts/a%23b/likes", 400).by("bob"),
        // Q5
        get(&likes, 200),
        get("/api/posts/missing/likes", 404),
        get(format!("{likes}?limit=101"), 400),
        // Q6
        get("/api/feed?limit=10", 200),
        get("/api/feed?limit=0", 400),
        // Q8, Q9 and the archive's months
        get("/api/tags/rust/posts", 200),
        get("/api/tags/a%3Fb/posts", 400),
        get("/api/archive/2026/11/posts", 200),
        get("/api/archive/2026/13/posts", 400),
        get("/api/archive", 200),
        get("/api/archive?limit=1", 400),
        // The caller's drafts
        call(Method::GET, "/api/users/ada/drafts", 200).by("ada"),
        call(Method::GET, "/api/users/ada/drafts?limit=0", 400).by("ada"),
        get("/api/users/ada/drafts", 401),
        call(Method::GET, "/api/users/ada/drafts", 403).by("bob"),
        call(Method::GET, "/api/users/nobody/drafts", 404).by("nobody"),
        // The description, its page, and the health probe
        get("/api/openapi.json", 200),
        get("/api/docs", 200),
        get("/api/docs/swagger-ui.css", 200),
        get("/api/docs/swagger-ui-bundle.js", 200),
        get("/api/health", 200),
        // A query parameter an operation does not take is a 400, on every operation.
        get("/api/openapi.json?format=yaml", 400),
        get("/api/docs?theme=dark", 400),
        get("/api/docs/swagger-ui.css?v=1", 400),
        get("/api/docs/swagger-ui-bundle.js?v=1", 400),
        get("/api/health?probe=1", 400),
    ]
}

/// The deletes, last: `post` is ada's, liked by bob, and `comment` bob's comment on it.
fn delete_calls(post: &str, comment: &str) -> Vec<Call> {
    let this_comment = format!("/api/posts/{post}/comments/{comment}");
    let likes = format!("/api/posts/{post}/likes");
    let this_post = format!("/api/posts/{post}");
    vec![
        // A comment
        call(Method::DELETE, &this_comment, 401),
        call(
            Method::DELETE,
            format!("/api/posts/{post}/comments/a%23b"),
            400,
        )
        .by("bob"),
        call(Method::DELETE, &this_comment, 403).by("carol"),
        call(Method::DELETE, &this_comment, 204).by("bob"),
        call(Method::DELETE, &this_comment, 404).by("bob"),
        // Unlike
        call(Method::DELETE, &likes, 401),
        call(Method::DELETE, "/api/posts/a%23b/likes", 400).by("bob"),
        call(Method::DELETE, &likes, 204).by("bob"),
        call(Method::DELETE, &likes, 404).by("bob"),
        // The post
        call(Method::DELETE, &this_post, 401),
        call(Method::DELETE, "/api/posts/a%23b", 400).by("ada"),
        call(Method::DELETE, &this_post, 403).by("bob"),
        call(Method::DELETE, &this_post, 204).by("ada"),
        call(Method::DELETE, &this_post, 404).by("ada"),
        // An account
        call(Method::DELETE, "/api/users/carol", 401),
        call(Method::DELETE, "/api/users/a%23b", 400).by("carol"),
        call(Method::DELETE, "/api/users/carol", 403).by("bob"),
        call(Method::DELETE, "/api/users/carol", 202).by("carol"),
        call(Method::DELETE, "/api/users/carol", 404).by("carol"),
    ]
}

/// Q7, the list of a tenant's users (ada, bob and carol by then), in the `multi` layout.
fn tenant_user_calls() -> Vec<Call> {
    vec![
        get("/api/users?limit=1", 200),
        get("/api/users", 200),
        get("/api/users?limit=0", 400),
        get("/api/users?continuation=nonsense", 400),
    ]
}

/// Each documented operation of a `multi` document called with an invalid tenant id: 400,
/// whatever the operation.
fn invalid_tenant_calls(doc: &Value) -> Vec<Call> {
    operations(doc)
        .into_keys()
        .filter(|(_, template)| template.starts_with("/api/tenants/{tenantId}/"))
        .map(|(method, template)| {
            let path = template
                .replace("{tenantId}", "a%23b")
                .split('/')
                .map(|s| if s.starts_with('{') { "x" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            call(
                Method::from_bytes(method.as_bytes()).expect("method"),
                path,
                400,
            )
        })
        .collect()
}

/// One valid call of each operation that uses the store; on a failing store each gets
/// `expect`.
fn store_calls(expect: u16, tenancy: Tenancy) -> Vec<Call> {
    let post_body = json!({ "title": "t", "content": "c" });
    let only_multi = match tenancy {
        Tenancy::Single => vec![],
        Tenancy::Multi => vec![get("/api/users", expect)],
    };
    let mut calls = vec![
        call(Method::PUT, "/api/users/ada", expect)
            .by("ada")
            .json(json!({"username": "Ada"})),
        get("/api/users/ada", expect),
        get("/api/users/ada/posts", expect),
        call(Method::POST, "/api/posts", expect)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, "/api/posts/p1", expect)
            .by("ada")
            .json(post_body),
        get("/api/posts/p1", expect),
        call(Method::POST, "/api/posts/p1/comments", expect)
            .by("ada")
            .json(json!({"content": "c"})),
        get("/api/posts/p1/comments", expect),
        call(Method::POST, "/api/posts/p1/likes", expect).by("ada"),
        get("/api/posts/p1/likes", expect),
        get("/api/feed", expect),
        get("/api/tags/rust/posts", expect),
        get("/api/archive/2026/11/posts", expect),
        get("/api/archive", expect),
        call(Method::GET, "/api/users/ada/drafts", expect).by("ada"),
        call(Method::DELETE, "/api/users/ada", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1/comments/c1", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1/likes", expect).by("ada"),
    ];
    calls.extend(only_multi);
    calls.extend(images::store_calls(expect));
    calls
}

async fn every_operation_answers_as_the_document_says(app: TestApp) {
    answers_as_documented(app, Tenancy::Single).await;
}

/// A JSON command as `caller` on the `/api` path `path`, addressed as `tenancy` does; its
/// body, after checking the status.
async fn command(
    app: &TestApp,
    tenancy: Tenancy,
    (method, path): (Method, &str),
    caller: &str,
    body: Value,
    expect: StatusCode,
) -> Value {
    let path = in_layout(tenancy, path);
    let response = app.send(method, &path, Some(caller), Some(body)).await;
    assert_eq!(response.status(), expect, "{path}");
    response.json().await.expect("JSON body")
}

async fn answers_as_documented(app: TestApp, tenancy: Tenancy) {
    let served: Value = app.get_json(&in_layout(tenancy, "/api/openapi.json")).await;
    let described = Described::new(served);
    let mut coverage = Coverage::default();

    for (user, name) in [("ada", "Ada"), ("bob", "Bob")] {
        let path = format!("/api/users/{user}");
        let body = json!({ "username": name });
        command(
            &app,
            tenancy,
            (Method::PUT, &path),
            user,
            body,
            StatusCode::CREATED,
        )
        .await;
    }
    let new_post = |title: &str, content: String| {
        let body = json!({ "title": title, "content": content });
        command(
            &app,
            tenancy,
            (Method::POST, "/api/posts"),
            "ada",
            body,
            StatusCode::CREATED,
        )
    };
    new_post("First", "Hello".to_owned()).await;
    let post = new_post("Second", "long ".repeat(100)).await;
    let post = post["id"].as_str().expect("post id").to_owned();
    // Lists show copies made by the change feed: wait for both posts in each.
    eventually(Duration::from_secs(20), || async {
        let mine = app
            .get_json(&in_layout(tenancy, "/api/users/ada/posts"))
            .await;
        let feed = app.get_json(&in_layout(tenancy, "/api/feed")).await;
        let both = |page: &Value| page["items"].as_array().is_some_and(|i| i.len() == 2);
        (both(&mine) && both(&feed)).then_some(())
    })
    .await;
    let mut all_calls = calls(&post);
    if tenancy == Tenancy::Multi {
        all_calls.extend(tenant_user_calls());
        all_calls.extend(invalid_tenant_calls(&described.doc));
    }
    for call in all_calls {
        check(&app, tenancy, &described, call, &mut coverage).await;
    }
    let comments = format!("/api/posts/{post}/comments");
    let body = json!({ "content": "to delete" });
    let comment = command(
        &app,
        tenancy,
        (Method::POST, &comments),
        "bob",
        body,
        StatusCode::CREATED,
    )
    .await;
    let comment = comment["id"].as_str().expect("comment id").to_owned();
    for call in delete_calls(&post, &comment) {
        check(&app, tenancy, &described, call, &mut coverage).await;
    }
    images::check_image_calls(&app, tenancy, &described, &mut coverage).await;

    // What a store that is down, or throttling, makes each operation answer.
    for (failure, status) in [(Failure::Unavailable, 503), (Failure::Throttled, 429)] {
        // An empty store that no call reaches: each fails on the way.
        let dir = TempDir::new().expect("temp dir");
        let unreached = open_backend(Backend::Embedded, tenancy, &dir).await;
        let failing = TestApp::spawn_on(double::named(unreached, failure, "failing"))
            .data_dir(dir)
            .without_pump()
            .unaddressed()
            .start()
            .await;
        for call in store_calls(status, tenancy) {
            check(&failing, tenancy, &described, call, &mut coverage).await;
        }
    }
    coverage.assert_complete(&described.doc);
}

// ---- a store that fails every call ---------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Failure {
    Unavailable,
    Throttled,
}

/// Hooks that fail every call.
#[async_trait]
impl Hooks for Failure {
    async fn before(&self, _: &double::Call<'_>, _: &dyn Store) -> StoreResult<()> {
        Err(match self {
            Failure::Unavailable => StoreError::Unavailable("test: the store is down".into()),
            Failure::Throttled => StoreError::Throttled {
                retry_after: Some(Duration::from_secs(2)),
            },
        })
    }
}

mod images;
