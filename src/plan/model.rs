//! The model: a workload (users, posts, comments, likes, views, renames, their peak) becomes
//! operations per second, each at its cost per run, and so request units per second per
//! container and per hot logical partition, gigabytes per container, and a monthly bill in
//! each Cosmos DB mode plus the Functions plan.

use std::collections::BTreeMap;

use serde::Serialize;

use super::data::{Azure, MeasuredCosts, priced_as, reference_ru};

pub(crate) const SECONDS_PER_DAY: f64 = 86_400.0;
/// 365.25 / 12.
pub const DAYS_PER_MONTH: f64 = 30.4375;
/// The hours Azure bills a month of provisioned throughput for.
pub(crate) const HOURS_PER_MONTH: f64 = 730.0;
/// Posts the feed holds (the model's bound).
pub(crate) const FEED_SIZE: f64 = 100.0;
/// The hottest post's comments, likes and views over the mean post's.
pub(crate) const HOT_POST_FACTOR: f64 = 10.0;
/// What the service stores beyond the items' JSON (the index of the default policy, system
/// properties), as a share of it.
pub const INDEX_OVERHEAD: f64 = 0.25;
/// Hours a day at the peak rate; the other hours share the rest of the day's load evenly.
pub(crate) const PEAK_HOURS_PER_DAY: f64 = 1.0;
/// Changes handed to a change-feed handler at once.
pub(crate) const CHANGE_FEED_BATCH: f64 = 100.0;
/// The leases documents of the triggers and the pump: a few hundred bytes each.
pub(crate) const LEASES_BYTES: f64 = 4.0 * 400.0;
/// Tags a post carries unless told: the mean of the harness's data set, whose posts carry
/// none to three of a dozen common tags.
pub const TAGS_PER_POST: f64 = 1.5;
/// The containers the model prices, the case study's four and the views the change feed
/// keeps (`tags`, `archive`).
pub(crate) const CONTAINERS: [&str; 6] = ["users", "posts", "feed", "leases", "tags", "archive"];

/// The data layout: the store's own, so that the global `--tenancy` names it for every
/// command, this one included.
pub use crate::store::Tenancy;

/// Which RU figures price the operations that the case study measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RuSource {
    /// The case study's V3 figures from the real service where they exist (C1–C4, Q1–Q6),
    /// estimates built on them for the reads of the same shape (Q8, Q9 as Q3) and the copies
    /// that read the feed's window, the emulator's measured figures for the rest.
    Reference,
    /// The emulator's measured figures for every operation.
    Measured,
}

/// How views split over the pages and reads (shares summing to 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mix {
    /// The front page or `GET /api/feed` (Q6).
    pub front: f64,
    /// A post's page: the post and its first comments (Q2 + Q4).
    pub post: f64,
    /// A post's likes (Q2 + Q5).
    pub likes: f64,
    /// An author's page: their posts (Q3).
    pub author: f64,
    /// A user (Q1).
    pub user: f64,
    /// A tenant's users (Q7), `multi` only.
    pub users: f64,
    /// A tag's page: its posts (Q8).
    pub tag: f64,
    /// A month's page of the archive: its posts (Q9).
    pub archive: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Self {
            front: 0.40,
            post: 0.40,
            likes: 0.05,
            author: 0.10,
            user: 0.05,
            users: 0.0,
            tag: 0.0,
            archive: 0.0,
        }
    }
}

