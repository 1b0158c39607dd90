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
        self.bodies("/v1/traces")
            .iter()
            .flat_map(|body| {
                ExportTraceServiceRequest::decode(body.as_ref())
                    .expect("OTLP traces")
                    .resource_spans
            })
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
        let metrics = bodies
            .iter()
            .flat_map(|body| {
                ExportMetricsServiceRequest::decode(body.as_ref())
                    .expect("OTLP metrics")
                    .resource_metrics
            })
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

// ---- sampling: which requests become traces -------------------------------------------------

/// A budget of one new trace (a rate of zero keeps the first and no more): the first request
/// is traced; later ones of their own are not, nor are their store calls, though every one is
/// measured; a caller's sampled `traceparent` is traced with its store calls, an unsampled one
/// is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_beyond_the_budget_make_no_spans_and_a_callers_decision_stands() {
    let receiver = Receiver::start().await;
    let hour = Some(Duration::from_secs(3600));
    let mut config = Config::exporting(
        Export::Otlp {
            endpoint: Some(receiver.address.clone()),
        },
        Schedule {
            span_batch_delay: hour,
            metric_interval: hour,
        },
    );
    config.sampling = Sampling::PerSecond(0.0);
    let telemetry = Telemetry::new(config).expect("telemetry");
    let app = TestApp::spawn(Backend::Embedded)
        .telemetry(telemetry.clone())
        .settings(|s| s.change_feed = ChangeFeedMode::Off)
        .start()
        .await;
    app.register("ada", "Ada").await;
    for _ in 0..5 {
        assert_eq!(app.get("/api/users/ada").await.status(), StatusCode::OK);
    }
    let with_parent = |flags: &'static str| {
        app.client
            .get(app.url("/api/users/ada/posts"))
            .header(
                "traceparent",
                format!("00-{TRACE_ID}-{CALLER_SPAN_ID}-{flags}"),
            )
            .send()
    };
    assert_eq!(
        with_parent("01").await.expect("sent").status(),
        StatusCode::OK
    );
    assert_eq!(
        with_parent("00").await.expect("sent").status(),
        StatusCode::OK
    );

    let routes = ["/api/users/{userId}", "/api/users/{userId}/posts"];
    let requests_measured = || {
        receiver
            .latest_points("http.server.request.duration")
            .iter()
            .filter(|point| routes.iter().any(|route| point.has("http.route", route)))
            .map(|point| point.count)
            .sum::<u64>()
    };
    eventually(Duration::from_secs(60), || async {
        telemetry.flush().await;
        (requests_measured() == 8).then_some(())
    })
    .await;
    let spans = receiver.spans();
    let servers: Vec<&Span> = spans
        .iter()
        .filter(|span| span.kind == SpanKind::Server as i32)
        .collect();
    let names: Vec<&str> = servers.iter().map(|span| span.name.as_str()).collect();
    assert_eq!(
        names,
        ["PUT /api/users/{userId}", "GET /api/users/{userId}/posts"],
        "the first request and the caller's sampled one"
    );
    assert_eq!(hex(&servers[1].trace_id), TRACE_ID);
    for span in spans
        .iter()
        .filter(|span| span.kind != SpanKind::Server as i32)
    {
        assert!(
            servers
                .iter()
                .any(|server| server.span_id == span.parent_span_id),
            "a store call outside the traced requests: {span:#?}"
        );
    }
    assert!(
        spans
            .iter()
            .any(|span| span.parent_span_id == servers[1].span_id),
        "the sampled request's store call"
    );
}

// ---- in process: a C3 on every backend and layout ---------------------------------------------

