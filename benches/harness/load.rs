//! The HTTP load benchmark: the real application (router, pump, embedded store) on a
//! loopback port, driven by a Rust client. Every phase is bounded in time and in requests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::auth::AuthMode;
use cosmos_blog::settings::ChangeFeedMode;
use cosmos_blog::startup::Application;
use cosmos_blog::store::Store;
use cosmos_blog::telemetry::export::{Export, Schedule};
use cosmos_blog::telemetry::sampling::Sampling;
use cosmos_blog::telemetry::{self, Telemetry};
use futures::{StreamExt, TryStreamExt, stream};
use serde::Deserialize;
use serde_json::json;

use crate::generate::Dataset;
use crate::stats::Latencies;

const PRINCIPAL: &str = "x-ms-client-principal-id";
/// Upper bound of requests per phase, whatever the duration.
const MAX_REQUESTS_PER_PHASE: usize = 2_000_000;
/// How long the pump may take to work through the change log of the loaded data.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(900);
/// Posts not seen in the feed this long after the last one was written count as lost.
const LAG_GRACE: Duration = Duration::from_secs(5);
/// How often the lag probe reads the feed.
pub const LAG_POLL: Duration = Duration::from_millis(5);

#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Duration of each throughput phase.
    pub phase: Duration,
    pub concurrency: usize,
    /// Sequential requests per operation for the single-client latencies.
    pub sequential: usize,
    /// Posts per second of the change-feed lag probe.
    pub post_rate: u32,
    pub seed: u64,
    /// Only the write mix with its lag probe (`--only write-mix`), after the catch-up.
    pub write_mix_only: bool,
    /// Export traces and metrics over OTLP/HTTP there (`--otlp-endpoint`).
    pub otlp_endpoint: Option<String>,
    /// MiB of list pages the server keeps (`--list-cache-mb`; 0: none).
    pub list_cache_mb: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    User,
    Post,
    UserPosts,
    Feed,
    CreatePost,
    Comment,
    Like,
    /// The health probe `GET /api/health`: the server's cheapest route, the ceiling of the others.
    Health,
    Comments,
    Likes,
    /// The front page `/` as a browser asks for it (`Accept: text/html`), beside Q6.
    FrontPage,
    /// A post page `/posts/{id}` (the post and its first comments), beside Q2.
    PostPage,
    /// An upload `POST /api/images` of a small photo: checked, decoded, re-encoded, its
    /// bytes and item written.
    ImageUpload,
    /// An image `GET /images/{id}`, one of those uploaded when the server started.
    Image,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::User => "Q1 GET /api/users/{id}",
            Kind::Post => "Q2 GET /api/posts/{id}",
            Kind::UserPosts => "Q3 GET /api/users/{id}/posts",
            Kind::Feed => "Q6 GET /api/feed",
            Kind::CreatePost => "C2 POST /api/posts",
            Kind::Comment => "C3 POST /api/posts/{id}/comments",
            Kind::Like => "C4 POST /api/posts/{id}/likes",
            Kind::Health => "GET /api/health (ceiling)",
            Kind::Comments => "Q4 GET /api/posts/{id}/comments",
            Kind::Likes => "Q5 GET /api/posts/{id}/likes",
            Kind::FrontPage => "page GET / (front page)",
            Kind::PostPage => "page GET /posts/{id}",
            Kind::ImageUpload => "image POST /api/images (upload)",
            Kind::Image => "image GET /images/{id}",
        }
    }
}

/// Latencies of one kind of request, or of a whole phase.
#[derive(Debug, Clone)]
pub struct Summary {
    pub requests: usize,
    pub errors: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
}

fn summarise(mut latencies: Latencies, errors: usize) -> Summary {
    Summary {
        requests: latencies.len() + errors,
        errors,
        p50: latencies.percentile(50.0),
        p99: latencies.percentile(99.0),
        p999: latencies.percentile(99.9),
    }
}

