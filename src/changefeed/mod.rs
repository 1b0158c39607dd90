//! The drivers of the change feeds: the standalone pump that hands each change to its handler
//! (`copies`), and the delayed re-check that repairs what the handlers missed.

mod backlog;
mod pump;
pub mod recheck;

pub use backlog::{Backlog, backlog};
pub use pump::Pump;
pub use recheck::{Recheck, RecheckReport, RecheckTask};
