//! Which blog a request addresses. In the `single` layout there is one; in `multi` each
//! tenant is a blog of its own, addressed as `/api/tenants/{tenantId}/...`: the request is
//! handed to the same routes as `/api/...`, with its tenant alongside, and every store
//! access of the handlers goes through that tenant's view of the store ([`TenantStore`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Request};
use axum::http::Uri;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tower::ServiceExt;

use super::blogs::BlogScope;
use super::extract::PathPair;
use super::refusals::route_not_found;
use super::state::AppState;
use crate::blog::Blog;
use crate::domain::TenantId;
use crate::error::Error;
use crate::operations::tenant_prefix;
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

/// The `multi` deployment's routes: `/api/tenants/{tenantId}/<rest>` is served by the
/// `/api/<rest>` route of `api` for that tenant. Nothing else under `/api` is routed here,
/// so the plain routes answer 404.
pub fn tenant_router(api: Router) -> Router<AppState> {
    Router::new().route(
        &format!("{}/{{*rest}}", tenant_prefix()),
        // `PathPair`, not `Path`: a path that does not decode (invalid UTF-8, in the tenant or
        // the rest) is an `invalid-path` problem, as on the plain routes.
        any(move |PathPair(tenant, _): PathPair, request: Request| {
            forward(api.clone(), tenant, request)
        }),
    )
}

async fn forward(api: Router, tenant: String, request: Request) -> Response {
    let tenant = match TenantId::parse(&tenant) {
        Ok(tenant) => tenant,
        Err(invalid) => return Error::Validation(invalid).into_response(),
    };
    let Some(uri) = plain_uri(request.uri()) else {
        return route_not_found().into_response();
    };
    // A new request, not the routed one: its extensions hold this route's path parameters,
    // which the plain route's extractors would see before their own.
    let (parts, body) = request.into_parts();
    let mut plain = Request::new(body);
    *plain.method_mut() = parts.method;
    *plain.uri_mut() = uri;
    *plain.version_mut() = parts.version;
    *plain.headers_mut() = parts.headers;
    plain.extensions_mut().insert(tenant);
    match api.oneshot(plain).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// `/api/tenants/{tenantId}/<rest>?<query>` as `/api/<rest>?<query>`, the rest as it came
/// (still percent-encoded: the plain route decodes it).
fn plain_uri(uri: &Uri) -> Option<Uri> {
    let after_tenants = uri.path().strip_prefix("/api/tenants/")?;
    let rest = &after_tenants[after_tenants.find('/')?..];
    let path = match uri.query() {
        Some(query) => format!("/api{rest}?{query}"),
        None => format!("/api{rest}"),
    };
    path.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_uri_becomes_the_plain_uri_with_its_encoding_kept() {
        let uri: Uri = "/api/tenants/t%201/users/a%2Fb/posts?limit=2&continuation=x%3D"
            .parse()
            .unwrap();
        assert_eq!(
            plain_uri(&uri).unwrap(),
            "/api/users/a%2Fb/posts?limit=2&continuation=x%3D"
        );
        let feed: Uri = "/api/tenants/t/feed".parse().unwrap();
        assert_eq!(plain_uri(&feed).unwrap(), "/api/feed");
    }
}
