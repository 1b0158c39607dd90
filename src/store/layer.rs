//! The one way to wrap a [`Store`]: a [`StoreLayer`] sees each call as a [`StoreRequest`]
//! (the call's arguments) and answers it with a [`StoreAnswer`], usually by sending the
//! request on to the store below and looking at what comes back. [`Layered`] turns a layer
//! into a store, so a wrapper (metering, tracing, a tenant's view, a test's double) writes only
//! what it adds, never the forwarding of each method.
//!
//! The request and the answer are plain enums moved through the layer: no allocation and no
//! boxing beyond what the store below does, since the read path runs through every layer.

use std::borrow::Cow;
use std::ops::Deref;
use std::slice;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::charge::{self, Exchange};
use super::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, JsonPage, Page,
    PageRequest, PartitionKey, PartitionVersion, Query, QueryScope, RawItem, Store, StoreError,
    StoreResult, Tenancy,
};

/// What a wrapper adds to the calls made through it.
pub trait StoreLayer: Send + Sync + 'static {
    /// Answers one call; [`LayerCall::send`] hands it on to the store below unchanged.
    fn call(&self, call: LayerCall<'_>) -> impl Future<Output = StoreResult<StoreAnswer>> + Send;

    /// The backend the wrapped store reports: the inner store's unless the layer says.
    fn backend(&self, inner: &dyn Store) -> &'static str {
        inner.backend()
    }

    /// The layout the wrapped store reports: the inner store's unless the layer says.
    fn tenancy(&self, inner: &dyn Store) -> Tenancy {
        inner.tenancy()
    }
}

/// One call as it reaches a layer: the store below, the container and the request, moved
/// together so each layer names them once. Only borrows and the request itself: passing it
/// on allocates nothing.
pub struct LayerCall<'a> {
    pub inner: &'a dyn Store,
    pub container: Container,
    pub request: StoreRequest<'a>,
}

impl LayerCall<'_> {
    /// Sends the request, as it is, to the store below.
    pub async fn send(self) -> StoreResult<StoreAnswer> {
        self.request.send(self.inner, self.container).await
    }

    /// Sends the request and measures the exchanges it makes, reporting their charge on to
    /// the caller's own accounting scope (the HTTP layer's, a traced call's) unchanged.
    pub async fn send_measured(self) -> (StoreResult<StoreAnswer>, Exchange) {
        let (result, exchange) = charge::measure_exchanges(self.send()).await;
        charge::report(&exchange);
        (result, exchange)
    }
}

/// One call of the [`Store`] trait (all but the waits), with its arguments.
#[derive(Debug, Clone)]
pub enum StoreRequest<'a> {
    Read {
        pk: &'a PartitionKey,
        id: &'a str,
    },
    ReadJson {
        pk: &'a PartitionKey,
        id: &'a str,
        known: Option<&'a PartitionVersion>,
    },
    Create {
        pk: &'a PartitionKey,
        item: Value,
    },
    Upsert {
        pk: &'a PartitionKey,
        item: Value,
    },
    Replace {
        pk: &'a PartitionKey,
        item: Value,
        if_match: Option<&'a ETag>,
    },
    Delete {
        pk: &'a PartitionKey,
        id: &'a str,
    },
    Batch {
        pk: &'a PartitionKey,
        operations: Vec<BatchOperation>,
    },
    Query {
        query: &'a Query,
        page: PageRequest,
    },
    QueryJson {
        query: &'a Query,
        page: PageRequest,
        known: Option<&'a PartitionVersion>,
    },
    ReadChanges {
        since: Option<&'a Checkpoint>,
        max_items: usize,
    },
}

