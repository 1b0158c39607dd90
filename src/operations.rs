//! The operations the application serves, one Azure Functions function each: the HTTP
//! functions (name, method, route) and the names of the change-feed triggers. The function
//! metadata is generated from this table, the router is checked against it, and telemetry
//! names each request's operation from it.

use crate::store::Tenancy;

/// The host's HTTP route prefix. The HTTP routes below leave it out; requests are forwarded
/// with their original path, so axum sees `/api/...`.
pub const ROUTE_PREFIX: &str = "api";

/// Where the `multi` layout serves every HTTP function, below [`ROUTE_PREFIX`]: the host
/// matches `api/tenants/{tenantId}/users/{userId}` and forwards it unchanged to the router's
/// tenant routes (see [`tenant_prefix`]).
pub const TENANT_ROUTE_PREFIX: &str = "tenants/{tenantId}";

/// The path prefix of the tenant routes the router serves, `/api/tenants/{tenantId}`: the
/// host's route prefix and [`TENANT_ROUTE_PREFIX`].
pub fn tenant_prefix() -> String {
    format!("/{ROUTE_PREFIX}/{TENANT_ROUTE_PREFIX}")
}

/// The function of the change-feed trigger on `users`.
pub const ON_USER_CHANGED: &str = "OnUserChanged";
/// The function of the change-feed trigger on `posts`.
pub const ON_POST_CHANGED: &str = "OnPostChanged";
/// The change-feed triggers' functions; each is served at `/<name>`.
pub const TRIGGER_FUNCTIONS: [&str; 2] = [ON_USER_CHANGED, ON_POST_CHANGED];

/// One HTTP-triggered function: one operation of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpFunction {
    pub name: &'static str,
    /// Lower-case HTTP method, as `function.json` spells it.
    pub method: &'static str,
    /// Route template of the `single` layout, without the `api/` prefix, with axum's
    /// `{param}` placeholders (the Functions host uses the same syntax). The `multi` layout
    /// serves it under [`TENANT_ROUTE_PREFIX`] (see [`HttpFunction::route_in`]).
    pub route: &'static str,
    /// `Some(layout)`: only that layout has the function (Q7 lists a tenant's users).
    pub only_in: Option<Tenancy>,
    /// Served at the same path in every layout, never under a tenant: it belongs to the
    /// server, not to a blog (the health probe).
    pub site_wide: bool,
}

const fn http(name: &'static str, method: &'static str, route: &'static str) -> HttpFunction {
    HttpFunction {
        name,
        method,
        route,
        only_in: None,
        site_wide: false,
    }
}

/// Every operation of the API, one function each, so each shows up on
/// its own in the portal and in Application Insights. The names are the operation ids of the
/// OpenAPI document.
pub const HTTP_FUNCTIONS: &[HttpFunction] = &[
    http("PutUser", "put", "users/{userId}"),
    http("GetUser", "get", "users/{userId}"),
    http("ListUserPosts", "get", "users/{userId}/posts"),
    http("CreatePost", "post", "posts"),
    http("EditPost", "put", "posts/{postId}"),
    http("GetPost", "get", "posts/{postId}"),
    http("AddComment", "post", "posts/{postId}/comments"),
    http("ListComments", "get", "posts/{postId}/comments"),
    http("LikePost", "post", "posts/{postId}/likes"),
    http("ListLikes", "get", "posts/{postId}/likes"),
    http("GetFeed", "get", "feed"),
    http("DeleteUser", "delete", "users/{userId}"),
    http("DeletePost", "delete", "posts/{postId}"),
    http(
        "DeleteComment",
        "delete",
        "posts/{postId}/comments/{commentId}",
    ),
    http("Unlike", "delete", "posts/{postId}/likes"),
    http("UploadImage", "post", "images"),
    http("DeleteImage", "delete", "images/{imageId}"),
    http("ListUserImages", "get", "users/{userId}/images"),
    http("GetOpenApi", "get", "openapi.json"),
    http("GetApiDocs", "get", "docs"),
    http("GetApiDocsStyles", "get", "docs/swagger-ui.css"),
    http("GetApiDocsScript", "get", "docs/swagger-ui-bundle.js"),
    http("ListUsers", "get", "users").only_in(Tenancy::Multi),
    http("GetHealth", "get", "health").site_wide(),
];

impl HttpFunction {
    const fn only_in(self, tenancy: Tenancy) -> Self {
        Self {
            only_in: Some(tenancy),
            ..self
        }
    }

    const fn site_wide(self) -> Self {
        Self {
            site_wide: true,
            ..self
        }
    }

    /// Whether the `tenancy` layout has this function.
    pub fn is_in(&self, tenancy: Tenancy) -> bool {
        self.only_in.is_none_or(|only| only == tenancy)
    }

    /// The route template of `function.json` in `tenancy`, e.g. `users/{userId}` or
    /// `tenants/{tenantId}/users/{userId}`.
    pub fn route_in(&self, tenancy: Tenancy) -> String {
        match tenancy {
            Tenancy::Multi if !self.site_wide => format!("{TENANT_ROUTE_PREFIX}/{}", self.route),
            _ => self.route.to_owned(),
        }
    }

    /// The route of `function.json` below the host's empty prefix: [`ROUTE_PREFIX`] and then
    /// [`HttpFunction::route_in`], e.g. `api/users/{userId}`.
    pub fn host_route_in(&self, tenancy: Tenancy) -> String {
        format!("{ROUTE_PREFIX}/{}", self.route_in(tenancy))
    }

    /// The path clients call in `tenancy`, which the host forwards unchanged: e.g.
    /// `/api/tenants/{tenantId}/users/{userId}`.
    pub fn path_in(&self, tenancy: Tenancy) -> String {
        format!("/{ROUTE_PREFIX}/{}", self.route_in(tenancy))
    }

    /// The path of the plain route in `api::routes_for(tenancy)`, e.g. `/api/users/{userId}`:
    /// what clients call in `single`, and what a tenant route is handed to in `multi`.
    pub fn axum_path(&self) -> String {
        format!("/{ROUTE_PREFIX}/{}", self.route)
    }
}

/// The function that a request with `method` runs when it matches the router's route
/// `template` (`/api/users/{userId}`, the plain route in both layouts, or a trigger's
/// `/OnUserChanged`): the operation telemetry names.
pub fn function_for(method: &str, template: &str) -> Option<&'static str> {
    let path = template.strip_prefix('/')?;
    if let Some(trigger) = TRIGGER_FUNCTIONS.iter().find(|name| **name == path) {
        return Some(trigger);
    }
    let route = path.strip_prefix(ROUTE_PREFIX)?.strip_prefix('/')?;
    HTTP_FUNCTIONS
        .iter()
        .find(|f| f.route == route && f.method.eq_ignore_ascii_case(method))
        .map(|f| f.name)
}

/// The HTTP functions of the `tenancy` layout.
pub fn http_functions(tenancy: Tenancy) -> impl Iterator<Item = &'static HttpFunction> {
    HTTP_FUNCTIONS.iter().filter(move |f| f.is_in(tenancy))
}