async fn a_comment_is_traced_under_the_callers_trace_and_measured(
    backend: Backend,
    tenancy: Tenancy,
) {
    let receiver = Receiver::start().await;
    let telemetry = exporting_to(&receiver);
    let app = TestApp::spawn(backend)
        .layout(tenancy)
        .telemetry(telemetry.clone())
        .settings(|s| {
            s.change_feed = ChangeFeedMode::Off;
        })
        .start()
        .await;
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "Hello", "world").await;
    let post_id = post["id"].as_str().expect("post id");

    let response = app
        .client
        .post(app.url(&format!("/api/posts/{post_id}/comments")))
        .header("x-ms-client-principal-id", "ada")
        .header("traceparent", traceparent())
        .header(INVOCATION_ID_HEADER, INVOCATION_ID)
        .json(&json!({"content": "nice"}))
        .send()
        .await
        .expect("C3 sent");
    assert_eq!(response.status(), StatusCode::CREATED);
    let charged: Option<f64> = response
        .headers()
        .get("x-ms-request-charge")
        .map(|v| v.to_str().unwrap().parse().unwrap());
    // The request: a server span, child of the caller's, named by its route template. It
    // ends once the combiner's worker, which runs in it, is done: soon after the answer.
    let route = match tenancy {
        Tenancy::Single => "/api/posts/{postId}/comments",
        Tenancy::Multi => "/api/tenants/{tenantId}/posts/{postId}/comments",
    };
    // A failure lists what did arrive.
    let (spans, request) = eventually_ok(Duration::from_secs(60), || async {
        telemetry.flush().await;
        let spans = receiver.spans();
        let request = spans.iter().find(|s| {
            s.kind == SpanKind::Server as i32
                && attr(s, "blog.operation").as_deref() == Some("AddComment")
        });
        if let Some(request) = request.cloned() {
            return Ok((spans, request));
        }
        let seen: Vec<String> = spans
            .iter()
            .map(|s| format!("{} kind={} {:?}", s.name, s.kind, attributes(&s.attributes)))
            .collect();
        Err(format!(
            "no AddComment request span; the spans exported: {seen:#?}"
        ))
    })
    .await;
    let request = &request;
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(hex(&request.parent_span_id), CALLER_SPAN_ID);
    assert_eq!(request.name, format!("POST {route}"));
    assert_eq!(attr(request, "http.route").as_deref(), Some(route));
    assert_eq!(
        attr(request, "http.response.status_code").as_deref(),
        Some("201")
    );
    assert_eq!(
        attr(request, "faas.invocation_id").as_deref(),
        Some(INVOCATION_ID)
    );
    let tenant = (tenancy == Tenancy::Multi).then_some(OPERATION_TENANT.to_owned());
    assert_eq!(attr(request, "blog.tenant"), tenant);

    // The store calls under it: the caller's user read, and the combiner's batch (run by its
    // worker task on the request's behalf).
    let under_request: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == request.span_id)
        .collect();
    let call = |operation: &str, container: &str| {
        under_request
            .iter()
            .find(|s| {
                attr(s, "db.operation.name").as_deref() == Some(operation)
                    && attr(s, "db.collection.name").as_deref() == Some(container)
            })
            .copied()
            .unwrap_or_else(|| {
                panic!("no {operation} on {container} under the request: {under_request:#?}")
            })
    };
    let user_read = call("read_item", "users");
    let batch = call("execute_batch", "posts");
    for span in [user_read, batch] {
        assert_eq!(span.kind, SpanKind::Client as i32);
        assert_eq!(hex(&span.trace_id), TRACE_ID);
        assert_eq!(
            attr(span, "blog.store.logical_partitions").as_deref(),
            Some("1")
        );
    }
    assert_eq!(
        attr(batch, "db.operation.batch.size").as_deref(),
        Some("2"),
        "post + comment"
    );
    let system = match backend {
        Backend::Embedded => "sqlite",
        Backend::Cosmos => "azure.cosmosdb",
    };
    assert_eq!(attr(batch, "db.system.name").as_deref(), Some(system));
    let ru = |span: &Span| {
        attr(span, "azure.cosmosdb.operation.request_charge").map(|v| v.parse::<f64>().unwrap())
    };
    let store_ru: f64 = under_request.iter().filter_map(|s| ru(s)).sum();
    match backend {
        Backend::Cosmos => {
            assert!(ru(user_read).unwrap() > 0.0 && ru(batch).unwrap() > 0.0);
            assert_eq!(
                attr(batch, "db.response.status_code").as_deref(),
                Some("200")
            );
            assert_eq!(attr(batch, "blog.store.attempts").as_deref(), Some("1"));
            // The request's total (its header) is what its store calls cost, the batch too.
            let charged = charged.expect("x-ms-request-charge");
            assert!((charged - store_ru).abs() < 0.01, "{charged} vs {store_ru}");
            let recorded: f64 = attr(request, "blog.request_charge")
                .unwrap()
                .parse()
                .unwrap();
            assert!((recorded - charged).abs() < 0.01);
        }
        Backend::Embedded => {
            assert_eq!(store_ru, 0.0, "the embedded store charges no RU");
            assert_eq!(charged, None);
        }
    }

    // The metrics: request duration by route and status, store call durations, RU per
    // operation and per store call, the combiner's batch size.
    let requests = receiver.points("http.server.request.duration");
    assert!(
        requests.iter().any(|p| p.has("http.route", route)
            && p.has("http.response.status_code", "201")
            && p.has("blog.operation", "AddComment")
            && p.count == 1),
        "{requests:#?}"
    );
    let calls = receiver.points("db.client.operation.duration");
    assert!(
        calls
            .iter()
            .any(|p| p.has("db.operation.name", "execute_batch")
                && p.has("db.collection.name", "posts")
                && p.has("db.system.name", system)),
        "{calls:#?}"
    );
    let per_operation = receiver.points("blog.operation.request_charge");
    let comment_ru = per_operation
        .iter()
        .find(|p| p.has("blog.operation", "AddComment"));
    let per_call = receiver.points("azure.cosmosdb.client.operation.request_charge");
    match backend {
        Backend::Cosmos => {
            let comment_ru = comment_ru.unwrap_or_else(|| panic!("{per_operation:#?}"));
            assert!((comment_ru.value - store_ru).abs() < 0.01, "{comment_ru:?}");
            assert!(
                per_call
                    .iter()
                    .any(|p| p.has("db.operation.name", "execute_batch") && p.value > 0.0)
            );
        }
        Backend::Embedded => {
            assert!(
                comment_ru.is_none() && per_call.is_empty(),
                "no RU on the embedded store"
            );
        }
    }
    let batches = receiver.points("blog.combiner.batch.size");
    assert!(
        batches.iter().any(|p| p.count >= 1 && p.value >= 1.0),
        "{batches:#?}"
    );
}

