//! The change-feed side of deletes. A deleted post is a tombstone in `posts`; an erased
//! account is an erasure marker in `users` (both `type: "tombstone"`, see
//! `domain::Tombstone`). The handlers see them in the change feed and remove what depends on
//! them. Every step is idempotent (it looks for what is left and removes it), so a repeated
//! batch, or one retried after a crash halfway, finishes the job and writes nothing more.
//!
//! Costs, in store requests:
//! - a deleted post: a point delete of its copy in `users`, one query page per 100 comments or
//!   likes and one delete each; when the post was in the feed, its removal and refill (see
//!   `feed`);
//! - an erased account: one cross-partition query page per 100 items of the user in `posts`;
//!   per post of theirs, a read and a tombstone write (which then costs what a deleted post
//!   costs); per other post they commented on or liked, a read and one transactional batch
//!   per 99 of their items (the deletes and the lowered counts together, through the
//!   combiner of `blog::combiner`).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};
use serde_json::Value;

use super::views::{Placement, place};
use crate::blog::combiner::{Change, ChangeOutcome, Combiner, CountDelta};
use crate::domain::{Comment, Like, Post, PostId, Timestamp, Tombstone, UserId, is_a};
use crate::error::Error;
use crate::store::{
    BatchOperation, Container, FilterOp, PageRequest, Pages, PartitionKey, Query, Store,
    StoreError, StoreResult, delete_if_present, rewrite_item, tenant,
};

/// Deletes in flight at once while clearing up after one delete.
pub(super) const DELETE_CONCURRENCY: usize = 8;

/// Removes what is derived from the deleted post `post_id` of `author` apart from its feed
/// copy: its view copies, its copy in `users`, its comments and likes, and its place in the
/// schedule. Its feed copy leaves with the feed's write of the batch, in the same
/// transactional batch as the posts that take its place (see `feed::keep_feed`), so that a
/// delivery that stops halfway cannot leave the feed short.
pub(super) async fn clear_deleted_post(
    store: &Arc<dyn Store>,
    post_id: &PostId,
    author: &UserId,
) -> StoreResult<usize> {
    let author_pk = PartitionKey::single(author.as_str());
    // The views first: where their copies are is read from the author copy, removed after.
    let remembered = store
        .read_item(Container::Users, &author_pk, post_id.as_str())
        .await?
        .map(|document| document.item);
    let views = place(
        store,
        post_id,
        None,
        &Placement::remembered(remembered.as_ref()),
    )
    .await?;
    let author_copy =
        delete_if_present(&**store, Container::Users, &author_pk, post_id.as_str()).await?;
    let children = delete_children(store, post_id).await?;
    let scheduled = super::schedule::remove_entry(store, post_id).await?;
    Ok(views + author_copy + children + scheduled)
}

/// Deletes the comments and likes of a deleted post, a page at a time until none is left.
/// No count needs to change: the post is gone.
pub(crate) async fn delete_children(
    store: &Arc<dyn Store>,
    post_id: &PostId,
) -> StoreResult<usize> {
    let pk = PartitionKey::single(post_id.as_str());
    let mut deleted = 0;
    for kind in [Comment::TYPE, Like::TYPE] {
        let query = Query::in_partition(pk.clone()).of_type(kind);
        loop {
            let page = store
                .query(Container::Posts, &query, PageRequest::first(100))
                .await?;
            if page.items.is_empty() {
                break;
            }
            let ids: Vec<String> = page.items.iter().filter_map(item_id).collect();
            deleted += stream::iter(ids)
                .map(|id| {
                    let pk = &pk;
                    async move { delete_if_present(&**store, Container::Posts, pk, &id).await }
                })
                .buffer_unordered(DELETE_CONCURRENCY)
                .try_fold(0, |sum, n| async move { Ok(sum + n) })
                .await?;
        }
    }
    Ok(deleted)
}

pub(super) fn item_id(item: &Value) -> Option<String> {
    item.get("id").and_then(Value::as_str).map(str::to_owned)
}

// ---- account erasure ----------------------------------------------------------------------

/// Erases what the user of `marker` wrote before the erasure: their posts become tombstones
/// (whose own change-feed events then remove copies, comments and likes), and their comments
/// and likes on other posts are deleted with those posts' counts lowered in the same batch.
/// Anything written after `deletedAt` (the user registered again) is kept.
pub(crate) async fn erase_user(store: &Arc<dyn Store>, marker: &Tombstone) -> StoreResult<usize> {
    let (posts, children) = written_by(store, &marker.user_id, marker.deleted_at).await?;
    let mut written = 0;
    for post_id in posts {
        written += tombstone_post(store, &post_id).await?;
    }
    let combiner = Combiner::new(Arc::clone(store));
    for (post_id, items) in children {
        written += delete_counted(&combiner, &post_id, items).await?;
    }
    Ok(written)
}

/// A comment or like to delete, and which count it is in.
#[derive(Debug, Clone)]
struct Child {
    id: String,
    is_like: bool,
}

type ByPost = BTreeMap<PostId, Vec<Child>>;

