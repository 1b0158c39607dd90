//! `--tenants N`: the two data layouts compared on the same multi-tenant data.
//!
//! The skewed data set of [`crate::tenants`] is loaded into a `single` store and a `multi`
//! store, and the operations a tenant's user makes — the case study's ten, Q7, the views' reads
//! (Q8 a tag's posts, Q9 a month's posts, the author's drafts), a new post's copies and views
//! (what each write costs beside itself), and a rename with the username fan-out that follows
//! it — run in both, through a [`MeteredStore`], on the
//! same targets. In `multi` they run in the tenant's view ([`TenantStore`]), as the API runs
//! them. Reported per operation and layout: requests, logical partitions, the scope of its
//! queries (one partition, across all partitions, or a prefix), the logical partitions that
//! scope covers, items read and written, latency; and on the Cosmos DB emulator, whose
//! containers have physical partitions, where the SDK sent the queries and the RU charged.
//! The report's section is written by [`crate::layouts_report`].
//!
//! [`TenantStore`]: cosmos_blog::store::tenant::TenantStore

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use cosmos_blog::blog::{Blog, ListRequest, PageSize};
use cosmos_blog::copies::{Source, rebuild};
use cosmos_blog::domain::{
    Comment, CommentContent, Like, Month, Post, PostContent, PostId, Tag, TenantId, Title, User,
    UserId, Username,
};
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, PartitionKeyValue, Store, Tenancy, tenant};
use indicatif::ProgressBar;
use testkit::metered::{MeteredStore, Metrics, meter};

use crate::invariants::{self, Check};
use crate::routing::{QueryRouting, Routed, partitioned_store};
use crate::stats::Latencies;
use crate::tenants::{TenantsConfig, TenantsData, load};

mod measure;
use measure::{checked, profile, walks};

const MIN_SAMPLES: usize = 3;
const WARM_UP: usize = 3;
pub const LAYOUTS: [Tenancy; 2] = [Tenancy::Single, Tenancy::Multi];

/// A store under test and, on the emulator, the observer of its requests.
type Observed = (Arc<dyn Store>, Option<Arc<QueryRouting>>);

#[derive(Debug, Clone)]
pub struct LayoutsConfig {
    pub users: usize,
    pub tenants: usize,
    pub seed: u64,
    /// Measured runs per operation and layout (at most).
    pub samples: usize,
    /// Time allowed per operation and layout; at least `MIN_SAMPLES` runs are made anyway.
    pub budget: Duration,
    pub progress: bool,
    /// Users of the smaller data set loaded into the Cosmos DB emulator (0: no emulator run).
    pub emulator_users: usize,
    /// Physical partitions of each emulator container.
    pub physical_partitions: u32,
}

/// What a tenant's user does, in the report's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayoutOp {
    C1,
    Q1,
    C2,
    /// `OnPostChanged` after C2: the copies of the new post (the author's partition, the
    /// feed, and the views: its tags and its month), the extra cost of each write.
    PostCopies,
    Q2,
    Q3,
    /// Q8: a tag's posts, from the `tags` view.
    Q8,
    /// Q9: a month's posts, from the `archive` view.
    Q9,
    /// The author's own drafts and scheduled posts.
    Drafts,
    C3,
    Q4,
    C4,
    Q5,
    Q6,
    Q7,
    /// C1 on an existing user with a new username: the API's part of a rename.
    Rename,
    /// `OnUserChanged` after the rename: every post, comment and like of the user renamed.
    UsernameFanOut,
}

