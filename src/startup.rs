//! Builds the application from settings: the store, the change-feed pump, the delayed
//! re-check and the HTTP server. Tests build it on port 0 and drive the real thing.
//!
//! Telemetry is the process's (`main` installs it), or the application's own when a test
//! gives it one ([`Application::with_telemetry`]): then every request, and the pump, run with
//! that subscriber current.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use tokio::net::TcpListener;
use tower::util::MapFutureLayer;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::api;
use crate::auth::Authenticator;
use crate::changefeed::{self, BackgroundTask, Publisher, Pump, Recheck};
use crate::functions;
use crate::http::{self, AppState};
use crate::images::Images;
use crate::platform::Platform;
use crate::problem::connection::ProblemListener;
use crate::settings::{KeySource, Settings};
use crate::signing::ServerKey;
use crate::store::{self, Store};
use crate::telemetry::Telemetry;
use crate::telemetry::traced::TracedStore;
use crate::transfer;
use crate::web;

pub struct Application {
    listener: TcpListener,
    router: Router,
    pump: Option<Pump>,
    recheck: Option<BackgroundTask>,
    publisher: Option<BackgroundTask>,
    store: Arc<dyn Store>,
    platform: Platform,
    port_file: Option<PathBuf>,
    /// The application's own telemetry, if not the process's.
    telemetry: Option<Telemetry>,
}

impl Application {
    pub async fn build(settings: &Settings) -> anyhow::Result<Self> {
        // Unsafe or incomplete authentication settings fail before the store is even opened.
        settings.auth.resolve(settings.bind_address)?;
        let store = store::open(&settings.store).await?;
        // Fail closed: a store an import left half-loaded would be served as if whole, its
        // missing posts, comments and copies unnoticed; the message says how to finish it.
        if let Some(unfinished) = transfer::unfinished_import(&store).await? {
            anyhow::bail!("{unfinished}; the server does not start on it");
        }
        Self::with_store(settings, store).await
    }

    pub async fn with_store(settings: &Settings, store: Arc<dyn Store>) -> anyhow::Result<Self> {
        Self::assemble(settings, store, None).await
    }

    /// The application with telemetry of its own instead of the process's: its requests and
    /// its pump log, trace and measure there.
    pub async fn with_telemetry(
        settings: &Settings,
        store: Arc<dyn Store>,
        telemetry: Telemetry,
    ) -> anyhow::Result<Self> {
        Self::assemble(settings, store, Some(telemetry)).await
    }

    async fn assemble(
        settings: &Settings,
        store: Arc<dyn Store>,
        telemetry: Option<Telemetry>,
    ) -> anyhow::Result<Self> {
        // Settings that would let anyone act as anyone stop the server before it listens.
        // The development sign-in's cookie is named as every cookie of the site: by the scheme
        // of its public address, which the port (the loopback default's alone) does not change.
        let cookies = settings.site.public_url(settings.port)?.cookies();
        let auth =
            Authenticator::from_settings(&settings.auth, settings.bind_address, cookies).await?;
        let address = SocketAddr::new(settings.bind_address, settings.port);
        let listener = TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address}"))?;
        // Every store call of the application gets its span and its metrics.
        let traced: Arc<dyn Store> = Arc::new(TracedStore::new(
            Arc::clone(&store),
            settings.store.database.clone(),
        ));
        // Kept list pages need the store's versions of a partition, which cost every write
        // a little: asked for only when pages are kept.
        if settings.list_cache_mb > 0 && !store.keep_partition_versions().await? {
            tracing::info!(
                "BLOG_LIST_CACHE_MB: this store keeps no versions of a partition, so no list page is kept"
            );
        }
        let images = Images::new(
            settings.images.limits(),
            settings.images.quota_bytes(),
            settings.images.decode_budget(),
            settings.open_image_bytes().await?,
        );
        // One key signs the forms' tokens and the lists' continuation tokens.
        let (key, key_source) = settings.site.server_key(&settings.store)?;
        let state = AppState::new(Arc::clone(&traced), caches(settings), key.clone(), auth)
            .with_images(images);
        let port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or(settings.port);
        let site = site(settings, port, (key, key_source))?;
        let mut router = app(
            state,
            trigger_routes(settings),
            &settings.auth.cors_origins,
            site,
        );
        let start_pump = || Pump::start(Arc::clone(&traced), settings.change_feed_poll());
        let pump = match &telemetry {
            Some(own) => {
                let scope = own.clone();
                router = router.layer(MapFutureLayer::new(move |request| scope.scoped(request)));
                settings.runs_pump().then(|| own.in_scope(start_pump))
            }
            None => settings.runs_pump().then(start_pump),
        };
        let recheck = match settings.recheck() {
            Recheck::BesideThePump(delay) => {
                Some(changefeed::recheck::start(Arc::clone(&traced), delay))
            }
            Recheck::Off | Recheck::OnTimer(_) => None,
        };
        let publisher = match settings.publisher() {
            Publisher::InProcess(step) => {
                Some(changefeed::publisher::start(Arc::clone(&traced), step))
            }
            Publisher::Off | Publisher::OnTimer => None,
        };
        Ok(Self {
            listener,
            router,
            pump,
            recheck,
            publisher,
            store,
            platform: settings.auth.platform.clone(),
            port_file: settings.port_file.clone(),
            telemetry,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }

    /// Serves until `shutdown` resolves, then stops the pump.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let port = self.port();
        tracing::info!(
            port,
            backend = self.store.backend(),
            tenancy = %self.store.tenancy(),
            pump = self.pump.is_some(),
            recheck = self.recheck.is_some(),
            functions_host = self.platform.functions_host,
            app_service = self.platform.app_service,
            "serving"
        );
        if let Some(path) = &self.port_file {
            write_port_file(path, port)?;
        }
        let page = uri_too_long_page(&self.router).await;
        axum::serve(ProblemListener::new(self.listener, page), self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .context("server failed")?;
        if let Some(pump) = self.pump {
            pump.stop().await;
        }
        if let Some(recheck) = self.recheck {
            recheck.stop().await;
        }
        if let Some(publisher) = self.publisher {
            publisher.stop().await;
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.flush().await;
        }
        Ok(())
    }
}

/// The application's own answer to a browser's page request whose URL is too long, as a whole
/// HTTP response closing the connection: what a browser gets when the HTTP parser refuses a URL
/// over its 64 KiB before the application sees the request (the application refuses URLs
/// over its own, smaller bound with the same page). `None` if the answer is not such a page.
async fn uri_too_long_page(router: &Router) -> Option<Vec<u8>> {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    // Over the application's bound in the query, so that the page names no long path.
    let target = format!("/?{}", "u".repeat(http::MAX_URI_BYTES));
    let request = Request::get(target)
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .ok()?;
    let response = router.clone().oneshot(request).await.ok()?;
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"));
    if response.status() != StatusCode::URI_TOO_LONG || !is_page {
        return None;
    }
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.ok()?;
    let mut head = String::from("HTTP/1.1 414 URI Too Long\r\n");
    for (name, value) in &parts.headers {
        if name != header::CONTENT_LENGTH && name != header::CONNECTION {
            head.push_str(&format!("{name}: {}\r\n", value.to_str().ok()?));
        }
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    Some([head.as_bytes(), &body].concat())
}

/// Writes `port` to `path` through a file beside it and a rename, so that a reader never
/// sees a partial number.
pub fn write_port_file(path: &Path, port: u16) -> anyhow::Result<()> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, format!("{port}\n"))
        .and_then(|()| std::fs::rename(&partial, path))
        .with_context(|| format!("cannot write the port file {}", path.display()))
}

