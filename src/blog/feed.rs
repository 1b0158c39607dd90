//! The feed: the most recent posts, copied into one partition of `feed` so that the front
//! page is one query.

use crate::domain::Post;
use crate::store::{PartitionKey, Query, SortOrder};

/// The feed holds this many of the most recent posts: the front page, one page of it.
pub const FEED_SIZE: u32 = 100;
/// All feed items share one logical partition: the value of their `/type` key.
pub fn feed_partition() -> PartitionKey {
    PartitionKey::single(Post::TYPE)
}

/// The feed's posts, newest first: the order of Q6, of the change feed's window, of the trim
/// and of the refill.
pub fn feed_query() -> Query {
    Query::in_partition(feed_partition())
        .of_type(Post::TYPE)
        .order_by("creationDate", SortOrder::Descending)
}
