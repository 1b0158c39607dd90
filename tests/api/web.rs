//! The web pages over HTTP, parsed as HTML, on both backends and both layouts: every page,
//! every form with good and bad input, escaping of hostile text, the Markdown sanitiser,
//! cross-site refusals (forms and the JSON API), conditional GETs, the Atom feeds, and the
//! isolation of tenants' pages and feeds. A "browser" here is a client that sends what a
//! browser sends (`Accept: text/html`, the cookies it was given, `Sec-Fetch-Site`) and does
//! not follow redirects, so each answer is seen.

use std::time::Duration;

use reqwest::header::{self, HeaderMap};
use reqwest::{Method, Response, StatusCode};
use scraper::{Html, Selector};
use serde_json::Value;

use testkit::{TestApp, eventually, operation_tests};

const WITHIN: Duration = Duration::from_secs(20);

/// Text no page may ever let run: in titles, usernames, comments and ids.
const HOSTILE: &str = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>&amp;";

/// A browser on `app`'s site, signed in (development mode's cookie) as `user`, or not.
struct Browser<'a> {
    app: &'a TestApp,
    client: reqwest::Client,
    user: Option<String>,
    csrf: Option<String>,
}

impl<'a> Browser<'a> {
    fn new(app: &'a TestApp, user: Option<&str>) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Self {
            app,
            client,
            user: user.map(str::to_owned),
            csrf: None,
        }
    }

    /// The URL of a page of the addressed blog (`/tenants/{tenant}/...` in `multi`).
    fn page_url(&self, path: &str) -> String {
        page_url(self.app, path)
    }

    fn cookies(&self) -> Option<String> {
        let mut cookies = Vec::new();
        if let Some(user) = &self.user {
            cookies.push(format!("blog_dev_user={}", encode(user)));
        }
        if let Some(token) = &self.csrf {
            cookies.push(format!("blog_csrf={token}"));
        }
        (!cookies.is_empty()).then(|| cookies.join("; "))
    }

    fn request(&self, method: Method, url: String) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, url)
            .header(header::ACCEPT, "text/html,application/xhtml+xml")
            .header("sec-fetch-site", "same-origin");
        if let Some(cookies) = self.cookies() {
            request = request.header(header::COOKIE, cookies);
        }
        request
    }

    /// GET a page; keeps the CSRF cookie the server sets.
    async fn get(&mut self, path: &str) -> (StatusCode, Html, HeaderMap) {
        let response = self.fetch(self.page_url(path)).await;
        self.keep_token(response.headers());
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.expect("body");
        (status, Html::parse_document(&body), headers)
    }

    /// GET the page of `url` (a whole URL), following a `301` as a browser does (a post's
    /// address without its readable slug moves to the one with it).
    async fn fetch(&self, url: String) -> Response {
        let response = self.unfollowed(url).await;
        if response.status() != StatusCode::MOVED_PERMANENTLY {
            return response;
        }
        let to = location(&response);
        self.unfollowed(format!("{}{to}", self.app.address)).await
    }

    /// GET the page of `url` (a whole URL), as it is answered.
    async fn unfollowed(&self, url: String) -> Response {
        self.request(Method::GET, url).send().await.expect("sent")
    }

    /// GET a page by a link one of the site's pages holds (it names the tenant already).
    async fn follow(&self, href: &str) -> (StatusCode, Html) {
        let response = self.fetch(format!("{}{href}", self.app.address)).await;
        (response.status(), parsed(response).await)
    }

    /// The HTML of the blog's page `path`, as sent.
    async fn html(&self, path: &str) -> String {
        self.fetch(self.page_url(path))
            .await
            .text()
            .await
            .expect("body")
    }

    fn keep_token(&mut self, headers: &HeaderMap) {
        for value in headers.get_all(header::SET_COOKIE) {
            let value = value.to_str().unwrap_or_default();
            if let Some(rest) = value.strip_prefix("blog_csrf=") {
                self.csrf = Some(rest.split(';').next().unwrap_or_default().to_owned());
            }
        }
    }

    /// The token a page's forms carry (from a page of the site, as a browser would).
    async fn token(&mut self) -> String {
        if self.csrf.is_none() {
            let (status, page, _) = self.get("/").await;
            assert_eq!(status, StatusCode::OK);
            let field = select_attr(&page, "input[name=csrf]", "value");
            assert_eq!(
                Some(&field),
                self.csrf.as_ref(),
                "the form carries its cookie"
            );
        }
        self.csrf.clone().expect("a token")
    }

    /// POST a form to a page of the blog, with the page's token.
    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Response {
        let token = self.token().await;
        let mut form: Vec<(&str, &str)> = vec![("csrf", &token)];
        form.extend_from_slice(fields);
        self.request(Method::POST, self.page_url(path))
            .form(&form)
            .send()
            .await
            .expect("sent")
    }
}

