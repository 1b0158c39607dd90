//! Spawns the real application (real HTTP server, real store, real change-feed pump) on a
//! random port, and offers the few calls every test needs. An application in the `multi`
//! layout is addressed as one tenant (see [`TestApp::url`]), so the same test bodies run in
//! both layouts. [`TestApp::spawn`] is the one way in: a builder of the store, the layout,
//! the pump, the settings and the telemetry.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::domain::TenantId;
use cosmos_blog::images::ImageStore;
use cosmos_blog::settings::{ChangeFeedMode, DEFAULT_FEED_CACHE_MS, Settings, StoreSettings};
use cosmos_blog::startup::Application;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Store, Tenancy, tenant};
use cosmos_blog::telemetry::Telemetry;
use cosmos_blog::verify::VerifyReport;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;

use crate::azurite::Azurite;
use crate::poll::assert_store_verifies;

/// A request to `url` as `caller` (the Easy Auth principal header; none without a caller)
/// with `body` as its JSON body, if any: how every test sends a command, in this process or
/// to a served binary.
pub fn request_as(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    caller: Option<&str>,
    body: Option<&Value>,
) -> reqwest::RequestBuilder {
    let mut request = client.request(method, url);
    if let Some(caller) = caller {
        request = request.header("x-ms-client-principal-id", caller);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    request
}

/// Sends `request` and answers its JSON body; panics if it cannot be sent or its body is not
/// JSON (a test that reads an answer has nothing to check without it).
pub async fn json_of(request: reqwest::RequestBuilder) -> Value {
    let response = request.send().await.expect("request sent");
    response.json().await.expect("JSON body")
}

/// The form token an answer of the site sets in its `blog_csrf` cookie (`__Host-blog_csrf` on
/// an HTTPS address), if it sets one: what a browser sends back beside a form's `csrf` field.
pub fn form_token(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .find_map(|value| {
            let value = value.to_str().ok()?;
            let rest = value.strip_prefix("__Host-").unwrap_or(value);
            let rest = rest.strip_prefix("blog_csrf=")?;
            rest.split(';').next().map(str::to_owned)
        })
}

/// The `Content-Type` an answer declares, if it declares one that is text; answers of the
/// in-process router (axum) and over HTTP (reqwest) carry the same header map.
pub fn content_type(headers: &reqwest::header::HeaderMap) -> Option<&str> {
    headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()
}

/// Registers `user_id` as `username` on the API rooted at `api` (`{base}/api` of a served
/// binary, or a tenant's `{base}/api/tenants/{tenant}`); panics unless the API said 201.
pub async fn register_at(client: &reqwest::Client, api: &str, user_id: &str, username: &str) {
    let url = format!("{api}/users/{user_id}");
    let body = json!({ "username": username });
    let response = request_as(
        client,
        reqwest::Method::PUT,
        url,
        Some(user_id),
        Some(&body),
    )
    .send()
    .await
    .expect("request sent");
    assert_eq!(response.status(), StatusCode::CREATED, "register {user_id}");
}

/// Which store the application runs on. Every test body runs on each (see `backend_tests!`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Cosmos,
}

/// The tenant the operation tests address in the `multi` layout. It needs percent-encoding
/// in a URL, so every operation test also shows that the tenant segment is decoded.
pub const OPERATION_TENANT: &str = "blog ü";

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    /// The store as the addressed blog sees it: the whole store, or in `multi` the tenant's
    /// view (keys, items and queries as in `single`).
    pub store: Arc<dyn Store>,
    /// The whole store, every tenant of it: what `verify` checks.
    pub whole_store: Arc<dyn Store>,
    /// The tenant addressed in `multi`; `None` in `single` (or when no tenant is chosen).
    pub tenant: Option<TenantId>,
    /// The store of the images' bytes the application's settings name (files beside the
    /// embedded store, or Blob Storage on Azurite), opened again for the test to look into.
    pub images: Arc<dyn ImageStore>,
    /// Shared by the views of one server on different tenants (see [`TestApp::in_tenant`]).
    _server: Arc<ServerGuard>,
}