impl LayoutOp {
    pub fn label(self) -> &'static str {
        match self {
            LayoutOp::C1 => "C1 create a user",
            LayoutOp::Q1 => "Q1 a user",
            LayoutOp::C2 => "C2 create a post",
            LayoutOp::Q2 => "Q2 a post",
            LayoutOp::Q3 => "Q3 a user's posts",
            LayoutOp::C3 => "C3 comment",
            LayoutOp::Q4 => "Q4 a post's comments",
            LayoutOp::C4 => "C4 like",
            LayoutOp::Q5 => "Q5 a post's likes",
            LayoutOp::Q6 => "Q6 the feed",
            LayoutOp::Q7 => "Q7 the tenant's users (first page)",
            LayoutOp::Q8 => "Q8 a tag's posts",
            LayoutOp::Q9 => "Q9 a month's posts",
            LayoutOp::Drafts => "a user's drafts",
            LayoutOp::PostCopies => "OnPostChanged: a new post's copies and views",
            LayoutOp::Rename => "C1 rename a user",
            LayoutOp::UsernameFanOut => "OnUserChanged: the username fan-out",
        }
    }

    /// The container that this operation's cross-partition or prefix queries search.
    fn searched(self) -> Option<Container> {
        match self {
            LayoutOp::Q7 => Some(Container::Users),
            LayoutOp::UsernameFanOut => Some(Container::Posts),
            _ => None,
        }
    }

    /// The order of the runs: queries on the data as loaded, then the commands, C2 before
    /// C3/C4 (which work on C2's posts). A rename runs the fan-out after it.
    const RUN_ORDER: [LayoutOp; 15] = [
        LayoutOp::Q1,
        LayoutOp::Q2,
        LayoutOp::Q3,
        LayoutOp::Q8,
        LayoutOp::Q9,
        LayoutOp::Drafts,
        LayoutOp::Q4,
        LayoutOp::Q5,
        LayoutOp::Q6,
        LayoutOp::Q7,
        LayoutOp::C1,
        LayoutOp::C2,
        LayoutOp::C3,
        LayoutOp::C4,
        LayoutOp::Rename,
    ];
}

/// Mean cost of one run of an operation in one layout.
#[derive(Debug, Clone)]
pub struct LayoutRow {
    pub op: LayoutOp,
    pub layout: Tenancy,
    pub samples: usize,
    pub requests: f64,
    /// Distinct logical partitions addressed, plus those of the items that cross-partition
    /// and prefix queries returned.
    pub partitions: f64,
    pub fan_out_queries: f64,
    pub prefix_queries: f64,
    /// Logical partitions of the searched container under the scope of those queries: all
    /// of them (across all partitions) or the tenant's (prefix); `None` without such queries.
    pub in_scope: Option<f64>,
    pub items_read: f64,
    pub items_written: f64,
    pub answer_items: f64,
    /// Mean RU per run, when the backend reports RU.
    pub request_units: Option<f64>,
    /// On the emulator: the query requests the SDK sent, and the distinct physical
    /// partitions they went to.
    pub routed: Option<(f64, f64)>,
    pub p50: Duration,
    pub p99: Duration,
}

impl LayoutRow {
    pub fn get(rows: &[LayoutRow], op: LayoutOp, layout: Tenancy) -> Option<&LayoutRow> {
        rows.iter().find(|r| r.op == op && r.layout == layout)
    }
}

/// Q7 page by page through one tenant's users (`single`: the whole blog's, its nearest
/// equivalent: `single` has no tenants).
#[derive(Debug, Clone)]
pub struct UsersWalk {
    pub layout: Tenancy,
    pub tenant: Option<TenantId>,
    pub listed: usize,
    pub pages: usize,
    pub requests_per_page: f64,
    pub partitions_per_page: f64,
    pub fan_out: bool,
    pub prefix: bool,
    /// On the emulator: the query requests of the whole walk, and the distinct physical
    /// partitions they went to.
    pub routed: Option<Routed>,
}

/// One backend's comparison: the same data in both layouts.
pub struct BackendRun {
    pub backend: String,
    /// The data set (identical in both layouts; checked).
    pub data: TenantsData,
    /// Load and rebuild times of each layout.
    pub loads: Vec<(Tenancy, Duration, Duration)>,
    pub rows: Vec<LayoutRow>,
    pub walks: Vec<UsersWalk>,
    /// `verify` in each layout, after loading and after the profile (copies rebuilt).
    pub checks: Vec<(String, Check)>,
}

