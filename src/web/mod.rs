//! The blog's web front end: HTML pages, forms, Atom feeds and their static assets, served by
//! the same binary as the API and built on the same operations ([`crate::blog`]): a page, an
//! API route and a Functions function are three faces of one operation.
//!
//! One door, [`router`]: it serves the pages ([`routes`] lists them) and hands every other
//! request to the API application it wraps. `GET /` is the front page for every client that
//! accepts HTML. In the `multi` layout the pages of a tenant are under `/tenants/{tenantId}/`:
//! the same routes mounted there, the tenant read from the path, as the API does under
//! `/api/tenants/{tenantId}/`.

mod account;
mod assets;
mod atom;
mod context;
pub mod excerpt;
mod forms;
pub mod guard;
mod images;
mod json_feed;
pub mod markdown;
mod meta;
mod page_caches;
mod pages;
pub mod routes;
pub mod site;
mod uploads;
mod views;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Extension, Router};
use tower::ServiceExt;
use tower_http::catch_panic::CatchPanicLayer;

use crate::http::AppState;
use crate::problem::Problem;
use crate::store::Tenancy;
use crate::telemetry;
pub use context::{PageBase, PageContext};
pub use guard::AllowedOrigins;
pub use site::{PublicUrl, Site};

/// Where a tenant's pages are in the `multi` layout.
pub const TENANT_PAGES_PREFIX: &str = "/tenants/{tenantId}";

/// A visit to an address that only takes a form (the browser's own "HTTP ERROR 405"
/// otherwise): an error page that says so.
async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this address takes a form sent from one of this site's pages; there is nothing to \
         see here",
    )
}

/// The whole application: the pages, and `api` (the API application, with its own layers)
/// for every request no page answers. `allowed`: the origins whose pages may call the API
/// (`BLOG_CORS_ORIGINS`); `site`: what the pages know of the site (its public address, the
/// server's key), handed to every request.
pub fn router(state: AppState, api: Router, allowed: AllowedOrigins, site: Site) -> Router {
    let site = Arc::new(site);
    let blog = match state.blogs.tenancy() {
        Tenancy::Single => noted(routes::blog_pages().mounted_at("")),
        // The same pages below each tenant's root, the tenant read from the path before
        // anything else; the site's root is no blog's.
        Tenancy::Multi => noted(routes::blog_pages().mounted_at(TENANT_PAGES_PREFIX))
            .route_layer(middleware::from_fn(crate::http::tenants::address_tenant)),
    }
    .layer(middleware::from_fn(telemetry::http::observe))
    .layer(middleware::from_fn(answer_conditionally))
    .with_state(state.clone());
    let home = match state.blogs.tenancy() {
        Tenancy::Single => blog.clone(),
        Tenancy::Multi => Router::new().route("/", get(no_blog_here)),
    };
    let ready = api.clone();
    Router::new()
        .route(
            "/",
            any(move |request: Request| front_door(home.clone(), ready.clone(), request)),
        )
        .merge(
            noted(routes::site_pages().mounted_at(""))
                .layer(middleware::from_fn(telemetry::http::observe))
                .with_state(state.clone()),
        )
        .fallback_service(blog.fallback_service(api))
        .layer(CatchPanicLayer::custom(panic_page))
        .layer(middleware::from_fn_with_state(
            allowed,
            guard::refuse_cross_site,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(
            crate::http::MAX_BODY_BYTES,
        ))
        .layer(middleware::from_fn(crate::http::refuse_long_uri))
        .layer(middleware::from_fn_with_state(
            (state, Arc::clone(&site)),
            error_pages,
        ))
        .layer(middleware::from_fn(guard::page_headers))
        .layer(Extension(site))
}

/// Pages are traced and measured like the API's operations (with `telemetry::http::observe`
/// around them; the API application has its own layers, so a request it answers is observed
/// once); a page that takes only a form says so to a visit.
fn noted(pages: Router<AppState>) -> Router<AppState> {
    pages
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(
            telemetry::http::no_function as telemetry::http::FunctionOf,
            telemetry::http::note_route,
        ))
}

/// `/` is the front page for every client that accepts HTML (`*/*` included: curl, link
/// unfurlers, crawlers); a client that accepts only other types gets the API's answer.
/// Probes have their own route, `GET /api/health`.
async fn front_door(pages: Router, api: Router, mut request: Request) -> Response {
    // The router it is handed to matches `/` again: without this, that router would see the
    // two matches joined (`//`) and not know the route (its query parameters, its telemetry).
    request
        .extensions_mut()
        .remove::<axum::extract::MatchedPath>();
    let target = if accepts_html(request.headers()) {
        pages
    } else {
        api
    };
    match target.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Whether the client asked for HTML (a browser's navigation does; API clients do not).
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|accept| accept.contains("text/html"))
}

