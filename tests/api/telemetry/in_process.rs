//! In process: a C3 traced and measured on every backend and layout, throttled calls, and the
//! change-feed pump's lag and cost.

use super::*;

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

testkit::backend_pair!(a_change_feed_batch_records_its_lag_and_cost => a_pumped_batch_records_its_lag_on_the_embedded_store, a_pumped_batch_records_its_lag_and_ru_on_cosmos_db);
