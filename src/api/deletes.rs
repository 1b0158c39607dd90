//! The delete routes: posts, comments, likes and whole accounts (soft delete plus
//! time-to-live; see `blog::deletes`).

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;

use super::description::{BadRequest, Conflict, Forbidden, NotFound, StoreFailures, Unauthorized};
use super::extract::Caller;
use super::paths::{CommentPath, PostPath, UserPath};
use super::state::AppState;
use super::tenants::CurrentBlog;
use crate::domain::{CommentId, PostId, TenantId, UserId};
use crate::error::Result;
use crate::images::Scope;

/// Delete an account
///
/// The caller's own account (right to erasure). The user is gone at once (`GET` answers
/// 404, the caller can no longer write until registering again); everything they wrote
/// before is erased through the change feed.
#[utoipa::path(
    delete,
    path = "/users/{userId}",
    operation_id = "DeleteUser",
    tag = "users",
    params(("userId" = UserId, Path, description = "The caller's own id.")),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 202, description = "The account is deleted; its content is being erased."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        StoreFailures,
    )
)]
pub(super) async fn delete_user(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    tenant: Option<Extension<TenantId>>,
    State(state): State<AppState>,
    UserPath(user_id): UserPath,
) -> Result<StatusCode> {
    if caller == user_id {
        // The images go first, items and bytes: nothing of them outlives the account.
        let scope = Scope::of(tenant.as_ref().map(|Extension(t)| t));
        blog.erase_images(&state.images, &scope, &user_id).await?;
    }
    blog.delete_user(&caller, &user_id).await?;
    Ok(StatusCode::ACCEPTED)
}

/// Delete a post
///
/// The author only. The post answers 404 at once, and so do its comments, likes and any new
/// comment or like; its copies leave the author's list and the feed through the change feed.
#[utoipa::path(
    delete,
    path = "/posts/{postId}",
    operation_id = "DeletePost",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id.")),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 204, description = "The post is deleted."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        StoreFailures,
    )
)]
pub(super) async fn delete_post(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
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
    delete,
    path = "/posts/{postId}/comments/{commentId}",
    operation_id = "DeleteComment",
    tag = "posts",
    params(
        ("postId" = PostId, Path, description = "The post's id."),
        ("commentId" = CommentId, Path, description = "The comment's id."),
    ),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 204, description = "The comment is deleted."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        StoreFailures,
    )
)]
pub(super) async fn delete_comment(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
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
    delete,
    path = "/posts/{postId}/likes",
    operation_id = "Unlike",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id.")),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 204, description = "The caller's like is removed."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        StoreFailures,
    )
)]
pub(super) async fn unlike(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PostPath(post_id): PostPath,
) -> Result<StatusCode> {
    blog.unlike(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
