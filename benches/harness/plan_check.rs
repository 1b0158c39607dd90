//! `--only plan`: a day of a workload through the application on the emulator, the RU it
//! charged against what `cosmos-blog plan` predicts for the same workload from the checked-in
//! table (they must agree within ±10 %); and the chart of `docs/capacity.md`.

use std::fmt::Write as _;
use std::path::Path;

use cosmos_blog::plan::{
    Azure, CostPoint, MeasuredCosts, Mix, RuSource, Tenancy, Workload, plan, svg_chart,
};

use crate::markdown::table_head;
use crate::plan::{Rig, comment_text, post_text, prepare};

/// How far the measured RU may be from the prediction.
pub const TOLERANCE: f64 = 0.10;

/// The day: per user, 2 posts, each with 2 comments and 3 likes; 20 views; one rename.
const POSTS_PER_USER: usize = 2;
const COMMENTS_PER_POST: usize = 2;
const LIKES_PER_POST: usize = 3;
const VIEWS_PER_USER: usize = 20;

#[derive(Debug, Clone)]
pub struct PlanCheck {
    pub workload: Workload,
    /// RU the emulator charged for the day.
    pub measured_ru: f64,
    /// RU the planner predicts for it.
    pub predicted_ru: f64,
}

impl PlanCheck {
    pub fn difference(&self) -> f64 {
        self.measured_ru / self.predicted_ru.max(f64::MIN_POSITIVE) - 1.0
    }

    pub fn agrees(&self) -> bool {
        self.difference().abs() <= TOLERANCE
    }
}

/// The workload of a day for `users` users, in the planner's terms.
pub fn day_of(users: usize) -> Workload {
    let u = users as f64;
    Workload {
        users: u,
        posts_per_day: u * POSTS_PER_USER as f64,
        comments_per_post: COMMENTS_PER_POST as f64,
        likes_per_post: LIKES_PER_POST as f64,
        views_per_day: u * VIEWS_PER_USER as f64,
        renames_per_day: u,
        peak_factor: 1.0,
        regions: 1.0,
        horizon_days: 1.0,
        tenancy: Tenancy::Single,
        tenants: 1.0,
        mix: Mix::default(),
        feed_cache_ms: 0.0,
        function_ms: 20.0,
        instance_memory_mb: 2048.0,
        ru_source: RuSource::Measured,
    }
}

/// Runs the day and compares.
pub async fn validate(users: usize, seed: u64, log: impl Fn(&str)) -> anyhow::Result<PlanCheck> {
    let users = users.max(LIKES_PER_POST + 1);
    let workload = day_of(users);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut rig = Rig::start().await?;
    let ids = prepare(&mut rig, users, &mut rng).await?;
    log(&format!(
        "plan check: a day of {users} users on the emulator ({} posts, {} comments, {} likes, {} views, {} renames)",
        workload.posts_per_day,
        workload.posts_per_day * workload.comments_per_post,
        workload.posts_per_day * workload.likes_per_post,
        workload.views_per_day,
        workload.renames_per_day
    ));
    let mut posts = Vec::new();
    for k in 0..users * POSTS_PER_USER {
        posts.push(rig.post(&ids[k % users], &post_text(&mut rng)).await?);
        rig.drain().await?;
    }
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
    for view in views(&workload.mix, users, &ids, &posts, &mut rng) {
        for path in view {
            rig.get(&path).await?;
        }
    }
    for id in &ids {
        rig.put_user(id, &format!("{id} renamed")).await?;
        rig.drain().await?;
    }
    let measured_ru = rig.take_ru();
    rig.stop().await?;
    let azure = Azure::checked_in().map_err(anyhow::Error::msg)?;
    let costs = MeasuredCosts::checked_in().map_err(anyhow::Error::msg)?;
    let predicted_ru = plan(&workload, &azure, &costs).ru_per_day();
    Ok(PlanCheck {
        workload,
        measured_ru,
        predicted_ru,
    })
}

/// The day's views, split as `mix` says, as the API reads each view makes (a post's page: the
/// post and its comments; its likes: the post and its likes), the reads the planner prices.
fn views(
    mix: &Mix,
    users: usize,
    ids: &[String],
    posts: &[String],
    rng: &mut fastrand::Rng,
) -> Vec<Vec<String>> {
    let total = (users * VIEWS_PER_USER) as f64;
    let count = |share: f64| (total * share).round() as usize;
    let mut views = Vec::new();
    let post = |rng: &mut fastrand::Rng| posts[rng.usize(..posts.len())].clone();
    let user = |rng: &mut fastrand::Rng| ids[rng.usize(..ids.len())].clone();
    for _ in 0..count(mix.front) {
        views.push(vec!["/api/feed".to_owned()]);
    }
    for _ in 0..count(mix.post) {
        let id = post(rng);
        views.push(vec![
            format!("/api/posts/{id}"),
            format!("/api/posts/{id}/comments"),
        ]);
    }
    for _ in 0..count(mix.likes) {
        let id = post(rng);
        views.push(vec![
            format!("/api/posts/{id}"),
            format!("/api/posts/{id}/likes"),
        ]);
    }
    for _ in 0..count(mix.author) {
        views.push(vec![format!("/api/users/{}/posts", user(rng))]);
    }
    for _ in 0..count(mix.user) {
        views.push(vec![format!("/api/users/{}", user(rng))]);
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
        "A day of {} users through the application over HTTP, each change handed to its change-feed handler after the write: {} posts, {} comments, {} likes, {} views (the feed, a post with its comments, a post with its likes, an author's posts, a user, as the default mix, through the API), {} renames. `cosmos-blog plan` predicts the same day from the checked-in table (`--ru-source measured`, no feed cache).\n",
        w.users,
        w.posts_per_day,
        w.posts_per_day * w.comments_per_post,
        w.posts_per_day * w.likes_per_post,
        w.views_per_day,
        w.renames_per_day
    );
    table_head(
        out,
        "RU charged (emulator) | RU predicted (planner) | difference | within ±10 %",
    );
    let _ = writeln!(
        out,
        "| {:.1} | {:.1} | {:+.1} % | {} |",
        check.measured_ru,
        check.predicted_ru,
        check.difference() * 100.0,
        if check.agrees() { "yes" } else { "**no**" }
    );
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
