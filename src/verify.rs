//! `verify`: the `fsck` of the product. It scans a store and checks every invariant of the
//! V3 model (SPEC 3) that the denormalised copies promise:
//!
//! - each post's `commentCount` and `likeCount` equal its comments and likes;
//! - every post, comment and like in `posts` carries its author's current username, and its
//!   author exists (the API refuses writes by a caller without a user item, so an item whose
//!   author is missing was not written through it);
//! - every like's id is the one derived from its liker (one like per user per post);
//! - `users` holds exactly one short copy of each post, in its author's partition, equal to
//!   the source's short form ([`Post::short`]), and no copy whose source is gone;
//! - `feed` holds exactly the most recent min(100, number of posts) posts, each equal to its
//!   short form;
//! - deletes have been carried out: a deleted post (a tombstone) has no comment, like or copy
//!   left, and nothing an erased user wrote before their erasure is left but tombstones.
//!
//! The scan is not a snapshot: run it when writes have settled (the change feed has caught
//! up), or a copy that is merely late shows as a violation. It reads every container in pages
//! of cross-partition queries (Cosmos DB refuses cross-partition aggregates, so it counts
//! itself) and keeps, per post, its counts, author, creation date and a hash of its short
//! form; never the comments, likes or copies themselves.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::blog::{FEED_SIZE, feed_partition};
use crate::domain::{
    Comment, Deleted, Like, LikeId, Post, TenantId, Timestamp, Tombstone, User, is_a,
};
use crate::store::{Container, Pages, Query, Store, StoreResult, Tenancy, tenant};

/// Items asked for per page of the scan (Cosmos DB's cap on a page).
const PAGE_SIZE: u32 = 1_000;
/// Violations kept in the report; the rest are only counted (per kind).
pub const MAX_RECORDED: usize = 1_000;
/// How often (in items scanned) the progress callback is called.
pub const PROGRESS_EVERY: usize = 10_000;

/// What an invariant violation is about. [`ViolationKind::code`] is its stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// An item that does not read as its type (or has no known type).
    UnreadableItem,
    /// A post whose `commentCount` or `likeCount` differs from its comments or likes.
    CountMismatch,
    /// A post, comment or like whose `userUsername` is not its author's current username.
    StaleUsername,
    /// A post, comment or like whose author has no user item.
    UnknownAuthor,
    /// A comment or like whose post does not exist.
    OrphanItem,
    /// A like whose id is not the one derived from its liker.
    LikeIdMismatch,
    /// A post with no copy in its author's partition of `users`.
    MissingUserCopy,
    /// A copy of a post in another user's partition of `users`.
    MisplacedUserCopy,
    /// A copy in `users` whose post does not exist.
    OrphanUserCopy,
    /// A copy in `users` that differs from its post's short form.
    UserCopyDiffers,
    /// A post that belongs in the feed (one of the most recent) and is not in it.
    MissingFromFeed,
    /// A post in the feed although more recent posts are left out.
    OldPostInFeed,
    /// A feed item beyond the feed's bound of 100.
    FeedOverBound,
    /// A feed item whose post does not exist.
    OrphanFeedCopy,
    /// A feed item that differs from its post's short form.
    FeedCopyDiffers,
    /// A comment or like of a deleted post, or an item an erased user wrote before the
    /// erasure: something a delete should have removed.
    LeftAfterDelete,
}

impl ViolationKind {
    pub fn code(self) -> &'static str {
        match self {
            Self::UnreadableItem => "unreadable-item",
            Self::CountMismatch => "count-mismatch",
            Self::StaleUsername => "stale-username",
            Self::UnknownAuthor => "unknown-author",
            Self::OrphanItem => "orphan-item",
            Self::LikeIdMismatch => "like-id-mismatch",
            Self::MissingUserCopy => "missing-user-copy",
            Self::MisplacedUserCopy => "misplaced-user-copy",
            Self::OrphanUserCopy => "orphan-user-copy",
            Self::UserCopyDiffers => "user-copy-differs",
            Self::MissingFromFeed => "missing-from-feed",
            Self::OldPostInFeed => "old-post-in-feed",
            Self::FeedOverBound => "feed-over-bound",
            Self::OrphanFeedCopy => "orphan-feed-copy",
            Self::FeedCopyDiffers => "feed-copy-differs",
            Self::LeftAfterDelete => "left-after-delete",
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// One broken invariant, about one item: the offending item, or for something missing, the
/// source item that lacks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    pub container: Container,
    /// The item's partition key value.
    pub partition: String,
    pub id: String,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{}/{}: {}",
            self.kind,
            self.container.name(),
            self.partition,
            self.id,
            self.detail
        )
    }
}