macro_rules! on_every_backend_and_layout {
    ($($name:ident: $backend:ident, $tenancy:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            a_comment_is_traced_under_the_callers_trace_and_measured(
                Backend::$backend,
                Tenancy::$tenancy,
            )
            .await;
        }
    )*};
}

on_every_backend_and_layout! {
    a_comment_is_traced_and_measured_on_the_embedded_store: Embedded, Single;
    a_comment_is_traced_and_measured_on_cosmos_db: Cosmos, Single;
    a_tenants_comment_is_traced_and_measured_on_the_embedded_store: Embedded, Multi;
    a_tenants_comment_is_traced_and_measured_on_cosmos_db: Cosmos, Multi;
}

// ---- in process: throttling -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_calls_are_counted_and_their_spans_say_429() {
    let receiver = Receiver::start().await;
    let telemetry = exporting_to(&receiver);
    // 400 RU/s enforced, and no SDK retries: the 429 reaches the app.
    let app = TestApp::spawn_on(throttled_emulator_store(400).await)
        .telemetry(telemetry.clone())
        .without_pump()
        .start()
        .await;
    app.register("ada", "Ada").await;
    let content = "x".repeat(90_000);
    let responses =
        futures::future::join_all((0..60).map(|_| app.create_post("ada", "big", &content))).await;
    let answered_429 = responses
        .iter()
        .filter(|r| r.status() == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(answered_429 > 0, "nothing was throttled");
    telemetry.flush().await;

    let throttled: f64 = receiver
        .points("blog.store.throttled")
        .iter()
        .filter(|p| p.has("db.collection.name", "posts"))
        .map(|p| p.value)
        .sum();
    assert!(
        throttled >= answered_429 as f64,
        "{throttled} < {answered_429}"
    );
    let refused = receiver.points("http.server.request.duration");
    assert!(
        refused
            .iter()
            .any(|p| p.has("http.response.status_code", "429")
                && p.has("blog.operation", "CreatePost")
                && p.count >= 1),
        "{refused:#?}"
    );
    let spans = eventually(Duration::from_secs(60), || async {
        telemetry.flush().await;
        let spans = receiver.spans();
        spans
            .iter()
            .any(|s| attr(s, "blog.problem.code").as_deref() == Some("throttled"))
            .then_some(spans)
    })
    .await;
    let call = spans
        .iter()
        .find(|s| attr(s, "db.response.status_code").as_deref() == Some("429"))
        .unwrap_or_else(|| panic!("no throttled store span in {spans:#?}"));
    assert_eq!(attr(call, "error.type").as_deref(), Some("throttled"));
    assert_eq!(attr(call, "blog.store.throttled").as_deref(), Some("1"));
}

// ---- in process: the change-feed pump ------------------------------------------------------------

