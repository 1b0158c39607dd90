//! The HTTP API (axum), one of the two faces of the blog on the plumbing of [`crate::http`]
//! (the pages, `web`, are the other; neither imports the other). Each feature module's
//! handlers carry their OpenAPI description; this module puts them together with the
//! cross-cutting layers: body limit, panic guard, telemetry, RU accounting, what every request
//! must be (`http::admission`) and what its query may hold (`query_parameters`), and problem
//! documents for unknown routes, methods and every other refusal.

mod deletes;
mod description;
mod docs;
mod images;
pub mod openapi;
mod pages;
mod posts;
mod query_parameters;
mod routes;
mod users;
mod views;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::http::refusals::{method_not_allowed, panic_problem, unknown_route};
use crate::http::{AppState, MAX_BODY_BYTES, admission};
use crate::store::charge::{self, RequestCharge};
use crate::telemetry;
pub use pages::{CommentPage, LikePage, PostPage, UserPage};
pub use routes::{
    DescribedOperation, HEALTH_PATH, blog_root, function_for, operations, routes, routes_for,
};

/// The header that carries the request units a request consumed (Cosmos DB backend).
pub const REQUEST_CHARGE_HEADER: &str = "x-ms-request-charge";

/// The routes the deployment serves, each with what must hold of its query and its
/// telemetry: the health probe and, at the blog's API root of its layout, the blog's
/// operations (in `multi` under `/api/tenants/{tenantId}`, so the plain `/api/...` paths are
/// not found there).
fn served_routes(state: &AppState) -> Router<AppState> {
    let noted = |routes: OpenApiRouter<AppState>| {
        routes
            .route_layer(middleware::from_fn(
                query_parameters::known_query_parameters,
            ))
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
    #[test]
    fn the_description_of_413_names_the_limit() {
        use utoipa::ToResponse;
        let digits = crate::http::MAX_BODY_BYTES.to_string();
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
