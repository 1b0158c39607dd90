//! The limits the design meets as a blog grows, and the walk that finds the first: the
//! workload is scaled up (users, posts, comments and likes per post, views, renames, all by
//! one factor) until one limit binds.

use std::collections::BTreeMap;

use serde::Serialize;

use super::bill::serverless_ceiling;
use super::data::{Azure, MeasuredCosts};
use super::model::{
    DAYS_PER_MONTH, HOT_POST_FACTOR, INDEX_OVERHEAD, SECONDS_PER_DAY, Tenancy, UnitCost, Workload,
    largest_share, ru_per_second_by_container, ru_per_second_by_operation, storage_gb,
};

/// What the walk scales, with the flag that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Figure {
    Users,
    Posts,
    Comments,
    Likes,
    Views,
    Renames,
}

impl Figure {
    pub const ALL: [Figure; 6] = [
        Figure::Users,
        Figure::Posts,
        Figure::Comments,
        Figure::Likes,
        Figure::Views,
        Figure::Renames,
    ];

    pub fn flag(self) -> &'static str {
        match self {
            Figure::Users => "--users",
            Figure::Posts => "--posts-per-day",
            Figure::Comments => "--comments-per-post",
            Figure::Likes => "--likes-per-post",
            Figure::Views => "--views-per-day",
            Figure::Renames => "--renames-per-day",
        }
    }

    pub fn of(self, w: &Workload) -> f64 {
        match self {
            Figure::Users => w.users,
            Figure::Posts => w.posts_per_day,
            Figure::Comments => w.comments_per_post,
            Figure::Likes => w.likes_per_post,
            Figure::Views => w.views_per_day,
            Figure::Renames => w.renames_per_day,
        }
    }

    /// The figure an operation's rate follows.
    fn driving(operation: &str) -> Figure {
        match operation
            .as_bytes()
            .first()
            .zip(operation.as_bytes().get(1))
        {
            Some((b'Q', _)) => Figure::Views,
            Some((b'C', b'1')) => Figure::Renames,
            Some((b'C', b'3')) => Figure::Comments,
            Some((b'C', b'4')) => Figure::Likes,
            _ => Figure::Posts,
        }
    }
}