impl BackendRun {
    pub fn holds(&self) -> bool {
        self.checks.iter().all(|(_, check)| check.report.holds())
    }
}

pub struct LayoutsReport {
    pub config: LayoutsConfig,
    pub embedded: BackendRun,
    pub emulator: Option<BackendRun>,
}

impl LayoutsReport {
    pub fn holds(&self) -> bool {
        self.embedded.holds() && self.emulator.as_ref().is_none_or(BackendRun::holds)
    }
}

/// One layout's store under test: the operations go through `metered`, the set-up and the
/// checks straight to `store`.
struct Subject {
    layout: Tenancy,
    store: Arc<dyn Store>,
    metered: MeteredStore,
    blogs: HashMap<TenantId, Blog>,
    routing: Option<Arc<QueryRouting>>,
}

/// What one run cost.
struct Measured {
    metrics: Metrics,
    routed: Option<Routed>,
}

impl Subject {
    fn new(
        layout: Tenancy,
        store: Arc<dyn Store>,
        data: &TenantsData,
        routing: Option<Arc<QueryRouting>>,
    ) -> Self {
        let metered = meter(Arc::clone(&store));
        let through: Arc<dyn Store> = Arc::new(metered.clone());
        let whole = Blog::new(Arc::clone(&through));
        let blogs = data
            .tenants
            .iter()
            .map(|t| {
                let blog = match layout {
                    Tenancy::Single => whole.clone(),
                    Tenancy::Multi => Blog::new(tenant::scoped(&through, &t.id)),
                };
                (t.id.clone(), blog)
            })
            .collect();
        Self {
            layout,
            store,
            metered,
            blogs,
            routing,
        }
    }

    fn blog(&self, tenant: &TenantId) -> anyhow::Result<&Blog> {
        self.blogs
            .get(tenant)
            .ok_or_else(|| anyhow::anyhow!("no tenant {tenant}"))
    }

    fn take(&self) -> Measured {
        Measured {
            metrics: self.metered.take(),
            routed: self.routing.as_ref().map(|r| r.take()),
        }
    }

    /// The item `id` of `container` as the change feed delivers it: from the store itself,
    /// so in `multi` with its `tenantId`.
    async fn read_document(
        &self,
        container: Container,
        tenant: &TenantId,
        id: &str,
    ) -> anyhow::Result<serde_json::Value> {
        let pk = match self.layout {
            Tenancy::Single => PartitionKey::single(id),
            Tenancy::Multi => PartitionKey::hierarchical(vec![
                PartitionKeyValue::String(tenant.as_str().to_owned()),
                PartitionKeyValue::String(id.to_owned()),
            ])?,
        };
        self.store
            .read_item(container, &pk, id)
            .await?
            .map(|d| d.item)
            .ok_or_else(|| anyhow::anyhow!("{id} of {tenant} is missing"))
    }
}

/// What run `i` of an operation works on; the same in both layouts.
struct Target {
    tenant: usize,
    user: UserId,
    post: PostId,
    /// The tag (Q8) and the month (Q9) of a published post of the tenant.
    tag: Option<Tag>,
    month: Option<Month>,
    /// A user id that does not exist yet (C1), or the new username's suffix (rename).
    fresh: String,
}

/// Draws targets uniformly over the users and posts of all tenants, so that the large
/// tenants are drawn more often, as their users make more requests.
struct Targets<'a> {
    data: &'a TenantsData,
    users: Vec<(usize, usize)>,
    posts: Vec<(usize, usize)>,
    tagged: Vec<(usize, usize)>,
    drafted: Vec<(usize, usize)>,
    with_comments: Vec<(usize, usize)>,
    with_likes: Vec<(usize, usize)>,
}

