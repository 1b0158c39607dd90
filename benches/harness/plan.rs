//! The planner's phases, on the Cosmos DB emulator (its RU model), through the real
//! application over loopback HTTP with the change-feed handlers run after every write:
//! - `--only plan-costs` measures what each operation costs (requests, logical partitions,
//!   RU), every change-feed copy a write causes split by the container it lands in (the
//!   views' `tags` per tag copy), and the stored size of each kind of item; it writes
//!   `src/plan/costs.json`, the planner's table.
//! - `--only plan` runs a day of a workload through the application, sums the RU charged and
//!   the bytes the views grew by, and compares them with what `cosmos-blog plan` predicts for
//!   the same workload from the checked-in table: they must agree within ±10 %.
//!
//! The handlers run after each write, as a trigger that keeps up does: one change at a time,
//! each read of the change feed and checkpoint counted. Reads that find nothing (the
//! trigger's idle polling) are left out: they depend on time, not on the workload.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use cosmos_blog::auth::AuthMode;
use cosmos_blog::blog::feed_partition;
use cosmos_blog::copies::Source;
use cosmos_blog::plan::{ItemBytes, MeasuredCosts, MeasuredOp};
use cosmos_blog::settings::ChangeFeedMode;
use cosmos_blog::startup::Application;
use cosmos_blog::store::layer::{LayerCall, Layered, StoreAnswer, StoreLayer, StoreRequest};
use cosmos_blog::store::{
    Checkpoint, Container, PageRequest, Pages, PartitionKey, Query, QueryScope, Store, StoreResult,
    Tenancy,
};
use serde_json::{Value, json};

const PRINCIPAL: &str = "x-ms-client-principal-id";
/// Posts of the author who fills the feed before anything is measured, so that every new post
/// pushes one out, as on a blog in use.
const FEED_FILL: usize = 100;
/// Tags each post of the table's measurement carries: its rows of `tags` are these figures
/// over it, per tag copy.
const MEASURED_TAGS: usize = 2;
/// The tags posts draw theirs from.
const TAG_POOL: [&str; 8] = [
    "rust",
    "cosmos-db",
    "azure",
    "serverless",
    "web",
    "design",
    "travel",
    "books",
];

/// What one container was asked for.
#[derive(Debug, Clone, Default)]
struct Tally {
    requests: u64,
    ru: f64,
    partitions: HashSet<String>,
    feed_queries: u64,
}

/// Counts requests, RU and logical partitions per container.
#[derive(Clone, Default)]
pub struct ByContainer {
    tallies: Arc<Mutex<HashMap<Container, Tally>>>,
}

impl ByContainer {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Container, Tally>> {
        self.tallies
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn take(&self) -> HashMap<Container, Tally> {
        std::mem::take(&mut *self.lock())
    }

    fn restore(&self, tallies: HashMap<Container, Tally>) {
        *self.lock() = tallies;
    }

    fn snapshot(&self) -> HashMap<Container, Tally> {
        self.lock().clone()
    }
}

impl StoreLayer for ByContainer {
    async fn call(&self, call: LayerCall<'_>) -> StoreResult<StoreAnswer> {
        let (container, request) = (call.container, &call.request);
        let tenancy = call.inner.tenancy();
        let partition = match request.scope() {
            Some(QueryScope::Partition(pk)) => Some(pk.to_json_array()),
            Some(_) => None,
            None => request.partition().map(PartitionKey::to_json_array),
        };
        let query = matches!(
            request,
            StoreRequest::Query { .. } | StoreRequest::QueryJson { .. }
        );
        // A query of the feed's window partition (the feed container also holds the
        // schedule's partition, whose query is no window read).
        let window = container == Container::Feed
            && partition.as_deref() == Some(feed_partition().to_json_array().as_str());
        let (result, exchange) = call.send_measured().await;
        let mut tallies = self.lock();
        let tally = tallies.entry(container).or_default();
        tally.requests += 1;
        tally.ru += exchange.request_units;
        match (partition, &result) {
            (Some(pk), _) => {
                tally.partitions.insert(pk);
            }
            // A query across partitions or on a prefix, a change-feed read: the partitions
            // of what it returned.
            (None, Ok(answer)) => {
                let keys = answer.documents().map(|documents| {
                    documents
                        .iter()
                        .filter_map(|item| container.partition_key_in(tenancy, item).ok())
                        .map(|pk| pk.to_json_array())
                        .collect::<Vec<_>>()
                });
                tally.partitions.extend(keys.unwrap_or_default());
            }
            (None, Err(_)) => {}
        }
        if query && window {
            tally.feed_queries += 1;
        }
        result
    }
}

/// The application on a fresh emulator account, metered per container, its change feed
/// drained by hand.
pub struct Rig {
    pub meter: ByContainer,
    store: Arc<dyn Store>,
    checkpoints: HashMap<Container, Option<Checkpoint>>,
    pub base: String,
    /// The API's root: `/api`, or a tenant's in `multi`.
    api: String,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    _data: tempfile::TempDir,
}

impl Rig {
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_in(Tenancy::Single).await
    }