#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    pub elapsed: Duration,
    /// CPU time of the whole process (server and clients) during the phase.
    pub cpu: Option<Duration>,
    pub total: Summary,
    pub by_kind: Vec<(Kind, Summary)>,
}

impl Phase {
    pub fn throughput(&self) -> f64 {
        (self.total.requests - self.total.errors) as f64 / self.elapsed.as_secs_f64()
    }
}

#[derive(Debug, Clone)]
pub struct Lag {
    pub name: String,
    pub rate: u32,
    pub posts: usize,
    pub seen: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

#[derive(Debug, Clone)]
pub struct LoadReport {
    pub catch_up: Duration,
    pub sequential: Vec<(Kind, Summary)>,
    pub phases: Vec<Phase>,
    pub lags: Vec<Lag>,
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    /// The photo every upload sends.
    photo: bytes::Bytes,
    /// Where the images uploaded by [`Client::upload_images`] are served.
    images: Arc<Vec<String>>,
}

/// The photo of the image routes: a small gradient PNG, as a phone's thumbnail might be.
fn photo() -> anyhow::Result<bytes::Bytes> {
    let pixels = image::RgbImage::from_fn(64, 48, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 5) as u8, ((x + y) * 2) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(pixels).write_to(&mut out, image::ImageFormat::Png)?;
    Ok(out.into_inner().into())
}

#[derive(Deserialize)]
struct Uploaded {
    url: String,
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

#[derive(Deserialize)]
struct Items {
    items: Vec<IdOnly>,
}

impl Client {
    /// Sends one request of `kind` on random targets; `Ok(false)` for an unexpected status.
    async fn send(
        &self,
        kind: Kind,
        rng: &mut fastrand::Rng,
        data: &Dataset,
    ) -> anyhow::Result<bool> {
        let user = data.users[rng.usize(..data.users.len())].as_str();
        let post = data.published_post(rng).post_id.as_str();
        self.send_to(kind, Target { user, post }, rng).await
    }

    /// Sends one request of `kind` to `target` (an image route picks its image with `rng`);
    /// `Ok(false)` for an unexpected status.
    async fn send_to(
        &self,
        kind: Kind,
        Target { user, post }: Target<'_>,
        rng: &mut fastrand::Rng,
    ) -> anyhow::Result<bool> {
        let base = &self.base;
        let request = match kind {
            Kind::User => self.http.get(format!("{base}/api/users/{user}")),
            Kind::Post => self.http.get(format!("{base}/api/posts/{post}")),
            Kind::UserPosts => self.http.get(format!("{base}/api/users/{user}/posts")),
            Kind::Feed => self.http.get(format!("{base}/api/feed")),
            Kind::Health => self.http.get(format!("{base}/api/health")),
            Kind::Comments => self.http.get(format!("{base}/api/posts/{post}/comments")),
            Kind::Likes => self.http.get(format!("{base}/api/posts/{post}/likes")),
            Kind::FrontPage => self
                .http
                .get(format!("{base}/"))
                .header("accept", "text/html"),
            Kind::PostPage => self
                .http
                .get(format!("{base}/posts/{post}"))
                .header("accept", "text/html"),
            Kind::CreatePost => self
                .http
                .post(format!("{base}/api/posts"))
                .header(PRINCIPAL, user)
                .json(&json!({"title": "load test", "content": "written under load ".repeat(20)})),
            Kind::Comment => self
                .http
                .post(format!("{base}/api/posts/{post}/comments"))
                .header(PRINCIPAL, user)
                .json(&json!({"content": "a comment under load"})),
            Kind::Like => self
                .http
                .post(format!("{base}/api/posts/{post}/likes"))
                .header(PRINCIPAL, user),
            Kind::ImageUpload => self.upload(user),
            Kind::Image => {
                anyhow::ensure!(!self.images.is_empty(), "no image was uploaded to read");
                let url = &self.images[rng.usize(..self.images.len())];
                self.http.get(format!("{base}{url}"))
            }
        };
        let mut response = request.send().await?;
        let ok = response.status().is_success();
        // Read the whole body: a response is only served once it is all through. Chunk by
        // chunk, dropping each: gathering them into one buffer would copy every answer once
        // more on the cores the server shares, a cost of the client's that grows with the
        // answer's size.
        while response.chunk().await?.is_some() {}
        Ok(ok)
    }