impl<'a> Targets<'a> {
    fn new(data: &'a TenantsData) -> Self {
        let users = data
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(t, tenant)| (0..tenant.users.len()).map(move |u| (t, u)))
            .collect();
        let posts: Vec<(usize, usize)> = data
            .tenants
            .iter()
            .enumerate()
            .flat_map(|(t, tenant)| (0..tenant.posts.len()).map(move |p| (t, p)))
            .collect();
        let post = |(t, p): (usize, usize)| &data.tenants[t].posts[p];
        Self {
            data,
            with_comments: crate::generate::having(&posts, |at| post(at).comments > 0),
            with_likes: crate::generate::having(&posts, |at| post(at).likes > 0),
            tagged: crate::generate::having(&posts, |at| {
                post(at).is_published() && !post(at).tags.is_empty()
            }),
            drafted: crate::generate::having(&posts, |at| !post(at).is_published()),
            users,
            posts: crate::generate::having(&posts, |at| post(at).is_published()),
        }
    }

    fn target(
        &self,
        rng: &mut fastrand::Rng,
        op: LayoutOp,
        i: usize,
        created: &[(usize, PostId)],
    ) -> Target {
        let tenants = &self.data.tenants;
        let (ut, u) = self.users[rng.usize(..self.users.len())];
        let pool = match op {
            LayoutOp::Q4 => &self.with_comments,
            LayoutOp::Q5 => &self.with_likes,
            LayoutOp::Q8 if !self.tagged.is_empty() => &self.tagged,
            LayoutOp::Drafts if !self.drafted.is_empty() => &self.drafted,
            _ => &self.posts,
        };
        let (pt, p) = pool[rng.usize(..pool.len())];
        let fresh = format!("bench-{i:06}");
        let drawn = &tenants[pt].posts[p];
        let tag = drawn.tags.first().cloned();
        let month = drawn.month;
        match op {
            // In the drawn post's tenant: its tag, its month, or its author's drafts.
            LayoutOp::Q8 | LayoutOp::Q9 | LayoutOp::Drafts => Target {
                tenant: pt,
                user: drawn.author.clone(),
                post: drawn.post_id.clone(),
                tag,
                month,
                fresh,
            },
            // On the posts this layout's C2 made, by a user of the post's tenant; for C4,
            // distinct (liker, post) pairs as long as there are some.
            LayoutOp::C3 | LayoutOp::C4 if !created.is_empty() => {
                let (t, post) = &created[i % created.len()];
                let members = &tenants[*t].users;
                let liker = if op == LayoutOp::C4 {
                    (i / created.len()) % members.len()
                } else {
                    rng.usize(..members.len())
                };
                Target {
                    tenant: *t,
                    user: members[liker].clone(),
                    post: post.clone(),
                    tag,
                    month,
                    fresh,
                }
            }
            LayoutOp::Q2 | LayoutOp::Q4 | LayoutOp::Q5 | LayoutOp::C3 | LayoutOp::C4 => {
                let members = &tenants[pt].users;
                Target {
                    tenant: pt,
                    user: members[rng.usize(..members.len())].clone(),
                    post: tenants[pt].posts[p].post_id.clone(),
                    tag,
                    month,
                    fresh,
                }
            }
            _ => Target {
                tenant: ut,
                user: tenants[ut].users[u].clone(),
                post: tenants[pt].posts[p].post_id.clone(),
                tag,
                month,
                fresh,
            },
        }
    }
}

/// One measured step of a run.
struct Step {
    op: LayoutOp,
    measured: Measured,
    answer: usize,
    latency: Duration,
}

