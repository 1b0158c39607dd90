//! Assets, the front door, the body limit of a form, and the weight of the front page.

use super::*;

async fn assets_are_immutable_and_the_front_door_is_the_front_page_and_no_probe(app: TestApp) {
    // Every client that takes HTML gets the front page: curl's `*/*`, none at all, a crawler's.
    for accept in [Some("*/*"), None, Some("text/*;q=0.9, application/json")] {
        let mut request = app.client.get(app.raw_url("/"));
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT, accept);
        }
        let root = request.send().await.unwrap();
        let content_type = root.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        // A multi-tenant site has no front page of its own (its blogs' are checked above).
        if app.tenant.is_none() {
            assert_eq!(root.status(), StatusCode::OK, "{accept:?}");
            assert!(
                content_type.starts_with("text/html"),
                "{accept:?}: {content_type}"
            );
        }
    }
    // `/` is no probe: a client that takes no HTML gets the API's answer for a path it has
    // no route for, in every layout.
    for accept in ["text/plain", "application/json"] {
        let root = app
            .client
            .get(app.raw_url("/"))
            .header(header::ACCEPT, accept)
            .send()
            .await
            .unwrap();
        assert_eq!(root.status(), StatusCode::NOT_FOUND, "{accept}");
        let problem: Value = root.json().await.unwrap();
        assert_eq!(problem["code"], "route-not-found", "{accept}: {problem}");
    }
    // Probes have a route of their own, the same in every layout, whatever they accept.
    for accept in [None, Some("text/plain"), Some("application/json")] {
        let mut request = app.client.get(app.raw_url("/api/health"));
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT, accept);
        }
        let health = request.send().await.unwrap();
        assert_eq!(health.status(), StatusCode::OK, "{accept:?}");
        assert_eq!(health.text().await.unwrap(), "ok");
    }
    let mut reader = Browser::new(&app, None);
    let (_, page, _) = reader.get("/").await;
    let css = select_attr(&page, "link[rel=stylesheet]", "href");
    let script = select_attr(&page, "script", "src");
    let icon = select_attr(&page, "link[rel=icon]", "href");
    for asset in [css, script, icon.clone()] {
        let response = app.get_raw(&asset).await;
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
    }
    // Where browsers look for an icon whatever the page says: the same icon.
    let favicon = app.get_raw("/favicon.ico").await;
    assert_eq!(favicon.status(), StatusCode::OK);
    assert_eq!(favicon.headers()[header::CONTENT_TYPE], "image/svg+xml");
    let linked = app.get_raw(&icon).await;
    assert_eq!(
        favicon.bytes().await.unwrap(),
        linked.bytes().await.unwrap()
    );
    let stale = app.get_raw("/assets/site.0000.css").await;
    assert_eq!(stale.status(), StatusCode::NOT_FOUND);
}

async fn a_form_past_the_body_limit_is_413_in_the_apps_words(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut ada = Browser::new(&app, Some("ada"));
    // Past what the write form takes (four times the API's body, so that a text too long for
    // a post comes back with its reason rather than lost).
    let content = "x".repeat(5 * cosmos_blog::http::MAX_BODY_BYTES);
    let response = ada
        .post("/write", &[("title", "Big"), ("content", &content)])
        .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let page = response.text().await.unwrap();
    assert!(page.contains("body-too-large"), "{page}");
    assert!(!page.contains("Failed to buffer"), "{page}");
}

async fn the_front_page_is_light(app: TestApp) {
    app.register("ada", "Ada").await;
    for n in 0..40 {
        app.new_post(
            "ada",
            &format!("A title of a usual length, number {n}"),
            &"w".repeat(400),
        )
        .await;
    }
    let html = eventually(WITHIN, || async {
        let html = Browser::new(&app, None).html("/").await;
        (select(&Html::parse_document(&html), "ol.posts > li").len() >= 30).then_some(html)
    })
    .await;
    let page = Html::parse_document(&html);
    let css = select_attr(&page, "link[rel=stylesheet]", "href");
    let css = app.get_raw(&css).await.bytes().await.unwrap();
    assert!(
        html.len() + css.len() < 60 * 1024,
        "{} + {}",
        html.len(),
        css.len()
    );
    // Nothing from another origin: the one absolute URL is the page's own canonical one.
    let elsewhere = html.replace(&format!("\"{}/", app.address), "\"/");
    assert!(
        !elsewhere.contains("http://") && !elsewhere.contains("https://"),
        "no other origin"
    );
}

surface_tests!(
    assets_are_immutable_and_the_front_door_is_the_front_page_and_no_probe,
    a_form_past_the_body_limit_is_413_in_the_apps_words,
    the_front_page_is_light,
);
