//! Sampling: which requests become traces.

use super::*;

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
