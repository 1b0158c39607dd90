//! `easyauth` (the default under the Functions host) and `header` (the default standalone, on
//! loopback only).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use cosmos_blog::auth::{AuthMode, Platform};
use cosmos_blog::settings::ChangeFeedMode;
use cosmos_blog::startup::Application;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, Store};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{assert_unauthorized, binary_with_env, post_body, send, snapshot};
use testkit::{Backend, Served, TestApp};

testkit::on_every_backend!(
    easyauth_refuses_every_command_while_app_service_authentication_is_off,
    easyauth_trusts_the_header_once_app_service_authentication_is_on,
);

/// The application as the Functions host starts it, with `WEBSITE_AUTH_ENABLED` as given.
/// No change-feed processing, so that the stored items change only through commands.
async fn under_functions_host(backend: Backend, website_auth_enabled: Option<&str>) -> TestApp {
    let platform = Platform::functions_host(website_auth_enabled);
    TestApp::spawn(backend)
        .settings(|settings| {
            settings.change_feed = ChangeFeedMode::Off;
            settings.auth.platform = platform;
        })
        .start()
        .await
}

/// A user and a post written straight into the store, so that every command has a target.
async fn seed(store: &dyn Store) {
    let user = json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada"});
    store
        .upsert_item(Container::Users, &PartitionKey::single("ada"), user)
        .await
        .expect("seed user");
    let post = json!({"id": "p-1", "type": "post", "postId": "p-1", "userId": "ada",
        "userUsername": "Ada", "title": "Seeded", "content": "Seeded content",
        "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-22T09:15:02.1234567Z"});
    store
        .upsert_item(Container::Posts, &PartitionKey::single("p-1"), post)
        .await
        .expect("seed post");
}

/// Every command, each as a caller it would succeed for if the header were trusted.
fn forged_commands() -> Vec<(Method, &'static str, &'static str, Option<Value>)> {
    vec![
        (
            Method::PUT,
            "/api/users/eve",
            "eve",
            Some(json!({"username": "Eve"})),
        ),
        (
            Method::PUT,
            "/api/users/ada",
            "ada",
            Some(json!({"username": "Not Ada"})),
        ),
        (Method::POST, "/api/posts", "ada", Some(post_body())),
        (Method::PUT, "/api/posts/p-1", "ada", Some(post_body())),
        (
            Method::POST,
            "/api/posts/p-1/comments",
            "ada",
            Some(json!({"content": "forged"})),
        ),
        (Method::POST, "/api/posts/p-1/likes", "ada", None),
    ]
}

async fn easyauth_refuses_every_command_while_app_service_authentication_is_off(backend: Backend) {
    for website_auth_enabled in [None, Some("false")] {
        let app = under_functions_host(backend, website_auth_enabled).await;
        seed(app.store.as_ref()).await;
        let before = snapshot(app.store.as_ref()).await;
        for (method, path, caller, body) in forged_commands() {
            let case = format!(
                "{method} {path} as {caller}, WEBSITE_AUTH_ENABLED={website_auth_enabled:?}"
            );
            let response = send(&app, method, path, Some(caller), None, body).await;
            assert_unauthorized(response, "easyauth-disabled", &case).await;
        }
        assert_eq!(
            snapshot(app.store.as_ref()).await,
            before,
            "a refused command wrote"
        );
        // Queries stay public.
        assert_eq!(app.get_json("/api/posts/p-1").await["title"], "Seeded");
        assert_eq!(app.get_json("/api/users/ada").await["username"], "Ada");
        assert_eq!(app.get("/api/feed").await.status(), StatusCode::OK);
        assert_eq!(
            app.get("/api/users/eve").await.status(),
            StatusCode::NOT_FOUND
        );
    }
}

async fn easyauth_trusts_the_header_once_app_service_authentication_is_on(backend: Backend) {
    for website_auth_enabled in ["true", "TRUE"] {
        let app = under_functions_host(backend, Some(website_auth_enabled)).await;
        app.register("ada", "Ada").await;
        app.register("bob", "Bob").await;
        let post = app.new_post("ada", "Mine", "by Ada").await;
        assert_eq!(post["userId"], "ada", "a new post belongs to the caller");
        let post_id = post["id"].as_str().expect("post id").to_owned();
        let comment = app.comment("bob", &post_id, "Nice").await;
        assert_eq!(comment.status(), StatusCode::CREATED);
        let comment: Value = comment.json().await.expect("comment JSON");
        assert_eq!(comment["userId"], "bob");

        // The rules that follow authentication hold as before; refusals write nothing.
        let before = snapshot(app.store.as_ref()).await;
        let anonymous = app
            .send(Method::POST, "/api/posts", None, Some(post_body()))
            .await;
        assert_unauthorized(anonymous, "unauthenticated", "no principal header").await;
        let impostor = app
            .send(
                Method::PUT,
                "/api/users/ada",
                Some("bob"),
                Some(json!({"username": "Bob"})),
            )
            .await;
        assert_eq!(impostor.status(), StatusCode::FORBIDDEN);
        let not_the_author = app
            .send(
                Method::PUT,
                &format!("/api/posts/{post_id}"),
                Some("bob"),
                Some(post_body()),
            )
            .await;
        assert_eq!(not_the_author.status(), StatusCode::FORBIDDEN);
        assert_eq!(snapshot(app.store.as_ref()).await, before);
    }
}