/// A response's body as an HTML document.
async fn parsed(response: Response) -> Html {
    Html::parse_document(&response.text().await.expect("body"))
}

fn encode(text: &str) -> String {
    reqwest::Url::parse("http://x/")
        .map(|mut url| {
            url.path_segments_mut().expect("path").push(text);
            url.path().trim_start_matches('/').to_owned()
        })
        .expect("url")
}

fn page_url(app: &TestApp, path: &str) -> String {
    match &app.tenant {
        Some(tenant) => format!("{}/tenants/{}{path}", app.address, encode(tenant.as_str())),
        None => app.raw_url(path),
    }
}

/// The readable address of a post's page (its id and the slug of its title).
fn readable_path(app: &TestApp, post: &Value) -> String {
    let slug = cosmos_blog::domain::Slug::of_title(post["title"].as_str().expect("a title"));
    page_path(
        app,
        &format!(
            "/posts/{}/{slug}",
            encode(post["id"].as_str().expect("an id"))
        ),
    )
}

fn page_path(app: &TestApp, path: &str) -> String {
    match &app.tenant {
        Some(tenant) => format!("/tenants/{}{path}", encode(tenant.as_str())),
        None => path.to_owned(),
    }
}

fn select<'a>(page: &'a Html, css: &str) -> Vec<scraper::ElementRef<'a>> {
    let selector = Selector::parse(css).expect("selector");
    page.select(&selector).collect()
}

fn select_text(page: &Html, css: &str) -> Vec<String> {
    select(page, css)
        .iter()
        .map(|e| e.text().collect::<String>())
        .collect()
}

fn select_attr(page: &Html, css: &str, attribute: &str) -> String {
    select(page, css)
        .first()
        .and_then(|e| e.value().attr(attribute))
        .unwrap_or_else(|| panic!("no {css} with {attribute}"))
        .to_owned()
}

fn location(response: &Response) -> String {
    response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .expect("a Location")
        .to_owned()
}

/// The like forms a post page offers (`like` or `unlike`), in order.
fn like_buttons(page: &Html) -> Vec<String> {
    select(page, "form[data-like]")
        .iter()
        .filter_map(|form| form.value().attr("data-like"))
        .map(str::to_owned)
        .collect()
}

/// No element, attribute or URL of `html` can run script.
fn assert_inert(html: &str) {
    let page = Html::parse_document(html);
    // A JSON-LD data block does not run: it counts when it is JSON, and nothing else.
    let data_block = |s: &scraper::ElementRef<'_>| {
        s.value().attr("type") == Some("application/ld+json")
            && s.value().attr("src").is_none()
            && serde_json::from_str::<Value>(&s.text().collect::<String>()).is_ok()
    };
    assert!(
        select(&page, "script").iter().all(|s| {
            data_block(s)
                || s.value()
                    .attr("src")
                    .is_some_and(|src| src.starts_with("/assets/"))
                    && s.text().collect::<String>().trim().is_empty()
        }),
        "only the site's own script: {html}"
    );
    for element in page
        .root_element()
        .descendants()
        .filter_map(scraper::ElementRef::wrap)
    {
        for (name, value) in element.value().attrs() {
            assert!(!name.starts_with("on"), "event attribute {name} in {html}");
            assert!(
                !value.trim_start().to_lowercase().starts_with("javascript:"),
                "a javascript: URL in {html}"
            );
        }
        assert_ne!(element.value().name(), "img", "an image in {html}");
    }
}