    /// In `multi`, the API is a tenant's (`/api/tenants/plan`).
    pub async fn start_in(tenancy: Tenancy) -> anyhow::Result<Self> {
        let data = tempfile::tempdir()?;
        let meter = ByContainer::default();
        let emulator = testkit::emulator::emulator_store_in(tenancy).await;
        let store: Arc<dyn Store> = Arc::new(Layered::over(emulator, meter.clone()));
        let mut settings = testkit::app::settings(data.path().to_owned(), ChangeFeedMode::Off);
        settings.store.tenancy = tenancy;
        // Every read reaches the store: the planner applies the feed cache itself.
        settings.feed_cache_ms = 0;
        settings.list_cache_mb = 0;
        settings.auth.mode = Some(AuthMode::Header);
        let app = Application::with_store(&settings, Arc::clone(&store)).await?;
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        Ok(Self {
            meter,
            store,
            checkpoints: HashMap::new(),
            base,
            api: match tenancy {
                Tenancy::Single => "/api".to_owned(),
                Tenancy::Multi => "/api/tenants/plan".to_owned(),
            },
            client: reqwest::Client::new(),
            stop: Some(stop),
            server: Some(server),
            _data: data,
        })
    }

    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await?.context("server")?;
        }
        Ok(())
    }

    /// Hands every change since the last drain to its handler, then keeps the checkpoint in
    /// `leases`, as the trigger and the pump do. A read that finds nothing is not counted.
    pub async fn drain(&mut self) -> anyhow::Result<()> {
        for source in Source::ALL {
            let container = source.container();
            loop {
                let before = self.meter.snapshot();
                let since = self.checkpoints.get(&container).cloned().flatten();
                let batch = self
                    .store
                    .read_changes(container, since.as_ref(), 100)
                    .await?;
                if batch.items.is_empty() {
                    self.meter.restore(before);
                    break;
                }
                source.handle(&self.store, &batch.items).await?;
                let id = format!("plan.{}", container.name());
                self.store
                    .upsert_item(
                        Container::Leases,
                        &PartitionKey::single(&id),
                        json!({"id": id, "continuation": batch.checkpoint.0}),
                    )
                    .await?;
                self.checkpoints.insert(container, Some(batch.checkpoint));
            }
        }
        Ok(())
    }

    /// A command as `as_user` to the API's `route` (below `/api`, or the tenant's prefix in
    /// `multi`), with a JSON `body` if any: its answer's JSON, or an error naming the status.
    async fn send(
        &self,
        method: reqwest::Method,
        route: &str,
        as_user: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{}{route}", self.base, self.api);
        let mut request = self.client.request(method, url).header(PRINCIPAL, as_user);
        if let Some(body) = &body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status();
        let body = response.text().await?;
        anyhow::ensure!(status.is_success(), "{status}: {body}");
        Ok(serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    pub async fn put_user(&self, user: &str, username: &str) -> anyhow::Result<()> {
        let body = json!({"username": username});
        let route = format!("/users/{user}");
        self.send(reqwest::Method::PUT, &route, user, Some(body))
            .await
            .map(|_| ())
    }

    /// A new post (published), with `tags`.
    pub async fn post(
        &self,
        author: &str,
        content: &str,
        tags: &[String],
    ) -> anyhow::Result<String> {
        let body = json!({"title": "A day on the blog", "content": content, "tags": tags});
        let post = self
            .send(reqwest::Method::POST, "/posts", author, Some(body))
            .await?;
        post["id"]
            .as_str()
            .map(str::to_owned)
            .context("the new post's id")
    }

    pub async fn comment(&self, user: &str, post: &str, content: &str) -> anyhow::Result<()> {
        let body = json!({"content": content});
        let route = format!("/posts/{post}/comments");
        self.send(reqwest::Method::POST, &route, user, Some(body))
            .await
            .map(|_| ())
    }

    pub async fn like(&self, user: &str, post: &str) -> anyhow::Result<()> {
        let route = format!("/posts/{post}/likes");
        self.send(reqwest::Method::POST, &route, user, None)
            .await
            .map(|_| ())
    }

    /// A GET of `path` (an API route or a page), anonymous.
    pub async fn get(&self, path: &str) -> anyhow::Result<()> {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.bytes().await?;
        Ok(())
    }

    /// RU charged since the last take, by container.
    pub fn take_ru(&self) -> BTreeMap<&'static str, f64> {
        self.meter
            .take()
            .into_iter()
            .map(|(container, tally)| (container.name(), tally.ru))
            .collect()
    }

    /// Bytes of the posts' copies `container` holds (compact JSON with the system
    /// properties, as the table's item sizes), read page by page; not metered.
    pub async fn copy_bytes(&self, container: Container) -> anyhow::Result<f64> {
        let before = self.meter.snapshot();
        let query = Query::cross_partition().of_type("post");
        let mut pages = Pages::new(&*self.store, container, &query, 1_000);
        let mut bytes = 0;
        while let Some(items) = pages.next().await? {
            bytes += items
                .iter()
                .map(|item| item.to_string().len())
                .sum::<usize>();
        }
        self.meter.restore(before);
        Ok(bytes as f64)
    }

    /// The sizes of the stored items, by kind.
    async fn item_bytes(&self) -> anyhow::Result<ItemBytes> {
        let mean = |container, kind: &'static str| async move {
            let page = self
                .store
                .query(
                    container,
                    &Query::cross_partition().of_type(kind),
                    PageRequest::first(1_000),
                )
                .await?;
            let sizes: Vec<usize> = page
                .items
                .iter()
                .map(|item| item.to_string().len())
                .collect();
            anyhow::Ok(sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64)
        };
        Ok(ItemBytes {
            user: mean(Container::Users, "user").await?,
            post: mean(Container::Posts, "post").await?,
            post_copy: mean(Container::Users, "post").await?,
            comment: mean(Container::Posts, "comment").await?,
            like: mean(Container::Posts, "like").await?,
            tag_copy: mean(Container::Tags, "post").await?,
            archive_copy: mean(Container::Archive, "post").await?,
        })
    }
}

