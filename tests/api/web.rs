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

use testkit::{TestApp, eventually, surface_tests};

const WITHIN: Duration = Duration::from_secs(20);

/// Characters of a text the API refuses whole (its body limit), which the write and edit
/// pages read to say why it is not taken.
const LONGER_THAN_THE_API_TAKES: usize = cosmos_blog::http::MAX_BODY_BYTES + 1024;

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

    /// The cookies sent, under both names a site gives them (`__Host-` ones on an HTTPS
    /// address, plain ones on a plain-HTTP one): the site reads its own and leaves the other.
    fn cookies(&self) -> Option<String> {
        let mut cookies = Vec::new();
        for prefix in ["", "__Host-"] {
            if let Some(user) = &self.user {
                cookies.push(format!("{prefix}blog_dev_user={}", encode(user)));
            }
            if let Some(token) = &self.csrf {
                cookies.push(format!("{prefix}blog_csrf={token}"));
            }
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
        if let Some(token) = testkit::form_token(headers) {
            self.csrf = Some(token);
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

impl Browser<'_> {
    /// POST a form to a page of the blog as `multipart/form-data`, with the page's token
    /// first and a file part `image` (its bytes and type) after the fields of `before` and
    /// before those of `after`, in the order a browser sends a form's fields.
    async fn post_multipart(
        &mut self,
        path: &str,
        before: &[(&str, &str)],
        image: (&[u8], &str),
        after: &[(&str, &str)],
    ) -> Response {
        let boundary = "----formboundary4Xq9TzK2mLw8Pd";
        let token = self.token().await;
        let mut body = Vec::new();
        let text = |body: &mut Vec<u8>, name: &str, value: &str| {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                )
                .as_bytes(),
            );
        };
        text(&mut body, "csrf", &token);
        for (name, value) in before {
            text(&mut body, name, value);
        }
        let (bytes, content_type) = image;
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; \
                 filename=\"photo\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
        for (name, value) in after {
            text(&mut body, name, value);
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        self.request(Method::POST, self.page_url(path))
            .header(
                header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
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

fn parse_atom(body: &str) -> atom_syndication::Feed {
    body.parse().expect("an Atom feed")
}

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

    testkit::backend_pair!(isolated => embedded, cosmos);
}

/// A post page reads as the API queries it shows: the post (Q2) and its comments (Q4), and
/// for a signed-in reader whether they like it (a point read of their like), each one request
/// to the post's one logical partition; and for a signed-in reader their own user item (Q1,
/// one request to their partition of `users`), whose username the navigation shows. Nothing
/// is kept, so each page is read anew: a kept page is handed over with no request at all.
mod post_page_reads {
    use std::sync::Arc;

    use super::*;
    use cosmos_blog::store::{Store, Tenancy};
    use testkit::metered::meter;
    use testkit::{Backend, open_backend};

    async fn one_partition(backend: Backend) {
        let data_dir = tempfile::TempDir::new().unwrap();
        let metered = meter(open_backend(backend, Tenancy::Single, &data_dir).await);
        let store: Arc<dyn Store> = Arc::new(metered.clone());
        let app = TestApp::spawn_on(store)
            .without_pump()
            .settings(|settings| settings.list_cache_mb = 0)
            .start()
            .await;
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

    testkit::backend_pair!(one_partition => embedded, cosmos);
}

mod drafting;
mod feeds;
mod layouts;
mod reading;
mod writing;
