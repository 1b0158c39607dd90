//! The metrics, named after the OpenTelemetry semantic conventions where they have one:
//!
//! | metric | unit | attributes |
//! |---|---|---|
//! | `http.server.request.duration` | s | `http.request.method`, `http.route`, `http.response.status_code`, `error.type`, `blog.operation` |
//! | `db.client.operation.duration` | s | `db.system.name`, `db.collection.name`, `db.operation.name`, `db.response.status_code`, `error.type` |
//! | `azure.cosmosdb.client.operation.request_charge` | RU | `db.collection.name`, `db.operation.name`, `db.response.status_code` |
//! | `blog.operation.request_charge` | RU | `blog.operation`: the RU of one API operation or one change-feed batch of a handler |
//! | `blog.store.throttled` | requests | `db.collection.name`, `db.operation.name`: requests the service answered 429 (retried or not) |
//! | `blog.store.retries` | requests | `db.collection.name`, `db.operation.name`: requests the SDK sent again |
//! | `blog.combiner.batch.size` | writes | comments and likes written in one batch by the hot-post combiner |
//! | `blog.change_feed.lag` | s | `blog.change_feed.source`, `blog.operation`: end of a batch's handling minus its newest document's `_ts` |
//!
//! `blog.operation` is the function name of the Functions table (`functions::metadata`):
//! `AddComment` for C3, `OnPostChanged` for the handler, and so on.
//!
//! Instruments are reached through the current `tracing` dispatcher, whose subscriber holds
//! them (as a [`super::held::Held`] layer): code records a metric where it happens, the way it logs, and
//! an application with telemetry of its own (a test's) records into its own. With export off
//! there is no such layer and recording does nothing.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::held::held;
use crate::store::charge::Exchange;
use axum::http::Method;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{KeyValue, StringValue};
use serde_json::Value;

/// Semantic conventions' buckets for HTTP server durations (s).
const HTTP_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Semantic conventions' buckets for database client durations (s).
const DB_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];
/// Request units: a point read costs 1, the case study's operations up to ~20, scans more.
const RU_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 5000.0,
];
/// Writes per combined batch: 1 to 99.
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 75.0, 99.0];
/// Change-feed lag (s); `_ts` has whole seconds.
const LAG_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0,
];

pub(crate) struct Instruments {
    http_duration: Histogram<f64>,
    db_duration: Histogram<f64>,
    db_charge: Histogram<f64>,
    operation_charge: Histogram<f64>,
    throttled: Counter<u64>,
    retries: Counter<u64>,
    combined_batch: Histogram<u64>,
    change_feed_lag: Histogram<f64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            http_duration: meter
                .f64_histogram("http.server.request.duration")
                .with_unit("s")
                .with_description("Duration of HTTP server requests.")
                .with_boundaries(HTTP_BUCKETS.to_vec())
                .build(),
            db_duration: meter
                .f64_histogram("db.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of database client operations.")
                .with_boundaries(DB_BUCKETS.to_vec())
                .build(),
            db_charge: meter
                .f64_histogram("azure.cosmosdb.client.operation.request_charge")
                .with_unit("{request_unit}")
                .with_description("Request units consumed by the operation.")
                .with_boundaries(RU_BUCKETS.to_vec())
                .build(),
            operation_charge: meter
                .f64_histogram("blog.operation.request_charge")
                .with_unit("{request_unit}")
                .with_description("Request units of one API operation or handler batch.")
                .with_boundaries(RU_BUCKETS.to_vec())
                .build(),
            throttled: meter
                .u64_counter("blog.store.throttled")
                .with_unit("{request}")
                .with_description("Requests the store answered 429, retried or not.")
                .build(),
            retries: meter
                .u64_counter("blog.store.retries")
                .with_unit("{request}")
                .with_description("Requests the Cosmos DB SDK sent again.")
                .build(),
            combined_batch: meter
                .u64_histogram("blog.combiner.batch.size")
                .with_unit("{write}")
                .with_description(
                    "Comments and likes written in one batch of the hot-post combiner.",
                )
                .with_boundaries(BATCH_BUCKETS.to_vec())
                .build(),
            change_feed_lag: meter
                .f64_histogram("blog.change_feed.lag")
                .with_unit("s")
                .with_description(
                    "From the newest document's _ts to the end of its batch's handling.",
                )
                .with_boundaries(LAG_BUCKETS.to_vec())
                .build(),
        }
    }
}

/// Runs `record` with the current dispatcher's instruments, if it has any.
fn with_instruments(record: impl FnOnce(&Instruments)) {
    if let Some(instruments) = held::<Instruments>() {
        record(&instruments);
    }
}

/// One HTTP request (an API operation, or a trigger invocation from the host).
pub(crate) struct Request<'a> {
    pub method: &'a Method,
    pub route: Option<&'a Arc<str>>,
    pub operation: Option<&'static str>,
    pub status: u16,
    pub duration: Duration,
    pub request_units: f64,
}

