//! A [`Store`] wrapper that makes every store call observable: a span per call, a child of
//! whatever runs it (an HTTP request, a trigger invocation, a change-feed batch), with the
//! OpenTelemetry database attributes and what the service reported (RU, status and
//! sub-status, attempts), and the database-client metrics (see [`super::metrics`]).
//!
//! Both backends get the same spans; only Cosmos DB reports RU, statuses of successful calls,
//! and retries. The spans use their own target, [`SPAN_TARGET`], which the default log
//! filter leaves out: they are for traces, not for log lines.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::metrics::{self, StoreCall};
use crate::store::charge::{self, Exchange};
use crate::store::metered::partition_keys;
use crate::store::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, Page, PageRequest,
    PartitionKey, Query, QueryScope, Store, StoreError, StoreResult, Tenancy,
};

/// The target of the store call spans: the name log filters know them by (`RUST_LOG`), kept
/// from where the wrapper first lived.
pub const SPAN_TARGET: &str = "cosmos_blog::store::traced";

/// Wraps `inner` so that each call has a span and is measured.
pub struct TracedStore {
    inner: Arc<dyn Store>,
    /// `db.system.name`: `azure.cosmosdb`, or `sqlite` for the embedded store.
    system: &'static str,
    /// `db.namespace`: the database name.
    namespace: String,
}

impl TracedStore {
    pub fn new(inner: Arc<dyn Store>, namespace: impl Into<String>) -> Self {
        let system = match inner.backend() {
            "cosmos" => "azure.cosmosdb",
            "embedded" => "sqlite",
            other => other,
        };
        Self {
            inner,
            system,
            namespace: namespace.into(),
        }
    }

    /// Runs one store call in its span; `shape` tells what the call touched, from its result
    /// when only the result tells (cross-partition queries, the change feed).
    async fn call<T, F>(
        &self,
        operation: &'static str,
        container: Container,
        call: F,
        shape: impl FnOnce(&StoreResult<T>) -> Shape,
    ) -> StoreResult<T>
    where
        F: Future<Output = StoreResult<T>>,
    {
        // Only below a request, an invocation or a batch: the pump's polls and checkpoint
        // reads would otherwise be a trace each, several a second, all of them idle.
        let span = if Span::current().is_none() {
            Span::none()
        } else {
            self.span(operation, container)
        };
        let started = Instant::now();
        let (result, exchange) = charge::measure_exchanges(call.instrument(span.clone())).await;
        // The charge belongs to the enclosing scope too (the request's total).
        charge::report(&exchange);
        let status = exchange.status.or_else(|| failure_status(&result));
        let failure = result.as_ref().err().map(error_type);
        // The shape (a query's partitions: a key per item) is for the span alone.
        if !span.is_disabled() {
            record(&span, &exchange, status, failure, shape(&result));
        }
        metrics::record_store_call(&StoreCall {
            system: self.system,
            container: container.name(),
            operation,
            duration: started.elapsed(),
            status,
            failure,
            exchange,
        });
        result
    }
}

/// What a call touched: logical partitions, items returned, operations of a batch.
#[derive(Default)]
struct Shape {
    partitions: Option<usize>,
    returned_rows: Option<usize>,
    batch_size: Option<usize>,
}

impl Shape {
    /// One logical partition, whatever the outcome: the call addressed it.
    fn one_partition<T>(_: &StoreResult<T>) -> Shape {
        Shape {
            partitions: Some(1),
            ..Shape::default()
        }
    }
}

impl TracedStore {
    /// The span of one call: the OpenTelemetry database attributes, the outcome to come.
    fn span(&self, operation: &'static str, container: Container) -> Span {
        tracing::info_span!(
            target: SPAN_TARGET,
            "store",
            otel.name = %format_args!("{operation} {}", container.name()),
            otel.kind = "client",
            otel.status_code = Empty,
            db.system.name = self.system,
            db.namespace = %self.namespace,
            db.collection.name = container.name(),
            db.operation.name = operation,
            db.operation.batch.size = Empty,
            db.response.returned_rows = Empty,
            db.response.status_code = Empty,
            error.type = Empty,
            azure.cosmosdb.operation.request_charge = Empty,
            azure.cosmosdb.response.sub_status_code = Empty,
            blog.store.logical_partitions = Empty,
            blog.store.attempts = Empty,
            blog.store.throttled = Empty,
        )
    }
}

