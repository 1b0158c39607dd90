//! The HTTP plumbing under both faces of the blog, the API (`api`) and the pages (`web`):
//! what every handler is given ([`AppState`]: the blogs the deployment serves, who calls, the
//! images' store), which blog a request addresses ([`tenants`]), the extractors that read a
//! request once for every route ([`extract`], and the typed path parameters of [`paths`]),
//! what every request must be ([`admission`]) and how the router's own refusals are told
//! ([`refusals`]). The two faces sit side by side above it and never import each other: a
//! page and an API route are two faces of one operation of [`crate::blog`], on the same
//! plumbing (a Functions function is a third).

pub mod admission;
mod blogs;
pub mod extract;
pub mod feed_cache;
pub mod images;
pub mod paths;
pub mod refusals;
mod state;
pub mod tenants;

pub use admission::{MAX_URI_BYTES, refuse_long_uri};
pub use blogs::Caches;
pub use refusals::{MAX_BODY_BYTES, body_too_large, route_not_found};
pub use state::AppState;