    fn upload(&self, user: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}/api/images", self.base))
            .header(PRINCIPAL, user)
            .header("content-type", "image/png")
            .body(self.photo.clone())
    }

    /// Uploads `count` images as `user`, for the image route to read.
    pub async fn upload_images(&mut self, user: &str, count: usize) -> anyhow::Result<()> {
        let mut urls = Vec::with_capacity(count);
        for _ in 0..count {
            let response = self.upload(user).send().await?;
            anyhow::ensure!(
                response.status().is_success(),
                "an upload answered {}",
                response.status()
            );
            urls.push(response.json::<Uploaded>().await?.url);
        }
        self.images = Arc::new(urls);
        Ok(())
    }

    async fn create_post(&self, user: &str) -> anyhow::Result<String> {
        let response = self
            .http
            .post(format!("{}/api/posts", self.base))
            .header(PRINCIPAL, user)
            .json(&json!({"title": "lag probe", "content": "how long until the feed shows me"}))
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "C2 answered {}",
            response.status()
        );
        Ok(response.json::<IdOnly>().await?.id)
    }

    async fn feed_ids(&self, limit: u32) -> anyhow::Result<Vec<String>> {
        let response = self
            .http
            .get(format!("{}/api/feed?limit={limit}", self.base))
            .send()
            .await?;
        Ok(response
            .json::<Items>()
            .await?
            .items
            .into_iter()
            .map(|i| i.id)
            .collect())
    }
}

/// The user and the post a request is about (each route uses what it needs).
#[derive(Clone, Copy)]
struct Target<'a> {
    user: &'a str,
    post: &'a str,
}

