//! `--only plan`: a day of a workload through the application on the emulator, the RU it
//! charged and the bytes its views grew by against what `cosmos-blog plan` predicts for the
//! same workload from the checked-in table (they must agree within ±10 %); and the chart of
//! `docs/capacity.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use cosmos_blog::plan::{
    Azure, CostPoint, INDEX_OVERHEAD, MeasuredCosts, Mix, Plan, RuSource, Tenancy, Workload, plan,
    svg_chart,
};
use cosmos_blog::store::Container;

use crate::markdown::table_head;
use crate::plan::{Rig, comment_text, post_text, prepare, tags, this_month_posts};

/// How far each measured figure may be from the prediction.
pub const TOLERANCE: f64 = 0.10;

/// The day: per user, 2 posts, each with 2 comments, 3 likes and none to 3 tags; 20 views;
/// one rename.
const POSTS_PER_USER: usize = 2;
const COMMENTS_PER_POST: usize = 2;
const LIKES_PER_POST: usize = 3;
const MAX_TAGS_PER_POST: usize = 3;
const VIEWS_PER_USER: usize = 20;
/// The day's views: the default mix's pages, and a tag's and a month's posts.
const MIX: &str = "front=35,post=35,likes=5,author=10,user=5,tag=5,archive=5";

/// One figure of the day, charged against predicted.
#[derive(Debug, Clone)]
pub struct Compared {
    pub what: &'static str,
    pub measured: f64,
    pub predicted: f64,
}

impl Compared {
    pub fn difference(&self) -> f64 {
        self.measured / self.predicted.max(f64::MIN_POSITIVE) - 1.0
    }

    pub fn agrees(&self) -> bool {
        self.difference().abs() <= TOLERANCE
    }
}

#[derive(Debug, Clone)]
pub struct PlanCheck {
    pub workload: Workload,
    /// The day's RU in all, then the views' share of it (their copies, their reads), then
    /// the bytes their copies grew by.
    pub figures: Vec<Compared>,
}

impl PlanCheck {
    pub fn agrees(&self) -> bool {
        self.figures.iter().all(Compared::agrees)
    }
}

/// The workload of a day for `users` users whose posts carry `tags_per_post` tags on
/// average, in the planner's terms.
pub fn day_of(users: usize, tags_per_post: f64) -> anyhow::Result<Workload> {
    let u = users as f64;
    Ok(Workload {
        users: u,
        posts_per_day: u * POSTS_PER_USER as f64,
        comments_per_post: COMMENTS_PER_POST as f64,
        likes_per_post: LIKES_PER_POST as f64,
        tags_per_post,
        views_per_day: u * VIEWS_PER_USER as f64,
        renames_per_day: u,
        peak_factor: 1.0,
        regions: 1.0,
        horizon_days: 1.0,
        tenancy: Tenancy::Single,
        tenants: 1.0,
        mix: Mix::parse(MIX).map_err(anyhow::Error::msg)?,
        feed_cache_ms: 0.0,
        function_ms: 20.0,
        instance_memory_mb: 2048.0,
        ru_source: RuSource::Measured,
    })
}

/// RU by container and by view kind, summed over the day's takes.
#[derive(Default)]
struct Charged {
    by_container: BTreeMap<&'static str, f64>,
    by_view: BTreeMap<&'static str, f64>,
}

impl Charged {
    /// Adds what the rig charged since the last take, for the view `kind` if any.
    fn take(&mut self, rig: &Rig, kind: Option<&'static str>) {
        for (container, ru) in rig.take_ru() {
            *self.by_container.entry(container).or_default() += ru;
            if let Some(kind) = kind {
                *self.by_view.entry(kind).or_default() += ru;
            }
        }
    }

    fn total(&self) -> f64 {
        self.by_container.values().sum()
    }
}

