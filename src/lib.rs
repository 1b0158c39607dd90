//! A blog platform backend on the Azure Cosmos DB case study's V3 model, served as an Azure
//! Functions custom handler or standalone on an embedded store.
//!
//! # How it is built: floors
//!
//! Every module sits on a floor, and **a module imports only from the floors below it**: never
//! from a neighbour on its own floor, never from above. Ground floor first:
//!
//! 1. `domain`, `platform`, `retry`, `words`, `connection_string`, `signing`: what users,
//!    posts, comments and likes are, with their validation; which host the process runs on; how
//!    to wait before trying again; how the commands say a count and print what they say; how an
//!    Azure connection string is read; the server's key, which signs the tokens it hands out.
//! 2. `store`, `images`: the storage contract, its two backends (embedded SQLite, Azure Cosmos
//!    DB), the layer that scopes it to a tenant, its settings and `open`; images in posts
//!    (what an upload must be, what is kept of it, and the store of their bytes).
//! 3. `error`, `operations`, `plan`: the crate's error (a refused input or a store failure);
//!    where the app's functions are (the API's and the tenants' route prefixes) and the
//!    change-feed triggers' names;
//!    the capacity and cost planner (arithmetic on checked-in measurements: it opens no store,
//!    and takes only the store's word for a data layout).
//! 4. `problem`: how a refusal or failure is told over HTTP (RFC 9457).
//! 5. `telemetry`: logs, traces and metrics, the traced store among them.
//! 6. `auth`, `blog`: who is calling; the blog's commands and queries on the model.
//! 7. `copies`: the rules that derive the denormalised copies from their sources: the two
//!    change-feed handlers, the cascades of a delete, the rebuild.
//! 8. `http`, `verify`: the HTTP plumbing both faces share (what every handler is given, the
//!    extractors and typed path parameters, which blog a request addresses, what every request
//!    must be, the router's own refusals, the caches of the blogs served); the checks and
//!    repairs of every invariant of the model.
//! 9. `api`, `web`, `changefeed`: the two faces of the blog on that plumbing, siblings that
//!    never import each other: the HTTP API, the web pages; what drives the rules: the
//!    standalone pump, the delayed re-check.
//! 10. `functions`, `settings`, `transfer`: the Functions packaging and trigger adapter (a
//!     third face: one function per operation and page); the process's settings; export and
//!     import.
//! 11. `startup`: puts the application together from its settings (`main`, the binary, sits
//!     on top of it all).
//!
//! Why this order: the store knows nothing of what is stored in it beyond the domain's words,
//! so it can be tested and swapped alone; telemetry observes the store and the HTTP layer
//! without either knowing it is watched; the blog's commands and the copies' rules are the
//! model, written once and used by the API, the pages, the checks, the pump and the Functions
//! triggers alike; the API and the pages are two faces of the same operations on the same
//! HTTP plumbing, so neither reaches into the other; whatever decides *when* something runs
//! (a request, a trigger, a timer, a command) sits above what it runs. A floor's module can
//! then be read, and changed, knowing only the floors below it. `tests/api/layers.rs` reads
//! this list and fails on an import that runs upward or sideways, or on files that import
//! each other in a loop.

pub mod api;
pub mod auth;
pub mod blog;
pub mod changefeed;
pub mod connection_string;
pub mod copies;
pub mod domain;
pub mod error;
pub mod functions;
pub mod http;
pub mod images;
pub mod operations;
pub mod plan;
pub mod platform;
pub mod problem;
pub mod retry;
pub mod settings;
pub mod signing;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod transfer;
pub mod verify;
pub mod web;
pub mod words;
