//! `OnPostChanged`: a post's changes reach its author's list in `users` and the feed, a
//! deleted post's tombstone clears up after it, and every changed item gets its author's
//! current username (see `usernames`).

use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, stream};
use serde_json::Value;

use super::deletes::clear_deleted_post;
use super::feed::{FeedChange, keep_feed};
use super::partition_write::PartitionWrite;
use super::schedule::keep_schedule;
use super::shared::{
    HANDLER_CONCURRENCY, Report, current_version, documents_of, settle, to_value, tombstones_of,
};
use super::usernames::correct_usernames;
use super::views::{Move, Placement, move_posts};
use crate::domain::{Deleted, Post, PostId};
use crate::store::{BatchOperation, Container, PartitionKey, Store, StoreResult};

/// Clears up after deleted posts (their tombstones), gives each changed post,
/// comment and like its author's current username (see [`correct_usernames`]), then copies
/// each changed post, in short form, into its author's partition of `users` (every post, with
/// its status: Q3 lists the published ones, the drafts list the others) and, published, into
/// `feed`, and keeps `feed` to the [`FEED_SIZE`](crate::blog::FEED_SIZE) most recently
/// published posts. A post that leaves publication leaves the feed.
pub async fn on_post_changed(store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
    let mut report = Report::default();
    // Deleted posts first, so that the feed window below no longer holds them.
    let mut gone = Vec::new();
    for tombstone in tombstones_of(documents, Deleted::Post, &mut report) {
        let Some(post_id) = &tombstone.post_id else {
            continue;
        };
        let result = clear_deleted_post(store, post_id, &tombstone.user_id).await;
        gone.push(post_id.clone());
        settle(result, format!("deleted post {post_id}"), &mut report)?;
    }
    // First, so that the copies below are made from the corrected posts.
    report.merge(correct_usernames(store, documents).await?);
    let posts = documents_of::<Post>(documents, Post::TYPE, |p| p.id.to_string(), &mut report);
    if !posts.is_empty() || !gone.is_empty() {
        copy_posts(store, posts, gone, &mut report).await?;
    }
    Ok(report)
}

/// The copies of a batch's posts: reads first (each post's current version and its author
/// copy, side by side), then the writes, one transactional batch per target partition: the
/// view copies that leave, then at once the author copies that changed, per author, then the
/// view copies that arrive, and last the feed's changes (copies added or updated, posts that
/// left it and those that take their places, posts pushed past the bound) in its one
/// partition. A batch of posts is so a handful of writes instead of one per copy and one per
/// trimmed post, each waiting for the one before (on the embedded store they also share one
/// commit of its one writer). The feed comes after the author copies: a refill reads the
/// most recent of them, and must find this batch's (see `feed`).
///
/// `gone`: deleted posts of this batch, cleared up already but for their feed copies.
async fn copy_posts(
    store: &Arc<dyn Store>,
    posts: Vec<Post>,
    mut gone: Vec<PostId>,
    report: &mut Report,
) -> StoreResult<()> {
    let read: Vec<_> = stream::iter(posts)
        .map(|delivered| read_post_and_author_copy(store, delivered))
        .buffered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    let mut copies = Vec::with_capacity(read.len());
    for (id, result) in read {
        match result {
            Ok(Found::Live(copy, existing)) => copies.push((*copy, existing)),
            Ok(Found::Deleted(written)) => {
                report.written += written;
                gone.push(id);
            }
            Err(e) => settle(Err(e), format!("post {id}"), report)?,
        }
    }
    // The views' copies leave their old places while the author copies still name them.
    let placed: Vec<_> = copies
        .iter()
        .map(|(copy, existing)| {
            let before = Placement::remembered(existing.as_ref());
            (copy.id.clone(), Some(copy.clone()), before)
        })
        .collect();
    let result = move_posts(store, &placed, Move::Leave).await;
    settle(result, "views of posts (leaving)".to_owned(), report)?;
    let done: Vec<_> = stream::iter(author_copy_writes(&copies)?)
        .map(|write| write.run(store))
        .buffer_unordered(HANDLER_CONCURRENCY)
        .collect()
        .await;
    for part in done {
        report.merge(part?);
    }
    // Only now that the author copies name their new places may the copies arrive there.
    let result = move_posts(store, &placed, Move::Arrive).await;
    settle(result, "views of posts (arriving)".to_owned(), report)?;
    let feed_changes: Vec<_> = gone
        .into_iter()
        .map(FeedChange::Gone)
        .chain(copies.iter().map(|(copy, existing)| FeedChange::Copy {
            copy: Box::new(copy.clone()),
            was_listed: listed(existing.as_ref()),
        }))
        .collect();
    report.merge(keep_feed(store, &feed_changes).await?);
    let current: Vec<Post> = copies.into_iter().map(|(copy, _)| copy).collect();
    report.merge(keep_schedule(store, current).await?);
    Ok(())
}

/// Whether an author copy as stored lists its post as published.
fn listed(author_copy: Option<&Value>) -> bool {
    author_copy
        .and_then(|item| serde_json::from_value::<Post>(item.clone()).ok())
        .is_some_and(|post| post.is_published())
}

/// What became of a changed post: its short copy and its author's copy of it as stored (if
/// any), or, when the post has been deleted since, the clean-up of everything derived from it.
enum Found {
    Live(Box<Post>, Option<Value>),
    /// The items the clean-up wrote (the feed copy is left to the feed's write).
    Deleted(usize),
}

/// The post's current version, short, and its author's copy of it as stored (if any).
async fn read_post_and_author_copy(
    store: &Arc<dyn Store>,
    delivered: Post,
) -> (PostId, StoreResult<Found>) {
    let id = delivered.id.clone();
    let author = delivered.user_id.clone();
    let read = async {
        // Serialising re-writes creationDate canonically, whatever form it arrived in.
        let Some(current) = current_version(store, Container::Posts, delivered).await? else {
            // A late version of a post deleted since: never copy it back.
            let cleared = clear_deleted_post(store, &id, &author).await?;
            return Ok(Found::Deleted(cleared));
        };
        let copy = current.short();
        let pk = PartitionKey::single(copy.user_id.as_str());
        let existing = store
            .read_item(Container::Users, &pk, copy.id.as_str())
            .await?;
        Ok(Found::Live(Box::new(copy), existing.map(|d| d.item)))
    };
    (id.clone(), read.await)
}

/// The author copies that differ from what `users` holds, as one write per author.
fn author_copy_writes(copies: &[(Post, Option<Value>)]) -> StoreResult<Vec<PartitionWrite>> {
    let mut by_author: HashMap<&str, PartitionWrite> = HashMap::new();
    for (copy, existing) in copies {
        let item = to_value(copy)?;
        if existing.as_ref() == Some(&item) {
            continue;
        }
        let author = copy.user_id.as_str();
        by_author
            .entry(author)
            .or_insert_with(|| PartitionWrite {
                container: Container::Users,
                pk: PartitionKey::single(author),
                operations: Vec::new(),
            })
            .operations
            .push((
                format!("user copy of post {}", copy.id),
                BatchOperation::Upsert { item },
            ));
    }
    Ok(by_author.into_values().collect())
}
