//! The HTTP API (axum). Each feature module exposes a `router()` whose handlers
//! carry their OpenAPI description; this module puts them together with the cross-cutting
//! layers: body limit, panic guard, telemetry, RU accounting, what every request must be
//! (`admission`), and problem documents for unknown routes, methods and every other refusal.

mod admission;
mod blogs;
mod deletes;
mod description;
mod docs;
pub mod extract;
pub mod feed_cache;
pub mod openapi;
mod pages;
mod posts;
mod refusals;
mod routes;
mod state;
pub mod tenants;
mod users;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::routes;

use crate::store::Tenancy;
use crate::store::charge::{self, RequestCharge};
use crate::telemetry;
pub use blogs::Caches;
pub use pages::{CommentPage, LikePage, PostPage, UserPage};
pub use refusals::route_not_found;
use refusals::{method_not_allowed, panic_problem, unknown_route};
use routes::ready;
pub use routes::{routes, routes_for};
pub use state::AppState;

/// Request bodies above this (1 MiB) are refused with 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

pub use admission::MAX_URI_BYTES;

/// The header that carries the request units a request consumed (Cosmos DB backend).
pub const REQUEST_CHARGE_HEADER: &str = "x-ms-request-charge";

/// The routes `tenancy` serves: the plain ones, or in `multi` the readiness probe and the
/// plain `/api` routes under the tenant prefix, nothing else.
fn served_routes(state: &AppState) -> Router<AppState> {
    let noted = |routes: Router<AppState>| {
        routes
            .route_layer(middleware::from_fn(admission::known_query_parameters))
            .route_layer(middleware::from_fn(telemetry::http::note_route))
    };
    match state.blogs.tenancy() {
        Tenancy::Single => noted(routes_for(Tenancy::Single)),
        Tenancy::Multi => {
            // The forwarded request is a new one: the body limit is set again for it. Its
            // route is the one telemetry reports (under the tenant prefix), not the catch-all.
            let api = noted(routes_for(Tenancy::Multi))
                .fallback(unknown_route)
                .method_not_allowed_fallback(method_not_allowed)
                .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
                .with_state(state.clone());
            noted(Router::new().route("/", axum::routing::get(ready)))
                .merge(tenants::tenant_router(api))
        }
    }
}

/// The complete HTTP application; `extra`: the trigger routes, when the host invokes them.
pub fn app(state: AppState, extra: Router<AppState>) -> Router {
    served_routes(&state)
        .merge(extra)
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(request_charge))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(panic_problem))
        .layer(middleware::from_fn(admission::admit))
        .layer(middleware::from_fn(telemetry::http::observe))
        .with_state(state)
}

/// Totals the RU charged by the store while handling the request.
async fn request_charge(request: Request, next: Next) -> Response {
    let (mut response, charged) = charge::measure(next.run(request)).await;
    if charged > 0.0
        && let Ok(value) = HeaderValue::from_str(&format!("{charged:.2}"))
    {
        response.headers_mut().insert(REQUEST_CHARGE_HEADER, value);
        response.extensions_mut().insert(RequestCharge(charged));
    }
    response
}
