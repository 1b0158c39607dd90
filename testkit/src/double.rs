//! The one store double: [`Double`] forwards every call to a real store, and its [`Hooks`]
//! decide what a test changes on the way (fail a call, hold it at a gate, count it, answer a
//! read with an older item). A test writes only what differs from the real store.

use std::ops::Deref;
use std::sync::Arc;

use async_trait::async_trait;
use cosmos_blog::store::layer::{LayerCall, Layered, StoreAnswer, StoreLayer, StoreRequest};
use cosmos_blog::store::{
    BatchOperation, Container, Document, JsonPage, Page, PartitionKey, PartitionVersion, RawItem,
    Store, StoreError, StoreResult,
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

/// A store that forwards to a real one through a test's hooks. It reads as its hooks
/// (`double.close()` for a gate's `close`).
pub type Double<H> = Layered<Hooked<H>>;

/// The double over `inner`, with the real store's backend name and layout.
pub fn over<H: Hooks>(inner: Arc<dyn Store>, hooks: H) -> Arc<Double<H>> {
    Arc::new(Layered::over(
        inner,
        Hooked {
            hooks,
            backend: None,
        },
    ))
}

/// The double under a backend name of its own (what metrics and traces label it).
pub fn named<H: Hooks>(inner: Arc<dyn Store>, hooks: H, backend: &'static str) -> Arc<Double<H>> {
    Arc::new(Layered::over(
        inner,
        Hooked {
            hooks,
            backend: Some(backend),
        },
    ))
}

/// The layer of a [`Double`]: its hooks around each call.
pub struct Hooked<H> {
    hooks: H,
    backend: Option<&'static str>,
}

impl<H> Deref for Hooked<H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hooks
    }
}

impl<'a> Call<'a> {
    fn of(container: Container, request: &'a StoreRequest<'_>) -> Self {
        let kind = match request {
            StoreRequest::Read { .. } | StoreRequest::ReadJson { .. } => CallKind::Read,
            StoreRequest::Create { .. } => CallKind::Create,
            StoreRequest::Upsert { .. } => CallKind::Upsert,
            StoreRequest::Replace { .. } => CallKind::Replace,
            StoreRequest::Delete { .. } => CallKind::Delete,
            StoreRequest::Batch { .. } => CallKind::Batch,
            StoreRequest::Query { .. } | StoreRequest::QueryJson { .. } => CallKind::Query,
            StoreRequest::ReadChanges { .. } => CallKind::ReadChanges,
        };
        let ids = match request {
            StoreRequest::Read { id, .. }
            | StoreRequest::ReadJson { id, .. }
            | StoreRequest::Delete { id, .. } => vec![*id],
            StoreRequest::Batch { operations, .. } => operations.iter().map(operation_id).collect(),
            other => other.items().map(item_id).collect(),
        };
        Call {
            kind,
            container,
            partition: request.partition(),
            ids,
        }
    }
}

/// A document as the text a store holds it in.
fn stored_text(item: &Value) -> StoreResult<RawItem> {
    serde_json::value::to_raw_value(item).map_err(|e| StoreError::Internal(e.to_string()))
}

fn item_id(item: &Value) -> &str {
    item.get("id").and_then(Value::as_str).unwrap_or_default()
}

fn operation_id(operation: &BatchOperation) -> &str {
    match operation {
        BatchOperation::Delete { id, .. } => id,
        write => write.item().map(item_id).unwrap_or_default(),
    }
}

impl<H: Hooks> StoreLayer for Hooked<H> {
    fn backend(&self, inner: &dyn Store) -> &'static str {
        self.backend.unwrap_or_else(|| inner.backend())
    }

    /// A double sees every read its hooks may answer or refuse: no kept page goes past it.
    fn holds_unchanged(&self, _inner: &dyn Store, _known: &PartitionVersion) -> bool {
        false
    }

    async fn call(&self, call: LayerCall<'_>) -> StoreResult<StoreAnswer> {
        let seen = Call::of(call.container, &call.request);
        if seen.kind == CallKind::Read
            && let Some(answer) = self.hooks.read_instead(&seen)
        {
            return match call.request {
                StoreRequest::ReadJson { .. } => {
                    Ok(StoreAnswer::ReadJson(JsonPage::unversioned(Page::of_one(
                        answer
                            .map(|document| stored_text(&document.item))
                            .transpose()?,
                    ))))
                }
                _ => Ok(StoreAnswer::Read(answer)),
            };
        }
        self.hooks.before(&seen, call.inner).await?;
        let answer = call.request.clone().send(call.inner, call.container).await;
        self.hooks.after(&seen);
        answer
    }
}