/// The user's posts, and their comments and likes grouped by post, written up to `until`.
async fn written_by(
    store: &Arc<dyn Store>,
    user_id: &UserId,
    until: Timestamp,
) -> StoreResult<(Vec<PostId>, ByPost)> {
    let query = Query::cross_partition().filter("userId", FilterOp::Eq, user_id.as_str());
    let (mut posts, mut children) = (Vec::new(), ByPost::new());
    let mut pages = Pages::new(&**store, Container::Posts, &query, 100);
    while let Some(items) = pages.next().await? {
        for item in &items {
            let written_at = item
                .get("creationDate")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse);
            let (Some(written_at), Some(id), Some(post_id)) = (
                written_at,
                item_id(item),
                item.get("postId")
                    .and_then(Value::as_str)
                    .and_then(|p| PostId::parse(p).ok()),
            ) else {
                continue;
            };
            if written_at > until {
                continue;
            }
            match item.get("type").and_then(Value::as_str) {
                Some(Post::TYPE) => posts.push(post_id),
                Some(kind @ (Comment::TYPE | Like::TYPE)) => {
                    children.entry(post_id).or_default().push(Child {
                        id,
                        is_like: kind == Like::TYPE,
                    });
                }
                // Tombstones: already deleted.
                _ => {}
            }
        }
    }
    Ok((posts, children))
}

/// Replaces a live post by its tombstone (re-reading on a race with a comment or like).
async fn tombstone_post(store: &Arc<dyn Store>, post_id: &PostId) -> StoreResult<usize> {
    let pk = PartitionKey::single(post_id.as_str());
    let tombstoned = rewrite_item(
        &**store,
        Container::Posts,
        &pk,
        post_id.as_str(),
        |item| async move {
            let Ok(post) = serde_json::from_value::<Post>(item) else {
                return Ok(None); // a tombstone already
            };
            let tombstone = serde_json::to_value(Tombstone::of_post(&post))
                .map_err(|e| StoreError::Internal(e.to_string()))?;
            Ok(Some((tombstone, ())))
        },
    )
    .await?;
    Ok(usize::from(tombstoned.is_some()))
}

/// Deletes `children` of `post_id` and lowers the post's counts by as much, through the
/// combiner (the one way counts change): up to [`crate::blog::combiner::MAX_CHANGES`] deletes share a batch with the
/// post's replace (If-Match), so counts and items stay equal whatever runs at the same time.
/// A child already gone is left out; a post deleted meanwhile has its own clean-up remove
/// every child, with no count to keep.
async fn delete_counted(
    combiner: &Combiner,
    post_id: &PostId,
    children: Vec<Child>,
) -> StoreResult<usize> {
    let changes = children
        .into_iter()
        .map(|child| Change {
            operation: BatchOperation::Delete {
                id: child.id,
                if_match: None,
            },
            delta: if child.is_like {
                CountDelta::ONE_LIKE
            } else {
                CountDelta::ONE_COMMENT
            }
            .negated(),
            refused: |cause| match cause {
                StoreError::NotFound => Ok(()),
                other => Err(other.clone().into()),
            },
            // The erasure's own: it goes through whoever may see the post.
            asked_by: None,
        })
        .collect();
    let mut deleted = 0;
    for applied in combiner.apply_all(post_id, changes).await {
        match applied {
            Ok(ChangeOutcome::Written) => deleted += 1,
            Ok(ChangeOutcome::AlreadyDone(_)) | Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(store_error(e)),
        }
    }
    Ok(deleted)
}

/// The combiner answers with the API's errors; the handlers need the store's, whose
/// transient ones fail the change-feed batch so that it is delivered again.
fn store_error(error: Error) -> StoreError {
    match error {
        Error::Throttled { retry_after } => StoreError::Throttled { retry_after },
        Error::Unavailable(why) => StoreError::Unavailable(why),
        // Too many lost races with other writers of the post: worth another try later.
        Error::Conflict(_) => StoreError::PreconditionFailed,
        other => StoreError::Internal(other.to_string()),
    }
}

/// Deletes those of `copies` (post copies read from `container` of `store` as a whole, for
/// `rebuild`) whose source is no longer a live post, or that sit in another user's partition:
/// one point read of the source per copy, in its model's view.
pub(super) async fn sweep_orphan_copies(
    store: &Arc<dyn Store>,
    container: Container,
    copies: &[Value],
) -> StoreResult<usize> {
    let mut deleted = 0;
    for (_, view, copies) in tenant::by_model(store, copies).0 {
        for copy in copies.iter() {
            deleted += delete_if_orphan(&*view, container, copy).await?;
        }
    }
    Ok(deleted)
}

/// Deletes a post copy of `container` whose source is not a live post, or, in `users`, is a
/// post by another user than the partition's (a misplaced copy): one point read of the source.
pub(crate) async fn delete_if_orphan(
    store: &dyn Store,
    container: Container,
    copy: &Value,
) -> StoreResult<usize> {
    let Some(id) = item_id(copy) else {
        return Ok(0);
    };
    let source = store
        .read_item(Container::Posts, &PartitionKey::single(&id), &id)
        .await?;
    // In `users` a copy's partition is its userId: it belongs there only if that is the author.
    let author = |item: &Value| item.get("userId").cloned();
    let belongs = source.is_some_and(|s| {
        is_a::<Post>(&s.item) && (container != Container::Users || author(&s.item) == author(copy))
    });
    if belongs {
        return Ok(0);
    }
    let pk = container.partition_key_of(copy)?;
    delete_if_present(store, container, &pk, &id).await
}