/// Dropping the last [`TestApp`] of a server drops this, which stops the server and its pump.
struct ServerGuard {
    _stop: oneshot::Sender<()>,
    /// Keeps the embedded store's folder alive for the test's duration.
    _data_dir: TempDir,
    /// The Blob Storage emulator of the images, when they are kept there; stopped last.
    _azurite: Option<Azurite>,
}

/// MiB of list pages the applications of the tests keep.
pub const KEPT_LIST_PAGES_MB: u64 = 64;

/// The settings of an application in tests: port 0 on loopback, the store in `data_dir`, no
/// delayed re-check (it reads the store: only where a test asks for it).
pub fn settings(data_dir: std::path::PathBuf, change_feed: ChangeFeedMode) -> Settings {
    Settings {
        port: 0,
        port_file: None,
        bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        store: store_settings(data_dir),
        feed_cache_ms: DEFAULT_FEED_CACHE_MS,
        // Pages kept, so that every test of the API also checks that a kept page is never
        // served stale.
        list_cache_mb: KEPT_LIST_PAGES_MB,
        recheck_delay_ms: 0,
        // No publisher either: tests of scheduled posts start one with a short step.
        publish_step_ms: 0,
        change_feed,
        change_feed_poll_ms: cosmos_blog::changefeed::pump::DEFAULT_POLL_MS,
        auth: Default::default(),
        site: Default::default(),
        images: Default::default(),
    }
}

/// The store's part of [`settings`]: the embedded store in `data_dir`, the `single` layout,
/// no Cosmos DB account (a test that has one sets it).
pub fn store_settings(data_dir: std::path::PathBuf) -> StoreSettings {
    StoreSettings {
        data_dir,
        cosmos_connection: None,
        cosmos_endpoint: None,
        cosmos_client_id: None,
        region_name: None,
        cosmos_binary_encoding: None,
        managed_identity: false,
        database: "blog".into(),
        tenancy: Default::default(),
        embedded_readers: None,
    }
}

/// A fresh store of `backend` in the `tenancy` layout (the embedded one in `data_dir`).
pub async fn open_backend(
    backend: Backend,
    tenancy: Tenancy,
    data_dir: &TempDir,
) -> Arc<dyn Store> {
    match backend {
        Backend::Embedded => Arc::new(
            EmbeddedStore::open_with(&data_dir.path().join("blog.sqlite3"), tenancy)
                .expect("embedded store"),
        ),
        Backend::Cosmos => crate::emulator::emulator_store_in(tenancy).await,
    }
}

/// Where the application's store comes from.
enum StoreSource {
    /// A fresh store of this backend, in the builder's layout.
    Fresh(Backend),
    /// A store the test prepared (a throttled account, a double); its layout is its own.
    Given(Arc<dyn Store>),
}

/// A change a test makes to the settings of its application.
type Adjustment<'a> = Box<dyn FnOnce(&mut Settings) + Send + 'a>;

/// How to spawn a [`TestApp`]: by default on a fresh store, in `single`, with the pump, the
/// default settings and the process's telemetry, addressed as the tests of either layout
/// address it (see [`TestApp::addressed`]).
pub struct Spawn<'a> {
    store: StoreSource,
    tenancy: Tenancy,
    data_dir: Option<TempDir>,
    change_feed: ChangeFeedMode,
    adjust: Vec<Adjustment<'a>>,
    telemetry: Option<Telemetry>,
    addressed: bool,
    azurite: Option<Azurite>,
}

impl<'a> Spawn<'a> {
    fn new(store: StoreSource) -> Self {
        Self {
            store,
            tenancy: Tenancy::Single,
            data_dir: None,
            change_feed: ChangeFeedMode::Pump,
            adjust: Vec::new(),
            telemetry: None,
            addressed: true,
            azurite: None,
        }
    }

    /// The images' bytes in Azure Blob Storage on `azurite` (BLOG_IMAGES_CONNECTION), which
    /// the application keeps running until it stops; files beside the store by default.
    pub fn blob_images(mut self, azurite: Azurite) -> Self {
        self.azurite = Some(azurite);
        self
    }

    /// The layout of the fresh store (a given store has its own).
    pub fn layout(mut self, tenancy: Tenancy) -> Self {
        self.tenancy = tenancy;
        self
    }

