//! C1, Q1, Q3.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use super::extract::{Caller, JsonBody, List, PathParam};
use super::{AppState, PageBody};
use crate::blog::{Blog, Outcome};
use crate::domain::{Post, User, UserId, Username};
use crate::error::Result;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/users/{userId}", get(get_user).put(put_user))
        .route("/api/users/{userId}/posts", get(user_posts))
}

#[derive(Deserialize)]
struct UserBody {
    username: String,
}

async fn put_user(
    State(blog): State<Blog>,
    Caller(caller): Caller,
    PathParam(user_id): PathParam,
    JsonBody(body): JsonBody<UserBody>,
) -> Result<(StatusCode, Json<User>)> {
    let user_id = UserId::parse(&user_id)?;
    let username = Username::parse(&body.username)?;
    let (user, outcome) = blog.put_user(&caller, user_id, username).await?;
    let status = match outcome {
        Outcome::Created => StatusCode::CREATED,
        Outcome::Existing => StatusCode::OK,
    };
    Ok((status, Json(user)))
}

async fn get_user(State(blog): State<Blog>, PathParam(user_id): PathParam) -> Result<Json<User>> {
    let user_id = UserId::parse(&user_id)?;
    Ok(Json(blog.get_user(&user_id).await?))
}

async fn user_posts(
    State(blog): State<Blog>,
    PathParam(user_id): PathParam,
    list: List,
) -> Result<Json<PageBody<Post>>> {
    let user_id = UserId::parse(&user_id)?;
    let page = blog
        .user_posts(&user_id, list.size, list.continuation.as_deref())
        .await?;
    Ok(Json(page.into()))
}
