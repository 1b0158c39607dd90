//! The routes, with their descriptions.

use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::state::AppState;
use super::{deletes, description, docs, images, posts, users};
use crate::store::Tenancy;

/// Every route the application serves with its description: the `/api` routes (one Functions
/// HTTP function each, the health probe among them). To add a route, give its handler a
/// `#[utoipa::path]` and add `.routes(routes!(handler))` to its module's `router()`. In the
/// `multi` layout the `/api` routes are served under [`crate::operations::tenant_prefix`], and the
/// list of a tenant's users (Q7) is one of them.
pub(super) fn described_routes(tenancy: Tenancy) -> OpenApiRouter<AppState> {
    let routes = OpenApiRouter::with_openapi(description::base())
        .routes(routes!(health))
        .merge(users::router())
        .merge(posts::router())
        .merge(deletes::router())
        .merge(images::router())
        .merge(docs::router());
    match tenancy {
        Tenancy::Single => routes,
        Tenancy::Multi => routes.merge(users::tenant_router()),
    }
}

/// The routes of the `single` layout alone, without layers: what the Functions metadata and
/// the OpenAPI document must match.
pub fn routes() -> Router<AppState> {
    routes_for(Tenancy::Single)
}

/// The plain routes of `tenancy` (`/api/...`), without layers.
pub fn routes_for(tenancy: Tenancy) -> Router<AppState> {
    described_routes(tenancy).split_for_parts().0
}

/// Where the health probe is, in every layout.
pub const HEALTH_PATH: &str = "/api/health";

/// Health probe
///
/// A small answer that touches no store: for load balancers, uptime checks and benchmarks,
/// it says the process serves HTTP, nothing of the store behind it. The same path in every
/// layout.
#[utoipa::path(
    get,
    path = "/api/health",
    operation_id = "GetHealth",
    tag = "host",
    responses((status = 200, description = "The server is up (the store is not consulted).", body = String, content_type = "text/plain"))
)]
pub(super) async fn health() -> &'static str {
    "ok"
}
