//! Reading: the front page, a post's page, an author's pages and error pages, with their
//! headers and escaping.

use super::*;

async fn front_page_shows_the_feed_with_links_counts_and_escaped_text(app: TestApp) {
    app.register("ada", HOSTILE).await;
    let post = post_in_feed(&app, "ada", HOSTILE, &format!("{HOSTILE} and more")).await;
    let post_id = post["id"].as_str().unwrap();
    app.comment("ada", post_id, "first").await;
    let mut reader = Browser::new(&app, None);
    let (status, page, headers) = reader.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(select_text(&page, "title"), ["Latest posts · Cosmos Blog"]);
    assert!(!select_attr(&page, "meta[name=description]", "content").is_empty());
    assert_eq!(select_text(&page, "ol.posts h2 a"), [HOSTILE]);
    assert_eq!(
        select_attr(&page, "ol.posts h2 a", "href"),
        readable_path(&app, &post)
    );
    assert_eq!(select_text(&page, "ol.posts .meta a"), [HOSTILE]);
    assert_eq!(
        select_attr(&page, "ol.posts .meta a", "href"),
        page_path(&app, "/users/ada")
    );
    // The excerpt is the post's text: the Markdown's raw HTML is not text.
    let short = select_text(&page, ".short").concat();
    assert!(
        !short.contains("<script") && !short.contains("onerror"),
        "{short}"
    );
    assert!(select_text(&page, "ol.posts .meta")[0].contains("0 likes"));
    assert_eq!(
        select_attr(&page, "link[rel=alternate]", "href"),
        page_path(&app, "/feed.atom")
    );
    assert_eq!(
        select_text(&page, "nav a"),
        ["Latest", "Sign in"],
        "signed out"
    );
    let html = reader.html("/").await;
    assert_inert(&html);
}

async fn pages_carry_the_security_headers_and_answer_conditional_gets(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = post_in_feed(&app, "ada", "t", "c").await;
    let post_path = format!("/posts/{}/t", post["id"].as_str().unwrap());
    let reader = Browser::new(&app, None);
    for path in [
        "/",
        post_path.as_str(),
        "/users/ada",
        "/feed.atom",
        "/users/ada/feed.atom",
    ] {
        let first = reader.fetch(page_url(&app, path)).await;
        assert_eq!(first.status(), StatusCode::OK, "{path}");
        let headers = first.headers();
        let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "frame-ancestors 'none'",
            "script-src 'self'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert!(headers.contains_key(header::REFERRER_POLICY));
        let etag = headers[header::ETAG].clone();
        let again = reader
            .request(Method::GET, page_url(&app, path))
            .header(header::IF_NONE_MATCH, etag.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert_eq!(again.headers()[header::ETAG], etag);
        assert!(again.bytes().await.unwrap().is_empty());
        let stale = reader
            .request(Method::GET, page_url(&app, path))
            .header(header::IF_NONE_MATCH, "\"other\"")
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), StatusCode::OK, "{path}");
    }
    // A change makes a new tag: the post's like count is on its page.
    let first = reader.fetch(page_url(&app, &post_path)).await;
    let etag = first.headers()[header::ETAG].clone();
    app.like("ada", post["id"].as_str().unwrap()).await;
    let after = reader
        .request(Method::GET, page_url(&app, &post_path))
        .header(header::IF_NONE_MATCH, etag)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::OK);
}

