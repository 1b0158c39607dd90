//! `BLOG_AUTH=jwt`: bearer tokens checked against a JWKS file or URL.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::get;
use cosmos_blog::auth::{AuthMode, AuthSettings};
use cosmos_blog::settings::ChangeFeedMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::tokens::{
    self, AUDIENCE, ISSUER, RSA_KID, bearer, claims, es256, invalid_tokens, rs256,
};
use super::{assert_unauthorized, binary_with_env, post_body, send, snapshot};
use testkit::{Backend, TestApp};

const INVALID_TOKEN: &str = "Bearer error=\"invalid_token\"";

testkit::on_every_backend!(
    valid_tokens_are_accepted_and_the_caller_is_their_subject,
    every_invalid_token_is_refused_and_writes_nothing,
    the_principal_header_is_ignored,
);

fn jwt_settings(jwks: &str) -> AuthSettings {
    AuthSettings {
        mode: Some(AuthMode::Jwt),
        jwt_jwks: Some(jwks.to_owned()),
        jwt_issuer: Some(ISSUER.to_owned()),
        jwt_audience: Some(AUDIENCE.to_owned()),
        ..AuthSettings::default()
    }
}

/// The application in jwt mode on a JWKS file (kept alive by the returned folder), with no
/// change-feed processing so that items change only through commands.
async fn jwt_app(backend: Backend) -> (TestApp, TempDir) {
    let folder = TempDir::new().expect("temp dir");
    let path = folder.path().join("jwks.json");
    std::fs::write(&path, tokens::jwks().to_string()).expect("write JWKS");
    let auth = jwt_settings(path.to_str().expect("UTF-8 path"));
    let app = TestApp::spawn(backend)
        .settings(|settings| {
            settings.change_feed = ChangeFeedMode::Off;
            settings.auth = auth;
        })
        .start()
        .await;
    (app, folder)
}

async fn put_user_with(app: &TestApp, user_id: &str, authorization: &str) -> reqwest::Response {
    send(
        app,
        Method::PUT,
        &format!("/api/users/{user_id}"),
        None,
        Some(authorization),
        Some(json!({"username": user_id})),
    )
    .await
}

/// Registers `user_id` with the bearer `authorization`, as [`TestApp::register`] does with
/// the principal header; fails the test unless the API said 201.
async fn register_with(app: &TestApp, user_id: &str, authorization: &str) {
    let response = put_user_with(app, user_id, authorization).await;
    assert_eq!(response.status(), StatusCode::CREATED, "register {user_id}");
}

async fn valid_tokens_are_accepted_and_the_caller_is_their_subject(backend: Backend) {
    let (app, _jwks) = jwt_app(backend).await;
    let ada = bearer(&rs256(&claims("ada")));
    let bob = bearer(&es256(&claims("bob")));
    register_with(&app, "ada", &ada).await;
    register_with(&app, "bob", &bob).await;

    let created = send(
        &app,
        Method::POST,
        "/api/posts",
        None,
        Some(&bob),
        Some(post_body()),
    )
    .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let post: Value = created.json().await.expect("post JSON");
    assert_eq!(post["userId"], "bob", "a new post belongs to the caller");

    // The rules that follow authentication hold: bob cannot write ada, nor edit as her.
    let impostor = put_user_with(&app, "ada", &bob).await;
    assert_eq!(impostor.status(), StatusCode::FORBIDDEN);
    let path = format!("/api/posts/{}", post["id"].as_str().expect("id"));
    let not_the_author = send(
        &app,
        Method::PUT,
        &path,
        None,
        Some(&ada),
        Some(post_body()),
    )
    .await;
    assert_eq!(not_the_author.status(), StatusCode::FORBIDDEN);

    // Clocks differ a little: a token expired 30 s ago is still inside the leeway.
    let mut late = claims("ada");
    late["exp"] = json!(tokens::now() - 30);
    let renamed = put_user_with(&app, "ada", &bearer(&rs256(&late))).await;
    assert_eq!(renamed.status(), StatusCode::OK);
}

