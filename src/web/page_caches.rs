//! What the pages keep in memory between requests: posts' content rendered to HTML, and each
//! blog's front-page list. One set per site ([`super::Site`] holds it), so two applications
//! in one process (tests, the harness) never serve each other's pages.

use std::sync::Arc;

use quick_cache::sync::Cache;

use super::markdown::RenderedPosts;
use crate::http::feed_cache::FeedItems;

/// How many blogs' front-page lists are kept (one in `single`; in `multi`, the busiest
/// tenants').
const FRONT_LISTS_KEPT: usize = 256;

/// What the pages keep (see the module's comment).
pub struct PageCaches {
    /// Posts rendered lately, by post id (see [`RenderedPosts`]).
    pub posts: RenderedPosts,
    /// The front page's list of each blog, by its base path. The list is the same for every
    /// reader until the feed cache holds new items, so it is parsed and rendered once per
    /// feed rather than on every request; an entry serves only the very feed it was made
    /// from.
    pub front_lists: Cache<String, Arc<FrontList>>,
}

impl Default for PageCaches {
    fn default() -> Self {
        Self {
            posts: RenderedPosts::default(),
            front_lists: Cache::new(FRONT_LISTS_KEPT),
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
