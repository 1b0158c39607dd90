//! The API's route table: every operation, listed once.
//!
//! Each line names a handler; the handler's `#[utoipa::path]` says the rest (method, path
//! below the blog's API root, operation id, parameters, answers). From this list come the
//! router, the OpenAPI document, the Azure Functions HTTP functions (one per operation,
//! named by its operation id: [`operations`]) and the operation telemetry names a request
//! by ([`function_for`]). To add an operation: write its handler with a `#[utoipa::path]`
//! and add one `routes!(module::handler)` line to [`blog_operations`] (or, for one of the
//! server's own, to [`site_operations`]).

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::middleware;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use super::{deletes, description, docs, images, posts, users, views};
use crate::http::AppState;
use crate::http::tenants;
use crate::operations::{ROUTE_PREFIX, tenant_prefix};
use crate::store::Tenancy;

/// The operations of one blog, their paths below the blog's API root: `/api` in the
/// `single` layout, `/api/tenants/{tenantId}` in `multi`.
fn blog_operations(tenancy: Tenancy) -> Vec<UtoipaMethodRouter<AppState>> {
    let mut operations = vec![
        routes!(users::put_user),
        routes!(users::get_user),
        routes!(users::user_posts),
        routes!(users::user_drafts),
        routes!(posts::create_post),
        routes!(posts::edit_post),
        routes!(posts::get_post),
        routes!(posts::add_comment),
        routes!(posts::list_comments),
        routes!(posts::like_post),
        routes!(posts::list_likes),
        routes!(posts::feed),
        routes!(views::tag_posts),
        routes!(views::month_posts),
        routes!(views::archive),
        routes!(deletes::delete_user),
        routes!(deletes::delete_post),
        routes!(deletes::delete_comment),
        routes!(deletes::unlike),
        routes!(images::upload_image),
        routes!(images::delete_image),
        routes!(images::user_images),
        routes!(docs::openapi_json),
        routes!(docs::docs_page),
        routes!(docs::docs_styles),
        routes!(docs::docs_script),
    ];
    // Only a multi-tenant deployment lists a blog's users (Q7).
    if tenancy == Tenancy::Multi {
        operations.push(routes!(users::list_users));
    }
    operations
}

/// The operations of the server rather than of a blog, at the same path in every layout.
fn site_operations() -> Vec<UtoipaMethodRouter<AppState>> {
    vec![routes!(health)]
}

/// Where `tenancy` serves a blog's operations: `/api`, or `/api/tenants/{tenantId}`.
pub fn blog_root(tenancy: Tenancy) -> String {
    match tenancy {
        Tenancy::Single => format!("/{ROUTE_PREFIX}"),
        Tenancy::Multi => tenant_prefix(),
    }
}

/// `operation` with its path under `root` (in the router and in its description alike).
fn under(
    root: &str,
    (schemas, mut paths, method_router): UtoipaMethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(path, item)| (format!("{root}{path}"), item))
        .collect();
    (schemas, paths, method_router)
}

/// Every route of `tenancy` with its description. `noted` adds the layers every operation
/// runs in once it is routed; in `multi` the blog's operations also take their tenant from
/// the path, before anything else.
pub(super) fn described_routes_with(
    tenancy: Tenancy,
    noted: impl Fn(OpenApiRouter<AppState>) -> OpenApiRouter<AppState>,
) -> OpenApiRouter<AppState> {
    let site = site_operations().into_iter().fold(
        OpenApiRouter::with_openapi(description::base()),
        OpenApiRouter::routes,
    );
    let root = blog_root(tenancy);
    let blog = blog_operations(tenancy)
        .into_iter()
        .fold(OpenApiRouter::new(), |router, operation| {
            router.routes(under(&root, operation))
        });
    let blog = match tenancy {
        Tenancy::Single => noted(blog),
        Tenancy::Multi => noted(blog).route_layer(middleware::from_fn(tenants::address_tenant)),
    };
    noted(site).merge(blog)
}

/// Every route of `tenancy` with its description, without layers.
pub(super) fn described_routes(tenancy: Tenancy) -> OpenApiRouter<AppState> {
    described_routes_with(tenancy, |routes| routes)
}

/// The routes of the `single` layout alone, without layers.
pub fn routes() -> axum::Router<AppState> {
    routes_for(Tenancy::Single)
}

/// The routes of `tenancy`, without the application's layers.
pub fn routes_for(tenancy: Tenancy) -> axum::Router<AppState> {
    described_routes(tenancy).split_for_parts().0
}

/// One operation of the table, as the Azure Functions metadata declares it.
pub struct DescribedOperation {
    /// Its operation id: the name of its function.
    pub name: String,
    /// Lower-case HTTP method, as `function.json` spells it.
    pub method: &'static str,
    /// Its route below `/api`, as the `single` layout serves it: `users/{userId}` (the
    /// `multi` layout serves a blog's operations under the tenant prefix).
    pub route: String,
    /// Served at the same path in every layout: the server's, not a blog's (the health probe).
    pub site_wide: bool,
}

/// Every operation of `tenancy`, in the table's order: the blog's, then the site's.
pub fn operations(tenancy: Tenancy) -> Vec<DescribedOperation> {
    let blog = blog_operations(tenancy).into_iter().map(|op| (op, false));
    let site = site_operations().into_iter().map(|op| (op, true));
    let api_root = format!("/{ROUTE_PREFIX}/");
    let mut described = Vec::new();
    for ((_, paths, _), site_wide) in blog.chain(site) {
        for (path, item) in paths.paths {
            let below = if site_wide { api_root.as_str() } else { "/" };
            let route = path.strip_prefix(below).unwrap_or(&path).to_owned();
            for (method, operation) in methods_of(item) {
                described.push(DescribedOperation {
                    name: operation.operation_id.unwrap_or_default(),
                    method,
                    route: route.clone(),
                    site_wide,
                });
            }
        }
    }
    described
}

/// The operations of a path, with their methods as `function.json` spells them.
fn methods_of(item: PathItem) -> impl Iterator<Item = (&'static str, Operation)> {
    [
        ("get", item.get),
        ("put", item.put),
        ("post", item.post),
        ("delete", item.delete),
        ("patch", item.patch),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
}

/// The function of each route template, as the router mounts it in either layout, and
/// method: the names telemetry gives requests.
static FUNCTIONS: LazyLock<HashMap<String, Vec<(&'static str, String)>>> = LazyLock::new(|| {
    let mut functions: HashMap<String, Vec<(&'static str, String)>> = HashMap::new();
    for tenancy in [Tenancy::Single, Tenancy::Multi] {
        let root = blog_root(tenancy);
        for operation in operations(tenancy) {
            let template = match operation.site_wide {
                true => format!("/{ROUTE_PREFIX}/{}", operation.route),
                false => format!("{root}/{}", operation.route),
            };
            let methods = functions.entry(template).or_default();
            if !methods
                .iter()
                .any(|(method, _)| *method == operation.method)
            {
                methods.push((operation.method, operation.name));
            }
        }
    }
    functions
});

/// The function a request with `method` runs when it matches the route `template`
/// (`/api/users/{userId}`, `/api/tenants/{tenantId}/users/{userId}`): the operation
/// telemetry names.
pub fn function_for(method: &str, template: &str) -> Option<&'static str> {
    FUNCTIONS
        .get(template)?
        .iter()
        .find(|(name_method, _)| name_method.eq_ignore_ascii_case(method))
        .map(|(_, name)| name.as_str())
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
