//! The hot-post phase: N writers comment on and like one post at the same moment, through
//! the real application over loopback HTTP, on the embedded store and on the Cosmos DB
//! in-memory emulator with a delay per request (the round trip to a real account). The
//! store is metered, so the phase reports what the burst cost it in requests, and it ends
//! by checking that the post's counts equal its comments and likes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::auth::AuthMode;
use cosmos_blog::settings::{ChangeFeedMode, DEFAULT_LIST_CACHE_MB};
use cosmos_blog::startup::Application;
use cosmos_blog::store::Store;
use cosmos_blog::store::embedded::EmbeddedStore;
use futures::{StreamExt, TryStreamExt, stream};
use reqwest::StatusCode;
use serde_json::{Value, json};
use testkit::metered::{MeteredStore, meter};

use crate::stats::Latencies;

const PRINCIPAL: &str = "x-ms-client-principal-id";
/// Users registered at once before the burst.
const SETUP_CONCURRENCY: usize = 32;

#[derive(Debug, Clone)]
pub struct HotPostConfig {
    /// Writers per run; every count runs on each backend.
    pub writers: Vec<usize>,
    /// Added to every request of the emulator.
    pub emulator_delay: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotBackend {
    Embedded,
    DelayedEmulator,
}

/// One burst on one backend.
#[derive(Debug, Clone)]
pub struct HotPostRun {
    pub backend: HotBackend,
    pub writers: usize,
    /// Comments and likes answered 201.
    pub succeeded: usize,
    /// Answered 409 (the post changed too often to get a write in).
    pub conflicts: usize,
    /// Any other answer, or no answer.
    pub failed: usize,
    /// Store requests during the burst (the writers' user reads, post reads, batches).
    pub store_requests: u64,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
    /// The post's `commentCount` and `likeCount` afterwards.
    pub counts: (u64, u64),
    /// Its comments and likes as listed (Q4, Q5) afterwards.
    pub items: (usize, usize),
}

impl HotPostRun {
    pub fn requests_per_write(&self) -> f64 {
        self.store_requests as f64 / self.writers.max(1) as f64
    }

    /// The post's counts equal its comments and likes.
    pub fn counts_match_items(&self) -> bool {
        self.counts == (self.items.0 as u64, self.items.1 as u64)
    }