impl<'a> StoreRequest<'a> {
    /// Runs the request on `store`.
    pub async fn send(self, store: &dyn Store, container: Container) -> StoreResult<StoreAnswer> {
        match self {
            Self::Read { pk, id } => store
                .read_item(container, pk, id)
                .await
                .map(StoreAnswer::Read),
            Self::ReadJson { pk, id, known } => store
                .read_item_json(container, pk, id, known)
                .await
                .map(StoreAnswer::ReadJson),
            Self::Create { pk, item } => store
                .create_item(container, pk, item)
                .await
                .map(StoreAnswer::Written),
            Self::Upsert { pk, item } => store
                .upsert_item(container, pk, item)
                .await
                .map(StoreAnswer::Written),
            Self::Replace { pk, item, if_match } => store
                .replace_item(container, pk, item, if_match)
                .await
                .map(StoreAnswer::Written),
            Self::Delete { pk, id } => store
                .delete_item(container, pk, id)
                .await
                .map(|()| StoreAnswer::Deleted),
            Self::Batch { pk, operations } => store
                .execute_batch(container, pk, operations)
                .await
                .map(StoreAnswer::Batch),
            Self::Query { query, page } => store
                .query(container, query, page)
                .await
                .map(StoreAnswer::Page),
            Self::QueryJson { query, page, known } => store
                .query_json(container, query, page, known)
                .await
                .map(StoreAnswer::JsonPage),
            Self::ReadChanges { since, max_items } => store
                .read_changes(container, since, max_items)
                .await
                .map(StoreAnswer::Changes),
        }
    }

    /// The one logical partition the request addresses, if it names one (the calls on
    /// items; a query names its scope instead).
    pub fn partition(&self) -> Option<&'a PartitionKey> {
        match self {
            Self::Read { pk, .. }
            | Self::ReadJson { pk, .. }
            | Self::Create { pk, .. }
            | Self::Upsert { pk, .. }
            | Self::Replace { pk, .. }
            | Self::Delete { pk, .. }
            | Self::Batch { pk, .. } => Some(pk),
            Self::Query { .. } | Self::QueryJson { .. } | Self::ReadChanges { .. } => None,
        }
    }

    /// The same request addressed to the partition `pk` instead.
    pub fn to_partition<'b>(self, pk: &'b PartitionKey) -> StoreRequest<'b>
    where
        'a: 'b,
    {
        match self {
            Self::Read { id, .. } => StoreRequest::Read { pk, id },
            Self::ReadJson { id, known, .. } => StoreRequest::ReadJson { pk, id, known },
            Self::Create { item, .. } => StoreRequest::Create { pk, item },
            Self::Upsert { item, .. } => StoreRequest::Upsert { pk, item },
            Self::Replace { item, if_match, .. } => StoreRequest::Replace { pk, item, if_match },
            Self::Delete { id, .. } => StoreRequest::Delete { pk, id },
            Self::Batch { operations, .. } => StoreRequest::Batch { pk, operations },
            other @ (Self::Query { .. } | Self::QueryJson { .. } | Self::ReadChanges { .. }) => {
                other
            }
        }
    }

    /// The query's scope, for a query.
    pub fn scope(&self) -> Option<&'a QueryScope> {
        match self {
            Self::Query { query, .. } | Self::QueryJson { query, .. } => Some(&query.scope),
            _ => None,
        }
    }

    /// Whether the request reads items (and its answer returns them) rather than writing.
    pub fn reads(&self) -> bool {
        matches!(
            self,
            Self::Read { .. }
                | Self::ReadJson { .. }
                | Self::Query { .. }
                | Self::QueryJson { .. }
                | Self::ReadChanges { .. }
        )
    }

    /// The items the request writes (an item of each operation of a batch but its deletes).
    pub fn items(&self) -> impl Iterator<Item = &Value> {
        let (one, operations) = match self {
            Self::Create { item, .. } | Self::Upsert { item, .. } | Self::Replace { item, .. } => {
                (Some(item), &[][..])
            }
            Self::Batch { operations, .. } => (None, &operations[..]),
            _ => (None, &[][..]),
        };
        one.into_iter()
            .chain(operations.iter().filter_map(BatchOperation::item))
    }

    /// The items the request writes, to change on the way.
    pub(crate) fn items_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        let (one, operations) = match self {
            Self::Create { item, .. } | Self::Upsert { item, .. } | Self::Replace { item, .. } => {
                (Some(item), <&mut [BatchOperation]>::default())
            }
            Self::Batch { operations, .. } => (None, &mut operations[..]),
            _ => (None, <&mut [BatchOperation]>::default()),
        };
        one.into_iter()
            .chain(operations.iter_mut().filter_map(BatchOperation::item_mut))
    }
}

