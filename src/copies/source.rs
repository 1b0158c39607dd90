//! Which handler a container's changes go to.

use std::sync::Arc;

use serde_json::Value;

use super::{Report, on_post_changed, on_user_changed};
use crate::domain::TenantId;
use crate::operations;
use crate::store::{Container, Store, StoreResult, tenant};

/// A container whose change log drives a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Users,
    Posts,
}

impl Source {
    pub const ALL: [Source; 2] = [Source::Users, Source::Posts];

    pub fn container(self) -> Container {
        match self {
            Source::Users => Container::Users,
            Source::Posts => Container::Posts,
        }
    }

    /// The Azure Functions name of the handler (and of its lease prefix).
    pub fn function_name(self) -> &'static str {
        match self {
            Source::Users => operations::ON_USER_CHANGED,
            Source::Posts => operations::ON_POST_CHANGED,
        }
    }

    /// Runs the handler on a batch of `store`'s change feed. The feed of a `multi` store
    /// mixes tenants: each tenant's documents are handled in its own view, so every copy
    /// stays within its tenant.
    pub async fn handle(self, store: &Arc<dyn Store>, documents: &[Value]) -> StoreResult<Report> {
        let (groups, strays) = tenant::by_model(store, documents);
        let mut report = Report::default();
        if strays > 0 {
            report
                .skipped
                .push(format!("{strays} documents without a valid tenantId"));
        }
        for (tenant, view, documents) in groups {
            report.merge(self.handle_blog(&view, tenant.as_ref(), &documents).await?);
        }
        Ok(report)
    }

    /// Runs the handler on documents of one blog: `store` is the blog's store (a tenant's view
    /// in `multi`, whose `tenant` is then named), and a tenant with scheduled posts joins the
    /// publisher's directory.
    pub async fn handle_blog(
        self,
        store: &Arc<dyn Store>,
        tenant: Option<&TenantId>,
        documents: &[Value],
    ) -> StoreResult<Report> {
        let report = self.handle_model(store, documents).await?;
        if let Some(tenant) = tenant.filter(|_| report.scheduled > 0) {
            // The directory is in `leases`, which a tenant's view does not scope.
            super::enlist_tenant(&**store, tenant).await?;
        }
        Ok(report)
    }

    async fn handle_model(
        self,
        store: &Arc<dyn Store>,
        documents: &[Value],
    ) -> StoreResult<Report> {
        match self {
            Source::Users => on_user_changed(store, documents).await,
            Source::Posts => on_post_changed(store, documents).await,
        }
    }
}
