//! Change-feed processing: the two denormalisation handlers, the standalone pump that feeds
//! them from the store's change log, and the delayed re-check that repairs what they missed.

mod deletes;
mod handlers;
mod pump;
pub mod recheck;

pub use handlers::{Report, on_post_changed, on_user_changed, rebuild};

// The write paths that `verify --repair` and the delayed re-check reuse for their repairs.
pub(crate) use deletes::{
    clear_deleted_post, delete_children, delete_if_orphan, erase_user, refill_feed,
};
pub(crate) use handlers::{current_username, rename_item, trim_feed};
pub use pump::{Pump, Source};
pub use recheck::{Recheck, RecheckReport, RecheckTask};