impl BatchOperation {
    /// The item the operation writes; `None` for a delete.
    pub fn item(&self) -> Option<&Value> {
        match self {
            Self::Create { item } | Self::Upsert { item } | Self::Replace { item, .. } => {
                Some(item)
            }
            Self::Delete { .. } => None,
        }
    }

    fn item_mut(&mut self) -> Option<&mut Value> {
        match self {
            Self::Create { item } | Self::Upsert { item } | Self::Replace { item, .. } => {
                Some(item)
            }
            Self::Delete { .. } => None,
        }
    }
}

/// What a [`StoreRequest`] answers, by kind of call.
#[derive(Debug, Clone)]
pub enum StoreAnswer {
    Read(Option<Document>),
    /// A point read's answer, as a page of the item alone.
    ReadJson(JsonPage),
    Written(ETag),
    Deleted,
    Batch(Vec<Option<ETag>>),
    Page(Page<Value>),
    JsonPage(JsonPage),
    Changes(ChangeBatch),
}

impl StoreAnswer {
    /// The items the answer returns as documents (none for a write, nor for stored JSON
    /// text: see [`StoreAnswer::documents`]).
    pub fn items(&self) -> &[Value] {
        match self {
            Self::Read(Some(document)) => slice::from_ref(&document.item),
            Self::Page(page) => &page.items,
            Self::Changes(batch) => &batch.items,
            Self::Read(None)
            | Self::ReadJson(_)
            | Self::Written(_)
            | Self::Deleted
            | Self::Batch(_)
            | Self::JsonPage(_) => &[],
        }
    }

    /// The items the answer returns, to change on the way back.
    pub(crate) fn items_mut(&mut self) -> &mut [Value] {
        match self {
            Self::Read(Some(document)) => slice::from_mut(&mut document.item),
            Self::Page(page) => &mut page.items,
            Self::Changes(batch) => &mut batch.items,
            Self::Read(None)
            | Self::ReadJson(_)
            | Self::Written(_)
            | Self::Deleted
            | Self::Batch(_)
            | Self::JsonPage(_) => &mut [],
        }
    }

    /// How many items the answer returns, in either form.
    pub fn item_count(&self) -> usize {
        match self {
            Self::JsonPage(page) | Self::ReadJson(page) => page.item_count(),
            other => other.items().len(),
        }
    }

    /// The items the answer returns as documents, whatever their form: stored JSON text is
    /// parsed here, so a layer that must look inside the items (for their partition
    /// keys, say) pays that only when it does.
    pub fn documents(&self) -> StoreResult<Cow<'_, [Value]>> {
        match self {
            Self::JsonPage(JsonPage::Unchanged { .. })
            | Self::ReadJson(JsonPage::Unchanged { .. }) => Ok(Cow::Borrowed(&[])),
            Self::JsonPage(JsonPage::Read { page, .. })
            | Self::ReadJson(JsonPage::Read { page, .. }) => parsed(&page.items).map(Cow::Owned),
            other => Ok(Cow::Borrowed(other.items())),
        }
    }
}

fn parsed(items: &[RawItem]) -> StoreResult<Vec<Value>> {
    items
        .iter()
        .map(|raw| {
            serde_json::from_str(raw.get())
                .map_err(|e| StoreError::Internal(format!("corrupt item: {e}")))
        })
        .collect()
}