/// Items read, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    pub users: usize,
    pub posts: usize,
    pub comments: usize,
    pub likes: usize,
    pub user_copies: usize,
    pub feed_items: usize,
    /// Tombstones of deleted posts and erasure markers of deleted accounts.
    pub tombstones: usize,
    /// Items of no known type (also reported as violations).
    pub other: usize,
}

impl Scanned {
    fn add(&mut self, other: &Scanned) {
        self.users += other.users;
        self.posts += other.posts;
        self.comments += other.comments;
        self.likes += other.likes;
        self.user_copies += other.user_copies;
        self.feed_items += other.feed_items;
        self.tombstones += other.tombstones;
        self.other += other.other;
    }

    pub fn total(&self) -> usize {
        self.users
            + self.posts
            + self.comments
            + self.likes
            + self.user_copies
            + self.feed_items
            + self.tombstones
            + self.other
    }
}

impl fmt::Display for Scanned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} users, {} posts, {} comments, {} likes, {} post copies in users, {} feed items",
            self.users, self.posts, self.comments, self.likes, self.user_copies, self.feed_items
        )?;
        if self.tombstones > 0 {
            write!(f, ", {} tombstones", self.tombstones)?;
        }
        if self.other > 0 {
            write!(f, ", {} items of unknown type", self.other)?;
        }
        Ok(())
    }
}

/// The outcome of a scan.
#[derive(Debug, Default, Clone)]
pub struct VerifyReport {
    pub scanned: Scanned,
    /// The first [`MAX_RECORDED`] violations, in the order found.
    pub violations: Vec<Violation>,
    /// All violations, recorded or not.
    pub total_violations: usize,
    pub by_kind: BTreeMap<ViolationKind, usize>,
}

impl VerifyReport {
    /// Whether every invariant holds.
    pub fn holds(&self) -> bool {
        self.total_violations == 0
    }

    /// One line per violation, the first `max` of them, then how many more there are.
    pub fn violation_lines(&self, max: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .violations
            .iter()
            .take(max)
            .map(ToString::to_string)
            .collect();
        let shown = lines.len();
        if self.total_violations > shown {
            let by_kind = self
                .by_kind
                .iter()
                .map(|(kind, n)| format!("{kind}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            lines.push(format!(
                "... and {} more violations (all violations by kind: {by_kind})",
                self.total_violations - shown
            ));
        }
        lines
    }

    /// The one-line verdict.
    pub fn verdict(&self) -> String {
        if self.holds() {
            format!("verify: OK, every invariant holds ({})", self.scanned)
        } else {
            format!(
                "verify: FAILED, {} violations ({})",
                self.total_violations, self.scanned
            )
        }
    }

    /// The violations of `kind` among those recorded.
    pub fn of_kind(&self, kind: ViolationKind) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.kind == kind)
    }

    /// Adds a tenant's report, its violations named by their key in the `multi` store.
    fn merge(&mut self, part: VerifyReport, tenant: &TenantId) {
        self.scanned.add(&part.scanned);
        self.total_violations += part.total_violations;
        for (kind, n) in part.by_kind {
            *self.by_kind.entry(kind).or_default() += n;
        }
        let room = MAX_RECORDED.saturating_sub(self.violations.len());
        self.violations
            .extend(part.violations.into_iter().take(room).map(|mut violation| {
                violation.partition = format!("[{:?}, {:?}]", tenant.as_str(), violation.partition);
                violation
            }));
    }

    fn record(&mut self, violation: Violation) {
        self.total_violations += 1;
        *self.by_kind.entry(violation.kind).or_default() += 1;
        if self.violations.len() < MAX_RECORDED {
            self.violations.push(violation);
        }
    }
}

/// Where a scan is, for progress lines on a large store.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// The container being scanned.
    pub container: Container,
    pub scanned: Scanned,
    pub violations: usize,
}

/// Scans `store` and checks every invariant (see the module documentation).
pub async fn verify(store: &Arc<dyn Store>) -> StoreResult<VerifyReport> {
    verify_with_progress(store, &mut |_| {}).await
}

