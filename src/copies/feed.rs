//! The feed's rules as the handlers keep them: the window of the most recent posts that a
//! batch of posts is admitted into, the refill of the posts that left it, and the trim of what
//! lies past the bound. The bound ([`FEED_SIZE`]) and the feed's query live with the reading
//! side, in `blog::feed`.
//!
//! Posts that leave the feed (deleted, unpublished) and the posts that take their places are
//! written in the same transactional batch of the feed's partition, the additions first when
//! a batch cannot hold them all: a delivery that stops halfway leaves either the feed as it was,
//! and its delivery again removes and refills, or the feed complete.
//!
//! The refill costs one cross-partition query of the most recent post copies in `users` (on
//! Cosmos DB it fans out to every physical partition of `users`: the one read of the
//! platform that does, and only after a post of the feed was deleted or unpublished) and one
//! upsert per post missing from the feed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::partition_write::PartitionWrite;
use super::shared::{Report, to_value};
use crate::blog::{
    FEED_SIZE, PUBLISHED_DATE, feed_partition, feed_query, newest_feed_copies, published_only,
};
use crate::domain::{Post, PostId};
use crate::store::{BatchOperation, Container, PageRequest, Query, SortOrder, Store, StoreResult};

/// The feed's current top [`FEED_SIZE`] (read once per batch), kept up to date as the batch
/// adds posts, to decide which posts belong in the feed without a read per post.
pub(super) struct FeedWindow {
    /// Newest first.
    items: Vec<Post>,
    /// The feed's items as read, by id, to write only what changes.
    stored: HashMap<PostId, Value>,
    /// Copies admitted by this batch, by id (the last one of each post).
    admitted: HashMap<PostId, Post>,
    /// Posts of this batch that may not be in the feed (deleted, or no longer published),
    /// though their author copies in `users` may still say they are published.
    gone: BTreeSet<PostId>,
    /// Whether a post left the window, which then needs a refill.
    lost: bool,
    /// Whether the feed held more than [`FEED_SIZE`] posts when read (a write cut short,
    /// handlers side by side), which then needs a trim.
    over_bound: bool,
}

impl FeedWindow {
    pub(super) async fn load(store: &Arc<dyn Store>) -> StoreResult<Self> {
        // One past the bound, to learn whether the feed holds more than it may.
        let mut window = newest_feed_copies(&**store, FEED_SIZE + 1).await?;
        let over_bound = window.len() > FEED_SIZE as usize;
        window.truncate(FEED_SIZE as usize);
        let mut items = Vec::with_capacity(window.len());
        let mut stored = HashMap::with_capacity(window.len());
        for item in window {
            if let Ok(post) = serde_json::from_value::<Post>(item.clone()) {
                stored.insert(post.id.clone(), item);
                items.push(post);
            }
        }
        Ok(Self {
            items,
            stored,
            admitted: HashMap::new(),
            gone: BTreeSet::new(),
            lost: false,
            over_bound,
        })
    }

    /// Whether the feed held more than [`FEED_SIZE`] posts when read: what lies past the
    /// bound is out of the window's sight, and only a trim takes it out.
    pub(super) fn over_bound(&self) -> bool {
        self.over_bound
    }

    /// Takes `copy` into the window unless it is older than the oldest of a full feed; takes
    /// a copy of a post that is not published out of it.
    pub(super) fn admit(&mut self, copy: &Post) {
        if !copy.is_published() {
            self.remove(&copy.id);
            return;
        }
        let existing = self.items.iter().position(|p| p.id == copy.id);
        let full = self.items.len() >= FEED_SIZE as usize;
        if existing.is_none()
            && full
            && self
                .items
                .last()
                .is_some_and(|oldest| copy.list_date() < oldest.list_date())
        {
            return;
        }
        self.gone.remove(&copy.id);
        if let Some(at) = existing {
            self.items.remove(at);
        }
        let at = self
            .items
            .partition_point(|p| p.list_date() > copy.list_date());
        self.items.insert(at, copy.clone());
        self.items.truncate(FEED_SIZE as usize);
        self.admitted.insert(copy.id.clone(), copy.clone());
    }

