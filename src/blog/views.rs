//! The reads of the views that the change feed keeps beside the case study's copies: a tag's
//! posts (Q8, the `tags` container, one partition per tag) and a month's (Q9, the `archive`
//! container, one partition per month), and the archive's months with their counts (one
//! read of the archive's index partition). Each is one request to one logical partition.

use super::{Blog, ListRequest, Listed, Listing};
use crate::domain::{Month, MonthCount, Post, Tag, Timestamp};
use crate::error::Result;
use crate::store::{Container, PageRequest, Pages, PartitionKey, Query, SortOrder};

/// The field the views order their posts by, newest first: the date a post was published
/// (every copy in a view carries it, also for a post stored before posts had a status).
pub const LISTED_BY: &str = "publishedDate";

/// Months of the archive read at most by one listing: more than eight centuries of them.
const MAX_MONTHS: u32 = 10_000;

/// When `post` was published, as the views see it: `None` (a draft, a scheduled post) keeps
/// it out of every view.
pub fn published_on(post: &Post) -> Option<Timestamp> {
    post.published_date()
}

/// The `tags` partition of `tag`'s posts.
pub fn tag_partition(tag: &str) -> PartitionKey {
    PartitionKey::single(tag)
}

/// The `archive` partition of `month`'s posts (and of its count).
pub fn month_partition(month: &Month) -> PartitionKey {
    PartitionKey::single(month.key())
}

/// The `archive` partition of every month's count.
pub fn archive_index_partition() -> PartitionKey {
    PartitionKey::single(MonthCount::INDEX)
}

/// A view's posts, newest first by publication.
fn newest_first(pk: PartitionKey) -> Query {
    Query::in_partition(pk)
        .of_type(Post::TYPE)
        .order_by(LISTED_BY, SortOrder::Descending)
}

impl Blog {
    /// Q8: the published posts with `tag`, newest first, in short form, from the tag's
    /// partition of `tags`. An unknown tag is an empty list: a tag exists while posts carry it.
    pub async fn tag_posts<T: Listed<Item = Post>>(
        &self,
        tag: &Tag,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let query = newest_first(tag_partition(tag.as_str()));
        let list = format!("tag:{tag}");
        self.page(Container::Tags, &query, &list, page).await
    }

    /// Q9: the posts published in `month`, newest first, in short form, from the month's
    /// partition of `archive`.
    pub async fn month_posts<T: Listed<Item = Post>>(
        &self,
        month: &Month,
        page: ListRequest<'_>,
    ) -> Result<Listing<T>> {
        let query = newest_first(month_partition(month));
        let list = format!("month:{month}");
        self.page(Container::Archive, &query, &list, page).await
    }

    /// Every post published in `month`, newest first, read from the month's partition alone
    /// in pages of a thousand (the sitemap's read).
    pub async fn all_month_posts(&self, month: &Month) -> Result<Vec<Post>> {
        let query = newest_first(month_partition(month));
        let mut pages = Pages::new(&**self.store(), Container::Archive, &query, 1_000);
        let mut posts = Vec::new();
        while let Some(items) = pages.next().await? {
            for item in items {
                posts.push(super::storage::from_item::<Post>(item)?);
            }
        }
        Ok(posts)
    }

    /// The months that have published posts, newest first, with their counts: one read of
    /// the archive's index partition.
    pub async fn archive_months(&self) -> Result<Vec<MonthCount>> {
        let query = Query::in_partition(archive_index_partition()).of_type(MonthCount::TYPE);
        let page = self
            .store
            .query(Container::Archive, &query, PageRequest::first(MAX_MONTHS))
            .await?;
        let mut months: Vec<MonthCount> = page
            .items
            .into_iter()
            .map(super::storage::from_item::<MonthCount>)
            .collect::<Result<_>>()?;
        months.retain(|month| month.post_count > 0 && Month::from_key(&month.of).is_some());
        months.sort_by(|a, b| b.of.cmp(&a.of));
        Ok(months)
    }
}