pub(crate) fn record_request(request: &Request<'_>) {
    with_instruments(|i| {
        let mut attributes = Vec::with_capacity(5);
        attributes.push(KeyValue::new(
            "http.request.method",
            method_name(request.method),
        ));
        attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(request.status),
        ));
        if let Some(route) = request.route {
            attributes.push(KeyValue::new("http.route", Arc::clone(route)));
        }
        if request.status >= 500 {
            attributes.push(KeyValue::new("error.type", request.status.to_string()));
        }
        if let Some(operation) = request.operation {
            attributes.push(KeyValue::new("blog.operation", operation));
        }
        i.http_duration
            .record(request.duration.as_secs_f64(), &attributes);
        if let Some(operation) = request.operation {
            record_operation_charge_with(i, operation, request.request_units);
        }
    });
}

/// A method's name, without an allocation for the methods the API serves.
fn method_name(method: &Method) -> StringValue {
    match method.as_str() {
        "GET" => "GET".into(),
        "POST" => "POST".into(),
        "PUT" => "PUT".into(),
        "DELETE" => "DELETE".into(),
        "HEAD" => "HEAD".into(),
        "OPTIONS" => "OPTIONS".into(),
        other => other.to_owned().into(),
    }
}

/// The RU of one batch of a change-feed handler run by the standalone pump.
pub(crate) fn record_operation_charge(operation: &'static str, request_units: f64) {
    with_instruments(|i| record_operation_charge_with(i, operation, request_units));
}

fn record_operation_charge_with(i: &Instruments, operation: &'static str, request_units: f64) {
    // The embedded store charges nothing: no RU, no record (an average of zeros says nothing).
    if request_units > 0.0 {
        i.operation_charge
            .record(request_units, &[KeyValue::new("blog.operation", operation)]);
    }
}

/// One call to the store (`telemetry::traced`).
pub(crate) struct StoreCall {
    pub system: &'static str,
    pub container: &'static str,
    pub operation: &'static str,
    pub duration: Duration,
    pub status: Option<u16>,
    pub failure: Option<&'static str>,
    pub exchange: Exchange,
}

pub(crate) fn record_store_call(call: &StoreCall) {
    with_instruments(|i| {
        let mut attributes = vec![
            KeyValue::new("db.collection.name", call.container),
            KeyValue::new("db.operation.name", call.operation),
        ];
        if let Some(status) = call.status {
            attributes.push(KeyValue::new("db.response.status_code", status.to_string()));
        }
        let exchange = &call.exchange;
        if exchange.request_units > 0.0 {
            i.db_charge.record(exchange.request_units, &attributes);
        }
        if exchange.throttled > 0 {
            i.throttled
                .add(u64::from(exchange.throttled), &attributes[..2]);
        } else if call.status == Some(429) {
            // A backend that reports no attempts (the embedded store) still throttled once.
            i.throttled.add(1, &attributes[..2]);
        }
        if exchange.attempts > 1 {
            i.retries
                .add(u64::from(exchange.attempts - 1), &attributes[..2]);
        }
        attributes.push(KeyValue::new("db.system.name", call.system));
        if let Some(failure) = call.failure {
            attributes.push(KeyValue::new("error.type", failure));
        }
        i.db_duration
            .record(call.duration.as_secs_f64(), &attributes);
    });
}

/// Writes (comments, likes) the hot-post combiner puts in one batch.
pub(crate) fn record_combined_batch(writes: usize) {
    with_instruments(|i| i.combined_batch.record(writes as u64, &[]));
}

/// Records, after `handler` handled `documents` from `source`, how far behind their source
/// the copies are: now minus the newest document's `_ts` (Unix seconds, as Cosmos DB and
/// the embedded change log stamp each commit). A batch without `_ts` records nothing.
pub(crate) fn record_change_feed_lag(
    source: &'static str,
    handler: &'static str,
    documents: &[Value],
) {
    let Some(lag) = change_feed_lag(documents, SystemTime::now()) else {
        return;
    };
    with_instruments(|i| {
        i.change_feed_lag.record(
            lag.as_secs_f64(),
            &[
                KeyValue::new("blog.change_feed.source", source),
                KeyValue::new("blog.operation", handler),
            ],
        );
    });
}

/// `now` minus the newest `_ts` of `documents` (zero if the clock is behind it).
fn change_feed_lag(documents: &[Value], now: SystemTime) -> Option<Duration> {
    let newest = documents
        .iter()
        .filter_map(|document| document.get("_ts").and_then(Value::as_f64))
        .fold(None, |newest: Option<f64>, ts| {
            Some(newest.map_or(ts, |n| n.max(ts)))
        })?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
    Some(Duration::from_secs_f64((now - newest).max(0.0)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lag_runs_from_the_newest_document() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let documents = [json!({"_ts": 990}), json!({"_ts": 997}), json!({"id": "x"})];
        assert_eq!(
            change_feed_lag(&documents, now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(change_feed_lag(&[json!({"id": "x"})], now), None);
        assert_eq!(
            change_feed_lag(&[json!({"_ts": 1_005})], now),
            Some(Duration::ZERO),
            "a clock behind the store's is no negative lag"
        );
    }
}