/// The workload `s` times as large, per-post averages included.
pub(crate) fn grown(w: &Workload, s: f64) -> Workload {
    Workload {
        comments_per_post: w.comments_per_post * s,
        likes_per_post: w.likes_per_post * s,
        ..w.scaled(s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    FeedPartitionThroughput,
    MonthPartitionThroughput,
    TagPartitionThroughput,
    HotPostThroughput,
    AuthorPartitionThroughput,
    AuthorPartitionStorage,
    MonthPartitionStorage,
    TagPartitionStorage,
    HotPostStorage,
    ServerlessThroughput,
    ServerlessStorage,
}

impl LimitKind {
    pub const ALL: [LimitKind; 11] = [
        LimitKind::FeedPartitionThroughput,
        LimitKind::MonthPartitionThroughput,
        LimitKind::TagPartitionThroughput,
        LimitKind::HotPostThroughput,
        LimitKind::AuthorPartitionThroughput,
        LimitKind::AuthorPartitionStorage,
        LimitKind::MonthPartitionStorage,
        LimitKind::TagPartitionStorage,
        LimitKind::HotPostStorage,
        LimitKind::ServerlessThroughput,
        LimitKind::ServerlessStorage,
    ];

    pub fn what(self, azure: &Azure, tenancy: Tenancy) -> String {
        let l = &azure.limits;
        let ru = l.logical_partition_ru_s.value;
        let gb = l.logical_partition_gb.value;
        let (feed, month, tag) = match tenancy {
            Tenancy::Single => (
                "feed container's logical partition",
                "the month's logical partition in archive",
                "the most used tag's logical partition in tags",
            ),
            Tenancy::Multi => (
                "largest tenant's feed partition",
                "largest tenant's month partition in archive",
                "largest tenant's most used tag's partition in tags",
            ),
        };
        match self {
            LimitKind::FeedPartitionThroughput => format!("{feed}: {ru:.0} RU/s"),
            LimitKind::MonthPartitionThroughput => format!("{month}: {ru:.0} RU/s"),
            LimitKind::TagPartitionThroughput => format!("{tag}: {ru:.0} RU/s"),
            LimitKind::MonthPartitionStorage => format!("{month}: {gb:.0} GB"),
            LimitKind::TagPartitionStorage => format!("{tag}: {gb:.0} GB"),
            LimitKind::HotPostThroughput => {
                format!("a hot post's logical partition in posts: {ru:.0} RU/s")
            }
            LimitKind::AuthorPartitionThroughput => {
                format!("a prolific author's logical partition in users: {ru:.0} RU/s")
            }
            LimitKind::AuthorPartitionStorage => {
                format!("a prolific author's logical partition in users: {gb:.0} GB")
            }
            LimitKind::HotPostStorage => {
                format!("a hot post's logical partition in posts: {gb:.0} GB")
            }
            LimitKind::ServerlessThroughput => format!(
                "serverless's ceiling: {:.0} RU/s per container",
                l.serverless_container_ru_s.value
            ),
            LimitKind::ServerlessStorage => format!(
                "serverless's storage: {:.0} GB per container",
                l.serverless_container_gb.value
            ),
        }
    }

    pub fn then(self) -> &'static str {
        match self {
            LimitKind::FeedPartitionThroughput => {
                "keep the feed cache on (BLOG_FEED_CACHE_MS) or lengthen it: it bounds feed reads to one per period per instance; past that, split the feed: a feed per tenant (--tenancy multi) or several feed partitions written in turn and read together"
            }
            LimitKind::MonthPartitionThroughput => {
                "every post published this month has its copy in the month's one partition, rewritten with each comment and like: split the month under a hierarchical key (/month, /day) and read its days in turn, or keep the counts out of the archive's copies so that comments and likes no longer rewrite them"
            }
            LimitKind::TagPartitionThroughput => {
                "a tag's posts share its one partition, each copy rewritten with the post's comments and likes: split a busy tag under a hierarchical key (/tag, /month) and page its months in turn, or keep the counts out of the tags' copies"
            }
            LimitKind::MonthPartitionStorage => {
                "split the month under a hierarchical key (/month, /day)"
            }
            LimitKind::TagPartitionStorage => {
                "a tag's partition holds all its posts ever: split it under a hierarchical key (/tag, /year)"
            }
            LimitKind::HotPostThroughput => {
                "a post's writes share its partition (the combiner already batches them, up to 99 per batch); past 10,000 RU/s count likes and comments in sharded counters and let the post page read a kept copy"
            }
            LimitKind::AuthorPartitionThroughput => {
                "the author's post copies and Q3 share one partition of users: keep Q3's pages in a cache, and split a prolific author's copies under a hierarchical key (/userId, /year)"
            }
            LimitKind::AuthorPartitionStorage => {
                "split the post copies in users under a hierarchical key (/userId, /year), or keep only recent copies and page older posts from posts"
            }
            LimitKind::HotPostStorage => {
                "move a post's comments and likes under a hierarchical key (/postId, /bucket) so one post spans partitions"
            }
            LimitKind::ServerlessThroughput | LimitKind::ServerlessStorage => {
                "move to provisioned or autoscale throughput (a new account: serverless cannot be switched in place)"
            }
        }
    }
}

/// A limit's load over its capacity (1: reached), as the sum of each figure's share of it.
fn load(
    kind: LimitKind,
    w: &Workload,
    azure: &Azure,
    costs: &BTreeMap<String, UnitCost>,
    measured: &MeasuredCosts,
) -> BTreeMap<Figure, f64> {
    let l = &azure.limits;
    let partition_ru = l.logical_partition_ru_s.value;
    let partition_gb = l.logical_partition_gb.value;
    let peak = ru_per_second_by_operation(w, azure, costs, w.peak_factor);
    // Each operation's RU/s in `container` times its share that lands in the partition.
    let weighed = |container: &str, share: &dyn Fn(&str) -> f64, capacity: f64| {
        let mut by: BTreeMap<Figure, f64> = BTreeMap::new();
        for (id, ru) in &peak {
            if costs.get(id).is_some_and(|c| c.container == container) {
                *by.entry(Figure::driving(id)).or_insert(0.0) += ru * share(id) / capacity;
            }
        }
        by
    };
    let in_container =
        |container: &str, share: f64, capacity: f64| weighed(container, &|_| share, capacity);
    let bytes = &measured.item_bytes;
    let gb = |b: f64| b * (1.0 + INDEX_OVERHEAD) / 1e9;
    let author_share = largest_share(w.users / w.tenants.max(1.0)) * largest_share(w.tenants);
    // The feed, a month and a tag are one partition per blog: the largest tenant's in `multi`.
    let blog_share = match w.tenancy {
        Tenancy::Single => 1.0,
        Tenancy::Multi => largest_share(w.tenants),
    };
    // The most used tag is on every post at most: of the tag copies, its share is one per
    // post carrying tags (a blog about one subject, the bound).
    let tag_share = if w.tags_per_post > 0.0 {
        (1.0 / w.tags_per_post).min(1.0)
    } else {
        0.0
    };
    let posts = w.posts_per_day * w.horizon_days;
    match kind {
        LimitKind::FeedPartitionThroughput => in_container("feed", blog_share, partition_ru),
        // Every post of the month is in the month's partition (every comment and like lands on
        // a post of this month), and every month's page is read from it.
        LimitKind::MonthPartitionThroughput => in_container("archive", blog_share, partition_ru),
        // Every tag page reads the most used tag; its copies are its share of the tag copies.
        LimitKind::TagPartitionThroughput => weighed(
            "tags",
            &|id| blog_share * if id.starts_with('Q') { 1.0 } else { tag_share },
            partition_ru,
        ),
        LimitKind::MonthPartitionStorage => {
            let month = w.posts_per_day * w.horizon_days.min(DAYS_PER_MONTH);
            BTreeMap::from([(
                Figure::Posts,
                gb(month * blog_share * bytes.archive_copy) / partition_gb,
            )])
        }
        LimitKind::TagPartitionStorage => BTreeMap::from([(
            Figure::Posts,
            gb(posts * w.tags_per_post.min(1.0) * blog_share * bytes.tag_copy) / partition_gb,
        )]),
        LimitKind::HotPostThroughput => {
            // Its comments and likes arrive over its first day, at the day's shape; its
            // views are its share of the day's post views.
            let per_post =
                |per_day: f64| HOT_POST_FACTOR * per_day * w.peak_factor / SECONDS_PER_DAY;
            let ru = |id: &str| costs.get(id).map_or(0.0, |c| c.ru);
            let views = w.views_per_day / w.posts_per_day.max(1.0);
            let reads = per_post(views * (w.mix.post + w.mix.likes)) * ru("Q2")
                + per_post(views * w.mix.post) * ru("Q4")
                + per_post(views * w.mix.likes) * ru("Q5");
            BTreeMap::from([
                (
                    Figure::Comments,
                    per_post(w.comments_per_post) * (ru("C3") + ru("C3.posts")) / partition_ru,
                ),
                (
                    Figure::Likes,
                    per_post(w.likes_per_post) * (ru("C4") + ru("C4.posts")) / partition_ru,
                ),
                (Figure::Views, reads / partition_ru),
            ])
        }
        LimitKind::AuthorPartitionThroughput => in_container("users", author_share, partition_ru),
        LimitKind::AuthorPartitionStorage => BTreeMap::from([(
            Figure::Posts,
            gb(posts * author_share * bytes.post_copy) / partition_gb,
        )]),
        LimitKind::HotPostStorage => BTreeMap::from([
            (Figure::Posts, gb(bytes.post) / partition_gb),
            (
                Figure::Comments,
                gb(HOT_POST_FACTOR * w.comments_per_post * bytes.comment) / partition_gb,
            ),
            (
                Figure::Likes,
                gb(HOT_POST_FACTOR * w.likes_per_post * bytes.like) / partition_gb,
            ),
        ]),
        LimitKind::ServerlessThroughput => {
            // The container nearest its ceiling.
            let stored = storage_gb(w, measured, w.horizon_days);
            let by_container = ru_per_second_by_container(costs, &peak);
            let nearest = by_container
                .iter()
                .map(|(c, ru)| {
                    let ceiling = serverless_ceiling(azure, stored.get(c).copied().unwrap_or(0.0));
                    (c.clone(), ru / ceiling)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match nearest {
                Some((container, _)) => {
                    let ceiling =
                        serverless_ceiling(azure, stored.get(&container).copied().unwrap_or(0.0));
                    in_container(&container, 1.0, ceiling)
                }
                None => BTreeMap::new(),
            }
        }
        LimitKind::ServerlessStorage => {
            let capacity = l.serverless_container_gb.value;
            BTreeMap::from([
                (Figure::Posts, gb(posts * bytes.post) / capacity),
                (
                    Figure::Comments,
                    gb(posts * w.comments_per_post * bytes.comment) / capacity,
                ),
                (
                    Figure::Likes,
                    gb(posts * w.likes_per_post * bytes.like) / capacity,
                ),
            ])
        }
    }
}

/// Where a limit binds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reached {
    pub what: String,
    /// The limit's load today, as a share of it.
    pub load_now: f64,
    /// How many times today's workload reaches it (below 1: already past it).
    pub scale: Option<f64>,
    /// The flag whose load weighs most there, and its value there.
    pub flag: Option<&'static str>,
    pub value: Option<f64>,
    /// Every scaled figure at that point, by flag.
    pub workload: BTreeMap<&'static str, f64>,
    pub then: &'static str,
    #[serde(skip)]
    pub kind: Option<LimitKind>,
}

impl Reached {
    /// A ceiling of serverless accounts, not of the design.
    pub(crate) fn serverless_only(&self) -> bool {
        matches!(
            self.kind,
            Some(LimitKind::ServerlessThroughput | LimitKind::ServerlessStorage)
        )
    }
}

/// Each limit, where it binds, nearest first (those never reached last).
pub fn walk(
    w: &Workload,
    azure: &Azure,
    costs: &BTreeMap<String, UnitCost>,
    measured: &MeasuredCosts,
) -> Vec<Reached> {
    let ratio = |kind, s: f64| -> f64 {
        load(kind, &grown(w, s), azure, costs, measured)
            .values()
            .sum()
    };
    let mut reached: Vec<Reached> = LimitKind::ALL
        .into_iter()
        .map(|kind| {
            let scale = bisect(|s| ratio(kind, s) >= 1.0);
            let at = grown(w, scale.unwrap_or(1.0));
            let shares = load(kind, &at, azure, costs, measured);
            let flag = shares
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .filter(|_| scale.is_some())
                .map(|(figure, _)| *figure);
            Reached {
                what: kind.what(azure, w.tenancy),
                load_now: ratio(kind, 1.0),
                scale,
                flag: flag.map(Figure::flag),
                value: flag.map(|f| f.of(&at)),
                workload: match scale {
                    Some(_) => Figure::ALL
                        .into_iter()
                        .map(|f| (f.flag(), f.of(&at)))
                        .collect(),
                    None => BTreeMap::new(),
                },
                then: kind.then(),
                kind: Some(kind),
            }
        })
        .collect();
    reached.sort_by(|a, b| {
        let key = |r: &Reached| r.scale.unwrap_or(f64::MAX);
        key(a).total_cmp(&key(b))
    });
    reached
}

/// The smallest scale in [1e-9, 1e9] at which `binds` holds (it must hold from some scale
/// on), found on a log scale.
fn bisect(binds: impl Fn(f64) -> bool) -> Option<f64> {
    let (mut low, mut high) = (-9.0_f64, 9.0_f64);
    if !binds(10f64.powf(high)) {
        return None;
    }
    if binds(10f64.powf(low)) {
        return Some(10f64.powf(low));
    }
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if binds(10f64.powf(middle)) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Some(10f64.powf(high))
}

/// Whether a limit of the design itself (not of a mode) is past at today's workload.
pub(crate) fn design_limit_past(reached: &[Reached]) -> Option<&Reached> {
    reached
        .iter()
        .find(|r| r.scale.is_some_and(|s| s <= 1.0) && !r.serverless_only())
}
