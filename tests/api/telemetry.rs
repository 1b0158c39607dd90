//! OpenTelemetry: what an operator sees. An in-test receiver on loopback stands for the OTLP
//! collector and for Application Insights' ingestion endpoint; the application exports to it,
//! in process (its own telemetry, `Application::with_telemetry`) or as the real binary
//! configured by the standard variables.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode as AxumStatus, Uri};
use cosmos_blog::settings::ChangeFeedMode;
use cosmos_blog::store::Tenancy;
use cosmos_blog::telemetry::export::{Export, Schedule};
use cosmos_blog::telemetry::sampling::Sampling;
use cosmos_blog::telemetry::{Config, INVOCATION_ID_HEADER, Telemetry};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::auth::binary_with_env;
use testkit::emulator::throttled_emulator_store;
use testkit::{Backend, OPERATION_TENANT, TestApp, eventually, eventually_ok};

/// The caller's W3C trace context: the Functions host's invocation, as it forwards it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";
const INVOCATION_ID: &str = "83a33220-a921-460a-bec0-b3f043dcf1ff";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-01")
}

// ---- the receiver ---------------------------------------------------------------------------

/// Keeps every body POSTed to it, by path: `/v1/traces` and `/v1/metrics` (OTLP/HTTP,
/// protobuf) and `/v2/track` (Application Insights, gzip-compressed JSON).
struct Receiver {
    address: String,
    bodies: Arc<Mutex<Vec<(String, Bytes)>>>,
    _stop: oneshot::Sender<()>,
}

/// The export requests in `bodies`, each decoded as the OTLP message `M` the exporter sends;
/// a body that is not one fails the test, since the exporter must speak OTLP.
fn decoded<M: Message + Default>(bodies: &[Bytes]) -> impl Iterator<Item = M> + '_ {
    bodies.iter().map(|body| {
        M::decode(body.as_ref())
            .unwrap_or_else(|error| panic!("an OTLP {}: {error}", std::any::type_name::<M>()))
    })
}

impl Receiver {
    async fn start() -> Self {
        let bodies: Arc<Mutex<Vec<(String, Bytes)>>> = Arc::default();
        let kept = Arc::clone(&bodies);
        let app = Router::new().fallback(move |uri: Uri, body: Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                let path = uri.path().to_owned();
                let answer = if path.ends_with("/track") {
                    json!({"itemsReceived": 0, "itemsAccepted": 0, "errors": []}).to_string()
                } else {
                    String::new()
                };
                kept.lock().unwrap().push((path, body));
                (AxumStatus::OK, answer)
            }
        });
        // Its own thread and runtime: a busy test runtime must not make exports time out.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("receiver binds");
        listener.set_nonblocking(true).expect("non-blocking");
        let address = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("receiver runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Self {
            address,
            bodies,
            _stop: stop,
        }
    }

    fn bodies(&self, path: &str) -> Vec<Bytes> {
        let bodies = self.bodies.lock().unwrap();
        bodies
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, body)| body.clone())
            .collect()
    }

    fn spans(&self) -> Vec<Span> {
        decoded::<ExportTraceServiceRequest>(&self.bodies("/v1/traces"))
            .flat_map(|request| request.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    /// Every data point of the metric `name`: its attributes, and its sum (histograms) or
    /// value (counters).
    fn points(&self, name: &str) -> Vec<Point> {
        self.points_in(name, &self.bodies("/v1/metrics"))
    }

    /// [`Receiver::points`] of the last export alone: with cumulative temporality, the
    /// totals so far.
    fn latest_points(&self, name: &str) -> Vec<Point> {
        let bodies = self.bodies("/v1/metrics");
        self.points_in(name, &bodies[bodies.len().saturating_sub(1)..])
    }

    fn points_in(&self, name: &str, bodies: &[Bytes]) -> Vec<Point> {
        let metrics = decoded::<ExportMetricsServiceRequest>(bodies)
            .flat_map(|request| request.resource_metrics)
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .filter(|m| m.name == name)
            .collect::<Vec<_>>();
        metrics
            .into_iter()
            .flat_map(|metric| match metric.data {
                Some(Data::Histogram(h)) => h
                    .data_points
                    .into_iter()
                    .map(|p| Point {
                        attributes: attributes(&p.attributes),
                        value: p.sum.unwrap_or(0.0),
                        count: p.count,
                    })
                    .collect::<Vec<_>>(),
                Some(Data::Sum(s)) => s
                    .data_points
                    .into_iter()
                    .map(|p| Point {
                        attributes: attributes(&p.attributes),
                        value: match p.value {
                            Some(number_data_point::Value::AsInt(v)) => v as f64,
                            Some(number_data_point::Value::AsDouble(v)) => v,
                            None => 0.0,
                        },
                        count: 1,
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// The Application Insights envelopes received.
    fn envelopes(&self) -> Vec<Value> {
        self.bodies("/v2/track")
            .iter()
            .flat_map(|body| {
                let mut json = String::new();
                flate2::read::GzDecoder::new(body.as_ref())
                    .read_to_string(&mut json)
                    .expect("gzip");
                match serde_json::from_str::<Value>(&json).expect("JSON") {
                    Value::Array(items) => items,
                    one => vec![one],
                }
            })
            .collect()
    }
}

#[derive(Debug)]
struct Point {
    attributes: HashMap<String, String>,
    value: f64,
    count: u64,
}

impl Point {
    fn has(&self, key: &str, value: &str) -> bool {
        self.attributes.get(key).map(String::as_str) == Some(value)
    }
}

fn text(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

fn attr(span: &Span, key: &str) -> Option<String> {
    attributes(&span.attributes).remove(key)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Telemetry of the application under test, exporting OTLP to `receiver` only when flushed
/// (the test calls [`Telemetry::flush`]): nothing in the tests waits on a schedule.
fn exporting_to(receiver: &Receiver) -> Telemetry {
    let hour = Some(Duration::from_secs(3600));
    Telemetry::new(Config::exporting(
        Export::Otlp {
            endpoint: Some(receiver.address.clone()),
        },
        Schedule {
            span_batch_delay: hour,
            metric_interval: hour,
        },
    ))
    .expect("telemetry")
}

mod binary;
mod in_process;
mod sampling;