    /// No change-feed processing: copies only appear through `rebuild` or the handlers a test
    /// runs itself.
    pub fn without_pump(self) -> Self {
        self.change_feed(ChangeFeedMode::Off)
    }

    pub fn change_feed(mut self, mode: ChangeFeedMode) -> Self {
        self.change_feed = mode;
        self
    }

    /// The folder of the application's data (the embedded store's file), kept for the
    /// application's life; a fresh one by default.
    pub fn data_dir(mut self, dir: TempDir) -> Self {
        self.data_dir = Some(dir);
        self
    }

    /// Settings the test adjusts (an authentication mode, say), after the layout and pump.
    pub fn settings(mut self, adjust: impl FnOnce(&mut Settings) + Send + 'a) -> Self {
        self.adjust.push(Box::new(adjust));
        self
    }

    /// Telemetry of the application's own (`Application::with_telemetry`).
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The paths used as written, whatever the layout (no tenant chosen): for tests that
    /// address the routes of either layout themselves.
    pub fn unaddressed(mut self) -> Self {
        self.addressed = false;
        self
    }

    pub async fn start(self) -> TestApp {
        let data_dir = match self.data_dir {
            Some(dir) => dir,
            None => TempDir::new().expect("temp dir"),
        };
        let store = match self.store {
            StoreSource::Fresh(backend) => open_backend(backend, self.tenancy, &data_dir).await,
            StoreSource::Given(store) => store,
        };
        let mut settings = settings(data_dir.path().to_path_buf(), self.change_feed);
        settings.store.tenancy = store.tenancy();
        if let Some(azurite) = &self.azurite {
            settings.images.blob_connection = Some(azurite.connection_string());
        }
        for adjust in self.adjust {
            adjust(&mut settings);
        }
        let app = serve(settings, store, data_dir, self.telemetry, self.azurite).await;
        if self.addressed { app.addressed() } else { app }
    }
}

async fn serve(
    settings: Settings,
    store: Arc<dyn Store>,
    data_dir: TempDir,
    telemetry: Option<Telemetry>,
    azurite: Option<Azurite>,
) -> TestApp {
    let app = match telemetry {
        Some(own) => Application::with_telemetry(&settings, Arc::clone(&store), own).await,
        None => Application::with_store(&settings, Arc::clone(&store)).await,
    }
    .expect("application builds");
    let images = settings
        .images
        .open_store(data_dir.path(), &settings.store)
        .await
        .expect("the application's image store");
    let address = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = app
            .run_until(async {
                let _ = stopped.await;
            })
            .await;
    });
    TestApp {
        address,
        client: reqwest::Client::new(),
        whole_store: Arc::clone(&store),
        store,
        tenant: None,
        images,
        _server: Arc::new(ServerGuard {
            _stop: stop,
            _data_dir: data_dir,
            _azurite: azurite,
        }),
    }
}

impl TestApp {
    /// The application on a fresh store of `backend`; see [`Spawn`] for the rest.
    pub fn spawn<'a>(backend: Backend) -> Spawn<'a> {
        Spawn::new(StoreSource::Fresh(backend))
    }

    /// The application on a store the test prepared (a throttled account, a double).
    pub fn spawn_on<'a>(store: Arc<dyn Store>) -> Spawn<'a> {
        Spawn::new(StoreSource::Given(store))
    }

    /// The app as the tests of either layout address it: itself in `single`, as
    /// [`OPERATION_TENANT`] in `multi`.
    pub fn addressed(self) -> TestApp {
        match self.whole_store.tenancy() {
            Tenancy::Single => self,
            Tenancy::Multi => self.in_tenant(OPERATION_TENANT),
        }
    }
    /// The same server addressed as `tenant` (a `multi` application): its URLs, its store.
    pub fn in_tenant(&self, tenant: &str) -> TestApp {
        assert_eq!(
            self.whole_store.tenancy(),
            Tenancy::Multi,
            "only a multi-tenant application has tenants"
        );
        let tenant = TenantId::parse(tenant).expect("a valid tenant id");
        TestApp {
            address: self.address.clone(),
            client: self.client.clone(),
            store: tenant::scoped(&self.whole_store, &tenant),
            whole_store: Arc::clone(&self.whole_store),
            tenant: Some(tenant),
            images: Arc::clone(&self.images),
            _server: Arc::clone(&self._server),
        }
    }