/// Which of a data set's items a route of `kind` reads: every user, every published post, or
/// none of its own (the feed, the health route, the images).
fn targets_of(kind: Kind, data: &Dataset) -> Vec<Target<'_>> {
    let any_user = data.users.first().map_or("", |user| user.as_str());
    let published = data.posts.iter().filter(|post| post.is_published());
    match kind {
        Kind::User | Kind::UserPosts => data
            .users
            .iter()
            .map(|user| Target {
                user: user.as_str(),
                post: "",
            })
            .collect(),
        Kind::Post | Kind::Comments | Kind::Likes | Kind::PostPage => published
            .map(|post| Target {
                user: any_user,
                post: post.post_id.as_str(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Sends one request of `kind` to each item it reads (every user, or every published post),
/// `concurrency` at a time, unmeasured: the state of a server whose readers have asked for
/// each of them once. A random draw over thousands of targets leaves many unread for
/// minutes (a uniform draw reaches them all only after about `n ln n` requests), so a
/// short warm-up of random draws measures a server that has just started instead. A route
/// that reads no item of its own sends nothing.
pub async fn visit_every_target(
    client: &Client,
    data: &Dataset,
    kind: Kind,
    concurrency: usize,
) -> anyhow::Result<()> {
    stream::iter(targets_of(kind, data))
        .map(|target| async move {
            // Only the image route draws: none of these.
            let mut rng = fastrand::Rng::with_seed(0);
            client.send_to(kind, target, &mut rng).await
        })
        .buffer_unordered(concurrency)
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// Runs `concurrency` workers for `duration`, each picking a kind from `mix` (weights).
pub async fn phase(
    name: &str,
    client: &Client,
    data: &Arc<Dataset>,
    mix: &[(Kind, u32)],
    config: &LoadConfig,
    duration: Duration,
) -> anyhow::Result<Phase> {
    let total_weight: u32 = mix.iter().map(|(_, w)| w).sum();
    let budget = Arc::new(std::sync::atomic::AtomicUsize::new(MAX_REQUESTS_PER_PHASE));
    let cpu_before = crate::stats::process_cpu();
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = Vec::new();
    for w in 0..config.concurrency {
        let (client, data, mix, budget) = (
            client.clone(),
            Arc::clone(data),
            mix.to_vec(),
            Arc::clone(&budget),
        );
        let seed = config.seed.wrapping_add(w as u64 * 1_000_003);
        workers.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut results: HashMap<Kind, (Latencies, usize)> = HashMap::new();
            while Instant::now() < deadline
                && budget
                    .fetch_update(
                        std::sync::atomic::Ordering::Relaxed,
                        std::sync::atomic::Ordering::Relaxed,
                        |n| n.checked_sub(1),
                    )
                    .is_ok()
            {
                let mut pick = rng.u32(..total_weight);
                let kind = mix
                    .iter()
                    .find(|(_, weight)| {
                        let hit = pick < *weight;
                        pick = pick.saturating_sub(*weight);
                        hit
                    })
                    .map_or(mix[0].0, |(k, _)| *k);
                let begun = Instant::now();
                let ok = client.send(kind, &mut rng, &data).await.unwrap_or(false);
                let entry = results.entry(kind).or_default();
                if ok {
                    entry.0.push(begun.elapsed());
                } else {
                    entry.1 += 1;
                }
            }
            results
        }));
    }
    let mut merged: HashMap<Kind, (Latencies, usize)> = HashMap::new();
    for worker in workers {
        for (kind, (latencies, errors)) in worker.await? {
            let entry = merged.entry(kind).or_default();
            entry.0.extend(latencies);
            entry.1 += errors;
        }
    }
    let elapsed = started.elapsed();
    let cpu = cpu_before
        .zip(crate::stats::process_cpu())
        .map(|(before, after)| after.saturating_sub(before));
    let mut all = Latencies::default();
    let mut all_errors = 0;
    let mut by_kind: Vec<(Kind, Summary)> = merged
        .into_iter()
        .map(|(kind, (latencies, errors))| {
            all.extend(latencies.clone());
            all_errors += errors;
            (kind, summarise(latencies, errors))
        })
        .collect();
    by_kind.sort_by_key(|(k, _)| *k);
    Ok(Phase {
        name: name.to_owned(),
        elapsed,
        cpu,
        total: summarise(all, all_errors),
        by_kind,
    })
}

/// Writes posts at `rate` per second for `duration` and watches the feed for each of them:
/// the lag is from C2's answer to the first feed read that shows the post.
async fn lag_probe(
    name: &str,
    client: &Client,
    data: &Arc<Dataset>,
    rate: u32,
    duration: Duration,
) -> anyhow::Result<Lag> {
    let written: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let lags: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let posts = (rate as f64 * duration.as_secs_f64()).round() as usize;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let watcher = {
        let (client, written, lags, done) = (
            client.clone(),
            Arc::clone(&written),
            Arc::clone(&lags),
            Arc::clone(&done),
        );
        tokio::spawn(async move {
            let mut finished_at: Option<Instant> = None;
            loop {
                let ids = client.feed_ids(100).await.unwrap_or_default();
                let now = Instant::now();
                {
                    let mut written = written.lock().unwrap();
                    for id in ids {
                        if let Some(at) = written.remove(&id) {
                            lags.lock().unwrap().push(now.saturating_duration_since(at));
                        }
                    }
                    if done.load(std::sync::atomic::Ordering::Acquire) {
                        let since = *finished_at.get_or_insert(now);
                        if written.is_empty() || now - since > LAG_GRACE {
                            return;
                        }
                    }
                }
                // Polling flat out would itself load the server (a feed read is the most
                // expensive query); every few ms bounds the lag's resolution to that.
                tokio::time::sleep(LAG_POLL).await;
            }
        })
    };

    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut writers = Vec::with_capacity(posts);
    for i in 0..posts {
        ticker.tick().await;
        let (client, written) = (client.clone(), Arc::clone(&written));
        let user = data.users[i % data.users.len()].to_string();
        // Each post on its own task, so a slow answer does not lower the rate.
        writers.push(tokio::spawn(async move {
            let id = client.create_post(&user).await?;
            written.lock().unwrap().insert(id, Instant::now());
            anyhow::Ok(())
        }));
    }
    for writer in writers {
        writer.await??;
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    watcher.await?;
    let mut lags = Latencies::from_iter(lags.lock().unwrap().iter().copied());
    Ok(Lag {
        name: name.to_owned(),
        rate,
        posts,
        seen: lags.len(),
        p50: lags.percentile(50.0),
        p99: lags.percentile(99.0),
        max: lags.percentile(100.0),
    })
}

/// Serves `store` (already loaded) from the real application and measures it.
pub async fn run(
    store: Arc<dyn Store>,
    data: Dataset,
    config: &LoadConfig,
    log: impl Fn(&str),
) -> anyhow::Result<LoadReport> {
    let data = Arc::new(data);
    let served = serve(
        Arc::clone(&store),
        config.concurrency,
        config.list_cache_mb,
        Observed::exporting_to(config.otlp_endpoint.as_deref()),
    )
    .await?;
    let result = measure(&served.client, &store, &data, config, log).await;
    served.stop().await?;
    result
}

/// The real application on a loopback port, with its change-feed pump, and a client of it.
pub struct Served {
    pub client: Client,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The server's folder: the images' files, removed with it.
    _data_dir: tempfile::TempDir,
}

impl Served {
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.server.await?.context("server")
    }
}

/// The telemetry of a served application.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// None at all: what the store and the server cost alone.
    Nothing,
    /// Logs only, as the binary runs without an exporter (its lines go nowhere here).
    Logs,
    /// Logs, metrics and sampled traces, exported over OTLP/HTTP to this endpoint.
    Exporting(&'a str),
}

impl Observed<'_> {
    /// Exporting to `endpoint` if there is one, else nothing.
    pub fn exporting_to(endpoint: Option<&str>) -> Observed<'_> {
        endpoint.map_or(Observed::Nothing, Observed::Exporting)
    }
}

