//! Change-feed processing: the two denormalisation handlers, the standalone pump that feeds
//! them from the store's change log, and the adapter for Azure Functions trigger invocations.

mod deletes;
mod handlers;
mod pump;

pub use handlers::{Report, on_post_changed, on_user_changed, rebuild};
pub use pump::{Pump, Source};
