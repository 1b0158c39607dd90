//! What the pages keep in memory between requests: posts' content rendered to HTML, and each
//! blog's front-page list. One set per site ([`super::Site`] holds it), so two applications
//! in one process (tests, the harness) never serve each other's pages.

use std::sync::Arc;

use quick_cache::sync::Cache;

use super::markdown::RenderedPosts;
use crate::domain::Timestamp;
use crate::http::feed_cache::FeedItems;

/// How many blogs' front-page lists are kept (one in `single`; in `multi`, the busiest
/// tenants').
const FRONT_LISTS_KEPT: usize = 256;

/// How many feeds' last changes are known (the front page's, and each author's and tag's
/// read lately); a feed forgotten is dated anew when next read.
const FEED_CHANGES_KEPT: usize = 4096;

/// What the pages keep (see the module's comment).
pub struct PageCaches {
    /// Posts rendered lately, by post id (see [`RenderedPosts`]).
    pub posts: RenderedPosts,
    /// The front page's list of each blog, by its base path. The list is the same for every
    /// reader until the feed cache holds new items, so it is parsed and rendered once per
    /// feed rather than on every request; an entry serves only the very feed it was made
    /// from.
    pub front_lists: Cache<String, Arc<FrontList>>,
    /// When each feed, by its id, last changed as this server has seen it (see
    /// [`FeedChange`]).
    pub feed_changes: Cache<String, FeedChange>,
}

impl Default for PageCaches {
    fn default() -> Self {
        Self {
            posts: RenderedPosts::default(),
            front_lists: Cache::new(FRONT_LISTS_KEPT),
            feed_changes: Cache::new(FEED_CHANGES_KEPT),
        }
    }
}

impl std::fmt::Debug for PageCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCaches")
            .field("front_lists", &self.front_lists.len())
            .finish_non_exhaustive()
    }
}

/// The front page's list of posts as HTML, and the feed it was made from.
pub struct FrontList {
    pub feed: FeedItems,
    pub html: Arc<str>,
    pub empty: bool,
}

/// A feed as this server last served it: a digest of what it lists, and when this server
/// first served it so. What a feed lists changes without a date of its own when a post leaves
/// it (deleted, unpublished) or its author is renamed; the first time the server serves the
/// new list is a time after that change, which its `Last-Modified` can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedChange {
    pub digest: [u8; 32],
    pub at: Timestamp,
}