/// Text of `rng`'s choosing: a post of 300 to 3,000 characters, a comment of 20 to 400.
pub fn words(rng: &mut fastrand::Rng, min: usize, max: usize) -> String {
    const WORDS: [&str; 12] = [
        "cosmos",
        "partition",
        "feed",
        "blog",
        "request",
        "unit",
        "copy",
        "change",
        "post",
        "like",
        "comment",
        "azure",
    ];
    let length = rng.usize(min..=max);
    let mut text = String::with_capacity(length + 12);
    while text.len() < length {
        text.push_str(WORDS[rng.usize(..WORDS.len())]);
        text.push(' ');
    }
    text.truncate(length);
    text.trim_end().to_owned()
}

pub fn post_text(rng: &mut fastrand::Rng) -> String {
    words(rng, 300, 3_000)
}

pub fn comment_text(rng: &mut fastrand::Rng) -> String {
    words(rng, 20, 400)
}

/// `count` distinct tags of `rng`'s choosing (at most the pool's).
pub fn tags(rng: &mut fastrand::Rng, count: usize) -> Vec<String> {
    let mut pool = TAG_POOL.to_vec();
    rng.shuffle(&mut pool);
    pool.into_iter().take(count).map(str::to_owned).collect()
}

/// The API's route of the current month's posts (Q9): the month the posts written now are in.
pub fn this_month_posts() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "/api/archive/{:04}/{:02}/posts",
        now.year(),
        u8::from(now.month())
    )
}

