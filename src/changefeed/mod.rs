//! The drivers of the change feeds: the standalone pump that hands each change to its handler
//! (`copies`), the delayed re-check that repairs what the handlers missed, and the publisher
//! of scheduled posts.

mod backlog;
pub mod publisher;
pub mod pump;
pub mod recheck;
mod task;

pub use backlog::{Backlog, backlog};
pub use publisher::Publisher;
pub use pump::Pump;
pub use recheck::{Recheck, RecheckReport};
pub use task::BackgroundTask;
