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
    AuthorWriteFailures, ItemReadFailures, JsonBodyFailures, KeyedCreateFailures,
    PostWriteFailures, ReadFailures,
};
use super::pages::{CommentPage, LikePage, PostPage, WireItem, WirePage, created_or_existing};
use crate::domain::{
    Comment, CommentContent, Like, Post, PostContent, PostStatus, Publication, Tags, Title,
};
use crate::error::Result;
use crate::http::extract::{
    FeedLimit, IdempotencyKeyHeader, IdempotencyParams, JsonBody, List, ListParams,
};
use crate::http::paths::PostPath;
use crate::http::tenants::{Command, CurrentScope, Reading};

// The fields are strings here and parsed by the handler, so that a refusal names its field;
// their schemas are the domain types' (exactly what parsing takes).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PostBody {
    #[schema(value_type = Title)]
    title: String,
    #[schema(value_type = PostContent)]
    content: String,
    /// `published` (seen by everyone), `draft` (seen by its author alone) or `scheduled`
    /// (seen by its author alone until `publishAt`, then published with no request needed).
    /// Left out, a new post is published and an edit keeps the post's status.
    #[serde(default)]
    #[schema(value_type = Option<PostStatus>, nullable = false)]
    status: Option<String>,
    /// With `status` `scheduled` only, and required by it: when to publish, an ISO-8601
    /// date-time in the future (one without an offset is UTC).
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime, nullable = false)]
    publish_at: Option<String>,
    /// Up to 10 distinct tags. Each is trimmed, case-folded (the whole tag at once, with
    /// Unicode's full folding) and has its inner white space turned into `-`; the first of two
    /// that come out alike is kept, and the limit counts what is left (eleven that come out
    /// as ten are ten). A tag holds 1–50 letters (of any script, with their combining marks),
    /// decimal digits, `-` and `_`, at least one of them a letter or digit: anything else
    /// (`/`, `?`, `#`, `%`, `.`, `<`, quotes, only `-`...) is refused with 400. Left out on an
    /// edit, the post keeps its tags; `[]` removes them.
    #[schema(example = json!(["Rust", "Cosmos DB"]))]
    tags: Option<Vec<String>>,
}

impl PostBody {
    #[allow(clippy::type_complexity, reason = "the body's fields, each parsed")]
    fn parse(&self) -> Result<(Title, PostContent, Option<Publication>, Option<Tags>)> {
        Ok((
            Title::parse(&self.title)?,
            PostContent::parse(&self.content)?,
            Publication::parse(self.status.as_deref(), self.publish_at.as_deref())?,
            self.tags.as_deref().map(Tags::parse).transpose()?,
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
/// creates nothing: it answers the post the first request created, even once that post's
/// `publishAt` has passed.
#[utoipa::path(
    post, path = "/posts", operation_id = "CreatePost", tag = "posts",
    params(IdempotencyParams), request_body = PostBody, security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new post; for a repeated `Idempotency-Key`, the post the first request created, as it is now.", body = Post),
        KeyedCreateFailures,
    )
)]
pub(super) async fn create_post(
    Command { blog, caller }: Command,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<(StatusCode, Json<Post>)> {
    let (title, content, publication, tags) = body.parse()?;
    let publication = publication.unwrap_or(Publication::Publish);
    let tags = tags.unwrap_or_default();
    let post = blog
        .create_tagged_post(&caller, (title, content, &tags), publication, key.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(post)))
}

/// Edit a post (C2)
///
/// Only the author may edit; the counts stay as they are.
#[utoipa::path(
    put, path = "/posts/{postId}", operation_id = "EditPost", tag = "posts",
    params(PostPath), request_body = PostBody, security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 200, description = "The edited post.", body = Post),
        AuthorWriteFailures, JsonBodyFailures,
    )
)]
pub(super) async fn edit_post(
    Command { blog, caller }: Command,
    PostPath(post_id): PostPath,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<Json<Post>> {
    let (title, content, publication, tags) = body.parse()?;
    let edit = (title, content, tags.as_ref());
    Ok(Json(
        blog.edit_tagged_post(&caller, &post_id, edit, publication)
            .await?,
    ))
}

/// Retrieve a post (Q2)
///
/// The full content, the author's username and the comment and like counts. A draft or
/// scheduled post is its author's alone: anyone else gets 404, as for a post that does not
/// exist.
#[utoipa::path(
    get, path = "/posts/{postId}", operation_id = "GetPost", tag = "posts",
    params(PostPath),
    responses((status = 200, description = "The post.", body = Post), ItemReadFailures)
)]
pub(super) async fn get_post(
    Reading { blog, viewer }: Reading,
    PostPath(post_id): PostPath,
) -> Result<WireItem<Post>> {
    Ok(WireItem(
        blog.get_post_seen_by(&post_id, viewer.as_ref()).await?,
    ))
}