async fn the_post_page_renders_sanitised_markdown_pages_comments_and_links_likes(app: TestApp) {
    app.register("ada", "Ada").await;
    app.register("bob", "Bob").await;
    let content = "# Heading\n\n**bold** ~~old~~ <https://example.org/x>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>[x](javascript:alert(1))<img src=x onerror=alert(1)>";
    let post = app.new_post("ada", "Markdown", content).await;
    let post_id = post["id"].as_str().unwrap();
    for n in 0..52 {
        app.comment("bob", post_id, &format!("comment {n} {HOSTILE}"))
            .await;
    }
    app.like("bob", post_id).await;
    let mut reader = Browser::new(&app, None);
    let (status, page, _) = reader.get(&format!("/posts/{post_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_text(&page, "article > h1"), ["Markdown"]);
    // The title is the page's one h1: the post's `#` is an h2.
    assert_eq!(select_text(&page, ".content h2"), ["Heading"]);
    assert!(select(&page, ".content h1").is_empty());
    assert_eq!(select_text(&page, ".content strong"), ["bold"]);
    assert_eq!(select_text(&page, ".content del"), ["old"]);
    assert_eq!(select(&page, ".content table td").len(), 2);
    assert_eq!(
        select_attr(&page, ".content a[href]", "rel"),
        "nofollow ugc"
    );
    assert_eq!(
        select_attr(&page, "meta[property='og:title']", "content"),
        "Markdown"
    );
    assert!(!select_attr(&page, "meta[property='og:description']", "content").is_empty());
    assert!(
        select_attr(&page, "meta[property='og:url']", "content")
            .ends_with(&format!("/posts/{post_id}/markdown"))
    );
    assert_eq!(
        select(&page, "ol.comments > li").len(),
        50,
        "a page of comments"
    );
    assert_eq!(
        select_text(&page, ".comment-text")[0],
        format!("comment 0 {HOSTILE}")
    );
    assert_eq!(select_text(&page, "#like-count"), ["1 like"]);
    assert!(
        like_buttons(&page).is_empty(),
        "no like form unless signed in"
    );
    let likes_href = select_attr(&page, "a[href$='/likes']", "href");
    let later = select_attr(&page, "a[rel=next]", "href");
    assert!(later.contains("?comments="), "{later}");
    let html = reader.html(&format!("/posts/{post_id}")).await;
    assert_inert(&html);

    let (status, next) = reader.follow(&later).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        select_text(&next, ".comment-text"),
        [
            format!("comment 50 {HOSTILE}"),
            format!("comment 51 {HOSTILE}")
        ]
    );

    let (status, likes) = reader.follow(&likes_href).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_text(&likes, "ol.likes a"), ["Bob"]);
}

async fn the_author_page_lists_their_posts_a_page_at_a_time(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut ids = Vec::new();
    for n in 0..51 {
        ids.push(app.new_post("ada", &format!("post {n}"), "c").await["id"].clone());
    }
    eventually(WITHIN, || async {
        (app.all_pages("/api/users/ada/posts", 100).await.len() == ids.len()).then_some(())
    })
    .await;
    let mut reader = Browser::new(&app, None);
    let (status, page, _) = reader.get("/users/ada").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select(&page, "ol.posts > li").len(), 50, "a page of posts");
    assert_eq!(select_text(&page, "h1"), ["Ada"]);
    assert_eq!(
        select_text(&page, "ol.posts h2 a")[0],
        "post 50",
        "newest first"
    );
    let older = select_attr(&page, "a[rel=next]", "href");
    let (_, older) = reader.follow(&older).await;
    assert_eq!(select_text(&older, "ol.posts h2 a"), ["post 0"]);
    let (status, _, _) = reader.get("/users/nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

async fn errors_are_pages_with_their_status_and_code(app: TestApp) {
    let mut reader = Browser::new(&app, None);
    let (status, page, _) = reader.get("/posts/missing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(select_text(&page, "main code"), ["post-not-found"]);
    assert!(!select_text(&page, "title").is_empty());
    let (status, page, _) = reader.get("/no/such/page").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(select_text(&page, "main code"), ["route-not-found"]);
    // An API client still gets problem documents.
    let api = app.get("/api/posts/missing").await;
    assert_eq!(
        api.headers()[header::CONTENT_TYPE],
        "application/problem+json"
    );
}

surface_tests!(
    front_page_shows_the_feed_with_links_counts_and_escaped_text,
    pages_carry_the_security_headers_and_answer_conditional_gets,
    the_post_page_renders_sanitised_markdown_pages_comments_and_links_likes,
    the_author_page_lists_their_posts_a_page_at_a_time,
    errors_are_pages_with_their_status_and_code,
);