async fn every_invalid_token_is_refused_and_writes_nothing(backend: Backend) {
    let (app, _jwks) = jwt_app(backend).await;
    let ada = bearer(&rs256(&claims("ada")));
    register_with(&app, "ada", &ada).await;
    let before = snapshot(app.store.as_ref()).await;

    for (case, token) in invalid_tokens() {
        let authorization = bearer(&token);
        let response = send(
            &app,
            Method::POST,
            "/api/posts",
            None,
            Some(&authorization),
            Some(post_body()),
        )
        .await;
        let challenge = assert_unauthorized(response, "invalid-token", case).await;
        assert_eq!(challenge.as_deref(), Some(INVALID_TOKEN), "{case}");
    }
    let empty = send(
        &app,
        Method::POST,
        "/api/posts",
        None,
        Some("Bearer "),
        Some(post_body()),
    )
    .await;
    let challenge = assert_unauthorized(empty, "invalid-token", "empty token").await;
    assert_eq!(challenge.as_deref(), Some(INVALID_TOKEN));

    // No token at all: a plain challenge (RFC 6750 3.1), still a 401 problem.
    for (case, authorization) in [
        ("no Authorization header", None),
        ("another scheme", Some("Basic YWRhOnNlY3JldA==")),
    ] {
        let response = send(
            &app,
            Method::PUT,
            "/api/users/eve",
            None,
            authorization,
            Some(json!({"username": "Eve"})),
        )
        .await;
        let challenge = assert_unauthorized(response, "unauthenticated", case).await;
        assert_eq!(challenge.as_deref(), Some("Bearer"), "{case}");
    }
    assert_eq!(
        snapshot(app.store.as_ref()).await,
        before,
        "a refused command wrote"
    );
}

async fn the_principal_header_is_ignored(backend: Backend) {
    let (app, _jwks) = jwt_app(backend).await;
    let bob = bearer(&es256(&claims("bob")));
    register_with(&app, "bob", &bob).await;
    let before = snapshot(app.store.as_ref()).await;
    let header_alone = send(
        &app,
        Method::PUT,
        "/api/users/ada",
        Some("ada"),
        None,
        Some(json!({"username": "Ada"})),
    )
    .await;
    let challenge = assert_unauthorized(header_alone, "unauthenticated", "header alone").await;
    assert_eq!(challenge.as_deref(), Some("Bearer"));
    assert_eq!(snapshot(app.store.as_ref()).await, before);

    // With a token, the caller is the token's subject whatever the header says.
    let created = send(
        &app,
        Method::POST,
        "/api/posts",
        Some("ada"),
        Some(&bob),
        Some(post_body()),
    )
    .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let post: Value = created.json().await.expect("post JSON");
    assert_eq!(post["userId"], "bob");
}

// ---- a JWKS served over HTTP: the store plays no part, so the embedded store only ------------

