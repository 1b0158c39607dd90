//! A short-lived cache of the feed's items, serialised. The feed (Q6) is the hottest read —
//! every front-page view — and the same for every caller; it changes only through the
//! change feed, which is eventually consistent anyway. Serving it from memory for a few
//! tens of milliseconds costs no freshness a caller could rely on, and saves a store query
//! (about 17 RU on Cosmos DB) and 100 conversions per request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use axum::body::Bytes;

use crate::blog::{Blog, FEED_SIZE, PageSize, page_json};
use crate::error::{Error, Result};

/// The feed's items, newest first, each already serialised as JSON.
pub type FeedItems = Arc<Vec<String>>;

pub struct FeedCache {
    ttl: Duration,
    /// The last read of the feed. Every feed request looks at it, on every core at once, so
    /// it is read without a lock; a refresh swaps in a new one whole.
    entry: ArcSwapOption<Feed>,
    /// One refresh at a time: callers arriving during a refresh wait for its result instead
    /// of all querying the store at once.
    refreshing: tokio::sync::Mutex<()>,
}

impl FeedCache {
    /// A cache whose entries live `ttl`; zero turns caching off.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entry: ArcSwapOption::empty(),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The full feed ([`FEED_SIZE`] items at most), from memory while fresh.
    pub async fn items(&self, blog: &Blog) -> Result<FeedItems> {
        Ok(Arc::clone(&self.feed(blog).await?.items))
    }

    /// The body of the feed's page of at most `limit` items, from memory while fresh: the
    /// whole feed's page (the default `limit`, what nearly every reader asks) is written once
    /// per refresh and shared, not copied, by every answer.
    pub async fn page(&self, blog: &Blog, limit: PageSize) -> Result<Bytes> {
        let feed = self.feed(blog).await?;
        if limit.get() as usize >= feed.items.len() {
            return Ok(feed.whole_page.clone());
        }
        Ok(Bytes::from(page_body(&feed.items, limit)))
    }

    async fn feed(&self, blog: &Blog) -> Result<Arc<Feed>> {
        if self.ttl.is_zero() {
            return fetch(blog).await;
        }
        if let Some(feed) = self.fresh() {
            return Ok(feed);
        }
        let _refresh = self.refreshing.lock().await;
        if let Some(feed) = self.fresh() {
            return Ok(feed);
        }
        let feed = fetch(blog).await?;
        self.entry.store(Some(Arc::clone(&feed)));
        Ok(feed)
    }

    fn fresh(&self) -> Option<Arc<Feed>> {
        self.entry
            .load_full()
            .filter(|feed| feed.fetched.elapsed() < self.ttl)
    }
}

/// One read of the feed: when it was made, its items, and the page of all of them.
struct Feed {
    fetched: Instant,
    items: FeedItems,
    whole_page: Bytes,
}

async fn fetch(blog: &Blog) -> Result<Arc<Feed>> {
    let fetched = Instant::now();
    let posts = blog.feed(PageSize::MAX).await?;
    debug_assert!(posts.len() <= FEED_SIZE as usize);
    let items = posts
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Internal(format!("feed item does not serialise: {e}")))?;
    let whole_page = Bytes::from(page_json(items.iter().map(String::as_bytes), None));
    Ok(Arc::new(Feed {
        fetched,
        items: Arc::new(items),
        whole_page,
    }))
}

/// The feed page body, `{"items":[...],"continuation":null}`, with the first `limit` items.
pub fn page_body(items: &[String], limit: PageSize) -> Vec<u8> {
    let shown = &items[..items.len().min(limit.get() as usize)];
    page_json(shown.iter().map(String::as_bytes), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{PostContent, Title, UserId, Username};
    use crate::store::embedded::EmbeddedStore;

    #[test]
    fn the_page_body_is_a_page_of_the_first_items() {
        let items = vec![r#"{"id":"a"}"#.to_owned(), r#"{"id":"b"}"#.to_owned()];
        let one = PageSize::parse(Some(1), PageSize::MAX).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&page_body(&items, one)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"items": [{"id": "a"}], "continuation": null})
        );
        let empty: serde_json::Value = serde_json::from_slice(&page_body(&[], one)).unwrap();
        assert_eq!(
            empty,
            serde_json::json!({"items": [], "continuation": null})
        );
    }

    #[tokio::test]
    async fn serves_from_memory_until_the_entry_expires() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap();
        let blog = Blog::new(Arc::new(store));
        // Long enough that no machine is slow enough to outlive it; the test then shortens it
        // instead of sleeping past it (a sleep races the writes on a loaded machine).
        let mut cache = FeedCache::new(Duration::from_secs(3600));
        assert!(cache.items(&blog).await.unwrap().is_empty());

        post_to_the_feed(&blog, "t").await;

        assert!(
            cache.items(&blog).await.unwrap().is_empty(),
            "still the cached feed"
        );
        // The entry is older than a nanosecond by now: expired under this ttl.
        cache.ttl = Duration::from_nanos(1);
        assert_eq!(
            cache.items(&blog).await.unwrap().len(),
            1,
            "refreshed after the ttl"
        );
        let uncached = FeedCache::new(Duration::ZERO);
        assert_eq!(uncached.items(&blog).await.unwrap().len(), 1);
    }

    /// Ada writes post `title`, and the change feed copies it into the feed.
    async fn post_to_the_feed(blog: &Blog, title: &str) {
        let ada = UserId::parse("ada").unwrap();
        blog.put_user(&ada, ada.clone(), Username::parse("Ada").unwrap())
            .await
            .unwrap();
        let post = blog
            .create_post(
                &ada,
                Title::parse(title).unwrap(),
                PostContent::parse("c").unwrap(),
            )
            .await
            .unwrap();
        let item = serde_json::to_value(&post).unwrap();
        crate::copies::on_post_changed(blog.store(), &[item])
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_whole_feeds_page_is_the_page_of_its_items() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("blog.sqlite3")).unwrap();
        let blog = Blog::new(Arc::new(store));
        for n in 0..3 {
            post_to_the_feed(&blog, &format!("t{n}")).await;
        }
        for cache in [
            FeedCache::new(Duration::from_secs(3600)),
            FeedCache::new(Duration::ZERO),
        ] {
            let items = cache.items(&blog).await.unwrap();
            assert_eq!(items.len(), 3);
            for limit in [1, 2, 3, 100] {
                let limit = PageSize::parse(Some(limit), PageSize::MAX).unwrap();
                let page = cache.page(&blog, limit).await.unwrap();
                assert_eq!(
                    page,
                    page_body(&items, limit).as_slice(),
                    "limit {}",
                    limit.get()
                );
            }
        }
    }
}
