//! Re-deriving every copy from the sources.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::Source;
use super::deletes::sweep_orphan_copies;
use super::feed::{refill_feed, trim_feed};
use super::shared::Report;
use super::views::{month_of_archive_item, recount_month, sweep_view_copy};
use crate::domain::{Month, Post, TenantId, Tombstone, User, is_a};
use crate::store::{Container, Pages, Query, Store, StoreResult, Tenancy, tenant};

/// Re-derives every copy from the sources: usernames from `users` into `posts`,
/// then post copies into `users` and `feed`. Idempotent; safe while the platform runs.
/// A `multi` store is read once, like a `single` one: each page is handed to its tenants'
/// views by the items' `tenantId` (as the change feed's batches are), never scanned per tenant.
pub async fn rebuild(store: &Arc<dyn Store>) -> StoreResult<Report> {
    let mut report = Report::default();
    let mut models = Models::default();
    for (source, item_type) in [
        (Source::Users, User::TYPE),
        (Source::Users, Tombstone::TYPE),
        (Source::Posts, Post::TYPE),
        (Source::Posts, Tombstone::TYPE),
    ] {
        let query = Query::cross_partition().of_type(item_type);
        let mut pages = Pages::new(&**store, source.container(), &query, 500);
        while let Some(items) = pages.next().await? {
            models.note(store, &items);
            report.merge(source.handle(store, &items).await?);
        }
    }
    // Copies whose source is gone without a tombstone left to say so (purged after its
    // time-to-live before a handler saw it), then each feed made whole again.
    for container in [Container::Users, Container::Feed] {
        let query = Query::cross_partition().of_type(Post::TYPE);
        let mut pages = Pages::new(&**store, container, &query, 500);
        while let Some(copies) = pages.next().await? {
            models.note(store, &copies);
            report.written += sweep_orphan_copies(store, container, &copies).await?;
        }
    }
    // The views: copies their post no longer places there go, then every month's count is
    // set to the copies its partition holds.
    let mut months: BTreeSet<(Option<TenantId>, Month)> = BTreeSet::new();
    for container in [Container::Tags, Container::Archive] {
        let query = Query::cross_partition();
        let mut pages = Pages::new(&**store, container, &query, 500);
        while let Some(items) = pages.next().await? {
            models.note(store, &items);
            for (tenant, view, items) in tenant::by_model(store, &items).0 {
                for item in items.iter() {
                    if is_a::<Post>(item) {
                        report.written += sweep_view_copy(&view, container, item).await?;
                    }
                    if container == Container::Archive {
                        months.extend(month_of_archive_item(item).map(|m| (tenant.clone(), m)));
                    }
                }
            }
        }
    }
    for (tenant, month) in months {
        let view = match tenant {
            Some(tenant) => tenant::scoped(store, &tenant),
            None => Arc::clone(store),
        };
        report.written += recount_month(&view, &month).await?;
    }
    for view in models.views(store) {
        report.merge(refill_feed(&view).await?);
        report.merge(trim_feed(&view).await?);
    }
    Ok(report)
}

/// The models `rebuild` has met: the store itself, or in `multi` each tenant seen.
#[derive(Default)]
struct Models {
    tenants: BTreeSet<TenantId>,
}

impl Models {
    fn note(&mut self, store: &Arc<dyn Store>, items: &[Value]) {
        if store.tenancy() == Tenancy::Multi {
            self.tenants
                .extend(items.iter().filter_map(tenant::tenant_of));
        }
    }

    fn views(&self, store: &Arc<dyn Store>) -> Vec<Arc<dyn Store>> {
        match store.tenancy() {
            Tenancy::Single => vec![Arc::clone(store)],
            Tenancy::Multi => self
                .tenants
                .iter()
                .map(|tenant| tenant::scoped(store, tenant))
                .collect(),
        }
    }
}
