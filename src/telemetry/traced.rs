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
use std::time::Instant;

use serde_json::Value;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::metrics::{self, StoreCall};
use super::sampling;
use crate::store::charge::{self, Exchange};
use crate::store::layer::{LayerCall, Layered, StoreAnswer, StoreLayer, StoreRequest};
use crate::store::{Container, QueryScope, Store, StoreError, StoreResult, Tenancy};

/// The target of the store call spans: the name log filters know them by (`RUST_LOG`), kept
/// from where the wrapper first lived.
pub(crate) const SPAN_TARGET: &str = "cosmos_blog::store::traced";

/// Wraps a store so that each call has a span and is measured.
pub type TracedStore = Layered<StoreSpans>;

/// The spans and metrics of a [`TracedStore`].
pub struct StoreSpans {
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
        let spans = StoreSpans {
            system,
            namespace: namespace.into(),
        };
        Layered::over(inner, spans)
    }
}

impl StoreLayer for StoreSpans {
    /// Runs one store call in its span.
    async fn call(&self, call: LayerCall<'_>) -> StoreResult<StoreAnswer> {
        let (container, inner) = (call.container, call.inner);
        let operation = operation_name(&call.request);
        let outline = Outline::of(&call.request);
        // Only below a request, an invocation or a batch: the pump's polls and checkpoint
        // reads would otherwise be a trace each, several a second, all of them idle.
        // Nor below one whose trace is not kept.
        let span = if Span::current().is_none() || sampling::in_unsampled_span() {
            Span::none()
        } else {
            self.span(operation, container)
        };
        let started = Instant::now();
        let sent = call.send().instrument(span.clone());
        let (result, exchange) = charge::measure_exchanges(sent).await;
        // The charge belongs to the enclosing scope too (the request's total).
        charge::report(&exchange);
        let status = exchange.status.or_else(|| failure_status(&result));
        let failure = result.as_ref().err().map(error_type);
        // The shape (a query's partitions: a key per item) is for the span alone.
        if !span.is_disabled() {
            let shape = outline.shape(container, inner.tenancy(), result.as_ref().ok());
            record(&span, &exchange, status, failure, shape);
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
struct Shape {
    partitions: Option<usize>,
    returned_rows: Option<usize>,
    batch_size: Option<usize>,
}

/// What a call's arguments tell of its shape; its answer tells the rest.
struct Outline {
    /// The call addresses one logical partition (a call on items, a query on a partition).
    one_partition: bool,
    /// The call returns items (a read, a query, a change-log read).
    reads: bool,
    batch_size: Option<usize>,
}

impl Outline {
    fn of(request: &StoreRequest<'_>) -> Outline {
        let one_partition = match request.scope() {
            Some(scope) => matches!(scope, QueryScope::Partition(_)),
            None => request.partition().is_some(),
        };
        let batch_size = match request {
            StoreRequest::Batch { operations, .. } => Some(operations.len()),
            _ => None,
        };
        Outline {
            one_partition,
            reads: request.reads(),
            batch_size,
        }
    }

    /// The call's shape, given its answer (`None` when it failed).
    fn shape(&self, container: Container, tenancy: Tenancy, answer: Option<&StoreAnswer>) -> Shape {
        // Cosmos DB fans queries without a partition out; the partitions of what came back
        // are a lower bound.
        let partitions = if self.one_partition {
            Some(1)
        } else {
            answer
                .and_then(|answer| answer.documents().ok())
                .map(|items| partitions_of(container, tenancy, items.iter()))
        };
        Shape {
            partitions,
            returned_rows: answer.filter(|_| self.reads).map(StoreAnswer::item_count),
            batch_size: self.batch_size,
        }
    }
}

/// The OpenTelemetry name of a call's operation.
fn operation_name(request: &StoreRequest<'_>) -> &'static str {
    match request {
        StoreRequest::Read { .. } | StoreRequest::ReadJson { .. } => "read_item",
        StoreRequest::Create { .. } => "create_item",
        StoreRequest::Upsert { .. } => "upsert_item",
        StoreRequest::Replace { .. } => "replace_item",
        StoreRequest::Delete { .. } => "delete_item",
        StoreRequest::Batch { .. } => "execute_batch",
        StoreRequest::Query { .. } | StoreRequest::QueryJson { .. } => "query_items",
        StoreRequest::ReadChanges { .. } => "query_change_feed",
    }
}

impl StoreSpans {
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
    container
        .partition_keys_in(tenancy, items)
        .collect::<HashSet<_>>()
        .len()
}