/// Runs `op` once on `target`; a rename is two steps, the command and the fan-out.
async fn run_once(
    subject: &Subject,
    data: &TenantsData,
    op: LayoutOp,
    target: &Target,
    created: &mut Vec<(usize, PostId)>,
) -> anyhow::Result<Vec<Step>> {
    let tenant = &data.tenants[target.tenant].id;
    let blog = subject.blog(tenant)?;
    subject.take();
    let begun = Instant::now();
    let answer = match op {
        LayoutOp::C1 => {
            let user = UserId::parse(&target.fresh)?;
            let name = Username::parse(&format!("new {}", target.fresh))?;
            blog.put_user(&user, user.clone(), name).await?;
            1
        }
        LayoutOp::Q1 => blog.get_user(&target.user).await.map(|_| 1)?,
        LayoutOp::C2 => {
            let title = Title::parse("benchmark post")?;
            let content = PostContent::parse(&"benchmark content ".repeat(40))?;
            let post = blog.create_post(&target.user, title, content).await?;
            created.push((target.tenant, post.post_id));
            1
        }
        LayoutOp::Q2 => blog.get_post(&target.post).await.map(|_| 1)?,
        LayoutOp::Q3 => blog
            .user_posts::<Post>(&target.user, ListRequest::first(PageSize::DEFAULT))
            .await?
            .items
            .len(),
        LayoutOp::C3 => {
            let content = CommentContent::parse("a benchmark comment")?;
            blog.add_comment(&target.user, &target.post, content)
                .await
                .map(|_| 1)?
        }
        LayoutOp::Q4 => blog
            .comments::<Comment>(&target.post, None, ListRequest::first(PageSize::DEFAULT))
            .await?
            .items
            .len(),
        LayoutOp::C4 => blog
            .like_post(&target.user, &target.post)
            .await
            .map(|_| 1)?,
        LayoutOp::Q5 => blog
            .likes::<Like>(&target.post, None, ListRequest::first(PageSize::DEFAULT))
            .await?
            .items
            .len(),
        LayoutOp::Q6 => blog.feed(PageSize::MAX).await?.len(),
        LayoutOp::Q7 => blog
            .list_users::<User>(ListRequest::first(PageSize::DEFAULT))
            .await?
            .items
            .len(),
        LayoutOp::Q8 => {
            let tag = target
                .tag
                .as_ref()
                .context("no tagged post to draw a tag from")?;
            blog.tag_posts::<Post>(tag, ListRequest::first(PageSize::DEFAULT))
                .await?
                .items
                .len()
        }
        LayoutOp::Q9 => {
            let month = target.month.as_ref().context("no published post")?;
            blog.month_posts::<Post>(month, ListRequest::first(PageSize::DEFAULT))
                .await?
                .items
                .len()
        }
        LayoutOp::Drafts => blog
            .user_drafts::<Post>(&target.user, ListRequest::first(PageSize::DEFAULT))
            .await?
            .items
            .len(),
        LayoutOp::Rename => {
            let name = Username::parse(&format!("renamed {}", target.fresh))?;
            blog.put_user(&target.user, target.user.clone(), name)
                .await?;
            1
        }
        LayoutOp::UsernameFanOut => anyhow::bail!("the fan-out runs after a rename"),
        LayoutOp::PostCopies => anyhow::bail!("the copies are made after a C2"),
    };
    let mut steps = vec![Step {
        op,
        measured: subject.take(),
        answer,
        latency: begun.elapsed(),
    }];
    if op == LayoutOp::C2 {
        // What the change feed then delivers for the new post, handled as the pump would:
        // the copies in the author's partition and the feed, and the tag and month views.
        let (_, post) = created.last().context("C2 made a post")?;
        let document = subject
            .read_document(Container::Posts, tenant, post.as_str())
            .await?;
        steps.push(copies_of(subject, Source::Posts, document).await?);
    }
    if op == LayoutOp::Rename {
        // What the change feed then delivers, handled as the pump or the trigger would.
        let document = subject
            .read_document(Container::Users, tenant, target.user.as_str())
            .await?;
        steps.push(copies_of(subject, Source::Users, document).await?);
    }
    Ok(steps)
}

/// The change-feed handler of `source` on `document`, measured: the rename's fan-out, or a
/// new post's copies and views.
async fn copies_of(
    subject: &Subject,
    source: Source,
    document: serde_json::Value,
) -> anyhow::Result<Step> {
    let through: Arc<dyn Store> = Arc::new(subject.metered.clone());
    subject.take();
    let begun = Instant::now();
    let report = source.handle(&through, &[document]).await?;
    anyhow::ensure!(
        report.skipped.is_empty(),
        "{source:?} skipped {:?}",
        report.skipped
    );
    let op = match source {
        Source::Users => LayoutOp::UsernameFanOut,
        Source::Posts => LayoutOp::PostCopies,
    };
    Ok(Step {
        op,
        measured: subject.take(),
        answer: 0,
        latency: begun.elapsed(),
    })
}

