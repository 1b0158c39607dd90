//! Which blog a request addresses. In the `single` layout there is one; in `multi` each
//! tenant is a blog of its own, addressed as `/api/tenants/{tenantId}/...`: the request is
//! handed to the same routes as `/api/...`, with its tenant alongside, and every store
//! access of the handlers goes through that tenant's view of the store ([`TenantStore`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{FromRequestParts, Request};
use axum::http::Uri;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tower::ServiceExt;

use super::extract::PathPair;
use super::feed_cache::FeedCache;
use super::problem::Problem;
use super::{AppState, route_not_found};
use crate::blog::Blog;
use crate::domain::TenantId;
use crate::error::Error;
use crate::store::tenant::TenantStore;
use crate::store::{Store, Tenancy};

/// The tenant routes' common prefix: `/api/tenants/{tenantId}` then an `/api` route's rest.
pub const TENANT_PREFIX: &str = "/api/tenants/{tenantId}";

/// Tenants kept ready (their combiner and feed cache) at most; beyond it the idle ones are
/// dropped and made again on their next request.
const MAX_KEPT_TENANTS: usize = 4096;

/// One blog: its operations and its front-page cache.
pub struct BlogScope {
    pub blog: Blog,
    pub feed: FeedCache,
}

impl BlogScope {
    fn new(store: Arc<dyn Store>, feed_cache_ttl: Duration) -> Self {
        Self {
            blog: Blog::new(store),
            feed: FeedCache::new(feed_cache_ttl),
        }
    }
}

/// The blogs of a deployment: one, or one per tenant made on demand.
pub struct Blogs {
    /// The whole store: what the change-feed triggers read and write.
    store: Arc<dyn Store>,
    feed_cache_ttl: Duration,
    /// The blog of a `single` store.
    single: Option<Arc<BlogScope>>,
    tenants: Mutex<HashMap<TenantId, Arc<BlogScope>>>,
}

impl Blogs {
    pub fn new(store: Arc<dyn Store>, feed_cache_ttl: Duration) -> Self {
        let single = (store.tenancy() == Tenancy::Single)
            .then(|| Arc::new(BlogScope::new(Arc::clone(&store), feed_cache_ttl)));
        Self {
            store,
            feed_cache_ttl,
            single,
            tenants: Mutex::default(),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn tenancy(&self) -> Tenancy {
        self.store.tenancy()
    }

    /// The blog a request addresses: the only one, or its tenant's (`None`: a `multi`
    /// deployment's request without a tenant, which cannot be routed here).
    fn scope(&self, tenant: Option<&TenantId>) -> Option<Arc<BlogScope>> {
        match (&self.single, tenant) {
            (Some(single), _) => Some(Arc::clone(single)),
            (None, Some(tenant)) => Some(self.of_tenant(tenant)),
            (None, None) => None,
        }
    }

    /// The tenant's blog. Concurrent requests of a tenant share one, so its comments and
    /// likes are combined and its feed cached.
    pub fn of_tenant(&self, tenant: &TenantId) -> Arc<BlogScope> {
        let mut tenants = self
            .tenants
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(scope) = tenants.get(tenant) {
            return Arc::clone(scope);
        }
        if tenants.len() >= MAX_KEPT_TENANTS {
            // Keep the tenants with a request in flight; a dropped one only loses its cache.
            tenants.retain(|_, scope| Arc::strong_count(scope) > 1);
        }
        let store: Arc<dyn Store> =
            Arc::new(TenantStore::new(Arc::clone(&self.store), tenant.clone()));
        let scope = Arc::new(BlogScope::new(store, self.feed_cache_ttl));
        tenants.insert(tenant.clone(), Arc::clone(&scope));
        scope
    }
}

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
        &format!("{TENANT_PREFIX}/{{*rest}}"),
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
    use crate::store::embedded::EmbeddedStore;

    #[test]
    fn a_tenant_keeps_one_blog_and_idle_tenants_are_dropped_beyond_the_bound() {
        let dir = tempfile::TempDir::new().unwrap();
        let store =
            EmbeddedStore::open_with(&dir.path().join("blog.sqlite3"), Tenancy::Multi).unwrap();
        let blogs = Blogs::new(Arc::new(store), Duration::ZERO);
        let tenant = |n: usize| TenantId::parse(&format!("t{n}")).unwrap();
        assert!(blogs.scope(None).is_none(), "multi needs a tenant");
        let busy = blogs.of_tenant(&tenant(0));
        assert!(Arc::ptr_eq(&busy, &blogs.of_tenant(&tenant(0))));
        let idle = Arc::downgrade(&blogs.of_tenant(&tenant(1)));
        for n in 2..=MAX_KEPT_TENANTS {
            blogs.of_tenant(&tenant(n));
        }
        assert!(
            Arc::ptr_eq(&busy, &blogs.of_tenant(&tenant(0))),
            "in use: kept"
        );
        assert!(idle.upgrade().is_none(), "idle: dropped");
        assert!(blogs.tenants.lock().unwrap().len() <= MAX_KEPT_TENANTS);
    }

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
