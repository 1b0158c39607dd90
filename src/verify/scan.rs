//! The full scan of `verify`: every container read once, in pages of cross-partition queries,
//! keeping per post only its counts, author, date and a hash of its short form (never the
//! comments, likes or copies themselves), then the shared checks ([`super::checks`]) over what
//! it kept. A `multi` store is scanned the same way, once: each item is handed to its tenant's
//! model by its `tenantId` (each tenant is a V3 model of its own), instead of finding the
//! tenants first and querying each again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::checks::{self, AuthorState, Authored, EntryPost, PostSummary, canonical_hash};
use super::views::ViewModel;
use super::{Explained, PROGRESS_EVERY, ScanProgress, Scanned, VerifyReport, Violation};
use crate::blog::{FEED_SIZE, SCHEDULE_TYPE, ScheduleEntry, feed_partition, schedule_partition};
use crate::copies::scheduled_tenants;
use crate::domain::{Comment, Deleted, Like, Post, TenantId, Timestamp, Tombstone, User, is_a};
use crate::store::{Container, Pages, Query, Store, StoreResult, Tenancy, tenant};

/// Items asked for per page of the scan (Cosmos DB's cap on a page).
const PAGE_SIZE: u32 = 1_000;

/// Scans `store` whole and checks every invariant.
pub(super) async fn scan(
    store: &Arc<dyn Store>,
    progress: &mut (dyn FnMut(&ScanProgress) + Send),
    explained: &Explained<'_>,
) -> StoreResult<VerifyReport> {
    let mut scan = Scan {
        store,
        progress,
        explained,
        next_progress: PROGRESS_EVERY,
        report: VerifyReport::default(),
        multi: store.tenancy() == Tenancy::Multi,
        models: BTreeMap::new(),
    };
    scan.users().await?;
    scan.whole_containers().await?;
    scan.feed().await?;
    scan.views().await?;
    Ok(scan.report)
}

/// The model an item belongs to: the whole store (`None`) or a tenant's.
type ModelKey = Option<TenantId>;

struct Scan<'a> {
    store: &'a Arc<dyn Store>,
    progress: &'a mut (dyn FnMut(&ScanProgress) + Send),
    /// Violations only counted: a change not yet applied will undo them.
    explained: &'a Explained<'a>,
    next_progress: usize,
    report: VerifyReport,
    multi: bool,
    models: BTreeMap<ModelKey, Model>,
}

/// What the scan keeps of one V3 model.
#[derive(Default)]
struct Model {
    /// userId -> current username.
    usernames: HashMap<String, String>,
    /// userId -> when their account was erased (from its erasure marker).
    erasures: HashMap<String, Timestamp>,
    /// postId -> tally.
    posts: HashMap<String, PostTally>,
    feed: Vec<FeedEntry>,
    views: ViewModel,
    /// postId -> the schedule entry the post needs (scheduled posts only).
    wanted_entries: HashMap<String, ScheduleEntry>,
    /// postId -> the schedule entry held.
    entries: HashMap<String, ScheduleEntry>,
    /// Whether the model's schedule holds any entry (`multi`: the directory must list it).
    has_schedule: bool,
}

/// What the scan keeps of one post partition.
#[derive(Default)]
struct PostTally {
    source: Option<PostSource>,
    comments: u64,
    likes: u64,
    /// A comment or like seen before (or without) its post, to name it if the post is missing.
    orphan_example: Option<String>,
    /// The post was deleted: a tombstone holds its place.
    deleted: bool,
}

struct PostSource {
    summary: PostSummary,
    has_user_copy: bool,
}

/// A feed item, for the checks that need the whole feed.
struct FeedEntry {
    id: String,
    /// The copy's date: what the feed query orders by.
    created: Timestamp,
    /// The source's date, if the source exists.
    source_created: Option<Timestamp>,
    /// What is wrong with the copy itself (no source, or not its source's short form).
    problem: Option<Violation>,
}

/// An item that does not read as its type.
fn unreadable(container: Container, item: &Value, pk_field: &str, why: String) -> Violation {
    let text = |field: &str| item.get(field).and_then(Value::as_str).unwrap_or("?");
    checks::unreadable(container, text(pk_field), text("id"), why)
}

