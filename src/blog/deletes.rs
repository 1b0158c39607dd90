//! Deletes (soft delete plus time-to-live). A post becomes a tombstone at once, so Q2, Q4, Q5
//! and new comments and likes answer 404 from then on; its comments, likes and copies are
//! removed by the change-feed handlers. A comment or like is deleted in the same transactional
//! batch that lowers its post's count, so counts never drift. An account is deleted at once
//! (Q1 answers 404, the caller can no longer write) and an erasure marker asks the change-feed
//! handlers to remove everything the user wrote.

use serde_json::Value;

use super::{Attempt, Blog, post_partition, to_item, until_not_stale, user_partition};
use crate::domain::{Comment, CommentId, LikeId, Post, PostId, Tombstone, User, UserId};
use crate::error::{Error, Result};
use crate::store::{BatchOperation, Container, ETag, StoreError};

impl Blog {
    /// `DELETE /api/posts/{postId}`: the author replaces the post by its tombstone.
    pub async fn delete_post(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        until_not_stale(|| async {
            let (post, etag) = self.existing_post(post_id).await?;
            if &post.user_id != caller {
                return Err(Error::Forbidden("only the author of a post can delete it").into());
            }
            let tombstone = to_item(&Tombstone::of_post(&post))?;
            match self
                .store
                .replace_item(
                    Container::Posts,
                    &post_partition(post_id),
                    tombstone,
                    Some(&etag),
                )
                .await
            {
                Ok(_) => Ok(()),
                // A comment or like changed the counts meanwhile: read again.
                Err(StoreError::PreconditionFailed) => Err(Attempt::Stale),
                Err(StoreError::NotFound) => Err(Error::not_found("post", post_id.as_str()).into()),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// `DELETE /api/posts/{postId}/comments/{commentId}`: by the comment's author or the
    /// post's author; `commentCount` goes down in the same batch.
    pub async fn delete_comment(
        &self,
        caller: &UserId,
        post_id: &PostId,
        comment_id: &CommentId,
    ) -> Result<()> {
        let pk = post_partition(post_id);
        until_not_stale(|| async {
            let ((post, etag), comment) = tokio::try_join!(
                self.existing_post(post_id),
                self.read::<Comment>(Container::Posts, &pk, comment_id.as_str()),
            )?;
            let (comment, _) =
                comment.ok_or_else(|| Error::not_found("comment", comment_id.as_str()))?;
            if &comment.user_id != caller && &post.user_id != caller {
                return Err(Error::Forbidden(
                    "only the comment's author or the post's author can delete a comment",
                )
                .into());
            }
            self.uncount(post, etag, comment_id.as_str(), |post| {
                post.comment_count = post.comment_count.saturating_sub(1);
            })
            .await
            .map_err(|gone| {
                gone.unwrap_or_else(|| Error::not_found("comment", comment_id.as_str()).into())
            })
        })
        .await
    }

    /// `DELETE /api/posts/{postId}/likes`: the caller's own like; `likeCount` goes down in
    /// the same batch. Liking again afterwards creates a new like.
    pub async fn unlike(&self, caller: &UserId, post_id: &PostId) -> Result<()> {
        let like_id = LikeId::for_liker(caller);
        until_not_stale(|| async {
            let (post, etag) = self.existing_post(post_id).await?;
            self.uncount(post, etag, like_id.as_str(), |post| {
                post.like_count = post.like_count.saturating_sub(1);
            })
            .await
            .map_err(|gone| {
                gone.unwrap_or_else(|| Error::not_found("like", caller.as_str()).into())
            })
        })
        .await
    }

    /// One attempt at `[replace post If-Match with a lower count, delete child]`. The error
    /// is `None` when the child does not exist (nothing was written), else the attempt's
    /// verdict (stale post, store failure).
    async fn uncount(
        &self,
        mut post: Post,
        etag: ETag,
        child_id: &str,
        lower: impl FnOnce(&mut Post),
    ) -> std::result::Result<(), Option<Attempt>> {
        lower(&mut post);
        let operations = vec![
            BatchOperation::Replace {
                item: to_item(&post).map_err(|e| Some(e.into()))?,
                if_match: Some(etag),
            },
            BatchOperation::Delete {
                id: child_id.to_owned(),
            },
        ];
        match self
            .store
            .execute_batch(Container::Posts, &post_partition(&post.post_id), operations)
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::BatchOperationFailed { index: 0, cause })
                if matches!(
                    *cause,
                    StoreError::PreconditionFailed | StoreError::NotFound
                ) =>
            {
                Err(Some(Attempt::Stale))
            }
            Err(StoreError::BatchOperationFailed { index: 1, cause })
                if matches!(*cause, StoreError::NotFound) =>
            {
                Err(None)
            }
            Err(e) => Err(Some(e.into())),
        }
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
            BatchOperation::Upsert { item: marker },
        ];
        match self
            .store
            .execute_batch(Container::Users, &pk, operations)
            .await
        {
            Ok(_) => Ok(()),
            Err(StoreError::BatchOperationFailed { index: 0, cause })
                if matches!(*cause, StoreError::NotFound) =>
            {
                Err(Error::not_found("user", user_id.as_str()))
            }
            Err(e) => Err(e.into()),
        }
    }
}
