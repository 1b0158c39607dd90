//! The real application for a browser: served on a port the system chose, on a fresh embedded
//! store, with the change-feed pump and the development sign-in (`header` mode on loopback).

use std::sync::Arc;

use clap::Parser;
use cosmos_blog::auth::{AuthSettings, PRINCIPAL_HEADER};
use cosmos_blog::platform::Platform;
use cosmos_blog::settings::Settings;
use cosmos_blog::startup::Application;
use cosmos_blog::store::Store;
use cosmos_blog::store::embedded::EmbeddedStore;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A running blog; dropping it stops the server and removes its store.
pub struct Blog {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    api: reqwest::Client,
    _stop: oneshot::Sender<()>,
    _data_dir: TempDir,
}

/// The settings as flags: parsed like the binary's own, so every setting added later keeps its
/// default here. Explicit flags win over the environment the tests run in.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    settings: Settings,
}

impl Blog {
    pub async fn spawn() -> Self {
        let data_dir = TempDir::new().expect("temp dir");
        let settings = settings_for(&data_dir);
        let store: Arc<dyn Store> = Arc::new(
            EmbeddedStore::open_with(&settings.store.embedded_path(), settings.store.tenancy)
                .expect("embedded store"),
        );
        let app = Application::with_store(&settings, Arc::clone(&store))
            .await
            .expect("application builds");
        let address = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        Self {
            address,
            api: reqwest::Client::new(),
            _stop: stop,
            _data_dir: data_dir,
        }
    }

    /// The absolute URL of `path` on this blog.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// Registers `user_id` as `username` through the API (as a script or another server
    /// would: no browser, so no `Origin`).
    pub async fn register(&self, user_id: &str, username: &str) {
        let response = self
            .api_call(Method::PUT, &format!("/api/users/{user_id}"), user_id)
            .json(&json!({ "username": username }))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::CREATED, "register {user_id}");
    }

    /// Writes a post through the API; returns its id.
    pub async fn new_post(&self, author: &str, title: &str, content: &str) -> String {
        let response = self
            .api_call(Method::POST, "/api/posts", author)
            .json(&json!({ "title": title, "content": content }))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::CREATED, "create post");
        let post: Value = response.json().await.expect("post JSON");
        post["id"].as_str().expect("the post's id").to_owned()
    }

    /// Comments on a post through the API.
    pub async fn comment(&self, author: &str, post_id: &str, content: &str) {
        let response = self
            .api_call(
                Method::POST,
                &format!("/api/posts/{post_id}/comments"),
                author,
            )
            .json(&json!({ "content": content }))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::CREATED, "comment");
    }

    /// Likes a post through the API.
    pub async fn like(&self, caller: &str, post_id: &str) {
        let response = self
            .api_call(Method::POST, &format!("/api/posts/{post_id}/likes"), caller)
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::CREATED, "like");
    }

    /// The first page of a list the API reads straight from the store (a post's likes or
    /// comments): what was stored, whatever the pages show.
    pub async fn stored_items(&self, path: &str) -> Vec<Value> {
        let response = self
            .api
            .get(self.url(path))
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        let page: Value = response.json().await.expect("a page of items");
        page["items"].as_array().expect("items").clone()
    }

    fn api_call(&self, method: Method, path: &str, caller: &str) -> reqwest::RequestBuilder {
        self.api
            .request(method, self.url(path))
            .header(PRINCIPAL_HEADER, caller)
    }
}

fn settings_for(data_dir: &TempDir) -> Settings {
    let data_dir = data_dir.path().to_str().expect("a UTF-8 temp dir");
    let flags = Flags::try_parse_from([
        "cosmos-blog",
        "--port=0",
        "--bind-address=127.0.0.1",
        "--auth=header",
        "--change-feed=pump",
        "--tenancy=single",
        &format!("--data-dir={data_dir}"),
    ])
    .expect("valid flags");
    Settings {
        auth: AuthSettings {
            platform: Platform::default(),
            ..flags.settings.auth
        },
        ..flags.settings
    }
}
