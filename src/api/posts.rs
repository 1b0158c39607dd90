//! The routes of posts and what hangs off them: write and edit a post (C2), read it (Q2),
//! comment on it and list its comments (C3, Q4), like it and list its likes (C4, Q5), and the
//! front page's feed of the newest posts (Q6).

use axum::Json;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::description::{
    BadRequest, Conflict, Forbidden, JsonBodyFailures, NotFound, StoreFailures, Unauthorized,
    UnprocessableContent,
};
use super::extract::{
    Caller, FeedLimit, IdempotencyKeyHeader, IdempotencyParams, JsonBody, List, ListParams,
};
use super::pages::{CommentPage, LikePage, PostPage, WireItem, WirePage};
use super::paths::PostPath;
use super::tenants::{CurrentBlog, CurrentScope};
use crate::blog::CreateOutcome;
use crate::domain::{Comment, CommentContent, Like, Post, PostContent, PostId, Title};
use crate::error::Result;

// The fields are strings here and parsed by the handler, so that a refusal names its field;
// their schemas are the domain types' (exactly what parsing takes).
#[derive(Deserialize, ToSchema)]
pub(super) struct PostBody {
    #[schema(value_type = Title)]
    title: String,
    #[schema(value_type = PostContent)]
    content: String,
}

impl PostBody {
    fn parse(&self) -> Result<(Title, PostContent)> {
        Ok((
            Title::parse(&self.title)?,
            PostContent::parse(&self.content)?,
        ))
    }
}

#[derive(Deserialize, ToSchema)]
pub(super) struct CommentBody {
    #[schema(value_type = CommentContent)]
    content: String,
}

/// Create a post (C2)
///
/// The caller is the author and must have a user item. With an `Idempotency-Key`, a retry
/// creates nothing: it answers the post the first request created.
#[utoipa::path(
    post,
    path = "/posts",
    operation_id = "CreatePost",
    tag = "posts",
    params(IdempotencyParams),
    request_body = PostBody,
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new post; for a repeated `Idempotency-Key`, the post the first request created, as it is now.", body = Post),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 422, response = UnprocessableContent),
        JsonBodyFailures,
        StoreFailures,
    )
)]
pub(super) async fn create_post(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<(StatusCode, Json<Post>)> {
    let (title, content) = body.parse()?;
    let post = blog
        .create_post_with_key(&caller, title, content, key.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(post)))
}

/// Edit a post (C2)
///
/// Only the author may edit; the counts stay as they are.
#[utoipa::path(
    put,
    path = "/posts/{postId}",
    operation_id = "EditPost",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id.")),
    request_body = PostBody,
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 200, description = "The edited post.", body = Post),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        JsonBodyFailures,
        StoreFailures,
    )
)]
pub(super) async fn edit_post(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PostPath(post_id): PostPath,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<Json<Post>> {
    let (title, content) = body.parse()?;
    Ok(Json(
        blog.edit_post(&caller, &post_id, title, content).await?,
    ))
}

/// Retrieve a post (Q2)
///
/// The full content, the author's username and the comment and like counts.
#[utoipa::path(
    get,
    path = "/posts/{postId}",
    operation_id = "GetPost",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id.")),
    responses(
        (status = 200, description = "The post.", body = Post),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        StoreFailures,
    )
)]
pub(super) async fn get_post(
    CurrentBlog(blog): CurrentBlog,
    PostPath(post_id): PostPath,
) -> Result<WireItem<Post>> {
    Ok(WireItem(blog.get_post_as(&post_id).await?))
}

/// Comment on a post (C3)
///
/// The comment and the post's comment count change in one transaction. With an
/// `Idempotency-Key`, a retry creates nothing: it answers the comment the first request
/// created.
#[utoipa::path(
    post,
    path = "/posts/{postId}/comments",
    operation_id = "AddComment",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id."), IdempotencyParams),
    request_body = CommentBody,
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new comment; for a repeated `Idempotency-Key`, the comment the first request created.", body = Comment),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 422, response = UnprocessableContent),
        JsonBodyFailures,
        StoreFailures,
    )
)]
pub(super) async fn add_comment(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PostPath(post_id): PostPath,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<(StatusCode, Json<Comment>)> {
    let content = CommentContent::parse(&body.content)?;
    let comment = blog
        .add_comment_with_key(&caller, &post_id, content, key.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(comment)))
}

/// List a post's comments (Q4)
///
/// Oldest first, each with its author's username, a page at a time.
#[utoipa::path(
    get,
    path = "/posts/{postId}/comments",
    operation_id = "ListComments",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id."), ListParams),
    responses(
        (status = 200, description = "A page of the post's comments.", body = CommentPage),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        StoreFailures,
    )
)]
pub(super) async fn list_comments(
    CurrentBlog(blog): CurrentBlog,
    PostPath(post_id): PostPath,
    list: List,
) -> Result<WirePage<Comment>> {
    let page = blog
        .comments(&post_id, list.size, list.continuation.as_deref())
        .await?;
    Ok(WirePage(page))
}

/// Like a post (C4)
///
/// Once per user: a repeated like changes nothing and returns the existing like.
#[utoipa::path(
    post,
    path = "/posts/{postId}/likes",
    operation_id = "LikePost",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id.")),
    security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new like.", body = Like),
        (status = 200, description = "The caller had already liked the post: the existing like.", body = Like),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        StoreFailures,
    )
)]
pub(super) async fn like_post(
    CurrentBlog(blog): CurrentBlog,
    Caller(caller): Caller,
    PostPath(post_id): PostPath,
) -> Result<(StatusCode, Json<Like>)> {
    let (like, outcome) = blog.like_post(&caller, &post_id).await?;
    let status = match outcome {
        CreateOutcome::Created => StatusCode::CREATED,
        CreateOutcome::Existing => StatusCode::OK,
    };
    Ok((status, Json(like)))
}

/// List a post's likes (Q5)
///
/// Oldest first, each with the liker's username, a page at a time.
#[utoipa::path(
    get,
    path = "/posts/{postId}/likes",
    operation_id = "ListLikes",
    tag = "posts",
    params(("postId" = PostId, Path, description = "The post's id."), ListParams),
    responses(
        (status = 200, description = "A page of the post's likes.", body = LikePage),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        StoreFailures,
    )
)]
pub(super) async fn list_likes(
    CurrentBlog(blog): CurrentBlog,
    PostPath(post_id): PostPath,
    list: List,
) -> Result<WirePage<Like>> {
    let page = blog
        .likes(&post_id, list.size, list.continuation.as_deref())
        .await?;
    Ok(WirePage(page))
}

/// The feed (Q6)
///
/// The most recent posts in short form, newest first; `continuation` is always `null`.
#[utoipa::path(
    get,
    path = "/feed",
    operation_id = "GetFeed",
    tag = "feed",
    params((
        "limit" = Option<u32>, Query, minimum = 1, maximum = 100,
        description = "How many of the most recent posts, 1–100 (100 when left out)."
    )),
    responses(
        (status = 200, description = "The most recent posts.", body = PostPage),
        (status = 400, response = BadRequest),
        StoreFailures,
    )
)]
pub(super) async fn feed(
    CurrentScope(scope): CurrentScope,
    FeedLimit(size): FeedLimit,
) -> Result<Response> {
    let body = scope.feed.page(&scope.blog, size).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