    /// The URL of an `/api/...` route of the addressed blog: in `multi` the same route under
    /// `/api/tenants/{tenant}` (the tenant percent-encoded). Other paths are left alone.
    pub fn url(&self, path: &str) -> String {
        match (&self.tenant, path.strip_prefix("/api/")) {
            // The health probe is the site's, not a tenant's.
            (Some(tenant), Some(rest)) if path != cosmos_blog::api::HEALTH_PATH => {
                let mut url = reqwest::Url::parse(&self.address).expect("the app's address");
                url.path_segments_mut()
                    .expect("an http URL has a path")
                    .pop_if_empty()
                    .extend(["api", "tenants", tenant.as_str()]);
                format!("{url}/{rest}")
            }
            _ => self.raw_url(path),
        }
    }

    /// The URL of `path` exactly as written, whatever the layout.
    pub fn raw_url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// A GET of `path` exactly as written, whatever the layout: the routes of the site itself
    /// (the health probe, assets, icons, images) that no tenant prefix applies to.
    pub async fn get_raw(&self, path: &str) -> Response {
        self.get_url(self.raw_url(path)).await
    }

    async fn get_url(&self, url: String) -> Response {
        self.client.get(url).send().await.expect("request sent")
    }

    pub async fn get(&self, path: &str) -> Response {
        self.get_url(self.url(path)).await
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let response = self.get(path).await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("JSON body")
    }

