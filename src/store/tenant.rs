//! One tenant's view of a `multi` store: the V3 model exactly as the `single` layout has it,
//! so the operations, the change-feed handlers, `rebuild` and `verify` run unchanged per
//! tenant. Every key gets the tenant id as its first level, every item written gets its
//! `tenantId` (and loses it again when read: the store's key already says whose it is), and
//! what would cross all partitions becomes a prefix query on the tenant: nothing of another
//! tenant can be read or written through it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::layer::{LayerCall, Layered, StoreAnswer, StoreLayer, StoreRequest};
use super::{
    Container, Pages, PartitionKey, Query, QueryScope, Store, StoreError, StoreResult,
    TENANT_FIELD, Tenancy,
};
use crate::domain::TenantId;

/// One tenant's view of a `multi` store.
pub type TenantStore = Layered<TenantView>;

/// What a [`TenantStore`] does to each call: the tenant's keys, stamps and scopes.
#[derive(Clone)]
pub struct TenantView {
    tenant: TenantId,
    /// The tenant's key prefix: `[tenantId]`.
    prefix: PartitionKey,
}

impl TenantStore {
    /// `inner` must be a `multi` store.
    pub fn new(inner: Arc<dyn Store>, tenant: TenantId) -> Self {
        debug_assert_eq!(inner.tenancy(), Tenancy::Multi);
        let prefix = PartitionKey::single(tenant.as_str());
        Layered::over(inner, TenantView { tenant, prefix })
    }
}

impl TenantView {
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The key in the `multi` store of the tenant's partition `pk`.
    fn key(&self, container: Container, pk: &PartitionKey) -> StoreResult<PartitionKey> {
        if container == Container::Leases {
            return Ok(pk.clone());
        }
        self.prefix
            .extended(pk)
            .map_err(|e| StoreError::BadRequest(format!("partition key: {e}")))
    }

    /// Stamps an item with the tenant, as the `multi` store keeps it (whatever tenant it
    /// named before, so a copy cannot leave its tenant).
    fn stamp(&self, container: Container, item: &mut Value) {
        if container != Container::Leases
            && let Value::Object(fields) = item
        {
            fields.insert(TENANT_FIELD.to_owned(), Value::from(self.tenant.as_str()));
        }
    }

    fn scope(&self, container: Container, scope: &QueryScope) -> StoreResult<QueryScope> {
        Ok(match scope {
            QueryScope::Partition(pk) => QueryScope::Partition(self.key(container, pk)?),
            QueryScope::CrossPartition if container == Container::Leases => {
                QueryScope::CrossPartition
            }
            QueryScope::CrossPartition => QueryScope::Prefix(self.prefix.clone()),
            QueryScope::Prefix(pk) => QueryScope::Prefix(self.key(container, pk)?),
        })
    }

    fn owns(&self, item: &Value) -> bool {
        item.get(TENANT_FIELD).and_then(Value::as_str) == Some(self.tenant.as_str())
    }
}

impl StoreLayer for TenantView {
    /// Always `single`: the domain code never sees tenants.
    fn tenancy(&self, _: &dyn Store) -> Tenancy {
        Tenancy::Single
    }

    /// Writes and reads in the tenant's partitions; a query across partitions becomes one on
    /// the tenant's prefix. The change feed is the whole container's (the pump and the
    /// triggers read it unscoped and hand each tenant its part): a read of it through the
    /// view keeps the tenant's changes, for tools that follow one tenant.
    async fn call(&self, call: LayerCall<'_>) -> StoreResult<StoreAnswer> {
        let container = call.container;
        let key;
        let scoped;
        let request = match call.request {
            StoreRequest::Query { query, page } => {
                scoped = query.clone().scoped(self.scope(container, &query.scope)?);
                StoreRequest::Query {
                    query: &scoped,
                    page,
                }
            }
            // The items keep the tenant's stamp: a typed reader ignores the field.
            // The version of a page names the tenant's partition as the store keys it, so a
            // version of another tenant's page never passes for one of this tenant's.
            StoreRequest::QueryJson { query, page, known } => {
                scoped = query.clone().scoped(self.scope(container, &query.scope)?);
                StoreRequest::QueryJson {
                    query: &scoped,
                    page,
                    known,
                }
            }
            mut other => match other.partition() {
                Some(pk) => {
                    key = self.key(container, pk)?;
                    other
                        .items_mut()
                        .for_each(|item| self.stamp(container, item));
                    other.to_partition(&key)
                }
                None => other,
            },
        };
        let mut answer = request.send(call.inner, container).await?;
        if let StoreAnswer::Changes(batch) = &mut answer {
            batch.items.retain(|item| self.owns(item));
        }
        answer.items_mut().iter_mut().for_each(unstamp);
        Ok(answer)
    }
}

