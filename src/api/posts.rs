//! C2, Q2, C3, Q4, C4, Q5, Q6.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use super::extract::{Caller, FeedLimit, JsonBody, List, PathParam};
use super::feed_cache::page_body;
use super::{AppState, PageBody};
use crate::blog::{Blog, Outcome};
use crate::domain::{Comment, CommentContent, Like, Post, PostContent, PostId, Title};
use crate::error::Result;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/posts", post(create_post))
        .route("/api/posts/{postId}", get(get_post).put(edit_post))
        .route(
            "/api/posts/{postId}/comments",
            get(list_comments).post(add_comment),
        )
        .route("/api/posts/{postId}/likes", get(list_likes).post(like_post))
        .route("/api/feed", get(feed))
}

#[derive(Deserialize)]
struct PostBody {
    title: String,
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

#[derive(Deserialize)]
struct CommentBody {
    content: String,
}

async fn create_post(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<(StatusCode, Json<Post>)> {
    let (title, content) = body.parse()?;
    let post = blog.create_post(&caller, title, content).await?;
    Ok((StatusCode::CREATED, Json(post)))
}

async fn edit_post(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
    JsonBody(body): JsonBody<PostBody>,
) -> Result<Json<Post>> {
    let post_id = PostId::parse(&post_id)?;
    let (title, content) = body.parse()?;
    Ok(Json(
        blog.edit_post(&caller, &post_id, title, content).await?,
    ))
}

async fn get_post(State(blog): State<Blog>, PathParam(post_id): PathParam) -> Result<Json<Post>> {
    let post_id = PostId::parse(&post_id)?;
    Ok(Json(blog.get_post(&post_id).await?))
}

async fn add_comment(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<(StatusCode, Json<Comment>)> {
    let post_id = PostId::parse(&post_id)?;
    let content = CommentContent::parse(&body.content)?;
    let comment = blog.add_comment(&caller, &post_id, content).await?;
    Ok((StatusCode::CREATED, Json(comment)))
}

async fn list_comments(
    State(blog): State<Blog>,
    PathParam(post_id): PathParam,
    list: List,
) -> Result<Json<PageBody<Comment>>> {
    let post_id = PostId::parse(&post_id)?;
    let page = blog
        .comments(&post_id, list.size, list.continuation.as_deref())
        .await?;
    Ok(Json(page.into()))
}

async fn like_post(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(post_id): PathParam,
) -> Result<(StatusCode, Json<Like>)> {
    let post_id = PostId::parse(&post_id)?;
    let (like, outcome) = blog.like_post(&caller, &post_id).await?;
    let status = match outcome {
        Outcome::Created => StatusCode::CREATED,
        Outcome::Existing => StatusCode::OK,
    };
    Ok((status, Json(like)))
}

async fn list_likes(
    State(blog): State<Blog>,
    PathParam(post_id): PathParam,
    list: List,
) -> Result<Json<PageBody<Like>>> {
    let post_id = PostId::parse(&post_id)?;
    let page = blog
        .likes(&post_id, list.size, list.continuation.as_deref())
        .await?;
    Ok(Json(page.into()))
}

async fn feed(State(state): State<AppState>, FeedLimit(size): FeedLimit) -> Result<Response> {
    let items = state.feed.items(&state.blog).await?;
    let body = page_body(&items, size);
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