/// Registers `user` and writes a post through the API; waits until the feed shows it.
async fn post_in_feed(app: &TestApp, user: &str, title: &str, content: &str) -> Value {
    let post = app.new_post(user, title, content).await;
    let id = post["id"].as_str().expect("id").to_owned();
    eventually(WITHIN, || async {
        let feed = app.get_json("/api/feed").await;
        feed["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["id"] == id.as_str()))
            .then_some(())
    })
    .await;
    post
}

// ---- reading ------------------------------------------------------------------------------

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

// ---- writing ------------------------------------------------------------------------------

async fn a_reader_writes_comments_likes_edits_and_deletes_through_the_forms(app: TestApp) {
    let mut ada = Browser::new(&app, Some("ada"));
    // No user item yet: led to choose a username first, then back to writing.
    let response = ada
        .request(Method::GET, ada.page_url("/write"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(location(&response).contains("/account?return="));
    let (status, page, _) = ada.get("/account").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_attr(&page, "label[for=username]", "for"), "username");
    let refused = ada
        .post("/account", &[("username", "  "), ("return", "")])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#username-error").is_empty());
    assert_eq!(
        app.get("/api/users/ada").await.status(),
        StatusCode::NOT_FOUND,
        "nothing stored"
    );
    let saved = ada
        .post(
            "/account",
            &[("username", "Ada"), ("return", &page_path(&app, "/write"))],
        )
        .await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&saved), page_path(&app, "/write"));
    assert_eq!(app.get_json("/api/users/ada").await["username"], "Ada");

    // Write: a bad title comes back beside its field with the text kept.
    let (status, page, _) = ada.get("/write").await;
    assert_eq!(status, StatusCode::OK);
    for field in ["title", "content"] {
        assert_eq!(select(&page, &format!("label[for={field}]")).len(), 1);
    }
    let long_title = "t".repeat(1000);
    let refused = ada
        .post("/write", &[("title", &long_title), ("content", HOSTILE)])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#title-error").is_empty());
    assert!(select_text(&page, "#content-error").is_empty());
    assert_eq!(select_attr(&page, "#title", "value"), long_title);
    assert_eq!(select_text(&page, "#content"), [HOSTILE]);
    let posts = app.get_json("/api/users/ada/posts").await;
    assert_eq!(
        posts["items"].as_array().unwrap().len(),
        0,
        "nothing stored"
    );

    let written = ada
        .post("/write", &[("title", "Hello"), ("content", "**hi**")])
        .await;
    assert_eq!(written.status(), StatusCode::SEE_OTHER);
    let post_path = location(&written);
    let post_id = post_path.rsplit('/').nth(1).unwrap().to_owned();
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["title"],
        "Hello"
    );
    let blog_path = |path: &str| {
        path.strip_prefix(&page_path(&app, ""))
            .unwrap_or(path)
            .to_owned()
    };
    // The post's own forms and pages are under its id, without the readable slug.
    let own_path = blog_path(&post_path).rsplit_once('/').unwrap().0.to_owned();

    // Edit: the page shows the new content, not the old one's rendering.
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(select_text(&page, ".content strong"), ["hi"]);
    let (status, page, _) = ada.get(&format!("{own_path}/edit")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(select_attr(&page, "#title", "value"), "Hello");
    let edited = ada
        .post(
            &format!("{own_path}/edit"),
            &[("title", "Hello again"), ("content", "new")],
        )
        .await;
    assert_eq!(edited.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["title"],
        "Hello again"
    );
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(select_text(&page, ".content"), ["new\n"]);

    // Another reader comments (bad, then good), likes, unlikes; may not edit.
    app.register("bob", "Bob").await;
    let mut bob = Browser::new(&app, Some("bob"));
    let (status, _, _) = bob.get(&format!("{own_path}/edit")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, page, _) = bob.get(&own_path).await;
    assert!(
        select(&page, "a[href$='/edit']").is_empty(),
        "not the author"
    );
    assert_eq!(like_buttons(&page), ["like"], "not liked yet");
    assert_eq!(
        select_attr(&page, "label[for=comment-content]", "for"),
        "comment-content"
    );
    let refused = bob
        .post(&format!("{own_path}/comments"), &[("content", " ")])
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert!(!select_text(&page, "#comment-error").is_empty());
    let commented = bob
        .post(&format!("{own_path}/comments"), &[("content", HOSTILE)])
        .await;
    assert_eq!(commented.status(), StatusCode::SEE_OTHER);
    let liked = bob.post(&format!("{own_path}/like"), &[]).await;
    assert_eq!(liked.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = bob.get(&own_path).await;
    assert_eq!(like_buttons(&page), ["unlike"], "liked: only Unlike");
    let (_, page, _) = ada.get(&own_path).await;
    assert_eq!(
        like_buttons(&page),
        ["like"],
        "another reader's like is theirs"
    );
    let post = app.get_json(&format!("/api/posts/{post_id}")).await;
    assert_eq!(
        (post["commentCount"].as_u64(), post["likeCount"].as_u64()),
        (Some(1), Some(1))
    );
    let unliked = bob.post(&format!("{own_path}/unlike"), &[]).await;
    assert_eq!(unliked.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = bob.get(&own_path).await;
    assert_eq!(like_buttons(&page), ["like"], "unliked: only Like");
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["likeCount"],
        0
    );

    // The post's author may delete bob's comment; then the post.
    let (_, page, _) = ada.get(&own_path).await;
    let delete = select_attr(&page, "ol.comments form", "action");
    let deleted = ada.post(&blog_path(&delete), &[]).await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["commentCount"],
        0
    );
    let deleted = ada.post(&format!("{own_path}/delete"), &[]).await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.get(&format!("/api/posts/{post_id}")).await.status(),
        StatusCode::NOT_FOUND
    );

    // Rename shows on the account; deleting needs the box ticked.
    let renamed = ada
        .post("/account", &[("username", "Ada L."), ("return", "")])
        .await;
    assert_eq!(renamed.status(), StatusCode::SEE_OTHER);
    let (_, page, _) = ada.get("/account").await;
    assert_eq!(select_attr(&page, "#username", "value"), "Ada L.");
    let (status, _, _) = ada.get("/account/delete").await;
    assert_eq!(status, StatusCode::OK);
    let unconfirmed = ada.post("/account/delete", &[]).await;
    assert_eq!(unconfirmed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.get("/api/users/ada").await.status(), StatusCode::OK);
    let erased = ada.post("/account/delete", &[("confirm", "yes")]).await;
    assert_eq!(erased.status(), StatusCode::SEE_OTHER);
    assert!(
        erased.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0"),
        "signed out"
    );
    assert_eq!(
        app.get("/api/users/ada").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn the_development_sign_in_sets_the_cookie_pages_and_the_api_read(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut browser = Browser::new(&app, None);
    let response = browser
        .request(
            Method::GET,
            format!("{}/sign-in?return=%2Fposts", app.address),
        )
        .send()
        .await
        .unwrap();
    browser.keep_token(response.headers());
    let page = parsed(response).await;
    assert_eq!(select_attr(&page, "label[for=user_id]", "for"), "user_id");
    let token = select_attr(&page, "input[name=csrf]", "value");
    let send = |fields: Vec<(&'static str, String)>| {
        let mut form = vec![("csrf", token.clone())];
        form.extend(fields);
        browser
            .request(Method::POST, format!("{}/sign-in", app.address))
            .form(&form)
            .send()
    };
    let refused = send(vec![("user_id", "a/b".into()), ("return", "/".into())])
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = parsed(refused).await;
    assert_eq!(select_attr(&page, "#user_id", "value"), "a/b");
    let signed_in = send(vec![
        ("user_id", "ada".into()),
        ("return", "https://elsewhere.example/".into()),
    ])
    .await
    .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&signed_in), "/", "never to another site");
    let cookie = signed_in.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["blog_dev_user=ada", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    // The API takes the caller from the cookie too.
    let post = app
        .client
        .post(app.url("/api/posts"))
        .header(header::COOKIE, "blog_dev_user=ada")
        .json(&serde_json::json!({"title": "by cookie", "content": "c"}))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::CREATED);
}

