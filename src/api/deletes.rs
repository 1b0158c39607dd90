//! The delete routes: posts, comments, likes and whole accounts (soft delete plus
//! time-to-live; see `blog::deletes`).

use axum::http::StatusCode;

use super::description::{AuthorWriteFailures, NotFound, OwnUserFailures, PostWriteFailures};
use crate::error::Result;
use crate::http::images::BlogImages;
use crate::http::paths::{CommentPath, OwnUserPath, PostPath};
use crate::http::tenants::Command;

/// Delete an account
///
/// The caller's own account (right to erasure). The user is gone at once (`GET` answers
/// 404, the caller can no longer write until registering again); everything they wrote
/// before is erased through the change feed.
#[utoipa::path(
    delete, path = "/users/{userId}", operation_id = "DeleteUser", tag = "users",
    params(OwnUserPath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 202, description = "The account is deleted; its content is being erased."),
        (status = 404, response = NotFound),
        OwnUserFailures,
    )
)]
pub(super) async fn delete_user(
    Command { blog, caller }: Command,
    images: BlogImages,
    OwnUserPath(user_id): OwnUserPath,
) -> Result<StatusCode> {
    if caller == user_id {
        // The images go first, items and bytes: nothing of them outlives the account.
        blog.erase_images(&images.store, &images.scope, &user_id)
            .await?;
    }
    blog.delete_user(&caller, &user_id).await?;
    Ok(StatusCode::ACCEPTED)
}

/// Delete a post
///
/// The author only. The post answers 404 at once, and so do its comments, likes and any new
/// comment or like; its copies leave the author's list and the feed through the change feed.
#[utoipa::path(
    delete, path = "/posts/{postId}", operation_id = "DeletePost", tag = "posts",
    params(PostPath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses((status = 204, description = "The post is deleted."), AuthorWriteFailures)
)]
pub(super) async fn delete_post(
    Command { blog, caller }: Command,
    PostPath(post_id): PostPath,
) -> Result<StatusCode> {
    blog.delete_post(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a comment
///
/// By the comment's author or the post's author; `commentCount` goes down in the same
/// transaction.
#[utoipa::path(
    delete, path = "/posts/{postId}/comments/{commentId}", operation_id = "DeleteComment", tag = "posts",
    params(CommentPath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses((status = 204, description = "The comment is deleted."), AuthorWriteFailures)
)]
pub(super) async fn delete_comment(
    Command { blog, caller }: Command,
    CommentPath(post_id, comment_id): CommentPath,
) -> Result<StatusCode> {
    blog.delete_comment(&caller, &post_id, &comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unlike a post
///
/// Removes the caller's own like; `likeCount` goes down in the same transaction. Liking
/// again afterwards creates a new like.
#[utoipa::path(
    delete, path = "/posts/{postId}/likes", operation_id = "Unlike", tag = "posts",
    params(PostPath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses((status = 204, description = "The caller's like is removed."), PostWriteFailures)
)]
pub(super) async fn unlike(
    Command { blog, caller }: Command,
    PostPath(post_id): PostPath,
) -> Result<StatusCode> {
    blog.unlike(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
