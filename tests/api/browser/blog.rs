//! The real application for a browser: testkit's application on a fresh store (embedded,
//! unless a test asks for the Cosmos DB emulator or the `multi` layout), with
//! the change-feed pump and the development sign-in (`header` mode on loopback), plus the API
//! calls the browser tests make around what the browser does.

use cosmos_blog::store::Tenancy;
use reqwest::StatusCode;
use serde_json::Value;
use testkit::{Backend, TestApp};

pub async fn spawn() -> TestApp {
    spawn_on(Backend::Embedded, Tenancy::Single).await
}

/// The application on a fresh store of `backend` in `layout`; in `multi`, addressed as one
/// tenant, whose pages are under `/tenants/{tenantId}/`.
pub async fn spawn_on(backend: Backend, layout: Tenancy) -> TestApp {
    TestApp::spawn(backend).layout(layout).start().await
}

/// The application on a fresh store of `backend` in `layout` that publishes the scheduled
/// posts whose time has come every 200 ms (`BLOG_PUBLISH_STEP_MS`), not every 20 s.
pub async fn spawn_publishing(backend: Backend, layout: Tenancy) -> TestApp {
    TestApp::spawn(backend)
        .layout(layout)
        .settings(|settings| settings.publish_step_ms = 200)
        .start()
        .await
}

/// Writes a post through the API (as a script would: no browser, so no `Origin`); returns
/// its id.
pub async fn new_post(app: &TestApp, author: &str, title: &str, content: &str) -> String {
    let post = app.new_post(author, title, content).await;
    post["id"].as_str().expect("the post's id").to_owned()
}

/// Writes a post through the API with the whole `body` C2 takes (tags, status, publishAt);
/// returns its id.
pub async fn new_post_with(app: &TestApp, author: &str, body: Value) -> String {
    let response = app
        .send(
            reqwest::Method::POST,
            "/api/posts",
            Some(author),
            Some(body),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED, "create post");
    let post: Value = response.json().await.expect("the post's JSON");
    post["id"].as_str().expect("the post's id").to_owned()
}

/// Comments on a post through the API.
pub async fn comment(app: &TestApp, author: &str, post_id: &str, content: &str) {
    let response = app.comment(author, post_id, content).await;
    assert_eq!(response.status(), StatusCode::CREATED, "comment");
}

/// Likes a post through the API.
pub async fn like(app: &TestApp, caller: &str, post_id: &str) {
    let response = app.like(caller, post_id).await;
    assert_eq!(response.status(), StatusCode::CREATED, "like");
}

/// The first page of a list the API reads straight from the store (a post's likes or
/// comments): what was stored, whatever the pages show.
pub async fn stored_items(app: &TestApp, path: &str) -> Vec<Value> {
    let page = app.get_json(path).await;
    page["items"].as_array().expect("items").clone()
}