impl Mix {
    /// `front=50,post=30,...`: the named shares replace the defaults' and the whole is scaled
    /// to 1; a kind left out keeps no share unless none is named.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut mix = Mix {
            front: 0.0,
            post: 0.0,
            likes: 0.0,
            author: 0.0,
            user: 0.0,
            users: 0.0,
            tag: 0.0,
            archive: 0.0,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, share) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not kind=share"))?;
            let share: f64 = share
                .trim()
                .parse()
                .map_err(|_| format!("the share of `{}` is not a number", name.trim()))?;
            if !share.is_finite() || !(0.0..=1e9).contains(&share) {
                return Err(format!(
                    "the share of `{}` must be between 0 and 1e9",
                    name.trim()
                ));
            }
            let slot = match name.trim() {
                "front" => &mut mix.front,
                "post" => &mut mix.post,
                "likes" => &mut mix.likes,
                "author" => &mut mix.author,
                "user" => &mut mix.user,
                "users" => &mut mix.users,
                "tag" => &mut mix.tag,
                "archive" => &mut mix.archive,
                other => {
                    return Err(format!(
                        "unknown kind `{other}` (front, post, likes, author, user, users, tag, archive)"
                    ));
                }
            };
            *slot = share;
        }
        let total: f64 = mix.shares().iter().map(|share| **share).sum();
        if total <= 0.0 {
            return Err("at least one share must be above zero".to_owned());
        }
        for share in mix.shares() {
            *share /= total;
        }
        Ok(mix)
    }

    /// Every kind's share, to sum them or scale them.
    fn shares(&mut self) -> [&mut f64; 8] {
        [
            &mut self.front,
            &mut self.post,
            &mut self.likes,
            &mut self.author,
            &mut self.user,
            &mut self.users,
            &mut self.tag,
            &mut self.archive,
        ]
    }
}

/// What the blog does, in the flags' units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub users: f64,
    pub posts_per_day: f64,
    pub comments_per_post: f64,
    pub likes_per_post: f64,
    /// Tags a post carries: a published post has a copy in each tag's partition of `tags`.
    pub tags_per_post: f64,
    pub views_per_day: f64,
    pub renames_per_day: f64,
    /// The peak hour's rate over the day's mean.
    pub peak_factor: f64,
    pub regions: f64,
    /// The horizon, for storage.
    pub horizon_days: f64,
    pub tenancy: Tenancy,
    /// Tenants (`multi`); 1 in `single`.
    pub tenants: f64,
    pub mix: Mix,
    /// How long each instance serves the feed from memory (`BLOG_FEED_CACHE_MS`); 0: off.
    pub feed_cache_ms: f64,
    /// Mean duration of one function execution.
    pub function_ms: f64,
    /// Memory of a Flex Consumption instance.
    pub instance_memory_mb: f64,
    pub ru_source: RuSource,
}

impl Workload {
    /// The community example of `docs/capacity.md` grown or shrunk to `users`, every figure
    /// proportional to them: a day brings 0.02 posts, 10 views and 0.001 renames per user; a
    /// post gets 5 comments and 20 likes; the rest is the flags' defaults.
    pub fn community(users: f64) -> Self {
        Self {
            users,
            posts_per_day: users * 0.02,
            comments_per_post: 5.0,
            likes_per_post: 20.0,
            tags_per_post: TAGS_PER_POST,
            views_per_day: users * 10.0,
            renames_per_day: users * 0.001,
            peak_factor: 3.0,
            regions: 1.0,
            horizon_days: 12.0 * DAYS_PER_MONTH,
            tenancy: Tenancy::Single,
            tenants: 1.0,
            mix: Mix::default(),
            feed_cache_ms: 50.0,
            function_ms: 20.0,
            instance_memory_mb: 2048.0,
            ru_source: RuSource::Reference,
        }
    }

    /// The workload `s` times as large: users, posts, views and renames (the per-post
    /// averages, the peak's shape, the regions and the horizon stay).
    pub fn scaled(&self, s: f64) -> Self {
        Self {
            users: self.users * s,
            posts_per_day: self.posts_per_day * s,
            views_per_day: self.views_per_day * s,
            renames_per_day: self.renames_per_day * s,
            ..self.clone()
        }
    }

    /// Posts written over `days`.
    fn posts_after(&self, days: f64) -> f64 {
        self.posts_per_day * days
    }

    /// Items a user has written by the horizon (posts, comments, likes), on average: what a
    /// rename rewrites.
    pub(crate) fn items_per_user(&self) -> f64 {
        let posts = self.posts_after(self.horizon_days);
        posts * (1.0 + self.comments_per_post + self.likes_per_post) / self.users.max(1.0)
    }
}

