//! Where the application's functions are and what the change-feed triggers are called: the
//! host's route prefix, the tenant prefix of the `multi` layout, the triggers' names. The
//! HTTP functions themselves come from the route tables (`api::routes`, `web::routes`).

/// The prefix of the API's routes. The Functions routes of its operations start with it;
/// requests are forwarded with their original path, so axum sees `/api/...`.
pub const ROUTE_PREFIX: &str = "api";

/// Where the `multi` layout serves every HTTP function, below [`ROUTE_PREFIX`]: the host
/// matches `api/tenants/{tenantId}/users/{userId}` and forwards it unchanged to the router,
/// which serves the same route (see [`tenant_prefix`]).
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

/// The change-feed trigger a request to the route `template` (`/OnUserChanged`) is, whatever
/// its method: the operation telemetry names.
pub fn trigger_for(_method: &str, template: &str) -> Option<&'static str> {
    let path = template.strip_prefix('/')?;
    TRIGGER_FUNCTIONS
        .iter()
        .find(|name| **name == path)
        .copied()
}