impl Scan<'_> {
    /// Every item of `container` matching `query`, a page at a time, each with the model it
    /// belongs to, into `each`. An item of a `multi` store without a valid tenant is reported.
    async fn pages(
        &mut self,
        container: Container,
        query: Query,
        pk_field: &str,
        mut each: impl FnMut(&mut Model, &mut Scanned, Value) -> Vec<Violation>,
    ) -> StoreResult<()> {
        let store = self.store;
        let explained = self.explained;
        let mut pages = Pages::new(&**store, container, &query, PAGE_SIZE);
        while let Some(items) = pages.next().await? {
            for mut item in items {
                let key = if self.multi {
                    match tenant::take_tenant(&mut item) {
                        Some(tenant) => Some(tenant),
                        None => {
                            self.report.scanned.other += 1;
                            let why = "an item without a valid tenantId".to_owned();
                            let found = unreadable(container, &item, pk_field, why);
                            self.report.record_unless(None, found, explained);
                            continue;
                        }
                    }
                } else {
                    None
                };
                if !self.models.contains_key(&key) {
                    self.models.insert(key.clone(), Model::default());
                }
                let Some(model) = self.models.get_mut(&key) else {
                    continue;
                };
                for found in each(model, &mut self.report.scanned, item) {
                    self.report.record_unless(key.as_ref(), found, explained);
                }
            }
            self.note_progress(container);
        }
        Ok(())
    }

    /// Runs `check` on every model, in tenant order, recording what it finds.
    fn each_model(&mut self, mut check: impl FnMut(&mut Model) -> Vec<Violation>) {
        let explained = self.explained;
        for (key, model) in &mut self.models {
            for found in check(model) {
                self.report.record_unless(key.as_ref(), found, explained);
            }
        }
    }

    fn note_progress(&mut self, container: Container) {
        let scanned = self.report.scanned;
        if scanned.total() >= self.next_progress {
            self.next_progress = (scanned.total() / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
            (self.progress)(&ScanProgress {
                container,
                scanned,
                violations: self.report.total_violations,
            });
        }
    }

    // ---- users: who is called what, who was erased --------------------------------------

    async fn users(&mut self) -> StoreResult<()> {
        let query = Query::cross_partition().of_type(User::TYPE);
        self.pages(Container::Users, query, "userId", Model::user)
            .await?;
        let markers = Query::cross_partition().of_type(Tombstone::TYPE);
        self.pages(Container::Users, markers, "userId", Model::erasure)
            .await
    }

    // ---- posts, then the post copies in users --------------------------------------------

    /// The containers whose checks need the whole container seen first: `posts` (sources,
    /// counts, usernames), then every item of `users` for the post copies (user items were
    /// read before; anything else is checked here).
    async fn whole_containers(&mut self) -> StoreResult<()> {
        type Each = fn(&mut Model, &mut Scanned, Value) -> Vec<Violation>;
        type Check = fn(&mut Model) -> Vec<Violation>;
        let passes: [(Container, &str, Each, Check); 2] = [
            (
                Container::Posts,
                "postId",
                Model::posts_item,
                Model::partition_problems,
            ),
            (
                Container::Users,
                "userId",
                Model::users_item,
                Model::missing_user_copies,
            ),
        ];
        for (container, pk_field, each, check) in passes {
            self.pages(container, Query::cross_partition(), pk_field, each)
                .await?;
            self.each_model(check);
        }
        Ok(())
    }

    // ---- feed ----------------------------------------------------------------------------

    async fn feed(&mut self) -> StoreResult<()> {
        // No ORDER BY: Cosmos DB leaves out items that lack the sort field; order in memory.
        // In `multi` each tenant's feed is a partition of its own: read them all at once.
        let query = if self.multi {
            Query::cross_partition()
        } else {
            Query::in_partition(feed_partition())
        };
        self.pages(Container::Feed, query, "type", Model::feed_item)
            .await?;
        if !self.multi {
            let schedule = Query::in_partition(schedule_partition());
            self.pages(Container::Feed, schedule, "type", Model::feed_item)
                .await?;
        }
        self.each_model(Model::check_feed);
        self.each_model(Model::check_schedule);
        self.schedule_directory().await
    }

    /// In `multi`, every tenant with schedule entries is in the publisher's directory.
    async fn schedule_directory(&mut self) -> StoreResult<()> {
        let scheduling: Vec<TenantId> = self
            .models
            .iter()
            .filter(|(_, model)| model.has_schedule)
            .filter_map(|(tenant, _)| tenant.clone())
            .collect();
        if scheduling.is_empty() {
            return Ok(());
        }
        let listed = scheduled_tenants(&**self.store).await?;
        for tenant in scheduling.iter().filter(|t| !listed.contains(*t)) {
            let found = checks::tenant_not_in_schedule_directory(tenant);
            self.report
                .record_unless(Some(tenant), found, self.explained);
        }
        Ok(())
    }
}

