//! The real binary, configured by the standard variables: OTLP, Application Insights, and
//! collectors that never answer or are down.

use super::*;

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