/// Users `user-0000`… and the feed filled by an author of its own, handlers run; nothing of
/// it counted.
pub async fn prepare(
    rig: &mut Rig,
    users: usize,
    rng: &mut fastrand::Rng,
) -> anyhow::Result<Vec<String>> {
    let ids: Vec<String> = (0..users).map(|n| format!("user-{n:04}")).collect();
    for id in ids.iter().chain([&"archive".to_owned()]) {
        rig.put_user(id, id).await?;
    }
    for _ in 0..FEED_FILL {
        rig.post("archive", &post_text(rng), &[]).await?;
    }
    rig.drain().await?;
    rig.meter.take();
    Ok(ids)
}

/// Sums of what an operation cost over its runs, per container.
#[derive(Default)]
struct Sums {
    runs: usize,
    /// Over all containers: requests, partitions, RU, feed queries, and the container with
    /// the most RU.
    all: (f64, f64, f64, f64),
    by_container: BTreeMap<&'static str, (f64, f64, f64, f64)>,
}

impl Sums {
    fn add(&mut self, tallies: &HashMap<Container, Tally>, units: f64) {
        self.runs += 1;
        let units = units.max(1.0);
        for (container, t) in tallies {
            let figures = (
                t.requests as f64 / units,
                t.partitions.len() as f64 / units,
                t.ru / units,
                t.feed_queries as f64 / units,
            );
            let slot = self.by_container.entry(container.name()).or_default();
            slot.0 += figures.0;
            slot.1 += figures.1;
            slot.2 += figures.2;
            slot.3 += figures.3;
            self.all.0 += figures.0;
            self.all.1 += figures.1;
            self.all.2 += figures.2;
            self.all.3 += figures.3;
        }
    }

    /// The sums of one container, zero where the operation never touched it.
    fn in_container(&self, container: Container) -> (f64, f64, f64, f64) {
        self.by_container
            .get(container.name())
            .copied()
            .unwrap_or_default()
    }

    /// One line for the whole operation, in the container with the most RU.
    fn whole(&self, what: &str, per: &str) -> MeasuredOp {
        let n = self.runs.max(1) as f64;
        let container = self
            .by_container
            .iter()
            .max_by(|a, b| a.1.2.total_cmp(&b.1.2))
            .map_or("posts", |(c, _)| c);
        MeasuredOp {
            what: what.to_owned(),
            per: per.to_owned(),
            container: container.to_owned(),
            requests: self.all.0 / n,
            partitions: self.all.1 / n,
            ru: self.all.2 / n,
            feed_queries: self.all.3 / n,
            samples: self.runs,
        }
    }

    /// One line per container, `<id>.<container>`.
    fn split(&self, id: &str, what: &str, per: &str, into: &mut BTreeMap<String, MeasuredOp>) {
        let n = self.runs.max(1) as f64;
        for container in Container::ALL {
            let f = self.in_container(container);
            into.insert(
                format!("{id}.{}", container.name()),
                MeasuredOp {
                    what: format!("{what}, in {}", container.name()),
                    per: per.to_owned(),
                    container: container.name().to_owned(),
                    requests: f.0 / n,
                    partitions: f.1 / n,
                    ru: f.2 / n,
                    feed_queries: f.3 / n,
                    samples: self.runs,
                },
            );
        }
    }

