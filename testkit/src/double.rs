//! The one store double: [`Double`] forwards every call to a real store, and its [`Hooks`]
//! decide what a test changes on the way (fail a call, hold it at a gate, count it, answer a
//! read with an older item). A test writes only what differs from the real store.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, Page, PageRequest,
    PartitionKey, Query, Store, StoreResult, Tenancy,
};
use serde_json::Value;

/// What kind of call a store call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Read,
    Create,
    Upsert,
    Replace,
    Delete,
    Batch,
    Query,
    ReadChanges,
}

/// A store call as the hooks see it: its kind, its container, and for the calls on items
/// their partition and the ids of the items they read or write.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub kind: CallKind,
    pub container: Container,
    pub partition: Option<&'a PartitionKey>,
    pub ids: Vec<&'a str>,
}

impl Call<'_> {
    pub fn writes(&self) -> bool {
        !matches!(
            self.kind,
            CallKind::Read | CallKind::Query | CallKind::ReadChanges
        )
    }
}

/// What a [`Double`] does besides forwarding. Each hook does nothing by default.
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    /// Runs before `call` reaches the real store (`inner`), which it may read; an error is
    /// the call's answer, and the call never reaches the store.
    async fn before(&self, call: &Call<'_>, inner: &dyn Store) -> StoreResult<()> {
        let _ = (call, inner);
        Ok(())
    }

    /// A point read's answer in place of the real store's; `None` asks the real store.
    fn read_instead(&self, call: &Call<'_>) -> Option<Option<Document>> {
        let _ = call;
        None
    }

    /// Runs once the real store has answered `call`.
    fn after(&self, call: &Call<'_>) {
        let _ = call;
    }
}

/// A store that forwards to `inner`, through `hooks`. It reads as its hooks (`double.close()`
/// for a gate's `close`), and its backend and layout are the real store's unless named.
pub struct Double<H> {
    inner: Arc<dyn Store>,
    hooks: H,
    backend: Option<&'static str>,
}

impl<H: Hooks> Double<H> {
    pub fn new(inner: Arc<dyn Store>, hooks: H) -> Arc<Self> {
        Arc::new(Self {
            inner,
            hooks,
            backend: None,
        })
    }

    /// The double under a backend name of its own (what metrics and traces label it).
    pub fn named(inner: Arc<dyn Store>, hooks: H, backend: &'static str) -> Arc<Self> {
        Arc::new(Self {
            inner,
            hooks,
            backend: Some(backend),
        })
    }

    async fn forward<T>(
        &self,
        call: Call<'_>,
        answer: impl Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        self.hooks.before(&call, &*self.inner).await?;
        let answer = answer.await;
        self.hooks.after(&call);
        answer
    }
}

impl<H> Deref for Double<H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hooks
    }
}

fn item_id(item: &Value) -> &str {
    item.get("id").and_then(Value::as_str).unwrap_or_default()
}

fn on_item<'a>(
    kind: CallKind,
    container: Container,
    pk: &'a PartitionKey,
    id: &'a str,
) -> Call<'a> {
    Call {
        kind,
        container,
        partition: Some(pk),
        ids: vec![id],
    }
}

fn on_container(kind: CallKind, container: Container) -> Call<'static> {
    Call {
        kind,
        container,
        partition: None,
        ids: Vec::new(),
    }
}

#[async_trait]
impl<H: Hooks> Store for Double<H> {
    fn backend(&self) -> &'static str {
        self.backend.unwrap_or_else(|| self.inner.backend())
    }

    fn tenancy(&self) -> Tenancy {
        self.inner.tenancy()
    }

    async fn read_item(
        &self,
        c: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let call = on_item(CallKind::Read, c, pk, id);
        if let Some(answer) = self.hooks.read_instead(&call) {
            return Ok(answer);
        }
        self.forward(call, self.inner.read_item(c, pk, id)).await
    }

    async fn create_item(&self, c: Container, pk: &PartitionKey, item: Value) -> StoreResult<ETag> {
        let call = on_item(CallKind::Create, c, pk, item_id(&item));
        self.forward(call, self.inner.create_item(c, pk, item.clone()))
            .await
    }

    async fn upsert_item(&self, c: Container, pk: &PartitionKey, item: Value) -> StoreResult<ETag> {
        let call = on_item(CallKind::Upsert, c, pk, item_id(&item));
        self.forward(call, self.inner.upsert_item(c, pk, item.clone()))
            .await
    }

    async fn replace_item(
        &self,
        c: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let call = on_item(CallKind::Replace, c, pk, item_id(&item));
        self.forward(call, self.inner.replace_item(c, pk, item.clone(), if_match))
            .await
    }

    async fn delete_item(&self, c: Container, pk: &PartitionKey, id: &str) -> StoreResult<()> {
        let call = on_item(CallKind::Delete, c, pk, id);
        self.forward(call, self.inner.delete_item(c, pk, id)).await
    }

    async fn execute_batch(
        &self,
        c: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        let ids = operations
            .iter()
            .map(|operation| match operation {
                BatchOperation::Create { item }
                | BatchOperation::Upsert { item }
                | BatchOperation::Replace { item, .. } => item_id(item),
                BatchOperation::Delete { id } => id,
            })
            .collect();
        let call = Call {
            kind: CallKind::Batch,
            container: c,
            partition: Some(pk),
            ids,
        };
        self.forward(call, self.inner.execute_batch(c, pk, operations.clone()))
            .await
    }

    async fn query(
        &self,
        c: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let call = on_container(CallKind::Query, c);
        self.forward(call, self.inner.query(c, query, page)).await
    }

    async fn read_changes(
        &self,
        c: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let call = on_container(CallKind::ReadChanges, c);
        self.forward(call, self.inner.read_changes(c, since, max_items))
            .await
    }

    async fn wait_for_changes(&self, c: Container, timeout: Duration) {
        self.inner.wait_for_changes(c, timeout).await;
    }
}