impl Scan<'_> {
    // ---- the views: tags and archive -------------------------------------------------------

    async fn views(&mut self) -> StoreResult<()> {
        for (container, pk_field) in [(Container::Tags, "tag"), (Container::Archive, "month")] {
            let query = Query::cross_partition();
            self.pages(container, query, pk_field, |model, scanned, item| {
                scanned.view_items += 1;
                model.views.item(container, &item).into_iter().collect()
            })
            .await?;
        }
        self.each_model(|model| model.views.finish());
        Ok(())
    }
}

impl Model {
    fn user(&mut self, scanned: &mut Scanned, item: Value) -> Vec<Violation> {
        scanned.users += 1;
        let why = match User::deserialize(&item) {
            Ok(user) if user.id == user.user_id => {
                self.usernames
                    .insert(user.user_id.to_string(), user.username);
                return Vec::new();
            }
            Ok(_) => "a user item's id must equal its userId".to_owned(),
            Err(why) => format!("user: {why}"),
        };
        vec![unreadable(Container::Users, &item, "userId", why)]
    }

    fn erasure(&mut self, scanned: &mut Scanned, item: Value) -> Vec<Violation> {
        scanned.erasures += 1;
        let why = match Tombstone::deserialize(&item) {
            Ok(marker) if marker.of == Deleted::User => {
                self.erasures
                    .insert(marker.user_id.to_string(), marker.deleted_at);
                return Vec::new();
            }
            Ok(_) => "a post tombstone in users".to_owned(),
            Err(why) => format!("erasure marker: {why}"),
        };
        vec![unreadable(Container::Users, &item, "userId", why)]
    }

    /// Whether the author `authored` names is who the users read so far say.
    fn author_check(&self, authored: Authored<'_>) -> Option<Violation> {
        checks::author(&authored, &self.author_of(authored.user_id))
    }