    /// Takes the post `id` (deleted, or no longer published) out of the window.
    pub(super) fn remove(&mut self, id: &PostId) {
        self.admitted.remove(id);
        self.gone.insert(id.clone());
        if let Some(at) = self.items.iter().position(|p| &p.id == id) {
            self.items.remove(at);
            self.lost = true;
        }
    }

    /// When posts left the window, fills it up to [`FEED_SIZE`] again with the most recent
    /// published post copies of `users` that it lacks. The posts that left are skipped by id:
    /// their author copies are written after the feed, so they may still read as published.
    pub(super) async fn refill(&mut self, store: &Arc<dyn Store>) -> StoreResult<()> {
        if !self.lost || self.items.len() >= FEED_SIZE as usize {
            return Ok(());
        }
        // Enough copies that the newest FEED_SIZE remain once those that left are skipped.
        let wanted = FEED_SIZE.saturating_add(u32::try_from(self.gone.len()).unwrap_or(u32::MAX));
        let copies = published_only(Query::cross_partition().of_type(Post::TYPE))
            .order_by(PUBLISHED_DATE, SortOrder::Descending);
        let candidates = store
            .query(Container::Users, &copies, PageRequest::first(wanted))
            .await?
            .items;
        for item in candidates {
            let Ok(post) = serde_json::from_value::<Post>(item) else {
                continue;
            };
            let held = self.items.iter().any(|p| p.id == post.id);
            if !held && !self.gone.contains(&post.id) {
                self.admit(&post);
            }
        }
        self.lost = false;
        Ok(())
    }

    /// What the feed needs to look like the window: the admitted copies still in it that
    /// differ from the stored ones, then deletes of the stored posts that left it or were
    /// pushed out of it (after, so that a write cut short never leaves the feed short).
    pub(super) fn changes(&self) -> StoreResult<Option<PartitionWrite>> {
        let mut operations = Vec::new();
        for post in &self.items {
            let Some(copy) = self.admitted.get(&post.id) else {
                continue;
            };
            let item = to_value(copy)?;
            if self.stored.get(&post.id) != Some(&item) {
                operations.push((
                    format!("feed copy of post {}", post.id),
                    BatchOperation::Upsert { item },
                ));
            }
        }
        for id in self.stored.keys() {
            if !self.items.iter().any(|p| &p.id == id) {
                operations.push((
                    format!("feed trim of post {id}"),
                    BatchOperation::Delete { id: id.to_string() },
                ));
            }
        }
        Ok((!operations.is_empty()).then(|| PartitionWrite {
            container: Container::Feed,
            pk: feed_partition(),
            operations,
        }))
    }
}

/// Deletes what lies beyond the feed's bound, in one batch. Safe with concurrent handlers:
/// anything past position [`FEED_SIZE`] in one snapshot stays past it (posts only get
/// added), and a post already deleted by another instance is simply not found.
pub(crate) async fn trim_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let beyond = feed_query().skip(FEED_SIZE);
    let page = store
        .query(Container::Feed, &beyond, PageRequest::first(1_000))
        .await?;
    let operations: Vec<_> = page
        .items
        .iter()
        .filter_map(|item| item.get("id").and_then(Value::as_str))
        .map(|id| {
            (
                format!("feed trim of post {id}"),
                BatchOperation::Delete { id: id.to_owned() },
            )
        })
        .collect();
    let write = PartitionWrite {
        container: Container::Feed,
        pk: feed_partition(),
        operations,
    };
    write.run(store).await
}

/// Brings the feed back to [`FEED_SIZE`] posts when it holds fewer while `users` has more
/// published posts (for `rebuild` and the repairs of `verify`; the handlers refill as posts
/// leave). Upserts only the missing ones.
pub(crate) async fn refill_feed(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let mut window = FeedWindow::load(store).await?;
    window.lost = true;
    window.refill(store).await?;
    match window.changes()? {
        Some(write) => write.run(store).await,
        None => Ok(Report::default()),
    }
}
