//! One tenant's view of a `multi` store: the V3 model exactly as the `single` layout has it,
//! so the operations, the change-feed handlers, `rebuild` and `verify` run unchanged per
//! tenant. Every key gets the tenant id as its first level, every item written gets its
//! `tenantId` (and loses it again when read: the store's key already says whose it is), and
//! what would cross all partitions becomes a prefix query on the tenant: nothing of another
//! tenant can be read or written through it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, Page, PageRequest, Pages,
    PartitionKey, Query, QueryScope, Store, StoreError, StoreResult, TENANT_FIELD, Tenancy,
};
use crate::domain::TenantId;

#[derive(Clone)]
pub struct TenantStore {
    inner: Arc<dyn Store>,
    tenant: TenantId,
    /// The tenant's key prefix: `[tenantId]`.
    prefix: PartitionKey,
}

impl TenantStore {
    /// `inner` must be a `multi` store.
    pub fn new(inner: Arc<dyn Store>, tenant: TenantId) -> Self {
        debug_assert_eq!(inner.tenancy(), Tenancy::Multi);
        let prefix = PartitionKey::single(tenant.as_str());
        Self {
            inner,
            tenant,
            prefix,
        }
    }

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

    /// The item as the `multi` store keeps it: stamped with the tenant (whatever tenant it
    /// named before, so a copy cannot leave its tenant).
    fn stamped(&self, container: Container, mut item: Value) -> Value {
        if container != Container::Leases
            && let Value::Object(fields) = &mut item
        {
            fields.insert(TENANT_FIELD.to_owned(), Value::from(self.tenant.as_str()));
        }
        item
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

#[async_trait]
impl Store for TenantStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let key = self.key(container, pk)?;
        let document = self.inner.read_item(container, &key, id).await?;
        Ok(document.map(|mut document| {
            unstamp(&mut document.item);
            document
        }))
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let key = self.key(container, pk)?;
        let item = self.stamped(container, item);
        self.inner.create_item(container, &key, item).await
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let key = self.key(container, pk)?;
        let item = self.stamped(container, item);
        self.inner.upsert_item(container, &key, item).await
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let key = self.key(container, pk)?;
        let item = self.stamped(container, item);
        self.inner
            .replace_item(container, &key, item, if_match)
            .await
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let key = self.key(container, pk)?;
        self.inner.delete_item(container, &key, id).await
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        let key = self.key(container, pk)?;
        let operations = operations
            .into_iter()
            .map(|operation| match operation {
                BatchOperation::Create { item } => BatchOperation::Create {
                    item: self.stamped(container, item),
                },
                BatchOperation::Upsert { item } => BatchOperation::Upsert {
                    item: self.stamped(container, item),
                },
                BatchOperation::Replace { item, if_match } => BatchOperation::Replace {
                    item: self.stamped(container, item),
                    if_match,
                },
                delete @ BatchOperation::Delete { .. } => delete,
            })
            .collect();
        self.inner.execute_batch(container, &key, operations).await
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let scoped = query.clone().scoped(self.scope(container, &query.scope)?);
        let mut page = self.inner.query(container, &scoped, page).await?;
        page.items.iter_mut().for_each(unstamp);
        Ok(page)
    }

    /// The container's changes that belong to this tenant. The change feed is the whole
    /// container's: the pump and the triggers read it unscoped and hand each tenant its
    /// part; this is for tools that follow one tenant.
    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let mut batch = self.inner.read_changes(container, since, max_items).await?;
        batch.items.retain(|item| self.owns(item));
        batch.items.iter_mut().for_each(unstamp);
        Ok(batch)
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        self.inner.wait_for_changes(container, timeout).await;
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
pub fn by_tenant(documents: &[Value]) -> (BTreeMap<TenantId, Vec<Value>>, usize) {
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
pub type ModelDocuments<'a> = (Option<TenantId>, Arc<dyn Store>, Cow<'a, [Value]>);

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
