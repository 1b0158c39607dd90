//! The delete routes: posts, comments, likes and whole accounts (soft delete plus
//! time-to-live; see `blog::deletes`).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::delete;

use super::AppState;
use super::extract::{Caller, PathPair, PathParam};
use crate::blog::Blog;
use crate::domain::{CommentId, PostId, UserId};
use crate::error::Result;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/users/{userId}", delete(delete_user))
        .route("/api/posts/{postId}", delete(delete_post))
        .route(
            "/api/posts/{postId}/comments/{commentId}",
            delete(delete_comment),
        )
        .route("/api/posts/{postId}/likes", delete(unlike))
}

/// 202: the account is gone at once; its content is erased through the change feed.
async fn delete_user(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(user_id): PathParam,
) -> Result<StatusCode> {
    let user_id = UserId::parse(&user_id)?;
    blog.delete_user(&caller, &user_id).await?;
    Ok(StatusCode::ACCEPTED)
}

async fn delete_post(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    blog.delete_post(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_comment(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathPair(post_id, comment_id): PathPair,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    let comment_id = CommentId::parse(&comment_id)?;
    blog.delete_comment(&caller, &post_id, &comment_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn unlike(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
) -> Result<StatusCode> {
    let post_id = PostId::parse(&post_id)?;
    blog.unlike(&caller, &post_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
