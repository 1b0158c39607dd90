//! The feed's rules as the handlers keep them: the window of the most recent posts that a
//! batch of posts is admitted into, the trim of what lies past the bound, and the refill after
//! deletes took posts out. The bound ([`FEED_SIZE`]) and the feed's query live with the
//! reading side, in `blog::feed`.
//!
//! The refill costs one cross-partition query of the 100 most recent post copies in `users`
//! (on Cosmos DB it fans out to every physical partition of `users`: the one read of the
//! platform that does, and only after a post of the feed was deleted) and one upsert per post
//! missing from the feed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;

use super::deletes::{DELETE_CONCURRENCY, item_id};
use super::partition_write::PartitionWrite;
use super::shared::{Report, to_value};
use crate::blog::{
    FEED_SIZE, PUBLISHED_DATE, feed_partition, feed_query, published_only, stored_feed,
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
}

impl FeedWindow {
    pub(super) async fn load(store: &Arc<dyn Store>) -> StoreResult<Self> {
        let window = stored_feed(&**store).await?;
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
        })
    }

    /// Takes `copy` into the window unless it is older than the oldest of a full feed; takes
    /// a copy of a post that is not published out of it. Answers whether a post left the
    /// feed that way (the feed then needs a refill).
    pub(super) fn admit(&mut self, copy: &Post) -> bool {
        let existing = self.items.iter().position(|p| p.id == copy.id);
        if !copy.is_published() {
            self.admitted.remove(&copy.id);
            return existing.map(|at| self.items.remove(at)).is_some();
        }
        let full = self.items.len() >= FEED_SIZE as usize;
        if existing.is_none()
            && full
            && self
                .items
                .last()
                .is_some_and(|oldest| copy.list_date() < oldest.list_date())
        {
            return false;
        }
        if let Some(at) = existing {
            self.items.remove(at);
        }
        let at = self
            .items
            .partition_point(|p| p.list_date() > copy.list_date());
        self.items.insert(at, copy.clone());
        self.items.truncate(FEED_SIZE as usize);
        self.admitted.insert(copy.id.clone(), copy.clone());
        false
    }

    /// What the feed needs to look like the window: the admitted copies still in it that
    /// differ from the stored ones, and deletes of the stored posts pushed out of it.
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

/// Brings the feed back to [`FEED_SIZE`] posts after deletes took some out: the trim has
/// removed everything past the bound, so the posts that now belong in the feed are read from
/// the short copies in `users` (see the module's note on its cost). Upserts only the missing
/// ones; the caller trims afterwards.
pub(crate) async fn refill_feed(store: &Arc<dyn Store>) -> StoreResult<usize> {
    let in_feed: BTreeSet<String> = stored_feed(&**store)
        .await?
        .iter()
        .filter_map(item_id)
        .collect();
    if in_feed.len() >= FEED_SIZE as usize {
        return Ok(0);
    }
    let copies = published_only(Query::cross_partition().of_type(Post::TYPE))
        .order_by(PUBLISHED_DATE, SortOrder::Descending);
    let candidates = store
        .query(Container::Users, &copies, PageRequest::first(FEED_SIZE))
        .await?
        .items;
    let missing: Vec<Value> = candidates
        .into_iter()
        .filter(|copy| item_id(copy).is_some_and(|id| !in_feed.contains(&id)))
        .collect();
    let added = missing.len();
    stream::iter(missing)
        .map(|copy| async move {
            store
                .upsert_item(Container::Feed, &feed_partition(), copy)
                .await
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(added)
}
