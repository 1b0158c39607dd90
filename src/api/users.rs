//! The routes of users: create or rename a user (C1), read one (Q1), list a user's posts
//! (Q3) and the caller's own drafts and scheduled posts, and, in a multi-tenant deployment,
//! list the tenant's users (Q7).

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::description::{
    Conflict, ItemReadFailures, JsonBodyFailures, NotFound, OwnUserFailures, ReadFailures,
};
use super::pages::{PostPage, UserPage, WireItem, WirePage, created_or_existing};
use crate::domain::{Post, User, Username};
use crate::error::{Error, Result};
use crate::http::extract::{JsonBody, List, ListParams};
use crate::http::paths::{AuthorPath, OwnUserPath, UserPath};
use crate::http::tenants::{Command, CurrentBlog};

#[derive(Deserialize, ToSchema)]
pub(super) struct UserBody {
    /// Parsed by the handler, so that a refusal names the field.
    #[schema(value_type = Username)]
    username: String,
}

/// Create or rename a user (C1)
///
/// The caller may only write the user whose id is its own.
#[utoipa::path(
    put, path = "/users/{userId}", operation_id = "PutUser", tag = "users",
    params(OwnUserPath), request_body = UserBody, security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 201, description = "The user was created.", body = User),
        (status = 200, description = "The user existed; it now has this username.", body = User),
        (status = 409, response = Conflict),
        OwnUserFailures, JsonBodyFailures,
    )
)]
pub(super) async fn put_user(
    Command { blog, caller }: Command,
    OwnUserPath(user_id): OwnUserPath,
    JsonBody(body): JsonBody<UserBody>,
) -> Result<(StatusCode, Json<User>)> {
    let username = Username::parse(&body.username)?;
    let (user, outcome) = blog.put_user(&caller, user_id, username).await?;
    Ok(created_or_existing(outcome, user))
}

/// Retrieve a user (Q1)
#[utoipa::path(
    get, path = "/users/{userId}", operation_id = "GetUser", tag = "users",
    params(UserPath),
    responses((status = 200, description = "The user.", body = User), ItemReadFailures)
)]
pub(super) async fn get_user(
    CurrentBlog(blog): CurrentBlog,
    UserPath(user_id): UserPath,
) -> Result<WireItem<User>> {
    Ok(WireItem(blog.get_user_as(&user_id).await?))
}

/// List a user's posts (Q3)
///
/// Short posts (content cut to 200 characters), newest first, a page at a time.
#[utoipa::path(
    get, path = "/users/{userId}/posts", operation_id = "ListUserPosts", tag = "users",
    params(AuthorPath, ListParams),
    responses(
        (status = 200, description = "A page of the user's posts.", body = PostPage),
        ItemReadFailures,
    )
)]
pub(super) async fn user_posts(
    CurrentBlog(blog): CurrentBlog,
    AuthorPath(user_id): AuthorPath,
    list: List,
) -> Result<WirePage<Post>> {
    let page = blog.user_posts(&user_id, list.request()).await?;
    Ok(WirePage(page))
}

/// List the caller's drafts and scheduled posts
///
/// The caller's own unpublished posts in short form, newest first, a page at a time (like
/// Q3): one query of the caller's partition of `users`. Nobody else's.
#[utoipa::path(
    get, path = "/users/{userId}/drafts", operation_id = "ListUserDrafts", tag = "users",
    params(OwnUserPath, ListParams), security(("principalHeader" = []), ("bearerJwt" = [])),
    responses(
        (status = 200, description = "A page of the caller's drafts and scheduled posts.", body = PostPage),
        (status = 404, response = NotFound),
        OwnUserFailures,
    )
)]
pub(super) async fn user_drafts(
    Command { blog, caller }: Command,
    OwnUserPath(user_id): OwnUserPath,
    list: List,
) -> Result<WirePage<Post>> {
    if user_id != caller {
        return Err(Error::Forbidden("only its author sees a user's drafts"));
    }
    let page = blog.user_drafts(&user_id, list.request()).await?;
    Ok(WirePage(page))
}

/// List the tenant's users (Q7)
///
/// Only in a multi-tenant deployment. The users of the tenant, a page at a time, in the
/// store's order: one query on the tenant's key prefix, which Cosmos DB sends only to the
/// partitions holding it.
#[utoipa::path(
    get, path = "/users", operation_id = "ListUsers", tag = "users",
    params(ListParams),
    responses(
        (status = 200, description = "A page of the tenant's users.", body = UserPage),
        ReadFailures,
    )
)]
pub(super) async fn list_users(
    CurrentBlog(blog): CurrentBlog,
    list: List,
) -> Result<WirePage<User>> {
    let page = blog.list_users(list.request()).await?;
    Ok(WirePage(page))
}
