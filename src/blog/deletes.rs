//! Deletes (soft delete plus time-to-live). A post becomes a tombstone at once, so Q2, Q4, Q5
//! and new comments and likes answer 404 from then on; its comments, likes and copies are
//! removed by the change-feed handlers. A comment or like is deleted in the same transactional
//! batch that lowers its post's count, so counts never drift. An account is deleted at once
//! (Q1 answers 404, the caller can no longer write) and an erasure marker asks the change-feed
//! handlers to remove everything the user wrote.

use serde_json::Value;

use super::combiner::{Change, CountDelta};
use super::storage::{post_partition, to_item, user_partition};
use super::{Attempt, Blog, until_not_stale};
use crate::domain::{Comment, CommentId, LikeId, PostId, Tombstone, User, UserId};
use crate::error::{Error, Result};
use crate::store::{BatchOperation, Container, StoreError};

impl Blog {
    /// `DELETE /api/posts/{postId}`: the author replaces the post by its tombstone.
    pub async fn delete_post(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        until_not_stale(|| async {
            let (post, etag) = self.existing_post(post_id).await?;
            if &post.user_id != caller {
                return Err(Error::Forbidden("only the author of a post can delete it").into());
            }
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
        self.combiner
            .apply(post_id, async {
                // Side by side with the combiner's read of the post (a missing or deleted
                // post is its 404); only the post's author, not the comment's, needs the
                // post here.
                let (comment, _) = self
                    .read::<Comment>(Container::Posts, &pk, comment_id.as_str())
                    .await?
                    .ok_or_else(|| Error::not_found("comment", comment_id.as_str()))?;
                if &comment.user_id != caller
                    && &self.existing_post(post_id).await?.0.user_id != caller
                {
                    return Err(Error::Forbidden(
                        "only the comment's author or the post's author can delete a comment",
                    ));
                }
                let change = Change {
                    operation: BatchOperation::Delete {
                        id: comment_id.to_string(),
                    },
                    delta: CountDelta::ONE_COMMENT.negated(),
                    refused: |cause| match cause {
                        // Deleted meanwhile by someone else: as the read above had not seen it.
                        StoreError::NotFound => Err(Error::not_found("comment", "")),
                        other => Err(other.clone().into()),
                    },
                };
                Ok(((), change))
            })
            .await
            .map_err(|e| named(e, "comment", comment_id.as_str()))
            .map(|_| ())
    }

    /// `DELETE /api/posts/{postId}/likes`: the caller's own like; `likeCount` goes down in
    /// the same batch (through the combiner). Liking again afterwards creates a new like.
    pub async fn unlike(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        let like_id = LikeId::for_liker(caller);
        self.combiner
            .apply(post_id, async {
                let change = Change {
                    operation: BatchOperation::Delete {
                        id: like_id.to_string(),
                    },
                    delta: CountDelta::ONE_LIKE.negated(),
                    refused: |cause| match cause {
                        StoreError::NotFound => Err(Error::not_found("like", "")),
                        other => Err(other.clone().into()),
                    },
                };
                Ok(((), change))
            })
            .await
            .map_err(|e| named(e, "like", caller.as_str()))
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

/// The `refused` functions of a [`Change`] are plain `fn`s and cannot name the item: a 404 of
/// the child they answer gets its id here.
fn named(error: Error, kind: &'static str, id: &str) -> Error {
    match error {
        Error::NotFound {
            kind: found,
            id: empty,
        } if found == kind && empty.is_empty() => Error::not_found(kind, id),
        other => other,
    }
}