/// The item as a tenant sees it: without the tenant it belongs to.
fn unstamp(item: &mut Value) {
    if let Value::Object(fields) = item {
        fields.remove(TENANT_FIELD);
    }
}

/// The tenants that hold anything in a `multi` store, in id order: every item names its
/// tenant, so a scan of the three model containers finds them all (a tenant's last items may
/// be copies or tombstones). A full scan: for `rebuild` and `verify`, which read everything
/// anyway.
pub async fn tenants(store: &dyn Store) -> StoreResult<BTreeSet<TenantId>> {
    let mut tenants = BTreeSet::new();
    let query = Query::cross_partition();
    for container in [Container::Users, Container::Posts, Container::Feed] {
        let mut pages = Pages::new(store, container, &query, 1000);
        while let Some(items) = pages.next().await? {
            tenants.extend(items.iter().filter_map(tenant_of));
        }
    }
    Ok(tenants)
}

/// Takes an item of a `multi` store out of the store's view into its tenant's: removes its
/// `tenantId` and returns the tenant (`None`, and the item untouched, if it names none).
pub fn take_tenant(item: &mut Value) -> Option<TenantId> {
    let tenant = tenant_of(item)?;
    unstamp(item);
    Some(tenant)
}

/// The tenant an item of a `multi` store belongs to.
pub fn tenant_of(item: &Value) -> Option<TenantId> {
    item.get(TENANT_FIELD)
        .and_then(Value::as_str)
        .and_then(|raw| TenantId::parse(raw).ok())
}

/// Splits change-feed documents of a `multi` store by tenant, keeping each tenant's in feed
/// order, each as its tenant sees it. Documents without a valid tenant cannot come from the
/// store (its keys require one); they are counted apart, to be logged.
pub(crate) fn by_tenant(documents: &[Value]) -> (BTreeMap<TenantId, Vec<Value>>, usize) {
    let mut groups: BTreeMap<TenantId, Vec<Value>> = BTreeMap::new();
    let mut strays = 0;
    for document in documents {
        match tenant_of(document) {
            Some(tenant) => {
                let mut document = document.clone();
                unstamp(&mut document);
                groups.entry(tenant).or_default().push(document);
            }
            None => strays += 1,
        }
    }
    (groups, strays)
}

/// A group of documents of one V3 model: its tenant (`None` in a `single` store), the store
/// as that model sees it, and its documents as it sees them.
/// (Borrowed when the store is `single`: nothing to split, nothing copied.)
pub(crate) type ModelDocuments<'a> = (Option<TenantId>, Arc<dyn Store>, Cow<'a, [Value]>);

/// Splits documents read from `store` as a whole (a change-feed batch, a page of a scan) by
/// the model they belong to: all to `store` itself if it is `single`; in `multi`, to each
/// tenant's view (see [`by_tenant`]). Also returns how many documents name no valid tenant.
pub fn by_model<'a>(
    store: &Arc<dyn Store>,
    documents: &'a [Value],
) -> (Vec<ModelDocuments<'a>>, usize) {
    if store.tenancy() == Tenancy::Single {
        return (vec![(None, Arc::clone(store), Cow::Borrowed(documents))], 0);
    }
    let (groups, strays) = by_tenant(documents);
    let groups = groups
        .into_iter()
        .map(|(tenant, documents)| {
            let view = scoped(store, &tenant);
            (Some(tenant), view, Cow::Owned(documents))
        })
        .collect();
    (groups, strays)
}

/// The store each of `store`'s tenants sees: itself alone for a `single` store.
pub fn scoped(store: &Arc<dyn Store>, tenant: &TenantId) -> Arc<dyn Store> {
    Arc::new(TenantStore::new(Arc::clone(store), tenant.clone()))
}
