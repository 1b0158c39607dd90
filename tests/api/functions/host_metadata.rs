//! The generated metadata (`host.json`, each `function.json`) against the committed files and
//! the router.

use super::*;

#[test]
fn committed_metadata_equals_the_generated_files() {
    // The repository keeps the default deployment's: the single-tenant layout.
    let root = manifest_dir();
    for file in metadata::repository_files(Tenancy::Single) {
        let committed = std::fs::read_to_string(root.join(&file.path)).unwrap_or_default();
        assert_eq!(
            committed,
            file.content,
            "{} is stale: run `cargo run -- functions generate`",
            file.path.display()
        );
    }
    let folders: BTreeSet<String> = std::fs::read_dir(root.join(metadata::FUNCTIONS_DIR))
        .expect("functions/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let names: BTreeSet<String> = metadata::function_names(Tenancy::Single)
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        folders, names,
        "functions/ holds folders the table does not"
    );
}

#[test]
fn host_json_forwards_http_to_the_api_paths() {
    let host: Value = serde_json::from_slice(
        &std::fs::read(manifest_dir().join("host.json")).expect("host.json"),
    )
    .expect("json");
    assert_eq!(host["version"], "2.0");
    assert_eq!(host["extensionBundle"]["version"], "[4.*, 5.0.0)");
    assert_eq!(
        host["customHandler"]["description"]["defaultExecutablePath"],
        "cosmos-blog"
    );
    assert_eq!(host["customHandler"]["enableForwardingHttpRequest"], true);
    // No host prefix: the pages are at the site's root, the API functions' routes start with
    // `api/` themselves.
    assert_eq!(host["extensions"]["http"]["routePrefix"], "");
    // The package decides the layout its routes are for.
    assert_eq!(handler_arguments(&host), ["--tenancy", "single"]);
    let multi = generated_host_json(Tenancy::Multi);
    assert_eq!(handler_arguments(&multi), ["--tenancy", "multi"]);
    let without_arguments = |mut host: Value| {
        host["customHandler"]["description"]["arguments"] = Value::Null;
        host
    };
    assert_eq!(without_arguments(multi), without_arguments(host));
}

#[test]
fn trigger_metadata_matches_the_v4_extension() {
    for (source, container) in [(Source::Users, "users"), (Source::Posts, "posts")] {
        let path = manifest_dir()
            .join("functions")
            .join(source.function_name())
            .join("function.json");
        let function: Value =
            serde_json::from_slice(&std::fs::read(path).expect("function.json")).expect("json");
        let bindings = function["bindings"].as_array().expect("bindings");
        assert_eq!(bindings.len(), 1);
        let b = &bindings[0];
        assert_eq!(b["type"], "cosmosDBTrigger");
        assert_eq!(b["direction"], "in");
        assert_eq!(b["name"], "documents");
        assert_eq!(b["connection"], "CosmosDBConnection");
        assert_eq!(b["databaseName"], "%COSMOS_DATABASE%");
        assert_eq!(b["containerName"], container);
        assert_eq!(b["leaseContainerName"], "leases");
        assert_eq!(b["createLeaseContainerIfNotExists"], true);
        assert!(b.get("collectionName").is_none());
        let retry = &function["retry"];
        assert_eq!(retry["strategy"], "exponentialBackoff");
        assert!(retry["maxRetryCount"].as_u64().is_some_and(|n| n > 0));
        assert!(retry["minimumInterval"].is_string() && retry["maximumInterval"].is_string());
    }
    // The triggers are the same in both layouts: their handlers split a batch by tenant.
    let triggers = |tenancy| -> Vec<metadata::GeneratedFile> {
        metadata::script_root_files(tenancy)
            .into_iter()
            .filter(|f| {
                Source::ALL
                    .iter()
                    .any(|s| f.path.starts_with(s.function_name()))
            })
            .collect()
    };
    assert_eq!(triggers(Tenancy::Single).len(), 2);
    assert_eq!(triggers(Tenancy::Multi), triggers(Tenancy::Single));
}

/// The paths `router` matches. axum has no public list of a router's routes, but its `Debug`
/// output names each path of the router (`paths: {RouteId(1): "/api/feed", ...}`) before
/// those of its fallback router; the probes below find which methods each one answers. If a
/// new axum prints them differently, the health probe `/api/health` goes missing and this
/// fails.
fn router_paths(router: &Router<AppState>) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    let own = debug.split("fallback_router").next().unwrap_or_default();
    let paths: BTreeSet<String> = own
        .split_once("paths: {")
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(
        paths.contains("/api/health"),
        "cannot read the routes of the router from axum's Debug output: {debug}"
    );
    paths
}

/// `(METHOD, /api/... template)` of each HTTP function of `tenancy`, as `path` gives it.
fn declared(
    tenancy: Tenancy,
    path: impl Fn(&metadata::HttpFunction) -> String,
) -> BTreeSet<(String, String)> {
    metadata::http_functions(tenancy)
        .map(|f| (f.method.to_uppercase(), path(f)))
        .collect()
}

