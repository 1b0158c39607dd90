//! Deletes (soft delete plus time-to-live). A post becomes a tombstone at once, so Q2, Q4, Q5
//! and new comments and likes answer 404 from then on; its comments, likes and copies are
//! removed by the change-feed handlers. A comment or like is deleted in the same transactional
//! batch that lowers its post's count, so counts never drift. An account is deleted at once
//! (Q1 answers 404, the caller can no longer write) and an erasure marker asks the change-feed
//! handlers to remove everything the user wrote.

use serde_json::Value;

use super::combiner::{Change, CountDelta};
use super::storage::{post_partition, to_item, user_partition};
use super::{Attempt, Blog, author_only, until_not_stale};
use crate::domain::{Comment, CommentId, LikeId, PostId, Tombstone, User, UserId};
use crate::error::{Error, Result};
use crate::store::{BatchOperation, Container, StoreError};

impl Blog {
    /// `DELETE /api/posts/{postId}`: the author replaces the post by its tombstone.
    pub async fn delete_post(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        until_not_stale(|| async {
            let (post, etag) = self.existing_post(post_id).await?;
            author_only(&post, caller, "only the author of a post can delete it")?;
            let tombstone = to_item(&Tombstone::of_post(&post))?;
            let pk = post_partition(post_id);
            match self
                .store
                .replace_item(Container::Posts, &pk, tombstone.clone(), Some(&etag))
                .await
            {
                Ok(_) => Ok(()),
                // This delete's own attempt whose answer was lost (retried by the SDK or the
                // store) left its tombstone: done.
                Err(StoreError::PreconditionFailed)
                    if self.holds(Container::Posts, &pk, &tombstone).await? =>
                {
                    Ok(())
                }
                // A comment or like changed the counts meanwhile: read again.
                Err(StoreError::PreconditionFailed) => Err(Attempt::Stale),
                Err(StoreError::NotFound) => Err(Error::not_found("post", post_id.as_str()).into()),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// `DELETE /api/posts/{postId}/comments/{commentId}`: by the comment's author or the
    /// post's author; `commentCount` goes down in the same batch (through the combiner).
    pub async fn delete_comment(
        &self,
        caller: &UserId,
        post_id: &PostId,
        comment_id: &CommentId,
    ) -> Result<()> {
        let pk = post_partition(post_id);
        let missing = || Error::not_found("comment", comment_id.as_str());
        // Side by side with the combiner's read of the post (a missing or deleted post is its
        // 404, and so is an unpublished one to anyone but its author); only the post's
        // author, not the comment's, needs the post here.
        let allowed = async {
            let (comment, _) = self
                .read::<Comment>(Container::Posts, &pk, comment_id.as_str())
                .await?
                .ok_or_else(missing)?;
            if &comment.user_id == caller {
                return Ok(());
            }
            let (post, _) = self.existing_post(post_id).await?;
            match author_only(&post, caller, COMMENT_DELETERS) {
                // Someone else's comment on a post the caller may not see is as absent to
                // them as the post: the answer a post that never was gives.
                Err(Error::NotFound { .. }) => Err(missing()),
                other => other,
            }
        };
        let comment = Child {
            kind: "comment",
            item_id: comment_id.to_string(),
            named_by: comment_id.as_str(),
            delta: CountDelta::ONE_COMMENT,
        };
        self.delete_child(post_id, comment, caller, allowed).await
    }

    /// `DELETE /api/posts/{postId}/likes`: the caller's own like; `likeCount` goes down in
    /// the same batch (through the combiner). Liking again afterwards creates a new like.
    pub async fn unlike(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        let like = Child {
            kind: "like",
            item_id: LikeId::for_liker(caller).to_string(),
            named_by: caller.as_str(),
            delta: CountDelta::ONE_LIKE,
        };
        self.delete_child(post_id, like, caller, async { Ok(()) })
            .await
    }

    /// Deletes `child` in the batch that lowers its post's counts (through the combiner),
    /// once `allowed` has let `caller`.
    async fn delete_child(
        &self,
        post_id: &PostId,
        child: Child<'_>,
        caller: &UserId,
        allowed: impl Future<Output = Result<()>>,
    ) -> Result<()> {
        let Child {
            kind,
            item_id,
            named_by,
            delta,
        } = child;
        self.combiner
            .apply(post_id, async {
                allowed.await?;
                let change = Change {
                    operation: BatchOperation::Delete {
                        id: item_id,
                        if_match: None,
                    },
                    delta: delta.negated(),
                    refused: gone_meanwhile,
                    asked_by: Some(caller.clone()),
                };
                Ok(((), change))
            })
            .await
            .map_err(|error| match error {
                Error::NotFound { kind: GONE, .. } => Error::not_found(kind, named_by),
                other => other,
            })
            .map(|_| ())
    }

    /// `DELETE /api/users/{userId}`: the caller's own account. The user item goes and an
    /// erasure marker comes, in one batch of the user's partition; the change feed erases
    /// the rest. The caller must register again (C1) to write.
    pub async fn delete_user(&self, caller: &UserId, user_id: &UserId) -> Result<()> {
        if caller != user_id {
            return Err(Error::Forbidden("a user can only delete itself"));
        }
        let pk = user_partition(user_id);
        if self
            .read::<User>(Container::Users, &pk, user_id.as_str())
            .await?
            .is_none()
        {
            return Err(Error::not_found("user", user_id.as_str()));
        }
        let marker: Value = to_item(&Tombstone::of_user(user_id.clone()))?;
        let operations = vec![
            BatchOperation::Delete {
                id: user_id.to_string(),
                if_match: None,
            },
            // Upsert: an earlier erasure's marker is replaced by this later one, which
            // covers everything the earlier one did.
            BatchOperation::Upsert {
                item: marker.clone(),
            },
        ];
        match self
            .store
            .execute_batch(Container::Users, &pk, operations)
            .await
        {
            Ok(_) => Ok(()),
            // The user is gone and this erasure's marker is there: an attempt whose answer was
            // lost (retried by the SDK or the store) did it.
            Err(StoreError::BatchOperationFailed { index: 0, cause })
                if matches!(*cause, StoreError::NotFound)
                    && self.holds(Container::Users, &pk, &marker).await? =>
            {
                Ok(())
            }
            Err(StoreError::BatchOperationFailed { index: 0, cause })
                if matches!(*cause, StoreError::NotFound) =>
            {
                Err(Error::not_found("user", user_id.as_str()))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Who may delete a comment, as a refusal says it.
const COMMENT_DELETERS: &str =
    "only the comment's author or the post's author can delete a comment";

/// A comment or like to delete.
struct Child<'a> {
    /// What it is, as its 404 names it.
    kind: &'static str,
    /// Its item's id in the post's partition.
    item_id: String,
    /// The id its 404 names: the comment's, or the liker's.
    named_by: &'a str,
    /// What it adds to its post's counts, taken off by the delete.
    delta: CountDelta,
}

/// The kind of 404 [`gone_meanwhile`] answers, named by [`Blog::delete_child`]: a [`Change`]'s
/// `refused` is a plain `fn` and cannot name the child.
const GONE: &str = "child";

/// A child not found by its delete was deleted meanwhile by someone else: a 404, as if the
/// read before had not seen it.
fn gone_meanwhile(cause: &StoreError) -> Result<()> {
    match cause {
        StoreError::NotFound => Err(Error::not_found(GONE, "")),
        other => Err(other.clone().into()),
    }
}
