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
pub mod images;
pub mod openapi;
mod pages;
pub mod paths;
mod posts;
mod refusals;
mod routes;
mod state;
pub mod tenants;
mod users;
mod views;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::store::charge::{self, RequestCharge};
use crate::telemetry;
pub use blogs::Caches;
pub use pages::{CommentPage, LikePage, PostPage, UserPage};
pub use refusals::{MAX_BODY_BYTES, MAX_BYTES_PER_CHAR, body_too_large, route_not_found};
use refusals::{method_not_allowed, panic_problem, unknown_route};
pub use routes::{
    DescribedOperation, HEALTH_PATH, blog_root, function_for, operations, routes, routes_for,
};
pub use state::AppState;

pub use admission::{MAX_URI_BYTES, refuse_long_uri};

/// The header that carries the request units a request consumed (Cosmos DB backend).
pub const REQUEST_CHARGE_HEADER: &str = "x-ms-request-charge";

/// The routes the deployment serves, each with what must hold of its query and its
/// telemetry: the health probe and, at the blog's API root of its layout, the blog's
/// operations (in `multi` under `/api/tenants/{tenantId}`, so the plain `/api/...` paths are
/// not found there).
fn served_routes(state: &AppState) -> Router<AppState> {
    let noted = |routes: OpenApiRouter<AppState>| {
        routes
            .route_layer(middleware::from_fn(admission::known_query_parameters))
            .route_layer(middleware::from_fn_with_state(
                function_for as telemetry::http::FunctionOf,
                telemetry::http::note_route,
            ))
    };
    routes::described_routes_with(state.blogs.tenancy(), noted)
        .split_for_parts()
        .0
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

#[cfg(test)]
mod tests {
    use super::MAX_BYTES_PER_CHAR;

    /// The bytes of `text` as a JSON string escaped by Python's `json.dumps` (every UTF-16
    /// unit outside ASCII as `\uXXXX`).
    fn escaped_bytes(text: &str) -> usize {
        text.chars()
            .map(|c| if c.is_ascii() { 1 } else { 6 * c.len_utf16() })
            .sum()
    }

    #[test]
    fn no_character_takes_more_than_the_bound_however_it_is_encoded() {
        let widest = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .map(|c| (escaped_bytes(&c.to_string()).max(3 * c.len_utf8()), c))
            .max()
            .unwrap_or_default();
        assert_eq!(widest.0, MAX_BYTES_PER_CHAR, "{:?}", widest.1);
    }

    #[test]
    fn the_description_of_413_names_the_limit() {
        use utoipa::ToResponse;
        let digits = super::MAX_BODY_BYTES.to_string();
        let (head, tail) = digits.split_at(digits.len() - 3);
        let (first, middle) = head.split_at(head.len() - 3);
        let response = super::description::PayloadTooLarge::response().1;
        let text = serde_json::to_string(&response).unwrap_or_default();
        assert!(
            text.contains(&format!("{first},{middle},{tail} bytes")),
            "{text}"
        );
    }
}