/// The port in a file [`write_port_file`] wrote; `None` while there is none.
pub fn read_port_file(path: &Path) -> Option<u16> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The whole HTTP application: the API (with `triggers`, the Functions host's trigger
/// routes, when it invokes them) behind the web pages, and CORS for `cors_origins`.
pub fn app(
    state: AppState,
    triggers: Router<AppState>,
    cors_origins: &[String],
    site: web::Site,
) -> Router {
    let allowed = web::AllowedOrigins(cors_origins.to_vec());
    let api = api::app(state.clone(), triggers);
    let router = web::router(state, api, allowed, site);
    match cors(cors_origins) {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// The CORS layer that lets pages of `origins` call the API; `None` when there are none.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin.trim()).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                HeaderName::from_static("idempotency-key"),
            ])
            .expose_headers([HeaderName::from_static(api::REQUEST_CHARGE_HEADER)]),
    )
}

/// What the settings keep in memory for readers.
fn caches(settings: &Settings) -> http::Caches {
    http::Caches::new(
        Duration::from_millis(settings.feed_cache_ms),
        settings.list_cache_mb.saturating_mul(1024 * 1024),
    )
}

/// What the pages know of the site (its public address, the server's key and where it came
/// from), from the settings; `port`: the one this server listens on. Unsafe or incomplete
/// settings are said here.
fn site(
    settings: &Settings,
    port: u16,
    (key, key_source): (ServerKey, KeySource),
) -> anyhow::Result<web::Site> {
    let public_url = settings.site.public_url(port)?;
    for warning in settings.site_warnings(key_source) {
        tracing::warn!("{warning}");
    }
    tracing::info!(public_url = public_url.as_str(), key = ?key_source, "site");
    // App Service's front end sets `X-Forwarded-Host`; elsewhere anyone may send it.
    let trusts_forwarded_host = settings.auth.platform.app_service;
    Ok(web::Site::new(
        public_url,
        key,
        trusts_forwarded_host,
        settings.site.blog_title(),
        settings.site.blog_description(),
    ))
}

/// The change-feed trigger and timer invocations are only mounted under the Functions host:
/// there the handler's port is reachable by the host alone, while a standalone server would
/// let anyone who can reach it POST forged documents into the copies.
fn trigger_routes(settings: &Settings) -> Router<AppState> {
    if settings.auth.platform.functions_host {
        functions::router(settings.recheck(), settings.publisher())
    } else {
        Router::new()
    }
}

/// Resolves on Ctrl-C or SIGTERM (what the Functions host and container runtimes send).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