pub async fn serve(
    store: Arc<dyn Store>,
    concurrency: usize,
    list_cache_mb: u64,
    observed: Observed<'_>,
) -> anyhow::Result<Served> {
    // The store is handed over; the folder holds what else the server writes (the images).
    let data_dir = tempfile::tempdir()?;
    let mut settings = testkit::app::settings(data_dir.path().to_owned(), ChangeFeedMode::Pump);
    settings.list_cache_mb = list_cache_mb;
    // The load sends the principal header; header mode on loopback, whatever the shell says.
    settings.auth.mode = Some(AuthMode::Header);
    let app = match observed {
        Observed::Exporting(endpoint) => {
            let export = Export::Otlp {
                endpoint: Some(endpoint.to_owned()),
            };
            // Traces sampled as the binary samples them: by the standard variables, else at
            // most a few new traces a second.
            let mut config = telemetry::Config::exporting(export, Schedule::default());
            config.sampling = Sampling::from_vars(|name| std::env::var(name).ok()).0;
            let telemetry = Telemetry::new(config)?;
            Application::with_telemetry(&settings, store, telemetry).await?
        }
        Observed::Logs => {
            let telemetry = Telemetry::logs_only("info", std::io::sink);
            Application::with_telemetry(&settings, store, telemetry).await?
        }
        Observed::Nothing => Application::with_store(&settings, store).await?,
    };
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    let client = Client {
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(concurrency * 2)
            .build()?,
        base,
        photo: photo()?,
        images: Arc::new(Vec::new()),
    };
    Ok(Served {
        client,
        stop,
        server,
        _data_dir: data_dir,
    })
}

