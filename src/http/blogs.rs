//! The blogs a deployment serves: one, or one per tenant made on demand, each with its
//! operations and its front-page cache.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::feed_cache::FeedCache;
use crate::blog::{Blog, ListCache};
use crate::domain::TenantId;
use crate::signing::ServerKey;
use crate::store::tenant::TenantStore;
use crate::store::{Store, Tenancy};

/// Tenants kept ready (their combiner and feed cache) at most; beyond it the idle ones are
/// dropped and made again on their next request.
const MAX_KEPT_TENANTS: usize = 4096;

/// One blog: its operations and its front-page cache.
pub struct BlogScope {
    pub blog: Blog,
    pub feed: FeedCache,
}

impl BlogScope {
    /// `tenant`: the blog's tenant, or `""` for the one blog of a `single` store.
    fn new(store: Arc<dyn Store>, caches: &Caches, tenant: &str, key: &ServerKey) -> Self {
        Self {
            blog: Blog::with_lists(store, caches.lists.scoped(tenant), key.clone()),
            feed: FeedCache::new(caches.feed_ttl),
        }
    }
}

/// What a deployment keeps in memory for its readers, shared by all its blogs.
#[derive(Clone)]
pub struct Caches {
    /// How long a feed read may be served from memory (zero: never).
    pub feed_ttl: Duration,
    /// Pages of lists, served again while their partition is unchanged.
    pub lists: ListCache,
}

impl Caches {
    /// Caches of `feed_ttl` and of at most `list_bytes` of lists' pages.
    pub fn new(feed_ttl: Duration, list_bytes: u64) -> Self {
        Self {
            feed_ttl,
            lists: ListCache::new(list_bytes),
        }
    }

    /// Nothing kept: every read goes to the store.
    pub fn none() -> Self {
        Self {
            feed_ttl: Duration::ZERO,
            lists: ListCache::none(),
        }
    }
}

/// The blogs of a deployment: one, or one per tenant made on demand.
pub struct Blogs {
    /// The whole store: what the change-feed triggers read and write.
    store: Arc<dyn Store>,
    caches: Caches,
    /// The server's key, which every blog signs its continuation tokens with.
    key: ServerKey,
    /// The blog of a `single` store.
    single: Option<Arc<BlogScope>>,
    /// Every request of a `multi` deployment looks its tenant up here: readers share the
    /// lock, and only a tenant's first request in a while takes it alone.
    tenants: RwLock<HashMap<TenantId, Arc<BlogScope>>>,
}

impl Blogs {
    pub fn new(store: Arc<dyn Store>, caches: Caches, key: ServerKey) -> Self {
        let single = (store.tenancy() == Tenancy::Single)
            .then(|| Arc::new(BlogScope::new(Arc::clone(&store), &caches, "", &key)));
        Self {
            store,
            caches,
            key,
            single,
            tenants: RwLock::default(),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn tenancy(&self) -> Tenancy {
        self.store.tenancy()
    }

    /// The blog a request addresses: the only one, or its tenant's (`None`: a `multi`
    /// deployment's request without a tenant, which cannot be routed here).
    pub(super) fn scope(&self, tenant: Option<&TenantId>) -> Option<Arc<BlogScope>> {
        match (&self.single, tenant) {
            (Some(single), _) => Some(Arc::clone(single)),
            (None, Some(tenant)) => Some(self.of_tenant(tenant)),
            (None, None) => None,
        }
    }

    /// The tenant's blog. Concurrent requests of a tenant share one, so its comments and
    /// likes are combined and its feed cached.
    pub fn of_tenant(&self, tenant: &TenantId) -> Arc<BlogScope> {
        let known = self
            .tenants
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(tenant)
            .map(Arc::clone);
        if let Some(scope) = known {
            return scope;
        }
        let mut tenants = self
            .tenants
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(scope) = tenants.get(tenant) {
            return Arc::clone(scope);
        }
        if tenants.len() >= MAX_KEPT_TENANTS {
            // Keep the tenants with a request in flight; a dropped one only loses its cache.
            tenants.retain(|_, scope| Arc::strong_count(scope) > 1);
        }
        let store: Arc<dyn Store> =
            Arc::new(TenantStore::new(Arc::clone(&self.store), tenant.clone()));
        let scope = Arc::new(BlogScope::new(
            store,
            &self.caches,
            tenant.as_str(),
            &self.key,
        ));
        tenants.insert(tenant.clone(), Arc::clone(&scope));
        scope
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;

    #[test]
    fn a_tenant_keeps_one_blog_and_idle_tenants_are_dropped_beyond_the_bound() {
        let dir = tempfile::TempDir::new().unwrap();
        let store =
            EmbeddedStore::open_with(&dir.path().join("blog.sqlite3"), Tenancy::Multi).unwrap();
        let blogs = Blogs::new(Arc::new(store), Caches::none(), ServerKey::drawn());
        let tenant = |n: usize| TenantId::parse(&format!("t{n}")).unwrap();
        assert!(blogs.scope(None).is_none(), "multi needs a tenant");
        let busy = blogs.of_tenant(&tenant(0));
        assert!(Arc::ptr_eq(&busy, &blogs.of_tenant(&tenant(0))));
        let idle = Arc::downgrade(&blogs.of_tenant(&tenant(1)));
        for n in 2..=MAX_KEPT_TENANTS {
            blogs.of_tenant(&tenant(n));
        }
        assert!(
            Arc::ptr_eq(&busy, &blogs.of_tenant(&tenant(0))),
            "in use: kept"
        );
        assert!(idle.upgrade().is_none(), "idle: dropped");
        assert!(blogs.tenants.read().unwrap().len() <= MAX_KEPT_TENANTS);
    }
}