/// Runs the day and compares.
pub async fn validate(users: usize, seed: u64, log: impl Fn(&str)) -> anyhow::Result<PlanCheck> {
    let users = users.max(LIKES_PER_POST + 1);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut rig = Rig::start().await?;
    let ids = prepare(&mut rig, users, &mut rng).await?;
    let views_before = view_bytes(&rig).await?;
    let mut charged = Charged::default();
    log(&format!(
        "plan check: a day of {users} users on the emulator ({} posts, {} comments, {} likes, {} views, {users} renames)",
        users * POSTS_PER_USER,
        users * POSTS_PER_USER * COMMENTS_PER_POST,
        users * POSTS_PER_USER * LIKES_PER_POST,
        users * VIEWS_PER_USER
    ));
    let mut posts = Vec::new();
    let mut used_tags = Vec::new();
    for k in 0..users * POSTS_PER_USER {
        let count = rng.usize(0..=MAX_TAGS_PER_POST);
        let tagged = tags(&mut rng, count);
        posts.push(
            rig.post(&ids[k % users], &post_text(&mut rng), &tagged)
                .await?,
        );
        rig.drain().await?;
        used_tags.extend(tagged);
    }
    let workload = day_of(users, used_tags.len() as f64 / posts.len() as f64)?;
    for (k, post) in posts.iter().enumerate() {
        for j in 0..COMMENTS_PER_POST {
            let commenter = &ids[(k + 1 + j) % users];
            rig.comment(commenter, post, &comment_text(&mut rng))
                .await?;
            rig.drain().await?;
        }
        for j in 0..LIKES_PER_POST {
            rig.like(&ids[(k + j) % users], post).await?;
            rig.drain().await?;
        }
    }
    charged.take(&rig, None);
    let day = Day {
        users: &ids,
        posts: &posts,
        tags: &used_tags,
    };
    for (kind, reads) in views(&workload.mix, &day, &mut rng) {
        for path in reads {
            rig.get(&path).await?;
        }
        charged.take(&rig, Some(kind));
    }
    for id in &ids {
        rig.put_user(id, &format!("{id} renamed")).await?;
        rig.drain().await?;
    }
    charged.take(&rig, None);
    let views_after = view_bytes(&rig).await?;
    rig.stop().await?;
    let azure = Azure::checked_in().map_err(anyhow::Error::msg)?;
    let costs = MeasuredCosts::checked_in().map_err(anyhow::Error::msg)?;
    let planned = plan(&workload, &azure, &costs);
    let in_container = |container: &str| charged.by_container.get(container).copied();
    let figures = vec![
        Compared {
            what: "RU, the whole day",
            measured: charged.total(),
            predicted: planned.ru_per_day(),
        },
        Compared {
            what: "RU in tags (the tag copies, Q8)",
            measured: in_container("tags").unwrap_or(0.0),
            predicted: predicted_in(&planned, "tags"),
        },
        Compared {
            what: "RU in archive (the month copies, Q9)",
            measured: in_container("archive").unwrap_or(0.0),
            predicted: predicted_in(&planned, "archive"),
        },
        Compared {
            what: "RU of the tag pages (Q8)",
            measured: charged.by_view.get("Q8").copied().unwrap_or(0.0),
            predicted: predicted_of(&planned, "Q8"),
        },
        Compared {
            what: "RU of the month pages (Q9)",
            measured: charged.by_view.get("Q9").copied().unwrap_or(0.0),
            predicted: predicted_of(&planned, "Q9"),
        },
        Compared {
            what: "bytes of the day's copies in tags",
            measured: views_after.0 - views_before.0,
            predicted: predicted_bytes(&planned, "tags"),
        },
        Compared {
            what: "bytes of the day's copies in archive",
            measured: views_after.1 - views_before.1,
            predicted: predicted_bytes(&planned, "archive"),
        },
    ];
    Ok(PlanCheck { workload, figures })
}

/// Bytes of the posts' copies in `tags` and in `archive`.
async fn view_bytes(rig: &Rig) -> anyhow::Result<(f64, f64)> {
    Ok((
        rig.copy_bytes(Container::Tags).await?,
        rig.copy_bytes(Container::Archive).await?,
    ))
}

/// The RU a day the planner puts in `container`.
fn predicted_in(planned: &Plan, container: &str) -> f64 {
    planned
        .operations
        .values()
        .filter(|line| line.cost.container == container)
        .map(|line| line.ru_per_day)
        .sum()
}

/// The RU a day the planner gives the operation `id`.
fn predicted_of(planned: &Plan, id: &str) -> f64 {
    planned
        .operations
        .get(id)
        .map_or(0.0, |line| line.ru_per_day)
}

/// The bytes of items the planner stores in `container` after the day (its gigabytes
/// without the index's share).
fn predicted_bytes(planned: &Plan, container: &str) -> f64 {
    let gb = planned
        .storage_gb
        .after
        .get(container)
        .copied()
        .unwrap_or(0.0);
    gb * 1e9 / (1.0 + INDEX_OVERHEAD)
}