/// The pump starts from the beginning of the change log, which holds the whole loaded data
/// set: waits until it is through, i.e. until a post written now reaches the feed.
pub async fn catch_up(client: &Client, data: &Dataset) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let sentinel = client.create_post(data.users[0].as_str()).await?;
    loop {
        if client.feed_ids(1).await?.first() == Some(&sentinel) {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < CATCH_UP_LIMIT,
            "the pump did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the pump has handled every change in the store. [`catch_up`] sees the feed's
/// handler through; the others (the posts' copies in `users`, the usernames) may still be
/// working through a freshly loaded data set, on the same cores as the load.
pub async fn settled(store: &Arc<dyn Store>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let backlog = cosmos_blog::changefeed::backlog(store).await?;
        if backlog.known() && backlog.total() == 0 {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < CATCH_UP_LIMIT,
            "the pump did not catch up: {}",
            backlog.describe()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn measure(
    client: &Client,
    store: &Arc<dyn Store>,
    data: &Arc<Dataset>,
    config: &LoadConfig,
    log: impl Fn(&str),
) -> anyhow::Result<LoadReport> {
    log("waiting for the change-feed pump to catch up with the loaded data");
    // Until every handler is through, the pump's catch-up shares the cores with whatever
    // is measured first, and makes it slower by a share that differs from run to run.
    let catch_up = catch_up(client, data).await? + settled(store).await?;
    if config.write_mix_only {
        let (phase, lag) = write_mix(client, data, config, &log).await?;
        return Ok(LoadReport {
            catch_up,
            sequential: Vec::new(),
            phases: vec![phase],
            lags: vec![lag],
        });
    }

    log("single-client latencies");
    let mut sequential = Vec::new();
    let mut rng = fastrand::Rng::with_seed(config.seed);
    for kind in [Kind::User, Kind::Post, Kind::UserPosts, Kind::Feed] {
        let mut latencies = Latencies::default();
        let mut errors = 0;
        for _ in 0..config.sequential {
            let begun = Instant::now();
            if client.send(kind, &mut rng, data).await? {
                latencies.push(begun.elapsed());
            } else {
                errors += 1;
            }
        }
        sequential.push((kind, summarise(latencies, errors)));
    }

    let mut phases = Vec::new();
    log("read mix");
    let read_mix = [(Kind::Feed, 50), (Kind::Post, 30), (Kind::UserPosts, 20)];
    phases.push(
        phase(
            "read mix (50% feed, 30% post, 20% user's posts)",
            client,
            data,
            &read_mix,
            config,
            config.phase,
        )
        .await?,
    );
    log("feed only");
    phases.push(
        phase(
            "feed only",
            client,
            data,
            &[(Kind::Feed, 1)],
            config,
            config.phase,
        )
        .await?,
    );

    let mut lags = Vec::new();
    log("change-feed lag, posts alone");
    lags.push(lag_probe("posts alone", client, data, config.post_rate, config.phase).await?);

    let (writes, lag) = write_mix(client, data, config, &log).await?;
    phases.push(writes);
    lags.push(lag);
    Ok(LoadReport {
        catch_up,
        sequential,
        phases,
        lags,
    })
}

/// The kinds of the write mix, with their weights.
pub const WRITE_MIX: [(Kind, u32); 3] = [
    (Kind::CreatePost, 20),
    (Kind::Comment, 40),
    (Kind::Like, 40),
];

/// The saturating write mix, with the lag probe writing posts beside it.
async fn write_mix(
    client: &Client,
    data: &Arc<Dataset>,
    config: &LoadConfig,
    log: &impl Fn(&str),
) -> anyhow::Result<(Phase, Lag)> {
    log("write mix with the lag probe");
    let (writes, lag) = tokio::join!(
        phase(
            "write mix (20% posts, 40% comments, 40% likes)",
            client,
            data,
            &WRITE_MIX,
            config,
            config.phase
        ),
        lag_probe(
            "under the write mix",
            client,
            data,
            config.post_rate,
            config.phase
        ),
    );
    Ok((writes?, lag?))
}