    /// What `caller` reads at `path` (an owner's view: drafts, images); panics unless 200.
    pub async fn get_json_as(&self, caller: &str, path: &str) -> Value {
        let response = self
            .send(reqwest::Method::GET, path, Some(caller), None)
            .await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path} as {caller}");
        response.json().await.expect("JSON body")
    }

    /// A command as `caller` (the Easy Auth principal header) with a JSON body.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        caller: Option<&str>,
        body: Option<Value>,
    ) -> Response {
        request_as(&self.client, method, self.url(path), caller, body.as_ref())
            .send()
            .await
            .expect("request sent")
    }

    /// Deletes what `path` names (a post, a comment, a like, an account) as `caller`.
    pub async fn delete_as(&self, caller: &str, path: &str) -> Response {
        self.send(reqwest::Method::DELETE, path, Some(caller), None)
            .await
    }

    pub async fn put_user(&self, user_id: &str, username: &str) -> Response {
        self.send(
            reqwest::Method::PUT,
            &format!("/api/users/{user_id}"),
            Some(user_id),
            Some(json!({ "username": username })),
        )
        .await
    }

    pub async fn create_post(&self, caller: &str, title: &str, content: &str) -> Response {
        self.write_post(caller, json!({ "title": title, "content": content }))
            .await
    }

    /// Writes a post as `caller` from a whole body (status, tags, publishAt… as a test needs).
    pub async fn write_post(&self, caller: &str, body: Value) -> Response {
        self.send(
            reqwest::Method::POST,
            "/api/posts",
            Some(caller),
            Some(body),
        )
        .await
    }

    /// [`TestApp::write_post`], answering the post; panics unless the API said 201.
    pub async fn written(&self, caller: &str, body: Value) -> Value {
        let response = self.write_post(caller, body).await;
        assert_eq!(response.status(), StatusCode::CREATED, "write post");
        response.json().await.expect("post JSON")
    }

    /// Edits post `post_id` as `caller`: `body` replaces its fields.
    pub async fn edit_post(&self, caller: &str, post_id: &str, body: Value) -> Response {
        let path = format!("/api/posts/{post_id}");
        self.send(reqwest::Method::PUT, &path, Some(caller), Some(body))
            .await
    }

    /// [`TestApp::edit_post`], answering the post; panics unless the API said 200.
    pub async fn edited(&self, caller: &str, post_id: &str, body: Value) -> Value {
        let response = self.edit_post(caller, post_id, body).await;
        assert_eq!(response.status(), StatusCode::OK, "edit post {post_id}");
        response.json().await.expect("post JSON")
    }

    pub async fn comment(&self, caller: &str, post_id: &str, content: &str) -> Response {
        self.send(
            reqwest::Method::POST,
            &format!("/api/posts/{post_id}/comments"),
            Some(caller),
            Some(json!({ "content": content })),
        )
        .await
    }

    pub async fn like(&self, caller: &str, post_id: &str) -> Response {
        self.send(
            reqwest::Method::POST,
            &format!("/api/posts/{post_id}/likes"),
            Some(caller),
            None,
        )
        .await
    }

    /// Comments on post `post_id` as `caller` and returns the comment; panics unless 201.
    pub async fn commented(&self, caller: &str, post_id: &str, content: &str) -> Value {
        let response = self.comment(caller, post_id, content).await;
        assert_eq!(
            response.status(),
            StatusCode::CREATED,
            "comment on {post_id}"
        );
        response.json().await.expect("comment JSON")
    }

    /// Likes post `post_id` as `caller`; panics unless the API said 201 (a new like).
    pub async fn liked(&self, caller: &str, post_id: &str) {
        let response = self.like(caller, post_id).await;
        assert_eq!(response.status(), StatusCode::CREATED, "like {post_id}");
    }

    /// Registers `user_id` and returns nothing; panics unless the API said 201.
    pub async fn register(&self, user_id: &str, username: &str) {
        let response = self.put_user(user_id, username).await;
        assert_eq!(response.status(), StatusCode::CREATED, "register {user_id}");
    }

    /// Registers `count` users, `{prefix}0`, `{prefix}1`…, each named as its id: the crowd a
    /// test of concurrent writers needs. Answers their ids.
    pub async fn register_many(&self, prefix: &str, count: usize) -> Vec<String> {
        let users: Vec<String> = (0..count).map(|n| format!("{prefix}{n}")).collect();
        for user in &users {
            self.register(user, user).await;
        }
        users
    }

    /// Creates a post and returns its item; panics unless the API said 201.
    pub async fn new_post(&self, caller: &str, title: &str, content: &str) -> Value {
        let response = self.create_post(caller, title, content).await;
        assert_eq!(response.status(), StatusCode::CREATED, "create post");
        response.json().await.expect("post JSON")
    }

    /// `count` posts by `caller`, written one after the other (oldest first), titled
    /// `{title} 0`, `{title} 1`…, each with `content`: their ids, in that order.
    pub async fn new_posts(
        &self,
        caller: &str,
        count: usize,
        title: &str,
        content: &str,
    ) -> Vec<String> {
        let mut ids = Vec::with_capacity(count);
        for n in 0..count {
            let post = self
                .new_post(caller, &format!("{title} {n}"), content)
                .await;
            ids.push(post["id"].as_str().expect("post id").to_owned());
        }
        ids
    }

    /// Every comment and every like of post `post_id`, read `limit` to a page.
    pub async fn comments_and_likes(&self, post_id: &str, limit: u32) -> (Vec<Value>, Vec<Value>) {
        let comments = self
            .all_pages(&format!("/api/posts/{post_id}/comments"), limit)
            .await;
        let likes = self
            .all_pages(&format!("/api/posts/{post_id}/likes"), limit)
            .await;
        (comments, likes)
    }

    /// Every item of a list, following continuation tokens with `limit` items per page.
    pub async fn all_pages(&self, path: &str, limit: u32) -> Vec<Value> {
        let mut items = Vec::new();
        let mut continuation: Option<String> = None;
        loop {
            let mut request = self
                .client
                .get(self.url(path))
                .query(&[("limit", limit.to_string())]);
            if let Some(token) = &continuation {
                request = request.query(&[("continuation", token)]);
            }
            let page: Value = request
                .send()
                .await
                .expect("request sent")
                .json()
                .await
                .expect("page JSON");
            let batch = page["items"].as_array().expect("items array");
            assert!(batch.len() <= limit as usize, "page larger than limit");
            items.extend(batch.iter().cloned());
            match page["continuation"].as_str() {
                Some(token) => continuation = Some(token.to_owned()),
                None => return items,
            }
        }
    }
}

