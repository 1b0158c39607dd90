//! Pages of the lists of one partition (a user's posts, a post's comments and likes) kept in
//! memory, each with the version of its partition it was read at.
//!
//! A list's page costs a few microseconds per item to read and hand over (a seek per row,
//! a copy of each item's wire form): for a page of fifty, several times the cost of the
//! request around it. A kept page is handed back to the store with the next query of the same
//! page, and the store answers either that the partition is unchanged since (one point read
//! of its count of changes), so the kept page is served, or with the page read anew. Nothing
//! is served that the store would not answer: a write to the partition by any process, or an
//! item's expiry, makes the store read again. Stores that keep no versions (Cosmos DB) give
//! none, and nothing of theirs is kept.

use std::any::{Any, TypeId};
use std::fmt::Display;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::store::{Page, PartitionVersion};

/// Bytes a kept page is counted for beyond its items' text: the key, the version, the
/// vector and the strings' headers.
const OVERHEAD_BYTES: u64 = 256;
const OVERHEAD_PER_ITEM: u64 = 48;

/// The kept pages of every blog of a deployment, within one bound.
#[derive(Clone)]
pub struct ListCache {
    pages: Option<Arc<Cache<ListKey, Kept, ByBytes>>>,
}

impl ListCache {
    /// A cache of at most `bytes` (0: none).
    pub fn new(bytes: u64) -> Self {
        let pages = (bytes > 0).then(|| {
            // quick_cache sizes its tables from an estimate of the entries: pages of ~4 KB.
            let estimated = usize::try_from(bytes / 4096).unwrap_or(usize::MAX).max(16);
            Arc::new(Cache::with_weighter(estimated, bytes, ByBytes))
        });
        Self { pages }
    }

    /// A cache that keeps nothing.
    pub fn none() -> Self {
        Self { pages: None }
    }

    /// The view of one blog: `scope` (its tenant, or empty) keeps blogs' pages apart.
    pub fn scoped(&self, scope: &str) -> BlogLists {
        BlogLists {
            cache: self.clone(),
            scope: Arc::from(scope),
        }
    }
}

/// One blog's view of the [`ListCache`].
#[derive(Clone)]
pub struct BlogLists {
    cache: ListCache,
    scope: Arc<str>,
}

/// Which page of which list, in which form (items parsed, or as their wire JSON).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListKey {
    scope: Arc<str>,
    list: String,
    size: u32,
    continuation: Option<String>,
    form: TypeId,
}

/// A page of a list as a read hands it over: shared, so that a kept page is handed over
/// again without a copy of its items.
pub type Listing<T> = Arc<ListPage<T>>;

/// A page of a list, and the body of the answer that sends it, written by the first answer
/// that asks for it: a kept page is sent again without being written again.
pub struct ListPage<T> {
    page: Page<T>,
    body: OnceLock<Bytes>,
}

impl<T> ListPage<T> {
    pub fn new(page: Page<T>) -> Self {
        Self {
            page,
            body: OnceLock::new(),
        }
    }

    /// A page whose answer is already written, `body`.
    pub fn written(page: Page<T>, body: Bytes) -> Self {
        Self {
            page,
            body: OnceLock::from(body),
        }
    }

    /// The body `write` makes of the page, made once: every answer that sends this page
    /// must write it the same way.
    pub fn body(&self, write: impl FnOnce(&Page<T>) -> Bytes) -> Bytes {
        self.body.get_or_init(|| write(&self.page)).clone()
    }

    /// How many copies of its items' text the page holds once answered: one when its items
    /// are slices of its written answer, else two (the items, and the answer made of them).
    fn copies_held(&self) -> u64 {
        if self.body.get().is_some() { 1 } else { 2 }
    }
}

/// The first item of `listing`: moved out when nothing else holds the page (it was not
/// kept), copied when the cache holds it too.
pub fn first_item<T: Clone>(listing: Listing<T>) -> Option<T> {
    match Arc::try_unwrap(listing) {
        Ok(alone) => alone.page.items.into_iter().next(),
        Err(shared) => shared.items.first().cloned(),
    }
}

impl<T> Deref for ListPage<T> {
    type Target = Page<T>;

    fn deref(&self) -> &Page<T> {
        &self.page
    }
}

/// A page as it was handed over, and the version of the partition it was read at.
#[derive(Clone)]
pub struct Kept {
    version: PartitionVersion,
    page: Arc<dyn Any + Send + Sync>,
    bytes: u64,
}

impl Kept {
    pub fn version(&self) -> &PartitionVersion {
        &self.version
    }

    /// The kept page, as the form it was kept in.
    pub fn page<T: Send + Sync + 'static>(&self) -> Option<Listing<T>> {
        Arc::clone(&self.page).downcast::<ListPage<T>>().ok()
    }
}

#[derive(Clone)]
pub struct ByBytes;

impl Weighter<ListKey, Kept> for ByBytes {
    fn weight(&self, key: &ListKey, kept: &Kept) -> u64 {
        key.list.len() as u64 + kept.bytes
    }
}

impl BlogLists {
    /// The key of a page of `list` in the form `T`; `None` when nothing is kept (and the
    /// list's name is not written).
    pub fn key<T: 'static>(
        &self,
        list: impl Display,
        size: u32,
        continuation: Option<&str>,
    ) -> Option<ListKey> {
        self.cache.pages.as_ref()?;
        Some(ListKey {
            scope: Arc::clone(&self.scope),
            list: list.to_string(),
            size,
            continuation: continuation.map(str::to_owned),
            form: TypeId::of::<T>(),
        })
    }

    /// Keeps `kept` under `key` from now on at `version`: the same page, vouched for again.
    pub fn renew(&self, key: ListKey, kept: Kept, version: PartitionVersion) {
        if let Some(pages) = &self.cache.pages {
            pages.insert(key, Kept { version, ..kept });
        }
    }

    /// The page kept under `key`, if any.
    pub fn get(&self, key: &ListKey) -> Option<Kept> {
        self.cache.pages.as_ref()?.get(key)
    }

    /// Keeps `page`, read at `version`; `stored_bytes`: the size of its items as stored, the
    /// measure of what it holds in memory, counted for each copy it holds (see
    /// [`ListPage::copies_held`]).
    pub fn keep<T: Send + Sync + 'static>(
        &self,
        key: ListKey,
        version: PartitionVersion,
        page: Listing<T>,
        stored_bytes: usize,
    ) {
        let Some(pages) = &self.cache.pages else {
            return;
        };
        let bytes = OVERHEAD_BYTES
            + page.copies_held() * stored_bytes as u64
            + OVERHEAD_PER_ITEM * page.items.len() as u64
            + page
                .continuation
                .as_ref()
                .map_or(0, |token| token.len() as u64);
        pages.insert(
            key,
            Kept {
                version,
                page,
                bytes,
            },
        );
    }
}
