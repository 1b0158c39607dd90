//! Which blog a request addresses. In the `single` layout there is one; in `multi` each
//! tenant is a blog of its own, addressed as `/api/tenants/{tenantId}/...`: the same
//! operations are mounted there, the tenant is read from the path ([`address_tenant`]), and
//! every store access of the handlers goes through that tenant's view of the store
//! (`TenantStore`).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;

use super::blogs::BlogScope;
use super::paths::TenantPath;
use super::refusals::route_not_found;
use super::state::AppState;
use crate::blog::Blog;
use crate::domain::TenantId;
use crate::problem::Problem;

/// The blog the request addresses.
pub struct CurrentScope(pub Arc<BlogScope>);

impl FromRequestParts<AppState> for CurrentScope {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
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

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let CurrentScope(scope) = CurrentScope::from_request_parts(parts, state).await?;
        Ok(CurrentBlog(scope.blog.clone()))
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