/// The share of the largest of `n` members when shares fall as 1/k (Zipf, exponent 1): the
/// most prolific author's share of posts, the largest tenant's share of the blog.
pub(crate) fn largest_share(n: f64) -> f64 {
    let n = n.max(1.0);
    // The harmonic number, exactly for small n, by its expansion beyond.
    let harmonic = if n <= 1_000.0 {
        (1..=n.round() as u64).map(|k| 1.0 / k as f64).sum::<f64>()
    } else {
        n.ln() + 0.577_215_664_9 + 1.0 / (2.0 * n)
    };
    1.0 / harmonic
}

/// One operation's cost per run as the model uses it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitCost {
    pub requests: f64,
    pub partitions: f64,
    /// The RU used.
    pub ru: f64,
    /// The emulator's figure.
    pub ru_measured: f64,
    /// The real service's (the case study's V3), or the estimate built on it.
    pub ru_reference: Option<f64>,
    /// Which of the two `ru` is.
    pub used: &'static str,
    pub container: String,
    pub per: String,
    pub what: String,
}

/// Every operation's cost, by id, as `source` chooses.
pub(crate) fn unit_costs(costs: &MeasuredCosts, source: RuSource) -> BTreeMap<String, UnitCost> {
    let measured_feed = costs.get("Q6").map_or(0.0, |q6| q6.ru);
    let reference_feed = reference_ru("Q6").unwrap_or(0.0);
    costs
        .operations
        .iter()
        .map(|(id, op)| {
            // A read the case study did not make pays what its read of the same shape pays; a
            // copy that reads the feed's window pays on the service about what Q6 pays.
            let reference = reference_ru(id)
                .or_else(|| priced_as(id).and_then(reference_ru))
                .or_else(|| {
                    (op.feed_queries > 0.0).then(|| {
                        op.ru + op.feed_queries * (reference_feed - measured_feed).max(0.0)
                    })
                });
            let (ru, used) = match (source, reference) {
                (RuSource::Reference, Some(reference)) if reference_ru(id).is_some() => {
                    (reference, "reference")
                }
                (RuSource::Reference, Some(reference)) => (reference, "reference estimate"),
                _ => (op.ru, "measured"),
            };
            let cost = UnitCost {
                requests: op.requests,
                partitions: op.partitions,
                ru,
                ru_measured: op.ru,
                ru_reference: reference,
                used,
                container: op.container.clone(),
                per: op.per.clone(),
                what: op.what.clone(),
            };
            (id.clone(), cost)
        })
        .collect()
}

/// Flex Consumption instances busy at a rate of `executions_per_second`.
pub fn instances(w: &Workload, azure: &Azure, executions_per_second: f64) -> f64 {
    let concurrency = azure.limits.flex_http_concurrency.value;
    (executions_per_second * w.function_ms / 1000.0 / concurrency)
        .ceil()
        .max(1.0)
}

/// Operations per second at `rate` times the day's mean rate (1: the mean; the peak factor:
/// the peak hour), by operation id. Front-page views reach the store at most once per feed
/// cache period per instance.
pub(crate) fn operations_per_second(
    w: &Workload,
    azure: &Azure,
    rate: f64,
) -> BTreeMap<String, f64> {
    let per_second = |per_day: f64| per_day * rate / SECONDS_PER_DAY;
    let posts = per_second(w.posts_per_day);
    let comments = posts * w.comments_per_post;
    let likes = posts * w.likes_per_post;
    let renames = per_second(w.renames_per_day);
    let views = per_second(w.views_per_day);
    let m = &w.mix;
    let front = views * m.front;
    let executions = executions_per_second(w, rate);
    let feed_reads = if w.feed_cache_ms > 0.0 {
        let refreshes = 1000.0 / w.feed_cache_ms * instances(w, azure, executions) * w.tenants;
        front.min(refreshes)
    } else {
        front
    };
    let users = w.users.max(1.0);
    let posts_by_horizon = w.posts_after(w.horizon_days);
    let posts_renamed = renames * posts_by_horizon / users;
    let others_renamed =
        renames * posts_by_horizon * (w.comments_per_post + w.likes_per_post) / users;
    let mut ops = BTreeMap::new();
    let mut add = |id: &str, n: f64| {
        *ops.entry(id.to_owned()).or_insert(0.0) += n;
    };
    add("C1", renames);
    add("C2", posts);
    add("C3", comments);
    add("C4", likes);
    add("Q1", views * m.user);
    add("Q2", views * (m.post + m.likes));
    add("Q3", views * m.author);
    add("Q4", views * m.post);
    add("Q5", views * m.likes);
    add("Q6", feed_reads);
    add("Q7", views * m.users);
    add("Q8", views * m.tag);
    add("Q9", views * m.archive);
    for container in CONTAINERS {
        let copies = copies_per_change(w, container);
        add(&format!("C1.{container}"), renames * copies);
        add(&format!("C1.post.{container}"), posts_renamed * copies);
        add(&format!("C1.item.{container}"), others_renamed * copies);
        add(&format!("C2.{container}"), posts * copies);
        add(&format!("C3.{container}"), comments * copies);
        add(&format!("C4.{container}"), likes * copies);
    }
    ops
}