/// Comment on a post (C3)
///
/// The comment and the post's comment count change in one transaction. With an
/// `Idempotency-Key`, a retry creates nothing: it answers the comment the first request
/// created.
#[utoipa::path(
    post, path = "/posts/{postId}/comments", operation_id = "AddComment", tag = "posts",
    params(PostPath, IdempotencyParams), request_body = CommentBody, security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new comment; for a repeated `Idempotency-Key`, the comment the first request created.", body = Comment),
        KeyedCreateFailures,
    )
)]
pub(super) async fn add_comment(
    Command { blog, caller }: Command,
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
/// Oldest first, each with its author's username, a page at a time. A draft's or a
/// scheduled post's comments are its author's alone: anyone else gets 404, as from Q2.
#[utoipa::path(
    get, path = "/posts/{postId}/comments", operation_id = "ListComments", tag = "posts",
    params(PostPath, ListParams),
    responses(
        (status = 200, description = "A page of the post's comments.", body = CommentPage),
        ItemReadFailures,
    )
)]
pub(super) async fn list_comments(
    Reading { blog, viewer }: Reading,
    PostPath(post_id): PostPath,
    list: List,
) -> Result<WirePage<Comment>> {
    let page = blog
        .comments(&post_id, viewer.as_ref(), list.request())
        .await?;
    Ok(WirePage(page))
}

/// Like a post (C4)
///
/// Once per user: a repeated like changes nothing and returns the existing like.
#[utoipa::path(
    post, path = "/posts/{postId}/likes", operation_id = "LikePost", tag = "posts",
    params(PostPath), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The new like.", body = Like),
        (status = 200, description = "The caller had already liked the post: the existing like.", body = Like),
        PostWriteFailures,
    )
)]
pub(super) async fn like_post(
    Command { blog, caller }: Command,
    PostPath(post_id): PostPath,
) -> Result<(StatusCode, Json<Like>)> {
    let (like, outcome) = blog.like_post(&caller, &post_id).await?;
    Ok(created_or_existing(outcome, like))
}

/// List a post's likes (Q5)
///
/// Oldest first, each with the liker's username, a page at a time. A draft's or a
/// scheduled post's likes are its author's alone: anyone else gets 404, as from Q2.
#[utoipa::path(
    get, path = "/posts/{postId}/likes", operation_id = "ListLikes", tag = "posts",
    params(PostPath, ListParams),
    responses(
        (status = 200, description = "A page of the post's likes.", body = LikePage),
        ItemReadFailures,
    )
)]
pub(super) async fn list_likes(
    Reading { blog, viewer }: Reading,
    PostPath(post_id): PostPath,
    list: List,
) -> Result<WirePage<Like>> {
    let page = blog
        .likes(&post_id, viewer.as_ref(), list.request())
        .await?;
    Ok(WirePage(page))
}

/// The feed (Q6)
///
/// The most recent posts in short form, newest first; `continuation` is always `null`.
#[utoipa::path(
    get, path = "/feed", operation_id = "GetFeed", tag = "feed",
    params((
        "limit" = Option<u32>, Query, minimum = 1, maximum = 100,
        description = "How many of the most recent posts, 1–100 (100 when left out)."
    )),
    responses((status = 200, description = "The most recent posts.", body = PostPage), ReadFailures)
)]
pub(super) async fn feed(
    CurrentScope(scope): CurrentScope,
    FeedLimit(size): FeedLimit,
) -> Result<Response> {
    let body = scope.feed.page(&scope.blog, size).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
