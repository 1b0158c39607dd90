//! The cost profiler: each of the ten operations under V1, V2 and V3 on the same data,
//! through a [`MeteredStore`](testkit::metered::MeteredStore), one run at a time so the counters belong to that run.
//! Every model sees the same sequence of targets (same seed per operation).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cosmos_blog::domain::{PostId, UserId};
use cosmos_blog::store::Store;
use indicatif::ProgressBar;
use testkit::metered::{Metrics, meter};

use crate::generate::Dataset;
use crate::stats::Latencies;
use crate::versions::{Op, Target, Version, Versions};

#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// Measured runs per operation and model (at most).
    pub samples: usize,
    /// Time allowed per operation and model; at least `MIN_SAMPLES` runs are made anyway.
    pub budget: Duration,
    pub seed: u64,
    pub progress: bool,
}

const MIN_SAMPLES: usize = 3;
const WARM_UP: usize = 3;

/// Mean cost of one run of an operation under one model.
#[derive(Debug, Clone)]
pub struct Row {
    pub op: Op,
    pub version: Version,
    pub samples: usize,
    pub requests: f64,
    pub partitions: f64,
    /// Whether the operation used cross-partition queries (its partitions are then those
    /// holding matches; the service fans out to every physical partition).
    pub fan_out: bool,
    pub items_read: f64,
    pub bytes_read: f64,
    pub items_written: f64,
    /// Mean RU per run, when the backend reports RU.
    pub request_units: Option<f64>,
    /// Items in the answer (lists), mean.
    pub answer_items: f64,
    pub p50: Duration,
    pub p99: Duration,
}

impl Row {
    pub fn get(rows: &[Row], op: Op, version: Version) -> Option<&Row> {
        rows.iter().find(|r| r.op == op && r.version == version)
    }
}

#[derive(Default)]
struct Sum {
    runs: usize,
    metrics: Metrics,
    fan_out: bool,
    answer_items: usize,
    latencies: Latencies,
}

impl Sum {
    fn add(&mut self, m: &Metrics, answer_items: usize, latency: Duration) {
        self.runs += 1;
        self.metrics += m;
        self.fan_out |= m.fan_out_queries > 0;
        self.answer_items += answer_items;
        self.latencies.push(latency);
    }

    fn row(mut self, op: Op, version: Version) -> Row {
        let n = self.runs.max(1) as f64;
        let mean = |total: u64| total as f64 / n;
        Row {
            op,
            version,
            samples: self.runs,
            requests: mean(self.metrics.requests),
            partitions: mean(self.metrics.partitions),
            fan_out: self.fan_out,
            items_read: mean(self.metrics.items_read),
            bytes_read: mean(self.metrics.bytes_read),
            items_written: mean(self.metrics.items_written),
            request_units: self.metrics.request_units.map(|ru| ru / n),
            answer_items: self.answer_items as f64 / n,
            p50: self.latencies.percentile(50.0),
            p99: self.latencies.percentile(99.0),
        }
    }
}

/// Chooses what run `i` of `op` works on; the same for every model.
struct Targets<'a> {
    data: &'a Dataset,
    posts: Vec<usize>,
    with_comments: Vec<usize>,
    with_likes: Vec<usize>,
}

impl<'a> Targets<'a> {
    fn new(data: &'a Dataset) -> Self {
        // Drafts are their author's alone: the reads of everyone's posts go to published ones.
        let posts: Vec<usize> = (0..data.posts.len())
            .filter(|&i| data.posts[i].is_published())
            .collect();
        Self {
            posts: posts.clone(),
            data,
            with_comments: crate::generate::having(&posts, |i| data.posts[i].comments > 0),
            with_likes: crate::generate::having(&posts, |i| data.posts[i].likes > 0),
        }
    }

    fn target(
        &self,
        rng: &mut fastrand::Rng,
        op: Op,
        version: Version,
        i: usize,
        created: &[PostId],
    ) -> Target {
        let users = &self.data.users;
        let posts = &self.data.posts;
        let user = users[rng.usize(..users.len())].clone();
        let post = match op {
            Op::Q4 => &posts[self.with_comments[rng.usize(..self.with_comments.len())]].post_id,
            Op::Q5 => &posts[self.with_likes[rng.usize(..self.with_likes.len())]].post_id,
            _ => &posts[self.posts[rng.usize(..self.posts.len())]].post_id,
        }
        .clone();
        let new_user =
            UserId::parse(&format!("bench-{}-{i:06}", version.name())).expect("valid id");
        match op {
            // Commands on children go to the posts this model's C2 made, so V1's items
            // without denormalised fields stay out of the product's data.
            Op::C3 => Target {
                post: created[i % created.len()].clone(),
                user,
                new_user,
            },
            // Distinct (liker, post) pairs: every like is a new one.
            Op::C4 => Target {
                user: users[i % users.len()].clone(),
                post: created[(i / users.len()) % created.len()].clone(),
                new_user,
            },
            _ => Target {
                user,
                post,
                new_user,
            },
        }
    }
}

pub async fn profile(
    store: &Arc<dyn Store>,
    data: &Dataset,
    config: &ProfileConfig,
) -> anyhow::Result<Vec<Row>> {
    let metered = meter(Arc::clone(store));
    let versions = Versions::new(Arc::new(metered.clone()));
    let targets = Targets::new(data);
    // Queries first, on the data as generated; then the commands, C2 before C3/C4.
    let order = [
        Op::Q1,
        Op::Q2,
        Op::Q3,
        Op::Q4,
        Op::Q5,
        Op::Q6,
        Op::C1,
        Op::C2,
        Op::C3,
        Op::C4,
    ];
    let bar = if config.progress {
        ProgressBar::new((order.len() * Version::ALL.len()) as u64)
    } else {
        ProgressBar::hidden()
    };
    let mut created: Vec<Vec<PostId>> = vec![Vec::new(); Version::ALL.len()];
    let mut rows = Vec::new();
    for op in order {
        for (v, version) in Version::ALL.into_iter().enumerate() {
            bar.set_message(format!("{} {}", op.name(), version.name()));
            let mut rng = fastrand::Rng::with_seed(config.seed ^ (op as u64 * 7919));
            let mut sum = Sum::default();
            let started = Instant::now();
            let mut i = 0;
            while i < WARM_UP + config.samples
                && (i < WARM_UP + MIN_SAMPLES || started.elapsed() < config.budget)
            {
                let target = targets.target(&mut rng, op, version, i, &created[v]);
                metered.take();
                let begun = Instant::now();
                let (answer, new_post) = versions
                    .run(version, op, &target)
                    .await
                    .map_err(|e| anyhow::anyhow!("{} {}: {e:#}", op.name(), version.name()))?;
                let latency = begun.elapsed();
                let metrics = metered.take();
                if let Some(post) = new_post {
                    created[v].push(post);
                }
                if i >= WARM_UP {
                    sum.add(&metrics, answer, latency);
                }
                i += 1;
            }
            rows.push(sum.row(op, version));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    rows.sort_by_key(|r| (r.op, r.version));
    Ok(rows)
}