#[tokio::test]
async fn every_route_of_the_router_is_in_the_table_and_only_they() {
    // A route added to the router without metadata would be unreachable under the host; a
    // function without a route would answer 404.
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let routes = api::routes_for(tenancy);
        let paths = router_paths(&routes);
        // The plain routes alone, with fallbacks that mark their answers, so that a
        // handler's own 404 (unknown user) is told apart from "no such route".
        let router = routes
            .fallback(|| async { (StatusCode::NOT_FOUND, [("x-probe", "fallback")]) })
            .method_not_allowed_fallback(|| async {
                (StatusCode::METHOD_NOT_ALLOWED, [("x-probe", "fallback")])
            })
            .with_state(AppState::new(
                h.dyn_store(),
                Caches::none(),
                ServerKey::drawn(),
                Authenticator::EasyAuthDisabled,
            ));
        let mut served = BTreeSet::new();
        for path in &paths {
            for method in PROBE_METHODS {
                let response = router
                    .clone()
                    .oneshot(probe(&method, &fill(path)))
                    .await
                    .expect("infallible");
                if !response.headers().contains_key("x-probe") {
                    served.insert((method.to_string(), path.clone()));
                }
            }
        }
        assert_eq!(
            served,
            declared(tenancy, |f| f.path_in(tenancy)),
            "{tenancy}: the router's routes and the function table differ"
        );
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Routing {
    /// A handler answered (whatever it said).
    Handled,
    NoSuchRoute,
    MethodNotAllowed,
}

async fn routing_of(app: &Router, method: &Method, path: &str) -> Routing {
    let (status, problem) = send(app.clone(), probe(method, path)).await;
    match (status, problem["code"].as_str()) {
        (StatusCode::NOT_FOUND, Some("route-not-found")) => Routing::NoSuchRoute,
        (StatusCode::METHOD_NOT_ALLOWED, Some("method-not-allowed")) => Routing::MethodNotAllowed,
        _ => Routing::Handled,
    }
}

#[tokio::test]
async fn the_app_serves_each_layouts_functions_at_their_host_routes_and_nothing_else() {
    // Every route of either layout, probed on the application of each: the host forwards a
    // function's route unchanged, so the application must serve exactly its layout's.
    let templates: BTreeSet<String> = metadata::HTTP_FUNCTIONS
        .iter()
        .flat_map(|f| LAYOUTS.map(|layout| f.path_in(layout)))
        .collect();
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let app = h.app();
        let declared = declared(tenancy, |f| f.path_in(tenancy));
        for template in &templates {
            let path = fill(template);
            for method in PROBE_METHODS {
                let key = (method.to_string(), template.clone());
                let expected = if declared.contains(&key) {
                    Routing::Handled
                } else if declared.iter().any(|(_, t)| t == template) {
                    Routing::MethodNotAllowed
                } else {
                    Routing::NoSuchRoute
                };
                assert_eq!(
                    routing_of(&app, &method, &path).await,
                    expected,
                    "{tenancy}: {method} {path}"
                );
            }
        }
    }
}

#[test]
fn http_functions_bind_exactly_one_trigger_and_one_output() {
    for tenancy in LAYOUTS {
        let files = metadata::script_root_files(tenancy);
        for function in metadata::http_functions(tenancy) {
            let json = function_json(&files, function.name);
            let bindings = json["bindings"].as_array().expect("bindings");
            assert_eq!(bindings.len(), 2, "{}", function.name);
            let trigger = &bindings[0];
            assert_eq!(trigger["type"], "httpTrigger");
            assert_eq!(trigger["direction"], "in");
            assert!(trigger["authLevel"].is_string());
            assert_eq!(trigger["methods"], json!([function.method]));
            let route = trigger["route"].as_str().expect("route");
            match tenancy {
                _ if function.site_wide => assert_eq!(route, format!("api/{}", function.route)),
                Tenancy::Single => assert_eq!(route, format!("api/{}", function.route)),
                Tenancy::Multi => {
                    assert_eq!(
                        route,
                        format!("api/tenants/{{tenantId}}/{}", function.route)
                    )
                }
            }
            assert_eq!(
                bindings[1],
                json!({"type": "http", "direction": "out", "name": "res"})
            );
        }
    }
    // Q7 is a function of the multi layout only.
    let names = |tenancy| metadata::function_names(tenancy);
    assert!(!names(Tenancy::Single).contains(&"ListUsers"));
    assert!(names(Tenancy::Multi).contains(&"ListUsers"));
}

#[test]
fn functions_generate_writes_the_multi_layout_only_where_it_is_told() {
    let work = tempfile::tempdir().expect("tempdir");
    // Without --root it would replace the repository's single-tenant files: refused.
    let refused = binary!()
        .current_dir(work.path())
        .args(["functions", "generate", "--tenancy", "multi"])
        .status();
    assert!(!refused.success());
    assert_eq!(std::fs::read_dir(work.path()).expect("dir").count(), 0);

    let root = work.path().join("multi");
    let root_arg = root.to_str().expect("utf-8 path");
    let written = binary!()
        .current_dir(work.path())
        .args([
            "functions",
            "generate",
            "--tenancy",
            "multi",
            "--root",
            root_arg,
        ])
        .status();
    assert!(written.success());
    let files = metadata::repository_files(Tenancy::Multi);
    for file in &files {
        assert_eq!(
            std::fs::read_to_string(root.join(&file.path)).expect("written"),
            file.content
        );
    }
    assert_eq!(stage::files_under(&root).expect("list").len(), files.len());
}