/// What the day's views read from: its users, its posts and the tags they carry.
struct Day<'a> {
    users: &'a [String],
    posts: &'a [String],
    tags: &'a [String],
}

/// The day's views, split as `mix` says, each with the operation it is priced as where one
/// read is checked alone (`Q8`, `Q9`) and the API reads it makes (a post's page: the post and
/// its comments; its likes: the post and its likes), the reads the planner prices.
fn views(mix: &Mix, day: &Day<'_>, rng: &mut fastrand::Rng) -> Vec<(&'static str, Vec<String>)> {
    let total = (day.users.len() * VIEWS_PER_USER) as f64;
    let count = |share: f64| (total * share).round() as usize;
    let mut views = Vec::new();
    let pick = |rng: &mut fastrand::Rng, from: &[String]| from[rng.usize(..from.len())].clone();
    for _ in 0..count(mix.front) {
        views.push(("Q6", vec!["/api/feed".to_owned()]));
    }
    for _ in 0..count(mix.post) {
        let id = pick(rng, day.posts);
        views.push((
            "post",
            vec![
                format!("/api/posts/{id}"),
                format!("/api/posts/{id}/comments"),
            ],
        ));
    }
    for _ in 0..count(mix.likes) {
        let id = pick(rng, day.posts);
        views.push((
            "likes",
            vec![format!("/api/posts/{id}"), format!("/api/posts/{id}/likes")],
        ));
    }
    for _ in 0..count(mix.author) {
        views.push((
            "Q3",
            vec![format!("/api/users/{}/posts", pick(rng, day.users))],
        ));
    }
    for _ in 0..count(mix.user) {
        views.push(("Q1", vec![format!("/api/users/{}", pick(rng, day.users))]));
    }
    for _ in 0..count(mix.tag) {
        // A tag no post of the day carries is an empty list, read at the same cost.
        let tag = if day.tags.is_empty() {
            "rust".to_owned()
        } else {
            pick(rng, day.tags)
        };
        views.push(("Q8", vec![format!("/api/tags/{tag}/posts")]));
    }
    for _ in 0..count(mix.archive) {
        views.push(("Q9", vec![this_month_posts()]));
    }
    views
}

/// The phase's report.
pub fn markdown(out: &mut String, check: &PlanCheck) {
    let w = &check.workload;
    let _ = writeln!(
        out,
        "\n## The planner against the application (emulator's RU model)\n"
    );
    let _ = writeln!(
        out,
        "A day of {} users through the application over HTTP, each change handed to its change-feed handler after the write: {} posts carrying {:.2} tags on average, {} comments, {} likes, {} views (`--mix {MIX}`, each view as the API reads the planner prices for it), {} renames. `cosmos-blog plan` predicts the same day from the checked-in table (`--ru-source measured`, no feed cache).\n",
        w.users,
        w.posts_per_day,
        w.tags_per_post,
        w.posts_per_day * w.comments_per_post,
        w.posts_per_day * w.likes_per_post,
        w.views_per_day,
        w.renames_per_day
    );
    table_head(
        out,
        "figure | charged (emulator) | predicted (planner) | difference | within ±10 %",
    );
    for figure in &check.figures {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:+.1} % | {} |",
            figure.what,
            figure.measured,
            figure.predicted,
            figure.difference() * 100.0,
            if figure.agrees() { "yes" } else { "**no**" }
        );
    }
}

/// The chart of monthly Cosmos DB cost against users, for blogs shaped like the community
/// example of `docs/capacity.md` (every figure proportional to users).
pub fn write_chart(path: &Path) -> anyhow::Result<()> {
    let azure = Azure::checked_in().map_err(anyhow::Error::msg)?;
    let costs = MeasuredCosts::checked_in().map_err(anyhow::Error::msg)?;
    let points: Vec<CostPoint> = [10.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0]
        .into_iter()
        .map(|users| {
            let w = Workload::community(users);
            let bills = plan(&w, &azure, &costs).monthly_usd;
            CostPoint {
                users,
                serverless: bills
                    .serverless
                    .holds_peak
                    .then_some(bills.serverless.total),
                provisioned: bills.provisioned.total,
                autoscale: bills.autoscale.total,
            }
        })
        .collect();
    let svg = svg_chart(
        "Cosmos DB a month against users (10 views, 0.02 posts a user a day; 12 months of storage)",
        &points,
    );
    std::fs::write(path, svg).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}