/// Loads the data set into the two stores, profiles both, checks both.
async fn compare(
    backend: String,
    stores: Vec<Observed>,
    tenants: &TenantsConfig,
    config: &LayoutsConfig,
    log: impl Fn(&str) + Copy,
) -> anyhow::Result<BackendRun> {
    let mut loaded: Option<TenantsData> = None;
    let mut loads = Vec::new();
    let mut checks = Vec::new();
    let mut subjects = Vec::new();
    for (store, routing) in stores {
        let layout = store.tenancy();
        log(&format!(
            "{backend}: loading {} users over {} tenants into the {layout} layout",
            tenants.users, tenants.tenants
        ));
        let data = load(&store, tenants).await?;
        loads.push((layout, data.load_time, data.rebuild_time));
        checks.push(checked(&store, layout, "after loading", config.progress).await?);
        if let Some(first) = &loaded {
            anyhow::ensure!(
                first.same_data(&data),
                "the layouts were loaded differently"
            );
        }
        subjects.push(Subject::new(layout, store, &data, routing));
        loaded.get_or_insert(data);
    }
    let data = loaded.ok_or_else(|| anyhow::anyhow!("no layout to compare"))?;
    log(&format!("{backend}: Q7 page by page"));
    let walks = walks(&subjects, &data).await?;
    log(&format!(
        "{backend}: profiling the operations in both layouts"
    ));
    let rows = profile(&subjects, &data, config).await?;
    for subject in &subjects {
        // The profile's posts, comments, likes and renames reach the copies as the change
        // feed would bring them; then everything must hold again.
        rebuild(&subject.store).await?;
        checks.push(
            checked(
                &subject.store,
                subject.layout,
                "after the profile (copies rebuilt)",
                config.progress,
            )
            .await?,
        );
    }
    Ok(BackendRun {
        backend,
        data,
        loads,
        rows,
        walks,
        checks,
    })
}

/// The comparison on the embedded store in `dir` and, unless `emulator_users` is 0, on the
/// Cosmos DB emulator with a smaller data set.
pub async fn run(
    config: &LayoutsConfig,
    dir: &std::path::Path,
    log: impl Fn(&str) + Copy,
) -> anyhow::Result<LayoutsReport> {
    let tenants = TenantsConfig {
        users: config.users,
        tenants: config.tenants,
        seed: config.seed,
        progress: config.progress,
    };
    let mut stores: Vec<Observed> = Vec::new();
    for layout in LAYOUTS {
        let path = dir.join(format!("layouts-{layout}.sqlite3"));
        // The walks and the checks count what the run itself loaded and made.
        anyhow::ensure!(
            !path.exists(),
            "{} exists: the layout comparison needs fresh stores (another --data-dir, or remove it)",
            path.display()
        );
        stores.push((Arc::new(EmbeddedStore::open_with(&path, layout)?), None));
    }
    let embedded = compare("embedded".into(), stores, &tenants, config, log).await?;

    let emulator = if config.emulator_users == 0 {
        None
    } else {
        let users = config.emulator_users.clamp(config.tenants, config.users);
        let mut stores: Vec<Observed> = Vec::new();
        for layout in LAYOUTS {
            let routing = Arc::new(QueryRouting::default());
            let store =
                partitioned_store(layout, config.physical_partitions, Arc::clone(&routing)).await?;
            stores.push((store, Some(routing)));
        }
        let backend = format!(
            "Cosmos DB emulator, {} physical partitions per container",
            config.physical_partitions
        );
        let small = TenantsConfig { users, ..tenants };
        Some(compare(backend, stores, &small, config, log).await?)
    };
    Ok(LayoutsReport {
        config: config.clone(),
        embedded,
        emulator,
    })
}
