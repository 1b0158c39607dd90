//! Which blog a request addresses. In the `single` layout there is one; in `multi` each
//! tenant is a blog of its own, addressed as `/api/tenants/{tenantId}/...` (its pages as
//! `/tenants/{tenantId}/...`): the same operations and pages are mounted there, the tenant is
//! read from the path ([`address_tenant`]), and
//! every store access of the handlers goes through that tenant's view of the store
//! (`TenantStore`). With the blog come who asks: the caller of a command ([`Command`]) or
//! the viewer of a read ([`Reading`]).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::blogs::BlogScope;
use super::extract::{Caller, Viewer};
use super::paths::TenantPath;
use super::refusals::route_not_found;
use super::state::AppState;
use crate::blog::Blog;
use crate::domain::{TenantId, UserId};
use crate::problem::Problem;

/// The blog the request addresses.
pub struct CurrentScope(pub Arc<BlogScope>);

impl FromRequestParts<AppState> for CurrentScope {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        state
            .blogs
            .scope(parts.extensions.get::<TenantId>())
            .map(CurrentScope)
            .ok_or_else(route_not_found)
    }
}

/// The operations of the blog the request addresses.
pub struct CurrentBlog(pub Blog);

impl FromRequestParts<AppState> for CurrentBlog {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let CurrentScope(scope) = CurrentScope::from_request_parts(parts, state).await?;
        Ok(CurrentBlog(scope.blog.clone()))
    }
}

/// A command's blog and its authenticated caller, which every command takes together. The blog
/// is found first: a tenant that does not exist is a 404 whoever asks.
pub struct Command {
    pub blog: Blog,
    pub caller: UserId,
}

impl FromRequestParts<AppState> for Command {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let CurrentBlog(blog) = CurrentBlog::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Caller(caller) = Caller::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Command { blog, caller })
    }
}

/// A read's blog and who reads it, for the reads whose answer depends on the reader (only an
/// unpublished post's author sees it).
pub struct Reading {
    pub blog: Blog,
    pub viewer: Option<UserId>,
}

impl FromRequestParts<AppState> for Reading {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let CurrentBlog(blog) = CurrentBlog::from_request_parts(parts, state).await?;
        let Ok(Viewer(viewer)) = Viewer::from_request_parts(parts, state).await;
        Ok(Reading { blog, viewer })
    }
}

/// A route layer of the `multi` layout's blog routes (`/api/tenants/{tenantId}/...`, and the
/// pages' `/tenants/{tenantId}/...`): the tenant of the path, parsed once, goes with the
/// request for the handlers ([`CurrentScope`]) and telemetry. An invalid one is refused
/// before anything else of the request is read.
pub async fn address_tenant(request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    match TenantPath::from_request_parts(&mut parts, &()).await {
        Ok(TenantPath(tenant)) => {
            parts.extensions.insert(tenant);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refusal) => refusal,
    }
}