/// Whether the client takes an HTML answer: it sends no `Accept`, or one that names
/// `text/html`, `text/*` or `*/*` without refusing it (`q=0`).
fn accepts_html(headers: &HeaderMap) -> bool {
    let mut ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|accept| accept.split(','))
        .peekable();
    if ranges.peek().is_none() {
        return true;
    }
    ranges.any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let refused = parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q == 0.0)
        });
        matches!(media.as_str(), "text/html" | "text/*" | "*/*") && !refused
    })
}

/// `/` of a multi-tenant site, for a browser: the site has no blog of its own, and does not
/// list its tenants (one tenant's readers need not learn of the others), so the page says
/// where a blog is. Under the Functions host `functions::metadata::MULTI_SITE_ROOT` brings
/// the request here.
async fn no_blog_here() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "no-blog-at-site-root",
        "this site holds many blogs: each one is at /tenants/{its id}/",
    )
}

/// Public pages and feeds answer conditional GETs: the `ETag` is a digest of the body, and
/// an `If-None-Match` that names it is answered `304` without the body. A response with a
/// `Last-Modified` (the feeds) also answers an `If-Modified-Since` at or after it with `304`,
/// unless `If-None-Match` is sent, which then decides alone (RFC 9110 §13.1.3).
async fn answer_conditionally(request: Request, next: Next) -> Response {
    let conditional =
        request.method() == axum::http::Method::GET || request.method() == axum::http::Method::HEAD;
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
    let if_modified_since = request.headers().get(header::IF_MODIFIED_SINCE).cloned();
    let response = next.run(request).await;
    // A response with its own tag (an image's) answered its conditions itself.
    if !conditional
        || response.status() != StatusCode::OK
        || response.headers().contains_key(header::SET_COOKIE)
        || response.headers().contains_key(header::ETAG)
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &bytes);
    let tag = format!(
        "\"{}\"",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            &digest.as_ref()[..16]
        )
    );
    let Ok(etag) = HeaderValue::from_str(&tag) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    parts.headers.insert(header::ETAG, etag);
    let matches = if_none_match
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v == "*"
                || v.split(',')
                    .any(|t| t.trim().trim_start_matches("W/") == tag)
        });
    let unmodified = if_none_match.is_none()
        && not_modified_since(
            if_modified_since.as_ref(),
            parts.headers.get(header::LAST_MODIFIED),
        );
    if matches || unmodified {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, axum::body::Body::empty());
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// Whether `If-Modified-Since` names a time at or after `Last-Modified`. HTTP dates are read
/// in all three of their forms; an unreadable one is ignored, as RFC 9110 asks.
fn not_modified_since(since: Option<&HeaderValue>, last_modified: Option<&HeaderValue>) -> bool {
    let date = |value: Option<&HeaderValue>| {
        value
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
    };
    match (date(since), date(last_modified)) {
        (Some(since), Some(last_modified)) => since >= last_modified,
        _ => false,
    }
}

/// A problem answered to a browser (a request outside `/api` that accepts HTML) becomes an
/// error page in the site's layout, with the same status and the problem's code: rendered
/// from the [`Problem`] the answer carries, not from its JSON.
async fn error_pages(
    State((state, site)): State<(AppState, Arc<Site>)>,
    request: Request,
    next: Next,
) -> Response {
    let as_page = !request.uri().path().starts_with("/api/") && wants_html(request.headers());
    if !as_page {
        return next.run(request).await;
    }
    // What the error page needs of the request, kept aside while the request is handled
    // (most are answered without an error, and their page context is never made).
    let mut asked = Request::new(());
    *asked.uri_mut() = request.uri().clone();
    *asked.headers_mut() = request.headers().clone();
    let (mut asked, ()) = asked.into_parts();
    let response = next.run(request).await;
    if response.extensions().get::<Problem>().is_none() {
        return response;
    }
    let (mut answered, _document) = response.into_parts();
    let Some(problem) = answered.extensions.remove::<Problem>() else {
        return answered.status.into_response();
    };
    let context = PageContext::for_error(&state, site, &mut asked).await;
    let mut page = pages::error_page(
        &context,
        answered.status,
        problem.code.to_owned(),
        problem.detail,
    );
    // What the refusal said besides its body (`Allow`, `Retry-After`) holds for the page too.
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = answered.headers.get(&name) {
            page.headers_mut().insert(name, value.clone());
        }
    }
    page
}

fn panic_page(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a page handler panicked");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "something went wrong on our side; it has been logged",
    )
    .into_response()
}