    /// These sums less `fixed`'s per-run figures, per `units`.
    fn less(&self, fixed: &Sums) -> Sums {
        let n = self.runs.max(1) as f64;
        let m = fixed.runs.max(1) as f64;
        let mut out = Sums {
            runs: self.runs,
            ..Sums::default()
        };
        for container in Container::ALL {
            let a = self.in_container(container);
            let b = fixed.in_container(container);
            let f = |x: f64, y: f64| ((x / n - y / m) * n).max(0.0);
            out.by_container.insert(
                container.name(),
                (f(a.0, b.0), f(a.1, b.1), f(a.2, b.2), f(a.3, b.3)),
            );
        }
        out
    }
}

pub struct CostsConfig {
    pub users: usize,
    pub samples: usize,
    pub seed: u64,
    pub command: String,
}

/// Measures the table.
pub async fn measure(config: &CostsConfig, log: impl Fn(&str)) -> anyhow::Result<MeasuredCosts> {
    let mut rng = fastrand::Rng::with_seed(config.seed);
    let mut rig = Rig::start().await?;
    let users = prepare(&mut rig, config.users.max(4), &mut rng).await?;
    let mut sums: BTreeMap<&'static str, Sums> = BTreeMap::new();
    let mut copies: BTreeMap<&'static str, Sums> = BTreeMap::new();
    let samples = config.samples.max(1);
    log(&format!(
        "plan costs: {samples} runs of each operation on the emulator"
    ));
    for i in 0..samples {
        let author = &users[i % users.len()];
        let reader = &users[(i + 1) % users.len()];
        let tagged = tags(&mut rng, MEASURED_TAGS);
        let post = rig.post(author, &post_text(&mut rng), &tagged).await?;
        sums.entry("C2").or_default().add(&rig.meter.take(), 1.0);
        rig.drain().await?;
        copies.entry("C2").or_default().add(&rig.meter.take(), 1.0);
        rig.comment(reader, &post, &comment_text(&mut rng)).await?;
        sums.entry("C3").or_default().add(&rig.meter.take(), 1.0);
        rig.drain().await?;
        copies.entry("C3").or_default().add(&rig.meter.take(), 1.0);
        rig.like(reader, &post).await?;
        sums.entry("C4").or_default().add(&rig.meter.take(), 1.0);
        rig.drain().await?;
        copies.entry("C4").or_default().add(&rig.meter.take(), 1.0);
        for (id, path) in [
            ("Q1", format!("/api/users/{author}")),
            ("Q2", format!("/api/posts/{post}")),
            ("Q3", format!("/api/users/{author}/posts")),
            ("Q4", format!("/api/posts/{post}/comments")),
            ("Q5", format!("/api/posts/{post}/likes")),
            ("Q6", "/api/feed".to_owned()),
            ("Q8", format!("/api/tags/{}/posts", tagged[0])),
            ("Q9", this_month_posts()),
        ] {
            rig.get(&path).await?;
            sums.entry(id).or_default().add(&rig.meter.take(), 1.0);
        }
    }
    log("plan costs: renames (a user with nothing, with posts only, with comments and likes only)");
    let (mut fixed, mut per_post, mut per_item) =
        (Sums::default(), Sums::default(), Sums::default());
    let mut rename_api = Sums::default();
    for i in 0..samples.min(20) {
        let lone = format!("rename-lone-{i:03}");
        let writer = format!("rename-writer-{i:03}");
        let reader = format!("rename-reader-{i:03}");
        for id in [&lone, &writer, &reader] {
            rig.put_user(id, id).await?;
        }
        let mut posts = Vec::new();
        for _ in 0..3 {
            let tagged = tags(&mut rng, MEASURED_TAGS);
            posts.push(rig.post(&writer, &post_text(&mut rng), &tagged).await?);
        }
        for post in &posts {
            rig.comment(&reader, post, &comment_text(&mut rng)).await?;
            rig.like(&reader, post).await?;
        }
        rig.drain().await?;
        rig.meter.take();
        for (user, sums, items) in [
            (&lone, &mut fixed, 1.0),
            (&writer, &mut per_post, 1.0),
            (&reader, &mut per_item, 1.0),
        ] {
            rig.put_user(user, &format!("{user} renamed")).await?;
            rename_api.add(&rig.meter.take(), 1.0);
            rig.drain().await?;
            sums.add(&rig.meter.take(), items);
        }
    }
    let mut operations = BTreeMap::new();
    let labels = [
        ("C1", "rename a user (the API's part)"),
        ("C2", "create a post"),
        ("C3", "comment"),
        ("C4", "like"),
        ("Q1", "a user"),
        ("Q2", "a post"),
        ("Q3", "a user's posts (first page)"),
        ("Q4", "a post's comments (first page)"),
        ("Q5", "a post's likes (first page)"),
        ("Q6", "the feed"),
        ("Q8", "a tag's posts (first page)"),
        ("Q9", "a month's posts (first page)"),
    ];
    operations.insert("C1".to_owned(), rename_api.whole(labels[0].1, "request"));
    for (id, what) in labels.iter().skip(1) {
        if let Some(s) = sums.get(id) {
            operations.insert((*id).to_owned(), s.whole(what, "request"));
        }
    }
    for (id, s) in &copies {
        s.split(
            id,
            &format!("OnPostChanged after {id}"),
            "write",
            &mut operations,
        );
    }
    fixed.split(
        "C1",
        "OnUserChanged after a rename, whatever the user wrote",
        "rename",
        &mut operations,
    );
    // Per post and per comment or like of the renamed user: the writer has 3 posts, the
    // reader 3 comments and 3 likes.
    let scaled = |s: &Sums, items: f64| {
        let mut s = s.less(&fixed);
        for f in s.by_container.values_mut() {
            *f = (f.0 / items, f.1 / items, f.2 / items, f.3 / items);
        }
        s
    };
    scaled(&per_post, 3.0).split(
        "C1.post",
        "a rename's fan-out, for each post of the user (rewritten, then copied)",
        "post of the renamed user",
        &mut operations,
    );
    scaled(&per_item, 6.0).split(
        "C1.item",
        "a rename's fan-out, for each comment or like of the user",
        "comment or like of the renamed user",
        &mut operations,
    );
    per_tag_copy(&mut operations);
    let item_bytes = rig.item_bytes().await?;
    rig.stop().await?;
    log("plan costs: Q7, a tenant's users, in the multi layout");
    let mut tenant = Rig::start_in(Tenancy::Multi).await?;
    for n in 0..config.users.max(4) {
        let id = format!("member-{n:04}");
        tenant.put_user(&id, &id).await?;
    }
    tenant.drain().await?;
    tenant.meter.take();
    let mut listed = Sums::default();
    for _ in 0..samples {
        tenant.get("/api/tenants/plan/users").await?;
        listed.add(&tenant.meter.take(), 1.0);
    }
    tenant.stop().await?;
    operations.insert(
        "Q7".to_owned(),
        listed.whole("a tenant's users (first page; multi only)", "request"),
    );
    Ok(MeasuredCosts {
        about: "RU, requests and logical partitions per operation, measured by the harness through the application on the Cosmos DB SDK's in-memory emulator (its RU model: 1 RU per query page and physical partition, reads 1 RU per KB, writes 5.8 RU per KB plus 0.3 per property); change-feed copies per container (those in tags per tag copy), handlers run after every write; regenerate with the command below".to_owned(),
        measured_on: today(),
        command: config.command.clone(),
        backend: "Cosmos DB emulator (azure_data_cosmos_driver in-memory)".to_owned(),
        item_bytes,
        operations,
    })
}

/// The copies' rows of `tags` made per tag copy: a post's change writes one in each of its
/// tags' partitions, and each post of the measurement carries [`MEASURED_TAGS`].
fn per_tag_copy(operations: &mut BTreeMap<String, MeasuredOp>) {
    let tags = MEASURED_TAGS as f64;
    for (id, op) in operations.iter_mut() {
        if id.ends_with(".tags") {
            op.requests /= tags;
            op.partitions /= tags;
            op.ru /= tags;
            op.feed_queries /= tags;
            op.what = format!("{}, per tag copy", op.what);
            op.per = format!("{} (each tag of the post)", op.per);
        }
    }
}

fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day()
    )
}

/// Writes the table where the planner reads it.
pub fn write_table(costs: &MeasuredCosts, path: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(costs)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
