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

    /// Whether a kept page is unchanged, told without a call: the inner store's word unless
    /// the layer must see every read (a test's double), for it makes no call to pass through.
    fn holds_unchanged(&self, inner: &dyn Store, known: &PartitionVersion) -> bool {
        inner.holds_unchanged(known)
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
    pub(crate) fn into_partition<'b>(self, pk: &'b PartitionKey) -> StoreRequest<'b>
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

/// The [`Store`] calls, each once: its method, the [`StoreRequest`] that carries its
/// arguments (named as the method's) and the [`StoreAnswer`] that carries its result. From
/// this one list come [`StoreRequest::send`], which makes a request the call, and the
/// [`Store`] impl of [`Layered`], which makes each call a request sent through the layer and
/// takes its result out of the answer (any other kind of answer is the layer's bug, reported
/// by [`mismatched`]).
macro_rules! store_calls {
    (@answer $answer:ident) => { |()| StoreAnswer::$answer };
    (@answer $answer:ident $result:ident) => { StoreAnswer::$answer };
    (@result) => { () };
    (@result $result:ident) => { $result };
    ($(
        $method:ident($($arg:ident: $type:ty),*) -> $out:ty:
            $request:ident => $answer:ident$(($result:ident))?;
    )*) => {
        impl StoreRequest<'_> {
            /// Runs the request on `store`.
            pub async fn send(
                self,
                store: &dyn Store,
                container: Container,
            ) -> StoreResult<StoreAnswer> {
                match self {
                    $(Self::$request { $($arg),* } => store
                        .$method(container, $($arg),*)
                        .await
                        .map(store_calls!(@answer $answer $($result)?)),)*
                }
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

            fn holds_unchanged(&self, known: &PartitionVersion) -> bool {
                self.layer.holds_unchanged(&*self.inner, known)
            }

            $(
                async fn $method(
                    &self,
                    container: Container,
                    $($arg: $type),*
                ) -> StoreResult<$out> {
                    match self.call(container, StoreRequest::$request { $($arg),* }).await? {
                        StoreAnswer::$answer$(($result))? => Ok(store_calls!(@result $($result)?)),
                        other => Err(mismatched(stringify!($method), &other)),
                    }
                }
            )*

            /// A setting of the store, no call to it: every layer lets it through.
            async fn keep_partition_versions(&self) -> StoreResult<bool> {
                self.inner.keep_partition_versions().await
            }

            /// A wait is no call to the store: every layer lets it through.
            async fn wait_for_changes(&self, container: Container, timeout: Duration) {
                self.inner.wait_for_changes(container, timeout).await;
            }
        }
    };
}

store_calls! {
    read_item(pk: &PartitionKey, id: &str) -> Option<Document>: Read => Read(found);
    read_item_json(pk: &PartitionKey, id: &str, known: Option<&PartitionVersion>) -> JsonPage:
        ReadJson => ReadJson(found);
    create_item(pk: &PartitionKey, item: Value) -> ETag: Create => Written(etag);
    upsert_item(pk: &PartitionKey, item: Value) -> ETag: Upsert => Written(etag);
    replace_item(pk: &PartitionKey, item: Value, if_match: Option<&ETag>) -> ETag:
        Replace => Written(etag);
    delete_item(pk: &PartitionKey, id: &str) -> (): Delete => Deleted;
    execute_batch(pk: &PartitionKey, operations: Vec<BatchOperation>) -> Vec<Option<ETag>>:
        Batch => Batch(etags);
    query(query: &Query, page: PageRequest) -> Page<Value>: Query => Page(page);
    query_json(query: &Query, page: PageRequest, known: Option<&PartitionVersion>) -> JsonPage:
        QueryJson => JsonPage(page);
    read_changes(since: Option<&Checkpoint>, max_items: usize) -> ChangeBatch:
        ReadChanges => Changes(batch);
}