// ---- cross-site refusals ------------------------------------------------------------------

async fn nothing_can_be_written_cross_site(app: TestApp) {
    app.register("ada", "Ada").await;
    let post = app.new_post("ada", "t", "c").await;
    let post_id = post["id"].as_str().unwrap();
    let mut ada = Browser::new(&app, Some("ada"));
    let token = ada.token().await;
    let like_page = ada.page_url(&format!("/posts/{post_id}/like"));

    // A form without its token.
    let no_token = ada
        .request(Method::POST, like_page.clone())
        .form(&[("csrf", "")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::FORBIDDEN);
    let page = parsed(no_token).await;
    assert_eq!(select_text(&page, "main code"), ["csrf-token"]);

    // A form with the token, posted from another site.
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ] {
        let refused = ada
            .request(Method::POST, like_page.clone())
            .header(name, value)
            .form(&[("csrf", token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{value}");
    }
    let from_elsewhere = ada
        .client
        .post(like_page.clone())
        .header(header::ACCEPT, "text/html")
        .header(
            header::COOKIE,
            format!("blog_dev_user=ada; blog_csrf={token}"),
        )
        .header(header::ORIGIN, "https://elsewhere.example")
        .form(&[("csrf", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(from_elsewhere.status(), StatusCode::FORBIDDEN);

    // The JSON API: a form-encoded like from another origin, with and without Fetch Metadata.
    for headers in [
        vec![("origin", "https://elsewhere.example")],
        vec![
            ("origin", "https://elsewhere.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![("origin", "null")],
    ] {
        let mut request = app
            .client
            .post(app.url(&format!("/api/posts/{post_id}/likes")))
            .header("x-ms-client-principal-id", "ada")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        for (name, value) in &headers {
            request = request.header(*name, *value);
        }
        let refused = request.send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{headers:?}");
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["code"], "cross-site-request");
    }
    assert_eq!(
        app.get_json(&format!("/api/posts/{post_id}")).await["likeCount"],
        0,
        "nothing stored"
    );

    // Same origin, or a client that is no browser, still writes.
    let own = app
        .client
        .post(app.url(&format!("/api/posts/{post_id}/likes")))
        .header("x-ms-client-principal-id", "ada")
        .header(header::ORIGIN, app.address.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::CREATED);
}

// ---- feeds --------------------------------------------------------------------------------

fn parse_atom(body: &str) -> atom_syndication::Feed {
    body.parse().expect("an Atom feed")
}

async fn the_atom_feeds_hold_q6_and_q3(app: TestApp) {
    app.register("ada", HOSTILE).await;
    app.register("bob", "Bob").await;
    for n in 0..3 {
        app.new_post("ada", &format!("{HOSTILE} {n}"), &format!("content {n}"))
            .await;
    }
    let last = post_in_feed(&app, "bob", "bob's", "c").await;
    let q6 = all_copies(&app, "/api/feed", 4).await;
    assert_eq!(q6[0]["id"], last["id"]);

    let reader = Browser::new(&app, None);
    let response = reader.fetch(page_url(&app, "/feed.atom")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/atom+xml")
    );
    assert!(response.headers().contains_key(header::LAST_MODIFIED));
    let atom = parse_atom(&response.text().await.unwrap());
    assert_entries_are(&atom, &q6, &app);

    let q3 = all_copies(&app, "/api/users/ada/posts", 3).await;
    let response = reader.fetch(page_url(&app, "/users/ada/feed.atom")).await;
    let atom = parse_atom(&response.text().await.unwrap());
    assert_entries_are(&atom, &q3, &app);
}

/// The items of a list of copies once the change feed has put all `count` there.
async fn all_copies(app: &TestApp, path: &str, count: usize) -> Vec<Value> {
    eventually(WITHIN, || async {
        let list = app.get_json(path).await;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        (items.len() == count).then_some(items)
    })
    .await
}

fn assert_entries_are(atom: &atom_syndication::Feed, items: &[Value], app: &TestApp) {
    assert_eq!(atom.entries().len(), items.len());
    for (entry, item) in atom.entries().iter().zip(items) {
        let id = item["id"].as_str().unwrap();
        let link = format!("{}{}", app.address, readable_path(app, item));
        // An id no host name, address or title changes: the post's own UUID in `single`.
        assert!(entry.id().starts_with("urn:uuid:"), "{}", entry.id());
        if app.tenant.is_none() {
            assert_eq!(entry.id(), format!("urn:uuid:{id}"));
        }
        assert_eq!(entry.links()[0].href(), link);
        assert_eq!(entry.title().as_str(), item["title"].as_str().unwrap());
        assert_eq!(
            entry.authors()[0].name(),
            item["userUsername"].as_str().unwrap()
        );
        let excerpt = cosmos_blog::web::excerpt::excerpt_of_short(
            item["content"].as_str().unwrap(),
            cosmos_blog::web::excerpt::LIST_EXCERPT_CHARS,
        );
        assert_eq!(entry.summary().map(|s| s.as_str()), Some(excerpt.as_str()));
        let published = entry.published().expect("published");
        let created = item["creationDate"].as_str().unwrap();
        assert_eq!(
            published.timestamp_nanos_opt(),
            atom_syndication::FixedDateTime::parse_from_rfc3339(created)
                .unwrap()
                .timestamp_nanos_opt()
        );
    }
}

// ---- the layouts --------------------------------------------------------------------------

async fn assets_are_immutable_and_the_front_door_is_the_front_page(app: TestApp) {
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
    // Probes have a route of their own, the same in every layout.
    let health = app
        .client
        .get(app.raw_url("/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(health.text().await.unwrap(), "ok");
    let mut reader = Browser::new(&app, None);
    let (_, page, _) = reader.get("/").await;
    let css = select_attr(&page, "link[rel=stylesheet]", "href");
    let script = select_attr(&page, "script", "src");
    let icon = select_attr(&page, "link[rel=icon]", "href");
    for asset in [css, script, icon.clone()] {
        let response = app.client.get(app.raw_url(&asset)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
    }
    // Where browsers look for an icon whatever the page says: the same icon.
    let favicon = app
        .client
        .get(app.raw_url("/favicon.ico"))
        .send()
        .await
        .unwrap();
    assert_eq!(favicon.status(), StatusCode::OK);
    assert_eq!(favicon.headers()[header::CONTENT_TYPE], "image/svg+xml");
    let linked = app.client.get(app.raw_url(&icon)).send().await.unwrap();
    assert_eq!(
        favicon.bytes().await.unwrap(),
        linked.bytes().await.unwrap()
    );
    let stale = app
        .client
        .get(app.raw_url("/assets/site.0000.css"))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), StatusCode::NOT_FOUND);
}

async fn a_form_past_the_body_limit_is_413_in_the_apps_words(app: TestApp) {
    app.register("ada", "Ada").await;
    let mut ada = Browser::new(&app, Some("ada"));
    let content = "x".repeat(3_000_000);
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
    let css = app
        .client
        .get(app.raw_url(&css))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
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

operation_tests!(
    front_page_shows_the_feed_with_links_counts_and_escaped_text,
    pages_carry_the_security_headers_and_answer_conditional_gets,
    the_post_page_renders_sanitised_markdown_pages_comments_and_links_likes,
    the_author_page_lists_their_posts_a_page_at_a_time,
    errors_are_pages_with_their_status_and_code,
    a_reader_writes_comments_likes_edits_and_deletes_through_the_forms,
    the_development_sign_in_sets_the_cookie_pages_and_the_api_read,
    nothing_can_be_written_cross_site,
    the_atom_feeds_hold_q6_and_q3,
    assets_are_immutable_and_the_front_door_is_the_front_page,
    a_form_past_the_body_limit_is_413_in_the_apps_words,
    the_front_page_is_light,
);

mod meta;
mod site;

/// In `multi`, a tenant's pages and feeds never show another tenant's posts.
mod tenants {
    use super::*;
    use cosmos_blog::store::Tenancy;
    use testkit::Backend;

    async fn isolated(backend: Backend) {
        let north = TestApp::spawn(backend)
            .layout(Tenancy::Multi)
            .start()
            .await
            .in_tenant("north");
        let south = north.in_tenant("south");
        north.register("ada", "Ada").await;
        let post = post_in_feed(&north, "ada", "northern news", "c").await;
        let post_id = post["id"].as_str().unwrap();
        let mut in_south = Browser::new(&south, None);
        let (_, front, _) = in_south.get("/").await;
        assert!(select(&front, "ol.posts > li").is_empty());
        for path in [format!("/posts/{post_id}"), "/users/ada".to_owned()] {
            let (status, _, _) = in_south.get(&path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        }
        let feed = in_south.html("/feed.atom").await;
        assert!(parse_atom(&feed).entries().is_empty());
        let mut in_north = Browser::new(&north, None);
        let (_, front, _) = in_north.get("/").await;
        assert_eq!(select_text(&front, "ol.posts h2 a"), ["northern news"]);
        // The site's root has no blog of its own.
        let root = in_north.fetch(format!("{}/", north.address)).await;
        assert_eq!(root.status(), StatusCode::NOT_FOUND);
        let root = parsed(root).await;
        assert_eq!(select_text(&root, "main code"), ["no-blog-at-site-root"]);
        assert!(select_text(&root, "main").concat().contains("/tenants/"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded() {
        isolated(Backend::Embedded).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cosmos() {
        isolated(Backend::Cosmos).await;
    }
}

/// A post page reads as the API queries it shows: the post (Q2) and its comments (Q4), and
/// for a signed-in reader whether they like it (a point read of their like), each one request
/// to the post's one logical partition; and for a signed-in reader their own user item (Q1,
/// one request to their partition of `users`), whose username the navigation shows.
mod post_page_reads {
    use std::sync::Arc;

    use super::*;
    use cosmos_blog::store::metered::MeteredStore;
    use cosmos_blog::store::{Store, Tenancy};
    use testkit::{Backend, open_backend};

    async fn one_partition(backend: Backend) {
        let data_dir = tempfile::TempDir::new().unwrap();
        let metered = MeteredStore::new(open_backend(backend, Tenancy::Single, &data_dir).await);
        let store: Arc<dyn Store> = Arc::new(metered.clone());
        let app = TestApp::spawn_on(store).without_pump().start().await;
        app.register("ada", "Ada").await;
        app.register("bob", "Bob").await;
        let post_id = app.new_post("ada", "t", "c").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        app.comment("ada", &post_id, "first").await;
        app.like("bob", &post_id).await;
        // The readable address: the id alone would cost the read of its `301` too.
        let path = format!("/posts/{post_id}/t");
        for (reader, requests, buttons) in [
            (None, (2, 1), vec![]),
            (Some("bob"), (4, 2), vec!["unlike"]),
            (Some("ada"), (4, 2), vec!["like"]),
        ] {
            let mut browser = Browser::new(&app, reader);
            metered.take();
            let (status, page, _) = browser.get(&path).await;
            let metrics = metered.take();
            assert_eq!(status, StatusCode::OK);
            assert_eq!(like_buttons(&page), buttons, "{reader:?}");
            assert_eq!(
                (
                    metrics.requests,
                    metrics.partitions,
                    metrics.fan_out_queries
                ),
                (requests.0, requests.1, 0),
                "{reader:?}: {metrics:?}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded() {
        one_partition(Backend::Embedded).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cosmos() {
        one_partition(Backend::Cosmos).await;
    }
}