    fn author_of(&self, user_id: &str) -> AuthorState<'_> {
        AuthorState {
            username: self.usernames.get(user_id).map(String::as_str),
            erased_at: self.erasures.get(user_id).copied(),
        }
    }

    fn posts_item(&mut self, scanned: &mut Scanned, item: Value) -> Vec<Violation> {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let why = match kind {
            Post::TYPE => {
                scanned.posts += 1;
                match Post::deserialize(&item) {
                    Ok(post) if post.id == post.post_id => return self.source_post(&post),
                    Ok(_) => "a post's id must equal its postId".to_owned(),
                    Err(why) => format!("post: {why}"),
                }
            }
            Comment::TYPE => {
                scanned.comments += 1;
                match Comment::deserialize(&item) {
                    Ok(comment) => return self.comment(&comment),
                    Err(why) => format!("comment: {why}"),
                }
            }
            Like::TYPE => {
                scanned.likes += 1;
                match Like::deserialize(&item) {
                    Ok(like) => return self.like(&like),
                    Err(why) => format!("like: {why}"),
                }
            }
            Tombstone::TYPE => {
                scanned.tombstones += 1;
                match Tombstone::deserialize(&item) {
                    Ok(Tombstone {
                        of: Deleted::Post,
                        post_id: Some(post_id),
                        ..
                    }) => {
                        self.posts.entry(post_id.to_string()).or_default().deleted = true;
                        return Vec::new();
                    }
                    Ok(_) => "a tombstone in posts must be a post's".to_owned(),
                    Err(why) => format!("tombstone: {why}"),
                }
            }
            other => {
                scanned.other += 1;
                format!("unknown item type {other:?}")
            }
        };
        vec![unreadable(Container::Posts, &item, "postId", why)]
    }

    fn source_post(&mut self, post: &Post) -> Vec<Violation> {
        let id = post.id.to_string();
        let found = self.author_check(post.into());
        self.views.expect(post);
        if let Some(entry) = ScheduleEntry::of(post) {
            self.wanted_entries.insert(id.clone(), entry);
        }
        self.posts.entry(id).or_default().source = Some(PostSource {
            summary: PostSummary::of(post),
            has_user_copy: false,
        });
        found.into_iter().collect()
    }

    fn comment(&mut self, comment: &Comment) -> Vec<Violation> {
        let found = self.author_check(comment.into());
        self.child(comment.post_id.as_str(), comment.id.as_str())
            .comments += 1;
        found.into_iter().collect()
    }

    fn like(&mut self, like: &Like) -> Vec<Violation> {
        let mut found: Vec<Violation> = self.author_check(like.into()).into_iter().collect();
        found.extend(checks::like_id(like));
        self.child(like.post_id.as_str(), like.id.as_str()).likes += 1;
        found
    }

    /// The tally of a comment's or like's post, remembering the child while the post is unseen.
    fn child(&mut self, post_id: &str, child_id: &str) -> &mut PostTally {
        let tally = self.posts.entry(post_id.to_owned()).or_default();
        if tally.source.is_none() && tally.orphan_example.is_none() {
            tally.orphan_example = Some(child_id.to_owned());
        }
        tally
    }

    /// Each post partition as a whole: counts against children, children without a post.
    fn partition_problems(&mut self) -> Vec<Violation> {
        let mut found: Vec<Violation> = self
            .posts
            .iter()
            .filter_map(|(post_id, tally)| match &tally.source {
                Some(source) => {
                    checks::counts(post_id, &source.summary, tally.comments, tally.likes)
                }
                None => checks::children_without_post(
                    post_id,
                    tally.deleted,
                    tally.comments,
                    tally.likes,
                    tally.orphan_example.as_deref().unwrap_or_default(),
                ),
            })
            .collect();
        found.sort_by(|a, b| (a.kind, &a.partition, &a.id).cmp(&(b.kind, &b.partition, &b.id)));
        found
    }

    fn users_item(&mut self, scanned: &mut Scanned, item: Value) -> Vec<Violation> {
        let why = match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            // Read (and counted) before.
            User::TYPE | Tombstone::TYPE => return Vec::new(),
            // An image's item: its bytes are checked against the image store apart.
            crate::images::IMAGE_TYPE => return Vec::new(),
            Post::TYPE => {
                scanned.user_copies += 1;
                match Post::deserialize(&item) {
                    Ok(copy) => return self.user_copy(&copy, &item).into_iter().collect(),
                    Err(why) => format!("post copy: {why}"),
                }
            }
            other => {
                scanned.other += 1;
                format!("unknown item type {other:?}")
            }
        };
        vec![unreadable(Container::Users, &item, "userId", why)]
    }

    fn user_copy(&mut self, copy: &Post, item: &Value) -> Option<Violation> {
        // The copy's partition is its userId (the container's partition key).
        let (partition, id) = (copy.user_id.as_str(), copy.id.as_str());
        let source = self.posts.get_mut(id).and_then(|t| t.source.as_mut());
        if let Some(source) = source {
            // Its author's copy (whether it is right or not, the post has one).
            source.has_user_copy |= source.summary.author == partition;
            return checks::user_copy(partition, id, canonical_hash(item), Some(&source.summary));
        }
        checks::user_copy(partition, id, canonical_hash(item), None)
    }

    fn missing_user_copies(&mut self) -> Vec<Violation> {
        let mut missing: Vec<(&String, &str)> = self
            .posts
            .iter()
            .filter_map(|(id, tally)| {
                let source = tally.source.as_ref()?;
                (!source.has_user_copy).then_some((id, source.summary.author.as_str()))
            })
            .collect();
        missing.sort();
        missing
            .into_iter()
            .map(|(id, author)| checks::missing_user_copy(id, author))
            .collect()
    }

    fn schedule_entry(&mut self, _: &mut Scanned, item: Value) -> Vec<Violation> {
        self.has_schedule = true;
        match ScheduleEntry::deserialize(&item) {
            Ok(entry) => {
                self.entries.insert(entry.id.to_string(), entry);
                Vec::new()
            }
            Err(why) => {
                let why = format!("schedule entry: {why}");
                vec![unreadable(Container::Feed, &item, "type", why)]
            }
        }
    }

    /// Each scheduled post has its entry, as `OnPostChanged` writes it, and each entry its
    /// scheduled post.
    fn check_schedule(&mut self) -> Vec<Violation> {
        let entries = std::mem::take(&mut self.entries);
        let wanted = std::mem::take(&mut self.wanted_entries);
        let mut found = Vec::new();
        for (id, entry) in &wanted {
            let detail = match entries.get(id) {
                Some(held) if held == entry => continue,
                Some(held) => format!(
                    "its entry says {} by {}; the post, {} by {}",
                    held.publish_at, held.user_id, entry.publish_at, entry.user_id
                ),
                None => "no entry in the schedule".to_owned(),
            };
            found.push(checks::missing_schedule_entry(id, detail));
        }
        for id in entries.keys().filter(|id| !wanted.contains_key(*id)) {
            let tally = self.posts.get(id);
            let post = match tally {
                Some(tally) if tally.source.is_some() => EntryPost::Live,
                Some(tally) if tally.deleted => EntryPost::Deleted,
                _ => EntryPost::Missing,
            };
            found.push(checks::orphan_schedule_entry(id, post));
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        found
    }

    fn feed_item(&mut self, scanned: &mut Scanned, item: Value) -> Vec<Violation> {
        // The schedule's partition of `feed` (read with the feeds of a `multi` store): its
        // entries are not feed copies.
        if item.get("type").and_then(Value::as_str) == Some(SCHEDULE_TYPE) {
            return self.schedule_entry(scanned, item);
        }
        if !is_a::<Post>(&item) {
            scanned.other += 1;
            let why = "not a post copy".to_owned();
            return vec![unreadable(Container::Feed, &item, "type", why)];
        }
        scanned.feed_items += 1;
        match Post::deserialize(&item) {
            Ok(copy) => {
                let source = self
                    .posts
                    .get(copy.id.as_str())
                    .and_then(|t| t.source.as_ref());
                let summary = source.map(|s| &s.summary);
                self.feed.push(FeedEntry {
                    id: copy.id.to_string(),
                    created: copy.list_date(),
                    source_created: summary.and_then(|s| s.published),
                    problem: checks::feed_copy(copy.id.as_str(), canonical_hash(&item), summary),
                });
                Vec::new()
            }
            Err(why) => {
                let why = format!("post copy: {why}");
                vec![unreadable(Container::Feed, &item, "type", why)]
            }
        }
    }

    /// The feed must hold the `expected` = min(100, published posts) most recently published
    /// posts, and no other. "Most recent" is by `publishedDate`, the field the feed query
    /// orders by (copies carry it in the
    /// canonical format, where string order is time order). That query does not say how it
    /// orders posts with the same `creationDate` (the embedded store by id, Cosmos DB as it
    /// pleases), so posts tied at the boundary are interchangeable: the feed must hold every
    /// post newer than the boundary date, and fill the rest with posts of exactly that date.
    fn check_feed(&mut self) -> Vec<Violation> {
        let mut entries = std::mem::take(&mut self.feed);
        // The feed query's order: publishedDate descending (ties: by id, as the embedded store).
        entries.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.id.cmp(&a.id)));
        let bound = FEED_SIZE as usize;
        let beyond: Vec<String> = entries.iter().skip(bound).map(|e| e.id.clone()).collect();
        let mut found = checks::feed_over_bound(&beyond, entries.len());
        entries.truncate(bound);

        let mut dates: Vec<Timestamp> = self
            .posts
            .values()
            .filter_map(|t| t.source.as_ref().and_then(|s| s.summary.published))
            .collect();
        let expected = dates.len().min(bound);
        let boundary = (expected > 0).then(|| {
            let (_, nth, _) = dates.select_nth_unstable_by(expected - 1, |a, b| b.cmp(a));
            *nth
        });

        let mut held = HashSet::new();
        let mut held_ties = 0;
        for entry in entries {
            if let Some(created) = entry.source_created {
                if boundary.is_some_and(|boundary| created >= boundary) {
                    held.insert(entry.id);
                    held_ties += usize::from(Some(created) == boundary);
                } else {
                    let detail = format!(
                        "post of {created} is not among the {expected} most recent (the \
                         oldest of them is of {})",
                        boundary.map(|b| b.to_string()).unwrap_or_default()
                    );
                    found.push(checks::old_post_in_feed(&entry.id, detail));
                }
            }
            found.extend(entry.problem);
        }
        if let Some(boundary) = boundary {
            found.extend(self.missing_from_feed(boundary, expected, &held, held_ties));
        }
        found
    }

    /// Every post newer than `boundary` must be in the feed; of the posts dated exactly
    /// `boundary`, as many as there is room for among the `expected`.
    fn missing_from_feed(
        &self,
        boundary: Timestamp,
        expected: usize,
        held: &HashSet<String>,
        held_ties: usize,
    ) -> Vec<Violation> {
        let dated = self.posts.iter().filter_map(|(id, t)| {
            let published = t.source.as_ref()?.summary.published?;
            Some((published, id))
        });
        let newer = dated
            .clone()
            .filter(|(created, _)| *created > boundary)
            .count();
        let ties_wanted = expected - newer;
        let mut missing: Vec<(Timestamp, &String)> = dated
            .filter(|(created, id)| *created >= boundary && !held.contains(*id))
            .filter(|(created, _)| *created > boundary || held_ties < ties_wanted)
            .collect();
        missing.sort_by(|a, b| b.cmp(a));
        missing
            .into_iter()
            .map(|(created, id)| {
                let detail = if created > boundary {
                    format!("post of {created} is among the {expected} most recent")
                } else {
                    format!(
                        "post of {created} ties with the oldest of the {expected} most recent; \
                         the feed holds {held_ties} of the {ties_wanted} of that date it should"
                    )
                };
                checks::missing_from_feed(id, detail)
            })
            .collect()
    }
}