/// A local identity provider's JWKS endpoint whose key set the test changes; counts fetches.
struct KeyServer {
    url: String,
    served: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl KeyServer {
    async fn start(keys: Value) -> Self {
        let served = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let router = axum::Router::new().route(
            "/discovery/keys",
            get({
                let (served, fetches) = (Arc::clone(&served), Arc::clone(&fetches));
                move || async move {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    Json(served.lock().expect("lock").clone())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!(
            "http://{}/discovery/keys",
            listener.local_addr().expect("address")
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            url,
            served,
            fetches,
        }
    }

    fn serve(&self, keys: Value) {
        *self.served.lock().expect("lock") = keys;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_url_is_cached_and_fetched_again_for_an_unknown_kid_at_most_once_per_interval() {
    let keys = tokens::keys();
    let server = KeyServer::start(json!({"keys": [tokens::rsa_jwk(&keys.rsa, RSA_KID)]})).await;
    let mut auth = jwt_settings(&server.url);
    // Entra ID users take the object id; the subject is then someone else.
    auth.jwt_claim = Some("oid".to_owned());
    let app = TestApp::spawn(Backend::Embedded)
        .settings(|settings| settings.auth = auth)
        .start()
        .await;
    assert_eq!(server.fetches(), 1, "fetched at start-up");

    let as_oid = |oid: &str| {
        let mut claims = claims("pairwise-subject");
        claims["oid"] = json!(oid);
        claims
    };
    let ada = bearer(&rs256(&as_oid("ada")));
    register_with(&app, "ada", &ada).await;
    assert_eq!(
        put_user_with(&app, "ada", &ada).await.status(),
        StatusCode::OK
    );
    assert_eq!(server.fetches(), 1, "known keys come from the cache");

    // The provider rotates in a new key; its first token triggers one fetch.
    server.serve(tokens::jwks());
    let bob = bearer(&es256(&as_oid("bob")));
    register_with(&app, "bob", &bob).await;
    assert_eq!(
        server.fetches(),
        2,
        "an unknown kid fetches the key set again"
    );

    // Within the interval, unknown kids do not reach the provider again, even when it
    // meanwhile has the key: made-up kids cannot make the server hammer it.
    let mut rotated = tokens::jwks();
    rotated["keys"]
        .as_array_mut()
        .expect("keys")
        .push(tokens::rsa_jwk(&keys.intruder, "rsa-2"));
    server.serve(rotated);
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": "rsa-2"});
    let signer = tokens::Signer::Rsa(&keys.intruder, &aws_lc_rs::signature::RSA_PKCS1_SHA256);
    let too_soon = bearer(&tokens::mint(&header, &as_oid("carol"), signer));
    for _ in 0..3 {
        let response = put_user_with(&app, "carol", &too_soon).await;
        assert_unauthorized(response, "invalid-token", "kid unknown within the interval").await;
    }
    assert_eq!(server.fetches(), 2);
    assert_eq!(
        app.get("/api/users/carol").await.status(),
        StatusCode::NOT_FOUND
    );
}

// ---- the real binary ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reads_the_jwt_settings_from_its_environment() {
    let folder = TempDir::new().expect("temp dir");
    let jwks = folder.path().join("jwks.json");
    std::fs::write(&jwks, tokens::jwks().to_string()).expect("write JWKS");
    let server = binary_with_env(&[
        ("BLOG_AUTH", "jwt"),
        ("BLOG_JWT_JWKS", jwks.to_str().expect("UTF-8 path")),
        ("BLOG_JWT_ISSUER", ISSUER),
        ("BLOG_JWT_AUDIENCE", AUDIENCE),
        // Under the host too: an explicit mode wins over the easyauth default.
        ("FUNCTIONS_WORKER_RUNTIME", "custom"),
    ])
    .ready()
    .await;
    let client = reqwest::Client::new();
    let with_token = client
        .put(server.url("/api/users/ada"))
        .header("authorization", bearer(&rs256(&claims("ada"))))
        .json(&json!({"username": "Ada"}))
        .send()
        .await
        .expect("request");
    assert_eq!(with_token.status(), StatusCode::CREATED);
    let forged = client
        .put(server.url("/api/users/eve"))
        .header("x-ms-client-principal-id", "eve")
        .json(&json!({"username": "Eve"}))
        .send()
        .await
        .expect("request");
    assert_unauthorized(forged, "unauthenticated", "principal header in jwt mode").await;
}

#[tokio::test]
async fn the_binary_refuses_to_start_in_jwt_mode_without_its_settings_or_keys() {
    let mut unset = binary_with_env(&[("BLOG_AUTH", "jwt")]);
    assert!(!unset.exit_status().await.success());
    let log = unset.log();
    for name in ["BLOG_JWT_JWKS", "BLOG_JWT_ISSUER", "BLOG_JWT_AUDIENCE"] {
        assert!(log.contains(name), "{name} not named in:\n{log}");
    }

    // A key set that is not there, and one that would come over plain HTTP.
    for (jwks, refusal) in [
        ("/nonexistent/jwks.json", "cannot load the JWT key set"),
        ("http://login.example.test/keys", "must be an https URL"),
    ] {
        let mut refused = binary_with_env(&[
            ("BLOG_AUTH", "jwt"),
            ("BLOG_JWT_JWKS", jwks),
            ("BLOG_JWT_ISSUER", ISSUER),
            ("BLOG_JWT_AUDIENCE", AUDIENCE),
        ]);
        assert!(!refused.exit_status().await.success());
        let log = refused.log();
        assert!(log.contains(refusal), "{jwks}: {log}");
    }
}

/// A browser has no bearer token: the pages only read, and a page that writes says so in a
/// reader's words (no sign-in to send them to, no header or mode named).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_only_read() {
    let (app, _jwks) = jwt_app(Backend::Embedded).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    for page in ["/write", "/account", "/account/delete"] {
        let response = client
            .get(app.raw_url(page))
            .header("accept", "text/html")
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{page}");
        let html = response.text().await.expect("body");
        assert!(html.contains("read-only-pages"), "{page}: {html}");
        assert!(html.contains("pages only read"), "{page}: {html}");
        assert!(!html.contains("/sign-in"), "{page}: {html}");
        assert!(!html.contains("BLOG_AUTH"), "{page}: {html}");
    }
}