/// How many runs of a copy's row one change of a post makes in `container`: its rows are per
/// change, but those of `tags` per tag copy (a post's change rewrites its copy in each of its
/// tags' partitions, and the table measures one).
fn copies_per_change(w: &Workload, container: &str) -> f64 {
    if container == "tags" {
        w.tags_per_post
    } else {
        1.0
    }
}

/// Function executions per second at `rate` times the mean: every view and write is one
/// HTTP execution; every source change one change-feed execution at most (batches only
/// merge them), and a rename's fan-out one per batch of the items it rewrites.
pub(crate) fn executions_per_second(w: &Workload, rate: f64) -> f64 {
    let per_second = |per_day: f64| per_day * rate / SECONDS_PER_DAY;
    let writes = per_second(w.posts_per_day) * (1.0 + w.comments_per_post + w.likes_per_post);
    let renames = per_second(w.renames_per_day);
    let http = per_second(w.views_per_day) + writes + renames;
    let change_feed = writes + renames * (1.0 + w.items_per_user() / CHANGE_FEED_BATCH);
    http + change_feed
}

/// RU per second at `rate` times the mean, by operation id.
pub(crate) fn ru_per_second_by_operation(
    w: &Workload,
    azure: &Azure,
    costs: &BTreeMap<String, UnitCost>,
    rate: f64,
) -> BTreeMap<String, f64> {
    operations_per_second(w, azure, rate)
        .into_iter()
        .map(|(id, n)| {
            let ru = costs.get(&id).map_or(0.0, |c| c.ru);
            (id, n * ru)
        })
        .collect()
}

/// RU per second by container: `by_operation` (RU per second by operation id, as
/// [`ru_per_second_by_operation`] counts them) summed over the containers the RU land in.
pub(crate) fn ru_per_second_by_container(
    costs: &BTreeMap<String, UnitCost>,
    by_operation: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut by_container: BTreeMap<String, f64> = CONTAINERS
        .into_iter()
        .map(|c| (c.to_owned(), 0.0))
        .collect();
    for (id, ru) in by_operation {
        if let Some(cost) = costs.get(id) {
            *by_container.entry(cost.container.clone()).or_insert(0.0) += ru;
        }
    }
    by_container
}

/// Gigabytes per container after `days` of the workload (index overhead included).
pub fn storage_gb(w: &Workload, costs: &MeasuredCosts, days: f64) -> BTreeMap<String, f64> {
    let b = &costs.item_bytes;
    let posts = w.posts_after(days);
    let gb = |bytes: f64| bytes * (1.0 + INDEX_OVERHEAD) / 1e9;
    let feed_posts = posts.min(FEED_SIZE * w.tenants);
    BTreeMap::from([
        (
            "users".to_owned(),
            gb(w.users * b.user + posts * b.post_copy),
        ),
        (
            "posts".to_owned(),
            gb(posts * (b.post + w.comments_per_post * b.comment + w.likes_per_post * b.like)),
        ),
        ("feed".to_owned(), gb(feed_posts * b.post_copy)),
        ("leases".to_owned(), gb(LEASES_BYTES)),
        ("tags".to_owned(), gb(posts * w.tags_per_post * b.tag_copy)),
        // Each month's count and its copy in the index (two small items a month) are left
        // out: kilobytes a year.
        ("archive".to_owned(), gb(posts * b.archive_copy)),
    ])
}