/// [`verify`], calling `progress` every [`PROGRESS_EVERY`] items scanned. A `multi` store is
/// checked tenant by tenant: each tenant is a V3 model of its own.
pub async fn verify_with_progress(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> StoreResult<VerifyReport> {
    if store.tenancy() == Tenancy::Single {
        return verify_model(store, progress).await;
    }
    let mut report = VerifyReport::default();
    for tenant in tenant::tenants(&**store).await? {
        let part = verify_model(&tenant::scoped(store, &tenant), progress).await?;
        report.merge(part, &tenant);
    }
    Ok(report)
}

/// Checks one V3 model: the whole of a `single` store, or one tenant's view.
async fn verify_model(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> StoreResult<VerifyReport> {
    let mut scan = Scan {
        store,
        progress,
        next_progress: PROGRESS_EVERY,
        report: VerifyReport::default(),
        usernames: HashMap::new(),
        erasures: HashMap::new(),
        posts: HashMap::new(),
    };
    scan.users().await?;
    scan.posts().await?;
    scan.user_copies().await?;
    scan.feed().await?;
    Ok(scan.report)
}

/// What the scan keeps of one post partition.
#[derive(Default)]
struct PostTally {
    source: Option<Source>,
    comments: u64,
    likes: u64,
    /// A comment or like seen before (or without) its post, to name it if the post is missing.
    orphan_example: Option<String>,
    /// The post was deleted: a tombstone holds its place.
    deleted: bool,
}

/// What the scan keeps of a post item.
struct Source {
    author: String,
    created: Timestamp,
    comment_count: u64,
    like_count: u64,
    /// Hash of the canonical JSON of [`Post::short`]: a copy must hash the same.
    short_hash: u64,
    has_user_copy: bool,
}

/// A feed item, for the checks that need the whole feed.
struct FeedEntry {
    id: String,
    /// The copy's date: what the feed query orders by.
    created: Timestamp,
    /// The source's date, if the source exists.
    source_created: Option<Timestamp>,
    differs: bool,
}

struct Scan<'a> {
    store: &'a Arc<dyn Store>,
    progress: &'a mut (dyn FnMut(&Progress) + Send),
    next_progress: usize,
    report: VerifyReport,
    /// userId -> current username.
    usernames: HashMap<String, String>,
    /// userId -> when their account was erased (from its erasure marker).
    erasures: HashMap<String, Timestamp>,
    /// postId -> tally.
    posts: HashMap<String, PostTally>,
}

impl Scan<'_> {
    /// Every item of `container` matching `query`, a page at a time, into `each`.
    async fn pages(
        &mut self,
        container: Container,
        query: Query,
        mut each: impl FnMut(&mut Self, Value),
    ) -> StoreResult<()> {
        let store = self.store;
        let mut pages = Pages::new(&**store, container, &query, PAGE_SIZE);
        while let Some(items) = pages.next().await? {
            for item in items {
                each(self, item);
            }
            self.note_progress(container);
        }
        Ok(())
    }

    fn note_progress(&mut self, container: Container) {
        let scanned = self.report.scanned;
        if scanned.total() >= self.next_progress {
            self.next_progress = (scanned.total() / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
            (self.progress)(&Progress {
                container,
                scanned,
                violations: self.report.total_violations,
            });
        }
    }

    fn violation(
        &mut self,
        kind: ViolationKind,
        container: Container,
        partition: &str,
        id: &str,
        detail: String,
    ) {
        self.report.record(Violation {
            kind,
            container,
            partition: partition.to_owned(),
            id: id.to_owned(),
            detail,
        });
    }

    fn unreadable(&mut self, container: Container, item: &Value, pk_field: &str, why: String) {
        let text = |field: &str| {
            item.get(field)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        };
        let (partition, id) = (text(pk_field), text("id"));
        self.violation(
            ViolationKind::UnreadableItem,
            container,
            &partition,
            &id,
            why,
        );
    }

    // ---- users: who is called what -----------------------------------------------------

    async fn users(&mut self) -> StoreResult<()> {
        let query = Query::cross_partition().of_type(User::TYPE);
        self.pages(Container::Users, query, |scan, item| {
            scan.report.scanned.users += 1;
            match User::deserialize(&item) {
                Ok(user) if user.id == user.user_id => {
                    scan.usernames
                        .insert(user.user_id.to_string(), user.username);
                }
                Ok(_) => scan.unreadable(
                    Container::Users,
                    &item,
                    "userId",
                    "a user item's id must equal its userId".into(),
                ),
                Err(why) => {
                    scan.unreadable(Container::Users, &item, "userId", format!("user: {why}"))
                }
            }
        })
        .await?;
        let markers = Query::cross_partition().of_type(Tombstone::TYPE);
        self.pages(Container::Users, markers, |scan, item| {
            scan.report.scanned.tombstones += 1;
            match Tombstone::deserialize(&item) {
                Ok(marker) if marker.of == Deleted::User => {
                    scan.erasures
                        .insert(marker.user_id.to_string(), marker.deleted_at);
                }
                Ok(_) => scan.unreadable(
                    Container::Users,
                    &item,
                    "userId",
                    "a post tombstone in users".into(),
                ),
                Err(why) => scan.unreadable(
                    Container::Users,
                    &item,
                    "userId",
                    format!("erasure marker: {why}"),
                ),
            }
        })
        .await
    }

    // ---- posts: sources, counts, usernames ---------------------------------------------

    async fn posts(&mut self) -> StoreResult<()> {
        self.pages(Container::Posts, Query::cross_partition(), Self::posts_item)
            .await?;
        let mut problems = Vec::new();
        for (post_id, tally) in &self.posts {
            match &tally.source {
                Some(source)
                    if source.comment_count != tally.comments
                        || source.like_count != tally.likes =>
                {
                    problems.push((
                        ViolationKind::CountMismatch,
                        post_id.clone(),
                        post_id.clone(),
                        format!(
                            "commentCount {} but {} comments, likeCount {} but {} likes",
                            source.comment_count, tally.comments, source.like_count, tally.likes
                        ),
                    ));
                }
                Some(_) => {}
                None if tally.deleted && tally.comments == 0 && tally.likes == 0 => {}
                None if tally.deleted => problems.push((
                    ViolationKind::LeftAfterDelete,
                    post_id.clone(),
                    tally.orphan_example.clone().unwrap_or_default(),
                    format!(
                        "{} comments and {} likes of deleted post {post_id} are left",
                        tally.comments, tally.likes
                    ),
                )),
                None => problems.push((
                    ViolationKind::OrphanItem,
                    post_id.clone(),
                    tally.orphan_example.clone().unwrap_or_default(),
                    format!(
                        "{} comments and {} likes of post {post_id}, which does not exist",
                        tally.comments, tally.likes
                    ),
                )),
            }
        }
        problems.sort();
        for (kind, partition, id, detail) in problems {
            self.violation(kind, Container::Posts, &partition, &id, detail);
        }
        Ok(())
    }

    fn posts_item(&mut self, item: Value) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            Post::TYPE => {
                self.report.scanned.posts += 1;
                match Post::deserialize(&item) {
                    Ok(post) if post.id == post.post_id => self.source_post(post),
                    Ok(_) => self.unreadable(
                        Container::Posts,
                        &item,
                        "postId",
                        "a post's id must equal its postId".into(),
                    ),
                    Err(why) => {
                        self.unreadable(Container::Posts, &item, "postId", format!("post: {why}"))
                    }
                }
            }
            Comment::TYPE => {
                self.report.scanned.comments += 1;
                match Comment::deserialize(&item) {
                    Ok(comment) => {
                        let (post_id, id) = (comment.post_id.to_string(), comment.id.to_string());
                        self.check_author(
                            &post_id,
                            &id,
                            Comment::TYPE,
                            comment.user_id.as_str(),
                            &comment.user_username,
                            comment.creation_date,
                        );
                        self.child(post_id, id).comments += 1;
                    }
                    Err(why) => self.unreadable(
                        Container::Posts,
                        &item,
                        "postId",
                        format!("comment: {why}"),
                    ),
                }
            }
            Like::TYPE => {
                self.report.scanned.likes += 1;
                match Like::deserialize(&item) {
                    Ok(like) => self.like(like),
                    Err(why) => {
                        self.unreadable(Container::Posts, &item, "postId", format!("like: {why}"))
                    }
                }
            }
            Tombstone::TYPE => {
                self.report.scanned.tombstones += 1;
                match Tombstone::deserialize(&item) {
                    Ok(Tombstone {
                        of: Deleted::Post,
                        post_id: Some(post_id),
                        ..
                    }) => self.posts.entry(post_id.to_string()).or_default().deleted = true,
                    Ok(_) => self.unreadable(
                        Container::Posts,
                        &item,
                        "postId",
                        "a tombstone in posts must be a post's".into(),
                    ),
                    Err(why) => self.unreadable(
                        Container::Posts,
                        &item,
                        "postId",
                        format!("tombstone: {why}"),
                    ),
                }
            }
            other => {
                self.report.scanned.other += 1;
                self.unreadable(
                    Container::Posts,
                    &item,
                    "postId",
                    format!("unknown item type {other:?}"),
                );
            }
        }
    }

    fn source_post(&mut self, post: Post) {
        let id = post.id.to_string();
        self.check_author(
            &id,
            &id,
            Post::TYPE,
            post.user_id.as_str(),
            &post.user_username,
            post.creation_date,
        );
        let source = Source {
            author: post.user_id.to_string(),
            created: post.creation_date,
            comment_count: post.comment_count,
            like_count: post.like_count,
            short_hash: serde_json::to_value(post.short())
                .map(|short| canonical_hash(&short))
                .unwrap_or_default(),
            has_user_copy: false,
        };
        self.posts.entry(id).or_default().source = Some(source);
    }

    fn like(&mut self, like: Like) {
        let (post_id, id) = (like.post_id.to_string(), like.id.to_string());
        self.check_author(
            &post_id,
            &id,
            Like::TYPE,
            like.user_id.as_str(),
            &like.user_username,
            like.creation_date,
        );
        let expected = LikeId::for_liker(&like.user_id);
        if like.id != expected {
            self.violation(
                ViolationKind::LikeIdMismatch,
                Container::Posts,
                &post_id,
                &id,
                format!(
                    "the like of {} should have id {expected}",
                    like.user_id.as_str()
                ),
            );
        }
        self.child(post_id, id).likes += 1;
    }

    /// The tally of a comment's or like's post, remembering the child while the post is unseen.
    fn child(&mut self, post_id: String, child_id: String) -> &mut PostTally {
        let tally = self.posts.entry(post_id).or_default();
        if tally.source.is_none() && tally.orphan_example.is_none() {
            tally.orphan_example = Some(child_id);
        }
        tally
    }

    fn check_author(
        &mut self,
        partition: &str,
        id: &str,
        item_type: &str,
        user_id: &str,
        carried: &str,
        created: Timestamp,
    ) {
        if self
            .erasures
            .get(user_id)
            .is_some_and(|erased| created <= *erased)
        {
            self.violation(
                ViolationKind::LeftAfterDelete,
                Container::Posts,
                partition,
                id,
                format!("{item_type} by user {user_id:?}, written before their account was erased"),
            );
            return;
        }
        match self.usernames.get(user_id) {
            None => self.violation(
                ViolationKind::UnknownAuthor,
                Container::Posts,
                partition,
                id,
                format!("{item_type} by user {user_id:?}, who has no user item"),
            ),
            Some(current) if current != carried => {
                let detail = format!(
                    "{item_type} carries username {carried:?}; user {user_id:?} is {current:?}"
                );
                self.violation(
                    ViolationKind::StaleUsername,
                    Container::Posts,
                    partition,
                    id,
                    detail,
                );
            }
            Some(_) => {}
        }
    }

    // ---- users: the post copies --------------------------------------------------------

    async fn user_copies(&mut self) -> StoreResult<()> {
        // Every item of `users`: user items were read before; anything else is checked here.
        self.pages(Container::Users, Query::cross_partition(), Self::users_item)
            .await?;
        let mut missing: Vec<(String, String)> = self
            .posts
            .iter()
            .filter_map(|(id, tally)| {
                let source = tally.source.as_ref()?;
                (!source.has_user_copy).then(|| (id.clone(), source.author.clone()))
            })
            .collect();
        missing.sort();
        for (id, author) in missing {
            self.violation(
                ViolationKind::MissingUserCopy,
                Container::Posts,
                &id,
                &id,
                format!("no copy in users/{author}"),
            );
        }
        Ok(())
    }

    fn users_item(&mut self, item: Value) {
        match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            // Read (and counted) before.
            User::TYPE | Tombstone::TYPE => {}
            Post::TYPE => {
                self.report.scanned.user_copies += 1;
                match Post::deserialize(&item) {
                    Ok(copy) => self.user_copy(&copy, &item),
                    Err(why) => self.unreadable(
                        Container::Users,
                        &item,
                        "userId",
                        format!("post copy: {why}"),
                    ),
                }
            }
            other => {
                self.report.scanned.other += 1;
                self.unreadable(
                    Container::Users,
                    &item,
                    "userId",
                    format!("unknown item type {other:?}"),
                );
            }
        }
    }

    fn user_copy(&mut self, copy: &Post, item: &Value) {
        // The copy's partition is its userId (the container's partition key).
        let (partition, id) = (copy.user_id.to_string(), copy.id.to_string());
        let source = self.posts.get_mut(&id).and_then(|t| t.source.as_mut());
        let (kind, detail) = match source {
            None => (
                ViolationKind::OrphanUserCopy,
                format!("post {id} does not exist"),
            ),
            Some(source) if source.author != partition => (
                ViolationKind::MisplacedUserCopy,
                format!("post {id} is by {:?}, not by {partition:?}", source.author),
            ),
            Some(source) => {
                source.has_user_copy = true;
                if source.short_hash == canonical_hash(item) {
                    return;
                }
                (
                    ViolationKind::UserCopyDiffers,
                    format!("differs from the short form of post {id}"),
                )
            }
        };
        self.violation(kind, Container::Users, &partition, &id, detail);
    }

    // ---- feed ----------------------------------------------------------------------------

    async fn feed(&mut self) -> StoreResult<()> {
        let mut entries = Vec::new();
        // No ORDER BY: Cosmos DB leaves out items that lack the sort field; order in memory.
        let query = Query::in_partition(feed_partition());
        self.pages(Container::Feed, query, |scan, item| {
            if !is_a::<Post>(&item) {
                scan.report.scanned.other += 1;
                scan.unreadable(Container::Feed, &item, "type", "not a post copy".into());
                return;
            }
            scan.report.scanned.feed_items += 1;
            match Post::deserialize(&item) {
                Ok(copy) => {
                    let source = scan
                        .posts
                        .get(copy.id.as_str())
                        .and_then(|t| t.source.as_ref());
                    entries.push(FeedEntry {
                        id: copy.id.to_string(),
                        created: copy.creation_date,
                        source_created: source.map(|s| s.created),
                        differs: source.is_some_and(|s| s.short_hash != canonical_hash(&item)),
                    });
                }
                Err(why) => {
                    scan.unreadable(Container::Feed, &item, "type", format!("post copy: {why}"))
                }
            }
        })
        .await?;
        self.check_feed(entries);
        Ok(())
    }

    /// The feed must hold the `expected` = min(100, posts) most recent posts. "Most recent"
    /// is by `creationDate`, the field the feed query orders by (copies carry it in the
    /// canonical format, where string order is time order). That query does not say how it
    /// orders posts with the same `creationDate` (the embedded store by id, Cosmos DB as it
    /// pleases), so posts tied at the boundary are interchangeable: the feed must hold every
    /// post newer than the boundary date, and fill the rest with posts of exactly that date.
    fn check_feed(&mut self, mut entries: Vec<FeedEntry>) {
        let feed = Container::Feed;
        let pk = Post::TYPE;
        // The feed query's order: creationDate descending (ties: by id, as the embedded store).
        entries.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.id.cmp(&a.id)));
        let bound = FEED_SIZE as usize;
        for beyond in entries.iter().skip(bound) {
            let detail = format!(
                "the feed holds {} items, {} at most",
                entries.len(),
                FEED_SIZE
            );
            self.report.record(Violation {
                kind: ViolationKind::FeedOverBound,
                container: feed,
                partition: pk.to_owned(),
                id: beyond.id.clone(),
                detail,
            });
        }
        entries.truncate(bound);

        let mut dates: Vec<Timestamp> = self
            .posts
            .values()
            .filter_map(|t| t.source.as_ref().map(|s| s.created))
            .collect();
        let expected = dates.len().min(bound);
        let boundary = (expected > 0).then(|| {
            let (_, nth, _) = dates.select_nth_unstable_by(expected - 1, |a, b| b.cmp(a));
            *nth
        });

        let mut held = HashSet::new();
        let mut held_ties = 0;
        for entry in &entries {
            let (kind, detail) = match entry.source_created {
                None => (
                    ViolationKind::OrphanFeedCopy,
                    format!("post {} does not exist", entry.id),
                ),
                Some(created) => {
                    if boundary.is_some_and(|boundary| created >= boundary) {
                        held.insert(entry.id.as_str());
                        held_ties += usize::from(Some(created) == boundary);
                    } else {
                        let detail = format!(
                            "post of {created} is not among the {expected} most recent (the \
                             oldest of them is of {})",
                            boundary.map(|b| b.to_string()).unwrap_or_default()
                        );
                        self.violation(ViolationKind::OldPostInFeed, feed, pk, &entry.id, detail);
                    }
                    if !entry.differs {
                        continue;
                    }
                    (
                        ViolationKind::FeedCopyDiffers,
                        format!("differs from the short form of post {}", entry.id),
                    )
                }
            };
            self.violation(kind, feed, pk, &entry.id, detail);
        }
        let Some(boundary) = boundary else {
            return;
        };
        self.check_feed_holds_the_most_recent(boundary, expected, &held, held_ties);
    }

    /// Every post newer than `boundary` must be in the feed; of the posts dated exactly
    /// `boundary`, as many as there is room for among the `expected`.
    fn check_feed_holds_the_most_recent(
        &mut self,
        boundary: Timestamp,
        expected: usize,
        held: &HashSet<&str>,
        held_ties: usize,
    ) {
        let newer = self
            .posts
            .values()
            .filter(|t| t.source.as_ref().is_some_and(|s| s.created > boundary))
            .count();
        let ties_wanted = expected - newer;
        let mut missing: Vec<(Timestamp, String)> = self
            .posts
            .iter()
            .filter_map(|(id, t)| t.source.as_ref().map(|s| (s.created, id)))
            .filter(|(created, id)| *created >= boundary && !held.contains(id.as_str()))
            .filter(|(created, _)| *created > boundary || held_ties < ties_wanted)
            .map(|(created, id)| (created, id.clone()))
            .collect();
        missing.sort_by(|a, b| b.cmp(a));
        for (created, id) in missing {
            let detail = if created > boundary {
                format!("post of {created} is among the {expected} most recent")
            } else {
                format!(
                    "post of {created} ties with the oldest of the {expected} most recent; the \
                     feed holds {held_ties} of the {ties_wanted} of that date it should"
                )
            };
            self.violation(
                ViolationKind::MissingFromFeed,
                Container::Posts,
                &id,
                &id,
                detail,
            );
        }
    }
}