// ---- header mode: the store plays no part, so these run on the embedded store only ----------

const ANY_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

#[tokio::test]
async fn implicit_header_mode_refuses_a_non_loopback_bind() {
    let data = tempfile::TempDir::new().expect("temp dir");
    let mut settings = testkit::settings(data.path().to_path_buf(), ChangeFeedMode::Off);
    settings.bind_address = ANY_ADDRESS;
    let store = EmbeddedStore::open(&data.path().join("blog.sqlite3")).expect("store");
    let error = match Application::with_store(&settings, Arc::new(store)).await {
        Ok(_) => panic!("the application started on 0.0.0.0 in implicit header mode"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("refusing to serve on 0.0.0.0"), "{error}");
    assert!(error.contains("BLOG_AUTH"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_header_mode_serves_on_any_address() {
    let app = TestApp::spawn(Backend::Embedded)
        .settings(|settings| {
            settings.bind_address = ANY_ADDRESS;
            settings.auth.mode = Some(AuthMode::Header);
        })
        .start()
        .await;
    app.register("ada", "Ada").await;
}

// ---- the real binary, with the platform's environment variables ------------------------------

const PRINCIPAL: &str = "x-ms-client-principal-id";

async fn put_user(server: &Served, user_id: &str) -> reqwest::Response {
    reqwest::Client::new()
        .put(server.url(&format!("/api/users/{user_id}")))
        .header(PRINCIPAL, user_id)
        .json(&json!({"username": user_id}))
        .send()
        .await
        .expect("request sent")
}

async fn stored_user(data_dir: &std::path::Path, user_id: &str) -> Option<Value> {
    let store = EmbeddedStore::open(&data_dir.join("blog.sqlite3")).expect("store");
    store
        .read_item(Container::Users, &PartitionKey::single(user_id), user_id)
        .await
        .expect("read")
        .map(|document| document.item)
}

fn lines_with<'a>(log: &'a str, level: &str) -> Vec<&'a str> {
    log.lines()
        .filter(|line| line.split_whitespace().nth(1) == Some(level))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_under_the_functions_host_trusts_the_header_only_with_easy_auth_on() {
    let mut off = binary_with_env(&[("FUNCTIONS_WORKER_RUNTIME", "custom")])
        .ready()
        .await;
    let forged = put_user(&off, "eve").await;
    assert_unauthorized(forged, "easyauth-disabled", "forged header").await;
    let feed = reqwest::get(off.url("/api/feed")).await.expect("feed");
    assert_eq!(feed.status(), StatusCode::OK, "queries stay public");
    off.kill();
    let log = off.log();
    let errors = lines_with(&log, "ERROR");
    assert_eq!(errors.len(), 1, "one clear error line:\n{log}");
    assert!(
        errors[0].contains("App Service Authentication is off"),
        "{log}"
    );
    assert_eq!(stored_user(off.data_dir(), "eve").await, None);

    let mut on = binary_with_env(&[
        ("FUNCTIONS_WORKER_RUNTIME", "custom"),
        ("WEBSITE_AUTH_ENABLED", "True"),
    ])
    .ready()
    .await;
    assert_eq!(put_user(&on, "eve").await.status(), StatusCode::CREATED);
    on.kill();
    assert!(lines_with(&on.log(), "ERROR").is_empty(), "{}", on.log());
    assert!(stored_user(on.data_dir(), "eve").await.is_some());
}

/// The variables the Functions host gives every custom handler process it starts, on every
/// plan and under `func start` (the host's `HttpWorkerProcess`).
const HOST_WORKER: [(&str, &str); 4] = [
    (
        "FUNCTIONS_CUSTOMHANDLER_WORKER_ID",
        "6a1c0c3e-1a8e-4b1f-9a52-3f1d2b7c9e10",
    ),
    (
        "FUNCTIONS_HTTPWORKER_ID",
        "6a1c0c3e-1a8e-4b1f-9a52-3f1d2b7c9e10",
    ),
    ("FUNCTIONS_HTTPWORKER_PORT", "40001"),
    ("FUNCTIONS_APP_ROOT_PATH", "/home/site/wwwroot"),
];

/// What App Service sets in every app, whatever the plan.
const APP_SERVICE: [(&str, &str); 4] = [
    ("WEBSITE_SITE_NAME", "blog-app"),
    ("WEBSITE_HOSTNAME", "blog-app.azurewebsites.net"),
    ("WEBSITE_INSTANCE_ID", "0e5a1b7f"),
    ("WEBSITE_OWNER_NAME", "sub+rg-westeuropewebspace"),
];

/// Each plan's environment as the binary sees it, Easy Auth off.
fn plan_environments() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let on_app_service = |extra: &[(&'static str, &'static str)]| {
        let mut vars = HOST_WORKER.to_vec();
        vars.extend(APP_SERVICE);
        vars.extend_from_slice(extra);
        vars
    };
    vec![
        (
            "Consumption",
            on_app_service(&[
                ("WEBSITE_SKU", "Dynamic"),
                ("CONTAINER_NAME", "E1A2B3C4"),
                ("FUNCTIONS_WORKER_RUNTIME", "custom"),
            ]),
        ),
        // Flex apps must not set FUNCTIONS_WORKER_RUNTIME (functionAppConfig.runtime).
        (
            "Flex Consumption",
            on_app_service(&[("WEBSITE_SKU", "FlexConsumption")]),
        ),
        (
            "Premium",
            on_app_service(&[
                ("WEBSITE_SKU", "ElasticPremium"),
                ("FUNCTIONS_WORKER_RUNTIME", "custom"),
            ]),
        ),
        (
            "Dedicated",
            on_app_service(&[
                ("WEBSITE_SKU", "PremiumV3"),
                ("FUNCTIONS_WORKER_RUNTIME", "custom"),
            ]),
        ),
        // func start: the host's worker variables; FUNCTIONS_WORKER_RUNTIME is optional there.
        ("func start", HOST_WORKER.to_vec()),
        // The reproduction: App Service variables and nothing else.
        (
            "App Service, no host variables",
            APP_SERVICE
                .into_iter()
                .chain([("WEBSITE_SKU", "FlexConsumption")])
                .collect(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_refuses_a_forged_principal_on_every_plan() {
    for (plan, env) in plan_environments() {
        let mut server = binary_with_env(&env).ready().await;
        let forged = put_user(&server, "eve").await;
        assert_unauthorized(forged, "easyauth-disabled", plan).await;
        server.kill();
        assert_eq!(stored_user(server.data_dir(), "eve").await, None, "{plan}");
        assert!(
            server.log().contains("auth mode easyauth"),
            "{plan}: {}",
            server.log()
        );
    }
    // Only an explicit choice trusts the header there.
    let (plan, mut env) = plan_environments().swap_remove(1);
    env.push(("BLOG_AUTH", "header"));
    let mut explicit = binary_with_env(&env).ready().await;
    assert_eq!(
        put_user(&explicit, "eve").await.status(),
        StatusCode::CREATED,
        "{plan}"
    );
    explicit.kill();
}

#[tokio::test]
async fn the_binary_refuses_a_non_loopback_bind_in_implicit_header_mode() {
    let mut server = binary_with_env(&[("BLOG_BIND_ADDRESS", "0.0.0.0")]);
    let status = server.exit_status().await;
    assert!(!status.success(), "{status}");
    let log = server.log();
    assert!(log.contains("refusing to serve on 0.0.0.0"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_in_explicit_header_mode_serves_any_address_with_a_loud_warning() {
    let mut server = binary_with_env(&[("BLOG_BIND_ADDRESS", "0.0.0.0"), ("BLOG_AUTH", "header")])
        .ready()
        .await;
    assert_eq!(put_user(&server, "ada").await.status(), StatusCode::CREATED);
    server.kill();
    let log = server.log();
    let warnings = lines_with(&log, "WARN");
    assert!(
        warnings.iter().any(|line| line.contains("TRUSTED AS SENT")),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_on_a_hosting_platform_warns_until_the_form_key_is_shared() {
    let (plan, mut env) = plan_environments().swap_remove(0);
    let mut unshared = binary_with_env(&env).ready().await;
    unshared.kill();
    let log = unshared.log();
    assert!(
        lines_with(&log, "WARN")
            .iter()
            .any(|line| line.contains("BLOG_CSRF_KEY is not set")),
        "{plan}: {log}"
    );
    env.push(("BLOG_CSRF_KEY", "one secret for every instance"));
    let mut shared = binary_with_env(&env).ready().await;
    shared.kill();
    let log = shared.log();
    assert!(!log.contains("BLOG_CSRF_KEY is not set"), "{plan}: {log}");
}
