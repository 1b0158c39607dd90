//! The delete routes: posts, comments, likes and whole accounts (soft delete plus
//! time-to-live; see `blog::deletes`).

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::description::{BadRequest, Conflict, Forbidden, NotFound, StoreFailures, Unauthorized};
use super::extract::{Caller, PathPair, PathParam};
use super::state::AppState;
use super::tenants::CurrentBlog;
use crate::domain::{CommentId, PostId, TenantId, UserId};
use crate::error::Result;
use crate::images::Scope;

/// One line per operation: `routes!` mounts the handler and adds its `#[utoipa::path]` to
/// the API description.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::default()
        .routes(routes!(delete_user))
        .routes(routes!(delete_post))
        .routes(routes!(delete_comment))
        .routes(routes!(unlike))
}

/// Delete an account
///
/// The caller's own account (right to erasure). The user is gone at once (`GET` answers
/// 404, the caller can no longer write until registering again); everything they wrote
/// before is erased through the change feed.
#[utoipa::path(
    delete,
    path = "/api/users/{userId}",
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
async fn delete_user(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    tenant: Option<Extension<TenantId>>,
    State(state): State<AppState>,
    PathParam(user_id): PathParam,
) -> Result<StatusCode> {
    let user_id = UserId::parse(&user_id)?;
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
    path = "/api/posts/{postId}",
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
async fn delete_post(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    blog.delete_post(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a comment
///
/// By the comment's author or the post's author; `commentCount` goes down in the same
/// transaction.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/comments/{commentId}",
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
async fn delete_comment(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PathPair(post_id, comment_id): PathPair,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    let comment_id = CommentId::parse(&comment_id)?;
    blog.delete_comment(&caller, &post_id, &comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unlike a post
///
/// Removes the caller's own like; `likeCount` goes down in the same transaction. Liking
/// again afterwards creates a new like.
#[utoipa::path(
    delete,
    path = "/api/posts/{postId}/likes",
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
async fn unlike(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    blog.unlike(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