async fn a_change_feed_batch_records_its_lag_and_cost(backend: Backend) {
    let receiver = Receiver::start().await;
    let telemetry = exporting_to(&receiver);
    let app: TestApp = TestApp::spawn(backend)
        .telemetry(telemetry.clone())
        .start()
        .await;
    app.register("ada", "Ada").await;
    app.new_post("ada", "Hello", "world").await;

    // The batch's span ends after its checkpoint is saved, just after the lag is recorded.
    let (lag, spans, batch) = eventually(Duration::from_secs(60), || async {
        telemetry.flush().await;
        let lag = receiver
            .points("blog.change_feed.lag")
            .into_iter()
            .find(|p| {
                p.has("blog.change_feed.source", "posts")
                    && p.has("blog.operation", "OnPostChanged")
            })?;
        let spans = receiver.spans();
        let batch = spans
            .iter()
            .find(|s| s.name == "OnPostChanged" && s.kind == SpanKind::Consumer as i32)?
            .clone();
        Some((lag, spans, batch))
    })
    .await;
    assert!(lag.count >= 1 && lag.value >= 0.0, "{lag:?}");

    // Each batch is a trace of its own, with the handler's store calls under it.
    assert!(
        spans.iter().any(|s| s.parent_span_id == batch.span_id
            && attr(s, "db.collection.name").as_deref() == Some("feed")),
        "the feed copy is written under the batch"
    );
    let handler_ru = receiver
        .points("blog.operation.request_charge")
        .into_iter()
        .find(|p| p.has("blog.operation", "OnPostChanged"));
    assert_eq!(
        handler_ru.is_some(),
        backend == Backend::Cosmos,
        "{handler_ru:?}"
    );
    app.assert_verifies().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pumped_batch_records_its_lag_on_the_embedded_store() {
    a_change_feed_batch_records_its_lag_and_cost(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pumped_batch_records_its_lag_and_ru_on_cosmos_db() {
    a_change_feed_batch_records_its_lag_and_cost(Backend::Cosmos).await;
}

// ---- the real binary, configured by the standard variables -------------------------------------

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/functions")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Exports nothing on a schedule in these tests: what arrives, arrives by the shutdown flush.
const NEVER: &str = "3600000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exports_a_trigger_invocation_over_otlp_and_its_logs_carry_the_trace() {
    let receiver = Receiver::start().await;
    let mut binary = binary_with_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.address.as_str()),
        ("OTEL_SERVICE_NAME", "blog-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", NEVER),
        ("OTEL_METRIC_EXPORT_INTERVAL", NEVER),
        ("FUNCTIONS_WORKER_RUNTIME", "custom"),
    ])
    .ready()
    .await;
    let response = reqwest::Client::new()
        .post(binary.url("/OnPostChanged"))
        .header("content-type", "application/json; charset=utf-8")
        .header("traceparent", traceparent())
        .header(INVOCATION_ID_HEADER, INVOCATION_ID)
        .body(fixture("on_post_changed.json"))
        .send()
        .await
        .expect("invoke");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(binary.terminate().await.success(), "a clean shutdown");

    // The shutdown flushed the spans and metrics the schedule had not sent.
    let spans = receiver.spans();
    let invocation = spans
        .iter()
        .find(|s| attr(s, "blog.operation").as_deref() == Some("OnPostChanged"))
        .unwrap_or_else(|| panic!("no invocation span in {spans:#?}"));
    assert_eq!(hex(&invocation.trace_id), TRACE_ID);
    assert_eq!(hex(&invocation.parent_span_id), CALLER_SPAN_ID);
    assert_eq!(
        attr(invocation, "http.route").as_deref(),
        Some("/OnPostChanged")
    );
    assert!(
        spans.iter().any(|s| s.parent_span_id == invocation.span_id),
        "store calls under it"
    );
    let resource = ExportTraceServiceRequest::decode(receiver.bodies("/v1/traces")[0].as_ref())
        .unwrap()
        .resource_spans[0]
        .resource
        .clone()
        .unwrap();
    assert_eq!(
        attributes(&resource.attributes)
            .get("service.name")
            .map(String::as_str),
        Some("blog-under-test")
    );
    let lag = receiver.points("blog.change_feed.lag");
    assert!(
        lag.iter()
            .any(|p| p.has("blog.change_feed.source", "posts")),
        "{lag:#?}"
    );

    // The handler's log line, inside the invocation's span, carries the trace and span ids.
    let log = binary.log();
    let report = log
        .lines()
        .find(|l| l.contains("OnPostChanged: ") && l.contains("processed"))
        .unwrap_or_else(|| panic!("no report line in:\n{log}"));
    assert!(report.contains(&format!("trace_id={TRACE_ID}")), "{report}");
    assert!(
        report.contains(&format!("span_id={}", hex(&invocation.span_id))),
        "{report}"
    );
    assert!(
        report.contains(&format!("invocation_id={INVOCATION_ID}")),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_sends_requests_and_dependencies_to_application_insights() {
    let receiver = Receiver::start().await;
    let connection = format!(
        "InstrumentationKey=00000000-0000-0000-0000-00000000b10c;IngestionEndpoint={}/",
        receiver.address
    );
    let mut binary = binary_with_env(&[
        ("APPLICATIONINSIGHTS_CONNECTION_STRING", connection.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", NEVER),
        ("OTEL_METRIC_EXPORT_INTERVAL", NEVER),
    ])
    .ready()
    .await;
    let client = reqwest::Client::new();
    let created = client
        .put(binary.url("/api/users/ada"))
        .header("x-ms-client-principal-id", "ada")
        .header("traceparent", traceparent())
        .json(&json!({"username": "Ada"}))
        .send()
        .await
        .expect("C1");
    assert_eq!(created.status(), StatusCode::CREATED);
    assert!(binary.terminate().await.success(), "a clean shutdown");

    let envelopes = receiver.envelopes();
    let of_type = |base_type: &str| -> Vec<&Value> {
        envelopes
            .iter()
            .filter(|e| e["data"]["baseType"] == base_type)
            .collect()
    };
    let request = of_type("RequestData")
        .into_iter()
        .find(|e| e["data"]["baseData"]["name"] == "PUT /api/users/{userId}")
        .unwrap_or_else(|| panic!("no request in {envelopes:#?}"));
    assert_eq!(request["iKey"], "00000000-0000-0000-0000-00000000b10c");
    assert_eq!(request["data"]["baseData"]["responseCode"], "201");
    assert_eq!(request["tags"]["ai.operation.id"], TRACE_ID);
    assert_eq!(request["tags"]["ai.cloud.role"], "cosmos-blog");
    let dependencies = of_type("RemoteDependencyData");
    assert!(
        dependencies
            .iter()
            .any(|d| d["data"]["baseData"]["type"] == "sqlite"
                && d["tags"]["ai.operation.id"] == TRACE_ID),
        "{dependencies:#?}"
    );
    assert!(
        of_type("MetricData").iter().any(|m| {
            m["data"]["baseData"]["metrics"][0]["name"] == "http.server.request.duration"
        }),
        "{envelopes:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_answer_while_the_collector_never_does() {
    // A collector that takes connections and never answers: every export waits for its
    // timeout. (It is bound for the whole test, so nobody else can take its port.)
    let black_hole = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", black_hole.local_addr().unwrap());
    let mut binary = binary_with_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
    ])
    .ready()
    .await;
    let client = reqwest::Client::new();
    let base = binary.url("");
    let requests = async {
        for round in 0..20 {
            let writes = (0..10).map(|n| {
                let user = format!("u{round}-{n}");
                client
                    .put(format!("{base}/api/users/{user}"))
                    .header("x-ms-client-principal-id", &user)
                    .json(&json!({"username": user}))
                    .send()
            });
            for response in futures::future::join_all(writes).await {
                assert_eq!(response.expect("answered").status(), StatusCode::CREATED);
            }
            let feed = client.get(format!("{base}/api/feed")).send().await;
            assert_eq!(feed.expect("answered").status(), StatusCode::OK);
        }
    };
    // A bound for a failing test on a loaded machine, not a speed target (that is the
    // harness's): 220 requests.
    tokio::time::timeout(Duration::from_secs(120), requests)
        .await
        .expect("every request answered");
    assert!(
        binary.terminate().await.success(),
        "shutdown gives up on the collector"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_costs_one_warning() {
    // Nothing listens on port 1 of loopback: every export is refused at once.
    let mut binary = binary_with_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
        ("OTEL_BSP_SCHEDULE_DELAY", "20"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "50"),
    ])
    .ready()
    .await;
    let client = reqwest::Client::new();
    for n in 0..20 {
        let user = format!("u{n}");
        let response = client
            .put(binary.url(&format!("/api/users/{user}")))
            .header("x-ms-client-principal-id", &user)
            .json(&json!({"username": user}))
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    assert!(binary.terminate().await.success());
    let log = binary.log();
    let warnings = log
        .lines()
        .filter(|l| l.contains("telemetry export failing"))
        .count();
    assert_eq!(warnings, 1, "one warning, not one per export:\n{log}");
}