/// Fills in the span's outcome.
fn record(
    span: &Span,
    exchange: &Exchange,
    status: Option<u16>,
    failure: Option<&'static str>,
    shape: Shape,
) {
    if let Some(status) = status {
        span.record("db.response.status_code", status.to_string());
    }
    if let Some(sub_status) = exchange.sub_status {
        span.record("azure.cosmosdb.response.sub_status_code", sub_status);
    }
    if exchange.request_units > 0.0 {
        span.record(
            "azure.cosmosdb.operation.request_charge",
            exchange.request_units,
        );
    }
    if exchange.attempts > 0 {
        span.record("blog.store.attempts", exchange.attempts);
        span.record("blog.store.throttled", exchange.throttled);
    }
    if let Some(partitions) = shape.partitions {
        span.record("blog.store.logical_partitions", partitions as u64);
    }
    if let Some(rows) = shape.returned_rows {
        span.record("db.response.returned_rows", rows as u64);
    }
    if let Some(size) = shape.batch_size {
        span.record("db.operation.batch.size", size as u64);
    }
    if let Some(failure) = failure {
        span.record("error.type", failure);
        span.record("otel.status_code", "error");
    }
}

/// The status a failed call stands for, on a backend that reports none (the embedded store,
/// or a Cosmos DB call refused before it was sent).
fn failure_status<T>(result: &StoreResult<T>) -> Option<u16> {
    fn status(error: &StoreError) -> u16 {
        match error {
            StoreError::NotFound => 404,
            StoreError::Conflict => 409,
            StoreError::PreconditionFailed => 412,
            StoreError::Throttled { .. } => 429,
            StoreError::Unavailable(_) => 503,
            StoreError::BadRequest(_) => 400,
            StoreError::BatchOperationFailed { cause, .. } => status(cause),
            StoreError::Internal(_) => 500,
        }
    }
    result.as_ref().err().map(status)
}

/// `error.type` of a failed call: the kind of failure.
fn error_type(error: &StoreError) -> &'static str {
    match error {
        StoreError::NotFound => "not_found",
        StoreError::Conflict => "conflict",
        StoreError::PreconditionFailed => "precondition_failed",
        StoreError::Throttled { .. } => "throttled",
        StoreError::Unavailable(_) => "unavailable",
        StoreError::BadRequest(_) => "bad_request",
        StoreError::BatchOperationFailed { cause, .. } => error_type(cause),
        StoreError::Internal(_) => "internal",
    }
}

/// Distinct logical partitions of `items` in `container` of a `tenancy` store.
fn partitions_of<'a>(
    container: Container,
    tenancy: Tenancy,
    items: impl Iterator<Item = &'a Value>,
) -> usize {
    partition_keys(container, tenancy, items)
        .collect::<HashSet<_>>()
        .len()
}

#[async_trait]
impl Store for TracedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn tenancy(&self) -> Tenancy {
        self.inner.tenancy()
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let call = self.inner.read_item(container, pk, id);
        self.call("read_item", container, call, |result| Shape {
            returned_rows: result
                .as_ref()
                .ok()
                .map(|found| usize::from(found.is_some())),
            ..Shape::one_partition(result)
        })
        .await
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let call = self.inner.create_item(container, pk, item);
        self.call("create_item", container, call, Shape::one_partition)
            .await
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
    ) -> StoreResult<ETag> {
        let call = self.inner.upsert_item(container, pk, item);
        self.call("upsert_item", container, call, Shape::one_partition)
            .await
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        item: Value,
        if_match: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let call = self.inner.replace_item(container, pk, item, if_match);
        self.call("replace_item", container, call, Shape::one_partition)
            .await
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let call = self.inner.delete_item(container, pk, id);
        self.call("delete_item", container, call, Shape::one_partition)
            .await
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        let size = operations.len();
        let call = self.inner.execute_batch(container, pk, operations);
        self.call("execute_batch", container, call, |result| Shape {
            batch_size: Some(size),
            ..Shape::one_partition(result)
        })
        .await
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let tenancy = self.inner.tenancy();
        let call = self.inner.query(container, query, page);
        self.call("query_items", container, call, |result| {
            let page = result.as_ref().ok();
            let partitions = match &query.scope {
                QueryScope::Partition(_) => Some(1),
                // Cosmos DB fans these out; the partitions of what came back are a lower bound.
                QueryScope::CrossPartition | QueryScope::Prefix(_) => {
                    page.map(|page| partitions_of(container, tenancy, page.items.iter()))
                }
            };
            Shape {
                partitions,
                returned_rows: page.map(|page| page.items.len()),
                batch_size: None,
            }
        })
        .await
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let tenancy = self.inner.tenancy();
        let call = self.inner.read_changes(container, since, max_items);
        self.call("query_change_feed", container, call, |result| {
            let batch = result.as_ref().ok();
            Shape {
                partitions: batch.map(|b| partitions_of(container, tenancy, b.items.iter())),
                returned_rows: batch.map(|b| b.items.len()),
                batch_size: None,
            }
        })
        .await
    }

    async fn wait_for_changes(&self, container: Container, timeout: Duration) {
        // Not a call to the service: a local wait (embedded) or a timer (Cosmos DB polling).
        self.inner.wait_for_changes(container, timeout).await;
    }
}