/// A hash of a JSON value that does not depend on the order of object fields, so that a copy
/// read back from the store compares with a short form built here.
fn canonical_hash(value: &Value) -> u64 {
    fn feed(value: &Value, state: &mut DefaultHasher) {
        match value {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => (1u8, b).hash(state),
            Value::Number(n) => (2u8, n.to_string()).hash(state),
            Value::String(s) => (3u8, s).hash(state),
            Value::Array(items) => {
                (4u8, items.len()).hash(state);
                items.iter().for_each(|item| feed(item, state));
            }
            Value::Object(fields) => {
                (5u8, fields.len()).hash(state);
                let mut names: Vec<&String> = fields.keys().collect();
                names.sort_unstable();
                for name in names {
                    name.hash(state);
                    feed(&fields[name], state);
                }
            }
        }
    }
    // `DefaultHasher::new` has fixed keys: the same value hashes the same within the scan.
    let mut state = DefaultHasher::new();
    feed(value, &mut state);
    state.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_field_order_but_not_values() {
        let a = json!({"a": 1, "b": {"x": "y", "z": [1, 2]}});
        let b: Value = serde_json::from_str(r#"{"b": {"z": [1, 2], "x": "y"}, "a": 1}"#).unwrap();
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        let c = json!({"a": 1, "b": {"x": "y", "z": [2, 1]}});
        assert_ne!(canonical_hash(&a), canonical_hash(&c));
        assert_ne!(
            canonical_hash(&json!({"a": "1"})),
            canonical_hash(&json!({"a": 1}))
        );
    }

    #[test]
    fn lines_show_the_first_violations_then_a_count() {
        let mut report = VerifyReport::default();
        for n in 0..5 {
            report.record(Violation {
                kind: ViolationKind::CountMismatch,
                container: Container::Posts,
                partition: format!("p{n}"),
                id: format!("p{n}"),
                detail: "x".into(),
            });
        }
        let lines = report.violation_lines(3);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "count-mismatch posts/p0/p0: x");
        assert!(
            lines[3].starts_with("... and 2 more violations"),
            "{}",
            lines[3]
        );
        assert!(!report.holds());
    }
}
