//! The HTTP API of SPEC 4 (axum). Each feature module exposes a `router()` whose handlers
//! carry their OpenAPI description; this module puts them together with the cross-cutting
//! layers: body limit, panic guard, telemetry, RU accounting, and problem documents for
//! unknown routes and methods.

mod deletes;
mod docs;
pub mod extract;
pub mod feed_cache;
pub mod openapi;
mod posts;
pub mod problem;
pub mod tenants;
mod users;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef, Request};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Authenticator;
use crate::domain::{Comment, Like, Post, User};
use crate::store::{Page, Store, Tenancy, charge};
use crate::telemetry;
use problem::Problem;
use tenants::Blogs;

/// Request bodies above this are refused with 413 (SPEC 4).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The header that carries the request units a request consumed (Cosmos DB backend).
pub const REQUEST_CHARGE_HEADER: &str = "x-ms-request-charge";

/// The request units a request consumed, in its response's extensions: what telemetry
/// records.
#[derive(Debug, Clone, Copy)]
pub struct RequestCharge(pub f64);

#[derive(Clone)]
pub struct AppState {
    pub blogs: Arc<Blogs>,
    pub auth: Arc<Authenticator>,
}

impl AppState {
    /// `store`: the whole store, whose layout decides the routes (one blog, or one per
    /// tenant); `feed_cache_ttl`: how long a feed read may be served from memory (zero:
    /// never); `auth`: who the caller of a command is.
    pub fn new(store: Arc<dyn Store>, feed_cache_ttl: Duration, auth: Authenticator) -> Self {
        Self {
            blogs: Arc::new(Blogs::new(store, feed_cache_ttl)),
            auth: Arc::new(auth),
        }
    }
}

impl FromRef<AppState> for Arc<Authenticator> {
    fn from_ref(state: &AppState) -> Arc<Authenticator> {
        Arc::clone(&state.auth)
    }
}

/// A page of a list: `{"items": [...], "continuation": "<token>" | null}`.
#[derive(Debug, Serialize)]
pub struct PageBody<T> {
    pub items: Vec<T>,
    pub continuation: Option<String>,
}

/// The schema of a [`PageBody`] of `item`s, with `items` referring to the item's schema.
fn page_schema(item: Cow<'static, str>) -> RefOr<Schema> {
    let continuation = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some(
            "An opaque token: pass it back unchanged as `?continuation=` for the next page of \
             the same list; `null` on the last page.",
        ));
    ObjectBuilder::new()
        .description(Some(format!("A page of `{item}` items.")))
        .property(
            "items",
            ArrayBuilder::new().items(Ref::from_schema_name(item)),
        )
        .required("items")
        .property("continuation", continuation)
        .required("continuation")
        .into()
}

/// Names a page of one kind of item for the API description (`body = PostPage`): utoipa's
/// derive would inline the item's schema into a generic `PageBody<T>` instead of referring
/// to it, which gives generated clients a second, anonymous item type.
macro_rules! page_schemas {
    ($($page:ident => $item:ty),* $(,)?) => {$(
        #[doc = concat!("The schema of `PageBody<", stringify!($item), ">`.")]
        pub struct $page;

        impl PartialSchema for $page {
            fn schema() -> RefOr<Schema> {
                page_schema(<$item as ToSchema>::name())
            }
        }

        impl ToSchema for $page {
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((<$item>::name().into_owned(), <$item>::schema()));
                <$item>::schemas(schemas);
            }
        }
    )*};
}

page_schemas!(PostPage => Post, CommentPage => Comment, LikePage => Like, UserPage => User);

impl<T> From<Page<T>> for PageBody<T> {
    fn from(page: Page<T>) -> Self {
        PageBody {
            items: page.items,
            continuation: page.continuation,
        }
    }
}

/// Every route the application serves with its description: the `/api` routes (one Functions
/// HTTP function each) and the readiness probe. To add a route, give its handler a
/// `#[utoipa::path]` and add `.routes(routes!(handler))` to its module's `router()`. In the
/// `multi` layout the `/api` routes are served under [`tenants::TENANT_PREFIX`], and the
/// list of a tenant's users (Q7) is one of them.
fn described_routes(tenancy: Tenancy) -> OpenApiRouter<AppState> {
    let routes = OpenApiRouter::with_openapi(openapi::base())
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

/// The routes `tenancy` serves: the plain ones, or in `multi` the readiness probe and the
/// plain `/api` routes under the tenant prefix, nothing else.
fn served_routes(state: &AppState) -> Router<AppState> {
    let noted = |routes: Router<AppState>| {
        routes.route_layer(middleware::from_fn(telemetry::http::note_route))
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
        .layer(middleware::from_fn(telemetry::http::observe))
        .with_state(state)
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
async fn ready() -> &'static str {
    "ok"
}

async fn unknown_route() -> Problem {
    route_not_found()
}

/// The answer to a path no route serves (also a tenant path that cannot be handed on).
pub fn route_not_found() -> Problem {
    Problem::new(StatusCode::NOT_FOUND, "route-not-found", "no such route")
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this route does not accept that method",
    )
}

fn panic_problem(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "something went wrong on our side; it has been logged",
    )
    .into_response()
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