impl TestApp {
    /// Waits until every invariant of the model holds on the app's whole store, every tenant
    /// of it (see `verify`).
    pub async fn assert_verifies(&self) -> VerifyReport {
        assert_store_verifies(&self.whole_store, Duration::from_secs(60)).await
    }
}

pub fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|item| item["id"].as_str().expect("id").to_owned())
        .collect()
}

/// The module of tests that every macro below declares: `mod module { async fn name() }` for
/// each named body, which each test calls with the arguments given (evaluated in the test,
/// so they may `.await`, and their temporaries live until the body returns):
/// `test_module!(embedded, (Backend::Embedded): name, other)`. The tests run on two worker
/// threads unless a test attribute comes first (`test_module!(#[tokio::test] ...)`).
#[macro_export]
macro_rules! test_module {
    (#[$test:meta] $module:ident, $arguments:tt: $($name:ident),*) => {
        mod $module {
            $(
                #[$test]
                async fn $name() {
                    super::$name $arguments.await;
                }
            )*
        }
    };
    ($module:ident, $arguments:tt: $($name:ident),*) => {
        $crate::test_module!(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)] $module, $arguments: $($name),*
        );
    };
}

/// Runs each named test body (`async fn name(app: TestApp)`) on every backend.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        $crate::test_module!(embedded, ($crate::app!(Embedded, Single)): $($name),*);
        $crate::test_module!(cosmos, ($crate::app!(Cosmos, Single)): $($name),*);
    };
}

/// The default application on `backend` in `tenancy`, as the macros below start it; more
/// builder calls may follow the layout (`app!(Cosmos, Single, without_pump)`).
#[doc(hidden)]
#[macro_export]
macro_rules! app {
    ($backend:ident, $tenancy:ident $(, $call:ident)*) => {
        $crate::TestApp::spawn($crate::Backend::$backend)
            .layout(::cosmos_blog::store::Tenancy::$tenancy)
            $(.$call())*
            .start()
            .await
    };
}

/// Runs each body `async fn name(backend: Backend)` on every backend, as `embedded::name` and
/// `cosmos::name`, or in the two modules named before a colon
/// (`on_every_backend!(gated_embedded, gated_cosmos: name)`): for tests that choose their own
/// settings, which `backend_tests!` (the default application) does not fit.
#[macro_export]
macro_rules! on_every_backend {
    ($embedded:ident, $cosmos:ident: $($name:ident),* $(,)?) => {
        $crate::test_module!($embedded, ($crate::Backend::Embedded): $($name),*);
        $crate::test_module!($cosmos, ($crate::Backend::Cosmos): $($name),*);
    };
    ($($name:ident),* $(,)?) => {
        $crate::on_every_backend!(embedded, cosmos: $($name),*);
    };
}

/// Runs each body `async fn name(backend: Backend, tenancy: Tenancy)` twice: on the embedded
/// store in `single` (as `embedded::name`) and on the emulator in `multi` (as
/// `multi_cosmos::name`): both stores and both layouts, at half the cost of every combination.
#[macro_export]
macro_rules! embedded_single_and_cosmos_multi {
    ($($name:ident),* $(,)?) => {
        $crate::test_module!(embedded, ($crate::Backend::Embedded, ::cosmos_blog::store::Tenancy::Single): $($name),*);
        $crate::test_module!(multi_cosmos, ($crate::Backend::Cosmos, ::cosmos_blog::store::Tenancy::Multi): $($name),*);
    };
}

/// Runs each body `async fn name(backend: Backend, tenancy: Tenancy)` on both backends in
/// both layouts: the two of `embedded_single_and_cosmos_multi!`, and `cosmos::name`
/// (`single`) and `multi_embedded::name` (`multi`).
#[macro_export]
macro_rules! every_backend_and_layout {
    ($($name:ident),* $(,)?) => {
        $crate::embedded_single_and_cosmos_multi!($($name),*);
        $crate::test_module!(cosmos, ($crate::Backend::Cosmos, ::cosmos_blog::store::Tenancy::Single): $($name),*);
        $crate::test_module!(multi_embedded, ($crate::Backend::Embedded, ::cosmos_blog::store::Tenancy::Multi): $($name),*);
    };
}