    /// Every writer got its 201, and the counts equal the items, one per writer.
    pub fn exact(&self) -> bool {
        let comments = self.writers / 2;
        let likes = self.writers - comments;
        self.succeeded == self.writers
            && self.counts_match_items()
            && self.items == (comments, likes)
    }
}

impl HotBackend {
    pub fn label(self, delay: Duration) -> String {
        match self {
            HotBackend::Embedded => "embedded".to_owned(),
            HotBackend::DelayedEmulator => {
                format!("Cosmos DB emulator, +{} ms per request", delay.as_millis())
            }
        }
    }
}

pub async fn run(config: &HotPostConfig, log: impl Fn(&str)) -> anyhow::Result<Vec<HotPostRun>> {
    let mut runs = Vec::new();
    for backend in [HotBackend::Embedded, HotBackend::DelayedEmulator] {
        for &writers in &config.writers {
            log(&format!(
                "hot post: {writers} writers on one post, {}",
                backend.label(config.emulator_delay)
            ));
            runs.push(burst(backend, writers, config.emulator_delay).await?);
        }
    }
    Ok(runs)
}

/// A fresh store and application for one burst (no change-feed pump: only the API's
/// requests are counted).
async fn burst(backend: HotBackend, writers: usize, delay: Duration) -> anyhow::Result<HotPostRun> {
    let temp = tempfile::tempdir()?;
    let inner: Arc<dyn Store> = match backend {
        HotBackend::Embedded => Arc::new(EmbeddedStore::open(&temp.path().join("blog.sqlite3"))?),
        HotBackend::DelayedEmulator => testkit::emulator::delayed_emulator_store(delay).await,
    };
    let metered = meter(inner);
    let mut settings = testkit::app::settings(temp.path().to_owned(), ChangeFeedMode::Off);
    // The server's own default, where the tests keep pages to check them.
    settings.list_cache_mb = DEFAULT_LIST_CACHE_MB;
    // The writers name themselves with the principal header, on loopback.
    settings.auth.mode = Some(AuthMode::Header);
    let app = Application::with_store(&settings, Arc::new(metered.clone())).await?;
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(writers + SETUP_CONCURRENCY)
        .build()?;
    let result = measure(&client, &base, &metered, backend, writers).await;
    let _ = stop.send(());
    server.await?.context("server")?;
    result
}

async fn measure(
    client: &reqwest::Client,
    base: &str,
    metered: &MeteredStore,
    backend: HotBackend,
    writers: usize,
) -> anyhow::Result<HotPostRun> {
    let users: Vec<String> = (0..writers).map(|n| format!("writer-{n:05}")).collect();
    stream::iter(users.iter().map(String::as_str).chain(["author"]))
        .map(|user| async move {
            let response = client
                .put(format!("{base}/api/users/{user}"))
                .header(PRINCIPAL, user)
                .json(&json!({ "username": user }))
                .send()
                .await?;
            anyhow::ensure!(response.status().is_success(), "registering {user}");
            anyhow::Ok(())
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    let post: Value = client
        .post(format!("{base}/api/posts"))
        .header(PRINCIPAL, "author")
        .json(&json!({"title": "hot", "content": "everyone writes here at once"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let post_id = post["id"].as_str().context("post id")?.to_owned();
    metered.take();

    // Every writer at once: even ones like, odd ones comment.
    let started = Instant::now();
    let answers = futures::future::join_all(users.iter().enumerate().map(|(n, user)| {
        let request = if n % 2 == 0 {
            client.post(format!("{base}/api/posts/{post_id}/likes"))
        } else {
            client
                .post(format!("{base}/api/posts/{post_id}/comments"))
                .json(&json!({"content": "me too"}))
        };
        async move {
            let begun = Instant::now();
            let status = match request.header(PRINCIPAL, user.as_str()).send().await {
                Ok(response) => {
                    let status = response.status();
                    response.bytes().await.ok().map(|_| status)
                }
                Err(_) => None,
            };
            (status, begun.elapsed())
        }
    }))
    .await;
    let elapsed = started.elapsed();
    let store_requests = metered.take().requests;

    let mut latencies = Latencies::default();
    let (mut succeeded, mut conflicts, mut failed) = (0, 0, 0);
    for (status, latency) in answers {
        latencies.push(latency);
        match status {
            Some(StatusCode::CREATED) => succeeded += 1,
            Some(StatusCode::CONFLICT) => conflicts += 1,
            _ => failed += 1,
        }
    }
    let post: Value = client
        .get(format!("{base}/api/posts/{post_id}"))
        .send()
        .await?
        .json()
        .await?;
    let counts = (
        post["commentCount"].as_u64().unwrap_or_default(),
        post["likeCount"].as_u64().unwrap_or_default(),
    );
    let items = (
        count_items(client, base, &post_id, "comments").await?,
        count_items(client, base, &post_id, "likes").await?,
    );
    Ok(HotPostRun {
        backend,
        writers,
        succeeded,
        conflicts,
        failed,
        store_requests,
        elapsed,
        p50: latencies.percentile(50.0),
        p99: latencies.percentile(99.0),
        counts,
        items,
    })
}

/// Items of a post's list, following continuation tokens.
async fn count_items(
    client: &reqwest::Client,
    base: &str,
    post_id: &str,
    list: &str,
) -> anyhow::Result<usize> {
    let mut count = 0;
    let mut continuation: Option<String> = None;
    loop {
        let mut request = client
            .get(format!("{base}/api/posts/{post_id}/{list}"))
            .query(&[("limit", "100")]);
        if let Some(token) = &continuation {
            request = request.query(&[("continuation", token)]);
        }
        let page: Value = request.send().await?.error_for_status()?.json().await?;
        count += page["items"].as_array().map_or(0, Vec::len);
        match page["continuation"].as_str() {
            Some(token) => continuation = Some(token.to_owned()),
            None => return Ok(count),
        }
    }
}
