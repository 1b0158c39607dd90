//! The routes, with their descriptions.

use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::state::AppState;
use super::{deletes, description, docs, posts, users};
use crate::store::Tenancy;

/// Every route the application serves with its description: the `/api` routes (one Functions
/// HTTP function each) and the readiness probe. To add a route, give its handler a
/// `#[utoipa::path]` and add `.routes(routes!(handler))` to its module's `router()`. In the
/// `multi` layout the `/api` routes are served under [`crate::operations::tenant_prefix`], and the
/// list of a tenant's users (Q7) is one of them.
pub(super) fn described_routes(tenancy: Tenancy) -> OpenApiRouter<AppState> {
    let routes = OpenApiRouter::with_openapi(description::base())
        .routes(routes!(ready))
        .merge(users::router())
        .merge(posts::router())
        .merge(deletes::router())
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

/// Readiness probe
///
/// The Functions host probes `/` until the custom handler answers.
#[utoipa::path(
    get,
    path = "/",
    operation_id = "Ready",
    tag = "host",
    responses((status = 200, description = "The server is up.", body = String, content_type = "text/plain"))
)]
pub(super) async fn ready() -> &'static str {
    "ok"
}
