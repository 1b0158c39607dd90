//! The page functions: bound at the site's routes, reaching the app's pages, signing in through
//! Easy Auth.

use super::*;

#[test]
fn page_functions_bind_one_trigger_at_the_site_root_routes() {
    for tenancy in LAYOUTS {
        let files = metadata::script_root_files(tenancy);
        for function in metadata::page_functions(tenancy) {
            let json = function_json(&files, function.name);
            let trigger = &json["bindings"][0];
            assert_eq!(trigger["type"], "httpTrigger");
            assert_eq!(trigger["authLevel"], "anonymous");
            assert_eq!(trigger["methods"], json!([function.method]));
            let route = trigger["route"].as_str().expect("route");
            assert!(!route.starts_with("api/"), "{route}");
            assert_eq!(route, function.host_route_in(tenancy));
        }
    }
    let single = metadata::script_root_files(Tenancy::Single);
    let front = single
        .iter()
        .find(|f| f.path == Path::new("FrontPage").join("function.json"))
        .expect("the front page");
    assert!(front.content.contains(metadata::ROOT_ROUTE));
}

#[tokio::test]
async fn every_page_function_reaches_a_page_of_the_app() {
    // The host forwards a page function's path unchanged: the application must serve it.
    for tenancy in LAYOUTS {
        let h = Harness::with(tenancy);
        let app = h.app();
        for function in metadata::page_functions(tenancy) {
            let method: Method = function.method.to_uppercase().parse().expect("method");
            let path = fill(&function.path_in(tenancy));
            let request = Request::builder()
                .method(method.clone())
                .uri(&path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("csrf="))
                .expect("request");
            let (status, problem) = send(app.clone(), request).await;
            assert!(
                !matches!(
                    problem["code"].as_str(),
                    Some("route-not-found" | "method-not-allowed")
                ),
                "{tenancy}: {method} {path} is not served ({status})"
            );
        }
    }
}

#[tokio::test]
async fn the_site_root_of_a_multi_tenant_site_is_a_function_and_a_page_saying_where_blogs_are() {
    let root_functions = |tenancy| -> Vec<&str> {
        metadata::page_functions(tenancy)
            .filter(|f| f.host_route_in(tenancy) == metadata::ROOT_ROUTE)
            .map(|f| f.name)
            .collect()
    };
    assert_eq!(root_functions(Tenancy::Single), ["FrontPage"]);
    assert_eq!(root_functions(Tenancy::Multi), ["SiteRootPage"]);
    let h = Harness::with(Tenancy::Multi);
    let app = h.app();
    let (status, _, html) =
        html_of(&app, forwarded_page_request(Method::GET, "/", None, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        html.contains("no-blog-at-site-root") && html.contains("/tenants/"),
        "{html}"
    );
    // The host's start-up probe of `/` takes that answer; probes of health have their route.
    let probe = Request::get("/api/health")
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(app.clone(), probe).await.0, StatusCode::OK, "health");
}

/// A browser's request as the host forwards it: its `Accept`, its cookies, Fetch Metadata.
fn forwarded_page_request(
    method: Method,
    path: &str,
    caller: Option<&str>,
    form: Option<&str>,
) -> Request<Body> {
    let mut request = forwarded_request(method, path, caller, None);
    let headers = request.headers_mut();
    headers.insert(
        header::ACCEPT,
        "text/html,application/xhtml+xml".parse().unwrap(),
    );
    headers.insert("sec-fetch-site", "same-origin".parse().unwrap());
    headers.insert(
        header::ORIGIN,
        "https://cosmos-blog.azurewebsites.net".parse().unwrap(),
    );
    if let Some(form) = form {
        headers.insert(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        *request.body_mut() = Body::from(form.to_owned());
    }
    request
}

async fn html_of(
    app: &Router,
    request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test]
async fn forwarded_page_requests_sign_in_through_easy_auth_and_post_forms() {
    let h = Harness::new();
    let app = h.app_with(Authenticator::TrustedHeader);
    let put = forwarded_request(
        Method::PUT,
        "/api/users/u-ada",
        Some("u-ada"),
        Some(json!({"username": "ada"})),
    );
    assert_eq!(send(app.clone(), put).await.0, StatusCode::CREATED);

    // Signed out: the page links to Easy Auth's login, which returns to the page.
    let (status, _, html) =
        html_of(&app, forwarded_page_request(Method::GET, "/", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("href=\"/.auth/login/aad?post_login_redirect_uri=%2F\""),
        "{html}"
    );
    // The sign-in route, and a page that needs a signed-in reader, both send the reader to
    // App Service's sign-in and back to the page.
    for path in ["/sign-in?return=%2Fwrite", "/write"] {
        let (status, headers, _) =
            html_of(&app, forwarded_page_request(Method::GET, path, None, None)).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(
            headers[header::LOCATION],
            "/.auth/login/aad?post_login_redirect_uri=%2Fwrite",
            "{path}"
        );
    }

    // Signed in (Easy Auth's principal header): the write form, then its post.
    let (status, headers, html) = html_of(
        &app,
        forwarded_page_request(Method::GET, "/write", Some("u-ada"), None),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("/.auth/logout"), "Easy Auth's sign-out");
    let token = testkit::form_token(&headers).expect("the form token's cookie");
    // The site's address is HTTPS: its cookies carry the `__Host-` prefix.
    let cookie = format!("__Host-blog_csrf={token}");
    let mut post = forwarded_page_request(
        Method::POST,
        "/write",
        Some("u-ada"),
        Some(&format!("csrf={token}&title=From+the+host&content=Hello")),
    );
    post.headers_mut()
        .insert(header::COOKIE, cookie.parse().unwrap());
    let (status, headers, html) = html_of(&app, post).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{html}");
    let location = headers[header::LOCATION].to_str().unwrap().to_owned();
    assert!(location.starts_with("/posts/"), "{location}");
    let (status, _, html) = html_of(
        &app,
        forwarded_page_request(Method::GET, &location, None, None),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(">From the host</h1>"), "{html}");
}
