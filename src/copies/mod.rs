//! The denormalised copies and the rules that keep them: the two change-feed handlers (a
//! user's changes reach the copies of their name, a post's reach its author's list and the
//! feed), the cascades of a delete, and the rebuild of every copy from the sources.
//!
//! One concept a file: `users` and `posts` are the two handlers (`OnUserChanged`,
//! `OnPostChanged`), `usernames` closes the rename race, `feed` keeps the feed's window, trim
//! and refill, `deletes` the cascades, `views` the tag and archive views (and the archive's
//! counts), `partition_write` writes one partition in batches, `schedule` keeps the schedule of
//! posts that publish themselves,
//! `shared` holds what both handlers use (their report, a batch's documents), `rebuild`
//! re-derives everything and `source` says which handler a container's changes go to.

mod deletes;
mod feed;
mod partition_write;
mod posts;
mod rebuild;
mod schedule;
mod shared;
mod source;
mod usernames;
mod users;
mod views;

pub use posts::on_post_changed;
pub use rebuild::rebuild;
pub(crate) use schedule::DIRECTORY_ID as SCHEDULE_DIRECTORY_ID;
pub use schedule::{enlist_tenant, scheduled_tenants};
pub use shared::Report;
pub use source::Source;
pub use users::on_user_changed;

// The write paths that `verify --repair` and the delayed re-check reuse for their repairs.
pub(crate) use deletes::{delete_children, delete_if_orphan, erase_user};
pub(crate) use feed::{refill_feed, trim_feed};
pub(crate) use usernames::current_username;
pub(crate) use users::rename_item;
pub(crate) use views::{Placement, archive_copy, place, recount_month, tag_copy};
