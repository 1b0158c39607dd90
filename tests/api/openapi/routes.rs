//! Each document describes every route and method of its layout's application, and nothing else.

use super::*;

/// Methods probed on every documented path. HEAD is left out: axum answers it for every GET,
/// as HTTP requires, and OpenAPI does not list it separately.
const PROBED_METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

#[derive(Debug, PartialEq, Eq)]
enum Routing {
    /// A handler answered (whatever it said).
    Handled,
    NoSuchRoute,
    MethodNotAllowed,
}

async fn routing_of(response: reqwest::Response) -> Routing {
    let status = response.status();
    if status != StatusCode::NOT_FOUND && status != StatusCode::METHOD_NOT_ALLOWED {
        return Routing::Handled;
    }
    let problem: Value = response.json().await.unwrap_or_default();
    match problem["code"].as_str() {
        Some("route-not-found") => Routing::NoSuchRoute,
        Some("method-not-allowed") => Routing::MethodNotAllowed,
        _ => Routing::Handled,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_document_describes_every_route_and_method_of_its_layout_and_nothing_else() {
    // Every path of either document is probed on the application of each layout.
    let all_templates: BTreeSet<String> = LAYOUTS
        .iter()
        .flat_map(|tenancy| {
            let doc = document(*tenancy);
            operations(&doc)
                .into_keys()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
        })
        .collect();
    for tenancy in LAYOUTS {
        let app = TestApp::spawn(Backend::Embedded)
            .layout(tenancy)
            .without_pump()
            .unaddressed()
            .start()
            .await;
        let served = app.get(&in_layout(tenancy, "/api/openapi.json")).await;
        assert_eq!(served.status(), StatusCode::OK);
        assert_eq!(served.headers()[CONTENT_TYPE], "application/json");
        let served = served.text().await.expect("body");
        assert!(
            served == openapi::json_for(tenancy),
            "{tenancy}: the served document is not the generated one"
        );
        let doc: Value = serde_json::from_str(&served).expect("JSON");
        let documented = operations(&doc);

        // The operations are the layout's HTTP functions (operationId = function name), which
        // tests/api/functions/ shows are exactly the router's routes, the health probe among
        // them (at `/api/health` in every layout).
        let operation_ids: BTreeMap<(String, String), String> = documented
            .iter()
            .map(|(key, op)| {
                (
                    key.clone(),
                    op["operationId"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let functions: BTreeMap<(String, String), String> = metadata::http_functions(tenancy)
            .map(|f| {
                (
                    (f.method.to_uppercase(), f.path_in(tenancy)),
                    f.name.to_owned(),
                )
            })
            .collect();
        assert_eq!(
            operation_ids, functions,
            "{tenancy}: the document's operations and the HTTP functions differ"
        );
        assert!(documented.contains_key(&("GET".to_owned(), "/api/health".to_owned())));
        assert!(
            !documented.contains_key(&("GET".to_owned(), "/".to_owned())),
            "the site's root is the front page, not an operation"
        );

        // The application handles exactly the documented methods on every documented path
        // (with `{tenantId}` filled like every other parameter), and no path of the other
        // layout: in multi, the plain `/api/...` routes are not found.
        for template in &all_templates {
            let path: String = template
                .split('/')
                .map(|s| if s.starts_with('{') { "probe" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let documented_here = documented.keys().any(|(_, t)| t == template);
            for method in PROBED_METHODS {
                let response = app
                    .client
                    .request(
                        Method::from_bytes(method.as_bytes()).expect("method"),
                        app.url(&path),
                    )
                    .header(CONTENT_TYPE, "application/json")
                    .body("{}")
                    .send()
                    .await
                    .expect("request sent");
                let routing = routing_of(response).await;
                let key = (method.to_owned(), template.clone());
                let expected = if documented.contains_key(&key) {
                    Routing::Handled
                } else if documented_here {
                    Routing::MethodNotAllowed
                } else {
                    Routing::NoSuchRoute
                };
                assert_eq!(
                    routing, expected,
                    "{tenancy}: {method} {path} (template {template})"
                );
            }
        }
    }
}