/// One body `async fn body(backend: Backend)` as two tests named apart, the first on the
/// embedded store and the second on Cosmos DB: `backend_pair!(body => on_embedded, on_cosmos)`.
#[macro_export]
macro_rules! backend_pair {
    ($body:ident => $embedded:ident, $cosmos:ident $(,)?) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $embedded() {
            $body($crate::Backend::Embedded).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $cosmos() {
            $body($crate::Backend::Cosmos).await;
        }
    };
}

/// Runs each named test body (`async fn name(app: TestApp)`) on every backend, on an
/// application without change-feed processing: the test runs the handlers itself.
#[macro_export]
macro_rules! backend_tests_without_pump {
    ($($name:ident),* $(,)?) => {
        $crate::test_module!(
            embedded_without_pump, ($crate::app!(Embedded, Single, without_pump)): $($name),*
        );
        $crate::test_module!(
            cosmos_without_pump, ($crate::app!(Cosmos, Single, without_pump)): $($name),*
        );
    };
}

/// Runs each named test body (`async fn name(app: TestApp)`) on every backend in both
/// layouts: `embedded` and `cosmos` (`single`), `multi_embedded` and `multi_cosmos` (`multi`,
/// the app addressing [`OPERATION_TENANT`]). For the operations of the API, which every
/// layout serves alike; slow load tests stay on `backend_tests!`.
#[macro_export]
macro_rules! operation_tests {
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests!($($name),*);
        $crate::test_module!(multi_embedded, ($crate::app!(Embedded, Multi)): $($name),*);
        $crate::test_module!(multi_cosmos, ($crate::app!(Cosmos, Multi)): $($name),*);
    };
}

/// Runs each named test body (`async fn name(app: TestApp)`) twice: on the embedded store in
/// `single` (`embedded`) and on the emulator in `multi` (`multi_cosmos`), the app addressing
/// [`OPERATION_TENANT`]. Each store once and each layout once, at half the cost of
/// [`operation_tests!`]: for what sits above the store's addressing (refusals, pages, forms,
/// feeds as documents, image checks), which every store and layout reach through the same
/// operations. The rule for choosing is in docs/testing.md.
#[macro_export]
macro_rules! surface_tests {
    ($($name:ident),* $(,)?) => {
        $crate::test_module!(embedded, ($crate::app!(Embedded, Single)): $($name),*);
        $crate::test_module!(multi_cosmos, ($crate::app!(Cosmos, Multi)): $($name),*);
    };
}

/// Runs each named test body (`async fn name(app: TestApp)`) as [`surface_tests!`] does,
/// with the images' bytes in files beside the store, and twice more with them in Azure Blob
/// Storage on Azurite: `blob` (the embedded store, `single`) and `multi_blob` (Cosmos DB,
/// `multi`). One image store trait, two implementations, the same tests. Where Azurite cannot
/// start, the Blob Storage runs skip with the reason printed (under CI they fail).
#[macro_export]
macro_rules! image_tests {
    ($($name:ident),* $(,)?) => {
        $crate::surface_tests!($($name),*);
        $crate::test_module!(blob, ($crate::blob_app!(Embedded, Single)): $($name),*);
        $crate::test_module!(multi_blob, ($crate::blob_app!(Cosmos, Multi)): $($name),*);
    };
}

/// The application of [`blob_app`], or a return from the test where Azurite cannot start.
#[doc(hidden)]
#[macro_export]
macro_rules! blob_app {
    ($backend:ident, $tenancy:ident) => {
        match $crate::app::blob_app(
            $crate::Backend::$backend,
            ::cosmos_blog::store::Tenancy::$tenancy,
        )
        .await
        {
            Some(app) => app,
            None => return,
        }
    };
}

/// The application on `backend` in `tenancy` with the images' bytes in Blob Storage on
/// Azurite; `None` where Azurite cannot start (the reason printed; under CI it fails).
pub async fn blob_app(backend: Backend, tenancy: Tenancy) -> Option<TestApp> {
    let azurite = Azurite::start_or_skip().await?;
    let spawn = TestApp::spawn(backend).layout(tenancy).blob_images(azurite);
    Some(spawn.start().await)
}