/// A layer's answer of the wrong kind for its request: a bug of the layer, reported as the
/// store failure it is rather than a panic.
fn mismatched(call: &str, answer: &StoreAnswer) -> StoreError {
    StoreError::Internal(format!("a store layer answered {call} with {answer:?}"))
}

/// A store made of `layer` over `inner`. It reads as its layer (a metering layer's `take()`
/// is called on the store).
#[derive(Clone)]
pub struct Layered<L> {
    inner: Arc<dyn Store>,
    layer: L,
}

impl<L: StoreLayer> Layered<L> {
    pub fn over(inner: Arc<dyn Store>, layer: L) -> Self {
        Self { inner, layer }
    }

    /// The store below the layer.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    async fn call(
        &self,
        container: Container,
        request: StoreRequest<'_>,
    ) -> StoreResult<StoreAnswer> {
        let call = LayerCall {
            inner: &*self.inner,
            container,
            request,
        };
        self.layer.call(call).await
    }
}

impl<L> Deref for Layered<L> {
    type Target = L;

    fn deref(&self) -> &L {
        &self.layer
    }
}

#[async_trait]
impl<L: StoreLayer> Store for Layered<L> {
    fn backend(&self) -> &'static str {
        self.layer.backend(&*self.inner)
    }

    fn tenancy(&self) -> Tenancy {
        self.layer.tenancy(&*self.inner)
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        match self.call(container, StoreRequest::Read { pk, id }).await? {
            StoreAnswer::Read(found) => Ok(found),
            other => Err(mismatched("read_item", &other)),
        }
    }

    async fn read_item_json(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        match self
            .call(container, StoreRequest::ReadJson { pk, id, known })
            .await?
        {
            StoreAnswer::ReadJson(found) => Ok(found),
            other => Err(mismatched("read_item_json", &other)),
        }
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        match self
            .call(container, StoreRequest::Create { pk, item })
            .await?
        {
            StoreAnswer::Written(etag) => Ok(etag),
            other => Err(mismatched("create_item", &other)),
        }
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        match self
            .call(container, StoreRequest::Upsert { pk, item })
            .await?
        {
            StoreAnswer::Written(etag) => Ok(etag),
            other => Err(mismatched("upsert_item", &other)),
        }
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let request = StoreRequest::Replace { pk, item, if_match };
        match self.call(container, request).await? {
            StoreAnswer::Written(etag) => Ok(etag),
            other => Err(mismatched("replace_item", &other)),
        }
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        match self
            .call(container, StoreRequest::Delete { pk, id })
            .await?
        {
            StoreAnswer::Deleted => Ok(()),
            other => Err(mismatched("delete_item", &other)),
        }
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        match self
            .call(container, StoreRequest::Batch { pk, operations })
            .await?
        {
            StoreAnswer::Batch(etags) => Ok(etags),
            other => Err(mismatched("execute_batch", &other)),
        }
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        match self
            .call(container, StoreRequest::Query { query, page })
            .await?
        {
            StoreAnswer::Page(page) => Ok(page),
            other => Err(mismatched("query", &other)),
        }
    }

    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
        known: Option<&PartitionVersion>,
    ) -> StoreResult<JsonPage> {
        let request = StoreRequest::QueryJson { query, page, known };
        match self.call(container, request).await? {
            StoreAnswer::JsonPage(page) => Ok(page),
            other => Err(mismatched("query_json", &other)),
        }
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let request = StoreRequest::ReadChanges { since, max_items };
        match self.call(container, request).await? {
            StoreAnswer::Changes(batch) => Ok(batch),
            other => Err(mismatched("read_changes", &other)),
        }
    }

    /// A setting of the store, no call to it: every layer lets it through.
    async fn keep_partition_versions(&self) -> StoreResult<bool> {
        self.inner.keep_partition_versions().await
    }

    /// A wait is no call to the store: every layer lets it through.
    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        self.inner.wait_for_changes(container, timeout).await;
    }
}
