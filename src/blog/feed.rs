//! The feed: the most recent posts, copied into one partition of `feed` so that the front
//! page is one query.

use serde_json::Value;

use crate::domain::{Post, PostStatus};
use crate::store::{
    Container, FilterOp, PageRequest, PartitionKey, Query, SortOrder, Store, StoreResult,
};

/// The feed holds this many of the most recent posts: the front page, one page of it.
pub const FEED_SIZE: u32 = 100;
/// All feed items share one logical partition: the value of their `/type` key.
pub fn feed_partition() -> PartitionKey {
    PartitionKey::single(Post::TYPE)
}

/// The field lists and feeds of published posts sort by.
pub const PUBLISHED_DATE: &str = "publishedDate";

/// The feed's posts, newest published first: the order of Q6, of the change feed's window, of
/// the trim and of the refill. The feed holds published posts only (the change feed takes a
/// post out of it when it leaves publication).
pub fn feed_query() -> Query {
    Query::in_partition(feed_partition())
        .of_type(Post::TYPE)
        .order_by(PUBLISHED_DATE, SortOrder::Descending)
}

/// The feed's copies as the store holds them, in [`feed_query`]'s order: at most
/// [`FEED_SIZE`], since the change feed trims the rest.
pub async fn stored_feed(store: &dyn Store) -> StoreResult<Vec<Value>> {
    newest_feed_copies(store, FEED_SIZE).await
}

/// The feed's `count` newest copies as the store holds them, in [`feed_query`]'s order.
pub async fn newest_feed_copies(store: &dyn Store, count: u32) -> StoreResult<Vec<Value>> {
    let request = PageRequest::first(count);
    let page = store.query(Container::Feed, &feed_query(), request).await?;
    Ok(page.items)
}

/// Restricts a query of post copies to published posts: how Q3 and the feed's refill leave
/// out the copies of drafts and scheduled posts that the authors' partitions also hold.
pub fn published_only(query: Query) -> Query {
    query.filter(
        "status",
        FilterOp::Eq,
        Value::from(PostStatus::Published.as_str()),
    )
}
