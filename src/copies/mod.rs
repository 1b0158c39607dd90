//! The denormalised copies and the rules that keep them: the two change-feed handlers (a
//! user's changes reach the copies of their name, a post's reach its author's list and the
//! feed), the cascades of a delete, and the rebuild of every copy from the sources.

mod deletes;
mod handlers;
mod rebuild;
mod source;

pub use handlers::{Report, on_post_changed, on_user_changed};
pub use rebuild::rebuild;
pub use source::Source;

// The write paths that `verify --repair` and the delayed re-check reuse for their repairs.
pub(crate) use deletes::{
    clear_deleted_post, delete_children, delete_if_orphan, erase_user, refill_feed,
};
pub(crate) use handlers::{current_username, rename_item, trim_feed};
